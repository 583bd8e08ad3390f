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
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// Reasons a node is refused, in Koordinator's words so that users of both
// read the same "0/N nodes are available" message. Like Koordinator's, a
// refusal by Prod usage reads as a usage refusal; which usage was judged
// (node, aggregate, Prod) is in the V(4) log with the numbers.
const (
	ReasonNodeMetricExpired = "node(s) nodeMetric expired"
	ReasonForbidScheduling  = "node(s) forbid scheduling of batch and free pods"
	reasonUsageFormat       = "node(s) %s usage exceed threshold"
	reasonAggregatedFormat  = "node(s) %s aggregated usage exceed threshold"
	// reasonExceedSuffix ends every usage refusal.
	reasonExceedSuffix = "usage exceed threshold"
)

// reasons holds every refusal message, built once per resource, so a
// refusal does not format strings per node.
type reasons struct {
	usage, aggregated [nodeload.MaxResources]string
}

func newReasons(r *nodeload.Resources) reasons {
	var out reasons
	for i := range r.Len() {
		name := string(r.Name(i))
		out.usage[i] = fmt.Sprintf(reasonUsageFormat, name)
		out.aggregated[i] = fmt.Sprintf(reasonAggregatedFormat, name)
	}
	return out
}

// of returns the messages of a refusal: one per resource over its threshold.
func (r *reasons) of(v nodeload.Verdict) []string {
	var per *[nodeload.MaxResources]string
	switch v.Reason {
	case nodeload.ReasonMetricExpired:
		return []string{ReasonNodeMetricExpired}
	case nodeload.ReasonForbidScheduling:
		return []string{ReasonForbidScheduling}
	case nodeload.ReasonUsage, nodeload.ReasonProdUsage:
		per = &r.usage
	case nodeload.ReasonAggregatedUsage:
		per = &r.aggregated
	default:
		return nil
	}
	var out []string
	for i := range nodeload.MaxResources {
		if v.Over&(1<<i) != 0 {
			out = append(out, per[i])
		}
	}
	return out
}

// mayHaveRefused reports whether LoadAware may be why a pending pod waits:
// it was not refused yet, or its PodScheduled=False message names one of
// LoadAware's reasons.
func (r *reasons) mayHaveRefused(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse {
			continue
		}
		return strings.Contains(c.Message, ReasonNodeMetricExpired) || strings.Contains(c.Message, ReasonForbidScheduling) ||
			strings.Contains(c.Message, reasonExceedSuffix)
	}
	return true
}
