/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package loadaware

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// Refusal reasons as the refusals metric labels them.
const (
	refusalUsage           = "usage"
	refusalProdUsage       = "prod_usage"
	refusalAggregatedUsage = "aggregated_usage"
	refusalForbid          = "forbid_scheduling"
	refusalMetricExpired   = "metric_expired"
)

// filterRefusals counts Filter refusals. A usage refusal counts once per
// resource over its threshold; forbid_scheduling and metric_expired judge
// the node as a whole and carry resource="". No node or pod labels: the
// series are bounded by reasons × configured resources.
var filterRefusals = metrics.NewCounterVec(&metrics.CounterOpts{
	Name:           "waterline_loadaware_filter_refusals_total",
	Help:           "Nodes LoadAware's Filter refused, by reason (usage, prod_usage, aggregated_usage, forbid_scheduling, metric_expired) and resource over its threshold (\"\" for node-wide reasons).",
	StabilityLevel: metrics.ALPHA,
}, []string{"reason", "resource"})

var registerMetricsOnce sync.Once

// registerMetrics registers the plugin's metrics with the scheduler's
// legacy registry, once however many profiles build the plugin.
func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(filterRefusals)
	})
}

// refusalCounters holds the refusal series resolved once per plugin, so a
// refusal increments without building label values.
type refusalCounters struct {
	expired, forbid metrics.CounterMetric
	// The usage reasons' series are indexed by the resource's index in the
	// configured resources.
	usage, prodUsage, aggregated [nodeload.MaxResources]metrics.CounterMetric
}

// newRefusalCounters registers the metrics and resolves every series the
// plugin can increment. Series of a component-base vector resolved before
// registration would be no-ops, hence the registration first.
func newRefusalCounters(r *nodeload.Resources) *refusalCounters {
	registerMetrics()
	c := &refusalCounters{
		expired: filterRefusals.WithLabelValues(refusalMetricExpired, ""),
		forbid:  filterRefusals.WithLabelValues(refusalForbid, ""),
	}
	for i := range r.Len() {
		name := string(r.Name(i))
		c.usage[i] = filterRefusals.WithLabelValues(refusalUsage, name)
		c.prodUsage[i] = filterRefusals.WithLabelValues(refusalProdUsage, name)
		c.aggregated[i] = filterRefusals.WithLabelValues(refusalAggregatedUsage, name)
	}
	return c
}

// count records one refusal.
func (c *refusalCounters) count(v nodeload.Verdict) {
	var per *[nodeload.MaxResources]metrics.CounterMetric
	switch v.Reason {
	case nodeload.ReasonMetricExpired:
		c.expired.Inc()
		return
	case nodeload.ReasonForbidScheduling:
		c.forbid.Inc()
		return
	case nodeload.ReasonUsage:
		per = &c.usage
	case nodeload.ReasonProdUsage:
		per = &c.prodUsage
	case nodeload.ReasonAggregatedUsage:
		per = &c.aggregated
	default:
		return
	}
	for i := range nodeload.MaxResources {
		if v.Over&(1<<i) != 0 && per[i] != nil {
			per[i].Inc()
		}
	}
}
