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

package nodeload

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// CustomUsageThresholds is the value of the node annotation
// waterline.dev/usage-thresholds (Koordinator's CustomUsageThresholds;
// docs/design/loadaware.md#per-node-annotations). Each field that is set
// replaces the args' value of the same meaning for the node; fields left out
// keep the args' values.
type CustomUsageThresholds struct {
	// UsageThresholds replaces the args' usageThresholds as a whole.
	UsageThresholds map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	// ProdUsageThresholds replaces the args' prodUsageThresholds as a whole.
	ProdUsageThresholds map[corev1.ResourceName]int64 `json:"prodUsageThresholds,omitempty"`
	// AggregatedUsage replaces, field by field, the args' aggregated
	// thresholds and the aggregate they judge.
	AggregatedUsage *CustomAggregatedUsage `json:"aggregatedUsage,omitempty"`
}

// CustomAggregatedUsage is the aggregated part of CustomUsageThresholds.
type CustomAggregatedUsage struct {
	UsageThresholds         map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	UsageAggregationType    v1alpha1.AggregationType      `json:"usageAggregationType,omitempty"`
	UsageAggregatedDuration *metav1.Duration              `json:"usageAggregatedDuration,omitempty"`
}

// AggregationTypes are the statistics a NodeMetric can carry.
var AggregationTypes = []v1alpha1.AggregationType{
	v1alpha1.AggregationAvg, v1alpha1.AggregationP50, v1alpha1.AggregationP90,
	v1alpha1.AggregationP95, v1alpha1.AggregationP99, v1alpha1.AggregationMax,
}

// NodeThresholds returns the thresholds for a node: the Config's, replaced
// by what the node's waterline.dev/usage-thresholds annotation sets. An
// annotation that does not parse, holds a percentage outside [0, 100],
// names an unknown aggregation, or names a resource the Config does not
// track (add it to supportedResources) is ignored as a whole -- half of a
// node's intended thresholds is worse than none -- and the error says why.
func (c *Config) NodeThresholds(node *corev1.Node) (Thresholds, error) {
	t := c.Thresholds
	raw, ok := node.Annotations[extension.AnnotationUsageThresholds]
	if !ok {
		return t, nil
	}
	fail := func(err error) (Thresholds, error) {
		return c.Thresholds, fmt.Errorf("ignoring annotation %s=%q of node %s: %w", extension.AnnotationUsageThresholds, raw, node.Name, err)
	}
	var custom CustomUsageThresholds
	if err := json.Unmarshal([]byte(raw), &custom); err != nil {
		return fail(err)
	}
	var errs []error
	percents := func(field string, m map[corev1.ResourceName]int64) Vector {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			p := m[name]
			if _, tracked := c.Resources.Index(name); !tracked {
				errs = append(errs, fmt.Errorf("%s: resource %s is not tracked (list it in supportedResources)", field, name))
			}
			if p < 0 || p > 100 {
				errs = append(errs, fmt.Errorf("%s: %s threshold %d is outside [0, 100]", field, name, p))
			}
		}
		return c.Resources.Percents(m)
	}
	if custom.UsageThresholds != nil {
		t.Usage = percents("usageThresholds", custom.UsageThresholds)
	}
	if custom.ProdUsageThresholds != nil {
		t.Prod = percents("prodUsageThresholds", custom.ProdUsageThresholds)
	}
	if agg := custom.AggregatedUsage; agg != nil {
		if agg.UsageThresholds != nil {
			t.Aggregated = percents("aggregatedUsage.usageThresholds", agg.UsageThresholds)
		}
		if agg.UsageAggregationType != "" {
			if !slices.Contains(AggregationTypes, agg.UsageAggregationType) {
				errs = append(errs, fmt.Errorf("aggregatedUsage.usageAggregationType: unknown type %q", agg.UsageAggregationType))
			}
			t.Aggregation.Type = agg.UsageAggregationType
		}
		if agg.UsageAggregatedDuration != nil {
			if agg.UsageAggregatedDuration.Duration < 0 {
				errs = append(errs, fmt.Errorf("aggregatedUsage.usageAggregatedDuration: %s is negative", agg.UsageAggregatedDuration.Duration))
			}
			t.Aggregation.Duration = agg.UsageAggregatedDuration.Duration
		}
	}
	if len(errs) > 0 {
		return fail(errors.Join(errs...))
	}
	return t, nil
}

// Allocatable returns what the node offers: status.allocatable, with the
// resources the waterline.dev/raw-allocatable annotation (a JSON
// ResourceList) names replaced by the annotation's values. A malformed
// annotation is ignored and returned as the error.
func (c *Config) Allocatable(node *corev1.Node) (Vector, error) {
	alloc := c.Resources.Vector(node.Status.Allocatable)
	raw, ok := node.Annotations[extension.AnnotationRawAllocatable]
	if !ok {
		return alloc, nil
	}
	var rl corev1.ResourceList
	if err := json.Unmarshal([]byte(raw), &rl); err != nil {
		return alloc, fmt.Errorf("ignoring annotation %s=%q of node %s: %w", extension.AnnotationRawAllocatable, raw, node.Name, err)
	}
	// A value of 0 or below would turn the threshold of its resource off
	// (nothing can be judged against it) and let the node take any load:
	// like a malformed annotation, it is ignored as a whole.
	var errs []error
	raws := alloc
	for i := range c.Resources.Len() {
		name := c.Resources.Name(i)
		q, ok := rl[name]
		if !ok {
			continue
		}
		if v := value(i, q); v > 0 {
			raws[i] = v
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s is not positive", name, q.String()))
	}
	if len(errs) > 0 {
		return alloc, fmt.Errorf("ignoring annotation %s=%q of node %s: %w", extension.AnnotationRawAllocatable, raw, node.Name, errors.Join(errs...))
	}
	return raws, nil
}
