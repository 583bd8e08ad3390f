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

package qos

import (
	"cmp"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// MaxCustomMetricThreshold is the highest rule threshold of a custom metric,
// in the metric's own unit: far below what int64 holds, so no conversion
// wraps.
const MaxCustomMetricThreshold = v1alpha1.MaxCustomMetricThreshold

var customNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// CustomMetricAttributes are the attributes a user gives a metric of their
// own (docs/design/node-qos.md#custom-metrics). Throttling acts on CPU
// quotas only, so a custom metric is never throttleable: it is evictable
// (or only sortable and a ForbidScheduling line).
type CustomMetricAttributes struct {
	// Name is the metric's name in NodeQOS rules: lower case letters,
	// digits and underscores, at most 63, starting with a letter, and not
	// a built-in rule metric.
	Name MetricName
	// ActionPriority, 0 to 10, as Metric.ActionPriority.
	ActionPriority int32
	// Sortable orders pods by their usage of the metric, the biggest user
	// first (after band, class and priority); otherwise GeneralSorter.
	Sortable bool
	// Evictable: evicting a pod releases its usage of the metric.
	Evictable bool
	// EvictQuantified: the pod's measured usage is what its eviction
	// releases, so the planner evicts only as many pods as the gap needs.
	EvictQuantified bool
}

// ValidateCustomMetricName returns why name cannot name a custom metric.
func ValidateCustomMetricName(name MetricName, path *field.Path) field.ErrorList {
	switch v1alpha1.QOSMetric(name) {
	case v1alpha1.MetricCPUUsage, v1alpha1.MetricCPUUtilization, v1alpha1.MetricMemoryUsage, v1alpha1.MetricMemoryUtilization:
		return field.ErrorList{field.Invalid(path, name, "is a built-in metric")}
	}
	if !customNameRE.MatchString(string(name)) {
		return field.ErrorList{field.Invalid(path, name, "must be 1-63 lower case letters, digits or underscores, starting with a letter")}
	}
	return nil
}

// CustomMetric returns the Metric of a user's metric: its pods' usage is
// Candidate.Metrics[name], and evicting a pod releases that usage.
func CustomMetric(a CustomMetricAttributes) (Metric, error) {
	if errs := ValidateCustomMetricName(a.Name, field.NewPath("name")); len(errs) > 0 {
		return Metric{}, errs.ToAggregate()
	}
	name := a.Name
	m := Metric{
		Name:            name,
		ActionPriority:  a.ActionPriority,
		Sortable:        a.Sortable,
		Evictable:       a.Evictable,
		EvictQuantified: a.EvictQuantified,
	}
	if a.Sortable {
		m.Sorter = MetricSorter(name)
	}
	if a.Evictable {
		m.Evict = func(c *Candidate) int64 { return c.Usage(name) }
	}
	if errs := ValidateMetric(&m, field.NewPath("metric")); len(errs) > 0 {
		return Metric{}, errs.ToAggregate()
	}
	return m, nil
}

// MetricSorter orders by class and priority, then usage of m (the biggest
// user closes the gap with the fewest pods), then running time.
func MetricSorter(m MetricName) Sorter {
	return OrderedBy(ClassAndPriority, func(a, b *Candidate) int { return cmp.Compare(b.Usage(m), a.Usage(m)) }, RunningTime)
}

// customRuleValue converts the threshold of a rule on a registered custom
// metric: the metric's own unit, rounded up to an integer. The validation
// bounded it by MaxCustomMetricThreshold, so it does not wrap.
func customRuleValue(r *v1alpha1.WaterlineRule) int64 {
	return max(1, r.Threshold.Value())
}
