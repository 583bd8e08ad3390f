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

package executor

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// CustomMetricsFile is the agent's --custom-metrics file
// (docs/design/node-qos.md#custom-metrics): metrics read from a file of each
// pod's cgroup, with the attributes of Crane precise execution, that
// NodeQOS rules may then name.
//
//	metrics:
//	- name: cpu_user_millicores
//	  controller: cpuacct
//	  file: cpuacct.usage_user
//	  type: counter        # rate per second; or gauge
//	  divisor: 1000000     # ns/s -> millicores
//	  actionPriority: 4
//	  sortable: true
//	  evictable: true
//	  evictQuantified: true
type CustomMetricsFile struct {
	Metrics []CustomMetricSpec `json:"metrics"`
}

// CustomMetricSpec is one custom metric of a CustomMetricsFile.
type CustomMetricSpec struct {
	// Name is the metric's name in NodeQOS rules (lower case letters,
	// digits, underscores; not a built-in metric).
	Name string `json:"name"`
	// Controller is the cgroup v1 hierarchy holding the file (ignored on
	// v2).
	Controller string `json:"controller"`
	// File is the file's name in each pod's cgroup directory.
	File string `json:"file"`
	// Key reads one key of a flat-keyed file such as memory.stat.
	Key string `json:"key,omitempty"`
	// Type is counter (the metric is the rate per second) or gauge.
	Type string `json:"type"`
	// Divisor scales the value down (default 1).
	Divisor int64 `json:"divisor,omitempty"`
	// ActionPriority, 0-10, picks the metric whose order a fallback uses.
	ActionPriority int32 `json:"actionPriority,omitempty"`
	// Sortable orders pods by their usage of the metric, biggest first.
	Sortable bool `json:"sortable,omitempty"`
	// Throttleable must stay false: throttling acts on CPU quotas, and
	// what a quota releases of another metric is not known.
	Throttleable bool `json:"throttleable,omitempty"`
	// Evictable: evicting a pod releases its usage of the metric.
	Evictable bool `json:"evictable,omitempty"`
	// EvictQuantified: a pod's usage is what its eviction releases, so only
	// as many pods are evicted as the gap needs.
	EvictQuantified bool `json:"evictQuantified,omitempty"`
}

// CustomMetrics are the validated custom metrics: how the collector reads
// them and the registry the executor plans with.
type CustomMetrics struct {
	Collector  []collector.CustomMetric
	QoSMetrics *qos.Registry
}

// LoadCustomMetrics reads and validates a --custom-metrics file. Every
// error names the field (customMetrics.metrics[i].x) and its value.
func LoadCustomMetrics(path string) (*CustomMetrics, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the custom metrics file: %w", err)
	}
	var f CustomMetricsFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("parsing the custom metrics file %s: %w", path, err)
	}
	cm, err := f.Build()
	if err != nil {
		return nil, fmt.Errorf("custom metrics file %s: %w", path, err)
	}
	return cm, nil
}

// Build validates f and returns its metrics, or every error.
func (f *CustomMetricsFile) Build() (*CustomMetrics, error) {
	base := field.NewPath("customMetrics", "metrics")
	var errs field.ErrorList
	out := &CustomMetrics{QoSMetrics: qos.DefaultRegistry()}
	for i, s := range f.Metrics {
		p := base.Index(i)
		errs = append(errs, qos.ValidateCustomMetricName(qos.MetricName(s.Name), p.Child("name"))...)
		if s.Throttleable {
			errs = append(errs, field.Invalid(p.Child("throttleable"), true, "custom metrics cannot be throttled: throttling sets CPU quotas, and what a quota releases of another metric is not known; use Evict or ForbidScheduling rules"))
		}
		if s.ActionPriority < 0 || s.ActionPriority > 10 {
			errs = append(errs, field.Invalid(p.Child("actionPriority"), s.ActionPriority, "must be between 0 and 10"))
		}
		if s.EvictQuantified && !s.Evictable {
			errs = append(errs, field.Invalid(p.Child("evictQuantified"), true, "only an evictable metric can be evict-quantified"))
		}
		out.Collector = append(out.Collector, collector.CustomMetric{
			Name: s.Name, Controller: cgroups.Controller(s.Controller), File: s.File, Key: s.Key,
			Kind: collector.CustomKind(s.Type), Divisor: s.Divisor,
		})
	}
	errs = append(errs, collector.ValidateCustomMetrics(out.Collector, base)...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	for _, s := range f.Metrics {
		m, err := qos.CustomMetric(qos.CustomMetricAttributes{
			Name: qos.MetricName(s.Name), ActionPriority: s.ActionPriority,
			Sortable: s.Sortable, Evictable: s.Evictable, EvictQuantified: s.EvictQuantified,
		})
		if err == nil {
			err = out.QoSMetrics.Register(m)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
