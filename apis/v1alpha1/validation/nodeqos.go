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

package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Bounds the NodeQOS schema declares in its markers; the numeric ones of
// thresholds and eviction rates are the v1alpha1 constants.
const (
	// maxSampleCount bounds avoidanceCount and restoreCount.
	maxSampleCount = 100
	// maxRules bounds spec.rules.
	maxRules = 32
	// maxProtectedNamespaces bounds spec.protectedNamespaces.
	maxProtectedNamespaces = 64
	// maxNameLength bounds a rule name and a protected namespace.
	maxNameLength = 63
	// maxWindowSeconds bounds cpuEviction.windowSeconds.
	maxWindowSeconds = 3600
	// maxSatisfactionUpperPercent bounds cpuEviction.satisfactionUpperPercent:
	// a satisfaction above 100 % asks for pods using more than they request.
	maxSatisfactionUpperPercent = 1000
)

var (
	maxCPUUsageThreshold    = resource.MustParse(v1alpha1.MaxCPUUsageThreshold)
	maxMemoryUsageThreshold = resource.MustParse(v1alpha1.MaxMemoryUsageThreshold)
	maxCustomThreshold      = resource.MustParse(v1alpha1.MaxCustomMetricThreshold)
	maxUtilization          = resource.MustParse("100")
)

// CustomMetric is a rule metric, besides the four built-in ones, that the
// validating component can measure on a node, and what it can do about it
// (docs/design/node-qos.md#custom-metrics). The API server cannot know a
// node's custom metrics, so it admits any well-formed metric name; an
// agent refuses a rule on a metric it does not measure.
type CustomMetric struct {
	// Name is the metric's name in rules.
	Name v1alpha1.QOSMetric
	// Throttleable: a Throttle rule may name the metric.
	Throttleable bool
	// Evictable: an Evict rule may name the metric.
	Evictable bool
}

// NodeQOSOptions tune ValidateNodeQOSSpec.
type NodeQOSOptions struct {
	// CustomMetrics are the metrics, besides the built-in ones, that rules
	// may name, in the order an unsupported metric's error lists them.
	// Empty: rules may name only cpu_usage, cpu_utilization, memory_usage
	// and memory_utilization.
	CustomMetrics []CustomMetric
}

func (o NodeQOSOptions) custom(m v1alpha1.QOSMetric) (CustomMetric, bool) {
	for _, c := range o.CustomMetrics {
		if c.Name == m {
			return c, true
		}
	}
	return CustomMetric{}, false
}

// ruleMetrics lists the metrics a rule may name with o.
func (o NodeQOSOptions) ruleMetrics() []string {
	out := []string{string(v1alpha1.MetricCPUUsage), string(v1alpha1.MetricCPUUtilization),
		string(v1alpha1.MetricMemoryUsage), string(v1alpha1.MetricMemoryUtilization)}
	for _, c := range o.CustomMetrics {
		out = append(out, string(c.Name))
	}
	return out
}

// IsBuiltinRuleMetric says whether m is one of the metrics every agent
// measures: cpu_usage, cpu_utilization, memory_usage, memory_utilization.
func IsBuiltinRuleMetric(m v1alpha1.QOSMetric) bool {
	switch m {
	case v1alpha1.MetricCPUUsage, v1alpha1.MetricCPUUtilization, v1alpha1.MetricMemoryUsage, v1alpha1.MetricMemoryUtilization:
		return true
	}
	return false
}

// ValidateNodeQOSSpec returns every error of spec on its own, on any node:
// bounds of each field, the order of the waterlines of one object in
// comparable units (forbid scheduling <= throttle < evict, restore <=
// throttle), rule metrics, actions and thresholds, and list sizes. Unset
// tuning fields are checked with their defaults, as the API server checks
// them after defaulting. Each error is under fldPath (a NodeQOS's
// "spec"); a nil spec is valid.
//
// It does not check what needs a node's capacity; BuildWaterlines does
// (pkg/core/qos).
func ValidateNodeQOSSpec(spec *v1alpha1.NodeQOSSpec, fldPath *field.Path, opts NodeQOSOptions) field.ErrorList {
	if spec == nil {
		return nil
	}
	var errs field.ErrorList
	if spec.NodeSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.NodeSelector,
			metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("nodeSelector"))...)
	}
	// Unset tuning is checked with its default (the values of
	// v1alpha1.NodeQOSSpecWithDefaults, without copying the spec): the
	// cross-field check of satisfaction lower <= upper sees them, as
	// admission does, the API server defaulting before it validates.
	errs = append(errs, ValidateSampleCount(fldPath.Child("avoidanceCount"), ptr.Deref(spec.AvoidanceCount, v1alpha1.DefaultAvoidanceCount))...)
	errs = append(errs, ValidateSampleCount(fldPath.Child("restoreCount"), ptr.Deref(spec.RestoreCount, v1alpha1.DefaultRestoreCount))...)
	throttle := ptr.Deref(spec.Throttle, v1alpha1.ThrottlePolicy{})
	errs = append(errs, ValidateThrottleTuning(fldPath.Child("throttle"),
		ptr.Deref(throttle.StepPercent, v1alpha1.DefaultThrottleStepPercent),
		ptr.Deref(throttle.MinCPUPercent, v1alpha1.DefaultThrottleMinCPUPercent))...)
	e := ptr.Deref(spec.CPUEviction, v1alpha1.CPUEvictionPolicy{})
	errs = append(errs, ValidateCPUEvictionTuning(fldPath.Child("cpuEviction"),
		ptr.Deref(e.WindowSeconds, v1alpha1.DefaultCPUEvictWindowSeconds),
		ptr.Deref(e.SatisfactionLowerPercent, v1alpha1.DefaultSatisfactionLowerPercent),
		ptr.Deref(e.SatisfactionUpperPercent, v1alpha1.DefaultSatisfactionUpperPercent),
		ptr.Deref(e.BEUsageThresholdPercent, v1alpha1.DefaultBEUsageThresholdPercent))...)
	errs = append(errs, validateEviction(fldPath.Child("eviction"), spec.Eviction)...)
	errs = append(errs, validateCPUWaterlines(fldPath.Child("cpu"), spec.CPU)...)
	errs = append(errs, validateMemoryWaterlines(fldPath.Child("memory"), spec.Memory)...)
	errs = append(errs, validateRules(fldPath.Child("rules"), spec.Rules, opts)...)
	errs = append(errs, validateRuleOrder(fldPath.Child("rules"), spec)...)
	errs = append(errs, validateProtectedNamespaces(fldPath.Child("protectedNamespaces"), spec.ProtectedNamespaces)...)
	return errs
}

// ValidateSampleCount checks an avoidance or restore count: 1 to 100
// consecutive samples.
func ValidateSampleCount(fldPath *field.Path, n int32) field.ErrorList {
	if n < 1 || n > maxSampleCount {
		return field.ErrorList{field.Invalid(fldPath, n, fmt.Sprintf("must be between 1 and %d", maxSampleCount))}
	}
	return nil
}

// ValidateThrottleTuning checks spec.throttle: both percents in [1, 100].
func ValidateThrottleTuning(fldPath *field.Path, stepPercent, minCPUPercent int32) field.ErrorList {
	var errs field.ErrorList
	if stepPercent < 1 || stepPercent > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("stepPercent"), stepPercent, "must be between 1 and 100"))
	}
	if minCPUPercent < 1 || minCPUPercent > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("minCPUPercent"), minCPUPercent, "must be between 1 and 100"))
	}
	return errs
}

// ValidateCPUEvictionTuning checks spec.cpuEviction: the window in [1,
// 3600] s, the lower satisfaction and the usage threshold in [0, 100] %,
// the upper satisfaction in [0, 1000] % and not below the lower one.
func ValidateCPUEvictionTuning(fldPath *field.Path, windowSeconds int64, lower, upper, beUsageThreshold int32) field.ErrorList {
	var errs field.ErrorList
	if windowSeconds < 1 || windowSeconds > maxWindowSeconds {
		errs = append(errs, field.Invalid(fldPath.Child("windowSeconds"), windowSeconds, fmt.Sprintf("must be between 1 and %d", maxWindowSeconds)))
	}
	if lower < 0 || lower > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("satisfactionLowerPercent"), lower, "must be between 0 and 100"))
	}
	if upper < 0 || upper > maxSatisfactionUpperPercent {
		errs = append(errs, field.Invalid(fldPath.Child("satisfactionUpperPercent"), upper, fmt.Sprintf("must be between 0 and %d", maxSatisfactionUpperPercent)))
	}
	if lower > upper {
		errs = append(errs, field.Invalid(fldPath.Child("satisfactionLowerPercent"), lower,
			fmt.Sprintf("must not be above satisfactionUpperPercent (%d)", upper)))
	}
	if beUsageThreshold < 0 || beUsageThreshold > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("beUsageThresholdPercent"), beUsageThreshold, "must be between 0 and 100"))
	}
	return errs
}

func validateEviction(fldPath *field.Path, e *v1alpha1.EvictionPolicy) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if m := e.MaxPerMinute; m != nil && (*m < 1 || *m > v1alpha1.MaxEvictionsPerMinute) {
		errs = append(errs, field.Invalid(fldPath.Child("maxPerMinute"), *m,
			fmt.Sprintf("must be between 1 and %d", v1alpha1.MaxEvictionsPerMinute)))
	}
	if g := e.GracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("gracePeriodSeconds"), *g, "must not be negative"))
	}
	return errs
}

// validatePercent checks a first-class waterline: 1 to 100 % (0 would act
// on an idle node: every Batch pod throttled or evicted at once).
func validatePercent(fldPath *field.Path, pct *int32) field.ErrorList {
	if pct != nil && (*pct < 1 || *pct > 100) {
		return field.ErrorList{field.Invalid(fldPath, *pct, "must be between 1 and 100")}
	}
	return nil
}

func validateCPUWaterlines(fldPath *field.Path, c *v1alpha1.CPUWaterlines) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validatePercent(fldPath.Child("forbidSchedulingPercent"), c.ForbidSchedulingPercent)...)
	errs = append(errs, validatePercent(fldPath.Child("throttlePercent"), c.ThrottlePercent)...)
	errs = append(errs, validatePercent(fldPath.Child("restorePercent"), c.RestorePercent)...)
	errs = append(errs, validatePercent(fldPath.Child("evictPercent"), c.EvictPercent)...)
	if c.RestorePercent != nil {
		switch {
		case c.ThrottlePercent == nil:
			errs = append(errs, field.Invalid(fldPath.Child("restorePercent"), *c.RestorePercent, "needs throttlePercent"))
		case *c.RestorePercent > *c.ThrottlePercent:
			errs = append(errs, field.Invalid(fldPath.Child("restorePercent"), *c.RestorePercent,
				fmt.Sprintf("must not be above throttlePercent (%d)", *c.ThrottlePercent)))
		}
	}
	if c.EvictPercent != nil && c.ThrottlePercent != nil && *c.EvictPercent <= *c.ThrottlePercent {
		errs = append(errs, field.Invalid(fldPath.Child("evictPercent"), *c.EvictPercent,
			fmt.Sprintf("must be greater than throttlePercent (%d)", *c.ThrottlePercent)))
	}
	if c.ThrottlePercent != nil && c.ForbidSchedulingPercent != nil && *c.ThrottlePercent < *c.ForbidSchedulingPercent {
		errs = append(errs, field.Invalid(fldPath.Child("throttlePercent"), *c.ThrottlePercent,
			fmt.Sprintf("must be at least forbidSchedulingPercent (%d)", *c.ForbidSchedulingPercent)))
	}
	if c.EvictPercent != nil && c.ForbidSchedulingPercent != nil && *c.EvictPercent <= *c.ForbidSchedulingPercent {
		errs = append(errs, field.Invalid(fldPath.Child("evictPercent"), *c.EvictPercent,
			fmt.Sprintf("must be greater than forbidSchedulingPercent (%d)", *c.ForbidSchedulingPercent)))
	}
	return errs
}

func validateMemoryWaterlines(fldPath *field.Path, m *v1alpha1.MemoryWaterlines) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validatePercent(fldPath.Child("forbidSchedulingPercent"), m.ForbidSchedulingPercent)...)
	errs = append(errs, validatePercent(fldPath.Child("evictPercent"), m.EvictPercent)...)
	if m.EvictPercent != nil && m.ForbidSchedulingPercent != nil && *m.EvictPercent <= *m.ForbidSchedulingPercent {
		errs = append(errs, field.Invalid(fldPath.Child("evictPercent"), *m.EvictPercent, "must be greater than forbidSchedulingPercent"))
	}
	return errs
}

// validateRules checks each rule on its own: name, counts, metric, action
// and threshold.
func validateRules(fldPath *field.Path, rules []v1alpha1.WaterlineRule, opts NodeQOSOptions) field.ErrorList {
	var errs field.ErrorList
	if len(rules) > maxRules {
		errs = append(errs, field.TooMany(fldPath, len(rules), maxRules))
	}
	seen := map[string]bool{}
	for i := range rules {
		r := &rules[i]
		p := fldPath.Index(i)
		switch {
		case r.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a rule needs a name"))
		case len(r.Name) > maxNameLength:
			errs = append(errs, field.TooLong(p.Child("name"), r.Name, maxNameLength))
		case seen[r.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		seen[r.Name] = true
		// An unset count is the spec's, checked there once.
		if r.AvoidanceCount != nil {
			errs = append(errs, ValidateSampleCount(p.Child("avoidanceCount"), *r.AvoidanceCount)...)
		}
		if r.RestoreCount != nil {
			errs = append(errs, ValidateSampleCount(p.Child("restoreCount"), *r.RestoreCount)...)
		}
		builtin := IsBuiltinRuleMetric(r.Metric)
		custom, isCustom := opts.custom(r.Metric)
		if !builtin && isCustom {
			switch {
			case r.Action == v1alpha1.ActionThrottle && !custom.Throttleable:
				errs = append(errs, field.Invalid(p.Child("action"), r.Action, fmt.Sprintf("metric %s is not throttleable", r.Metric)))
			case r.Action == v1alpha1.ActionEvict && !custom.Evictable:
				errs = append(errs, field.Invalid(p.Child("action"), r.Action, fmt.Sprintf("metric %s is not evictable", r.Metric)))
			}
		}
		if msg := thresholdError(r); msg != "" {
			errs = append(errs, field.Invalid(p.Child("threshold"), r.Threshold.String(), msg))
		}
		if !builtin && !isCustom {
			errs = append(errs, field.NotSupported(p.Child("metric"), r.Metric, opts.ruleMetrics()))
		}
		switch r.Action {
		case v1alpha1.ActionForbidScheduling, v1alpha1.ActionThrottle, v1alpha1.ActionEvict:
		default:
			errs = append(errs, field.NotSupported(p.Child("action"), r.Action, []v1alpha1.QOSAction{
				v1alpha1.ActionForbidScheduling, v1alpha1.ActionThrottle, v1alpha1.ActionEvict}))
		}
	}
	return errs
}

// thresholdError says why a rule's threshold is out of bounds, or "".
// Bounds are checked on the quantity, before any conversion: MilliValue and
// Value wrap or saturate past int64 (10E of memory_usage became a line at
// 0).
func thresholdError(r *v1alpha1.WaterlineRule) string {
	t := &r.Threshold
	if t.Sign() <= 0 {
		// A line at 0 is crossed by any usage: every Batch pod acted on.
		return "must be greater than 0"
	}
	switch r.Metric {
	case v1alpha1.MetricCPUUsage:
		if t.Cmp(maxCPUUsageThreshold) > 0 {
			return fmt.Sprintf("must not be above %s cores", v1alpha1.MaxCPUUsageThreshold)
		}
	case v1alpha1.MetricMemoryUsage:
		if t.Cmp(maxMemoryUsageThreshold) > 0 {
			return fmt.Sprintf("must not be above %s bytes", v1alpha1.MaxMemoryUsageThreshold)
		}
	case v1alpha1.MetricCPUUtilization, v1alpha1.MetricMemoryUtilization:
		if t.Cmp(maxUtilization) > 0 {
			return "a utilization is a percent and must not be above 100"
		}
	default:
		if t.Cmp(maxCustomThreshold) > 0 {
			return fmt.Sprintf("must not be above %s", v1alpha1.MaxCustomMetricThreshold)
		}
	}
	return ""
}

// validateRuleOrder checks that the rules keep forbid scheduling <=
// throttle < evict among themselves, per metric, and against the cpu and
// memory percents for the *_utilization metrics: the checks of the
// schema's CEL rules on NodeQOSSpec, pair by pair as they are written
// there. Comparing a cpu_usage rule with a percent needs the node's
// capacity and is BuildWaterlines'.
func validateRuleOrder(fldPath *field.Path, spec *v1alpha1.NodeQOSSpec) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Rules {
		r := &spec.Rules[i]
		p := fldPath.Index(i).Child("threshold")
		invalid := func(msg string) {
			errs = append(errs, field.Invalid(p, r.Threshold.String(), msg))
		}
		for j := range spec.Rules {
			o := &spec.Rules[j]
			if j == i || o.Metric != r.Metric {
				continue
			}
			switch {
			case r.Action == v1alpha1.ActionEvict && o.Action != v1alpha1.ActionEvict && r.Threshold.Cmp(o.Threshold) <= 0:
				invalid(fmt.Sprintf("an Evict rule's threshold must be above the %s threshold of the same metric (rule %q at %s)",
					o.Action, o.Name, o.Threshold.String()))
			case r.Action == v1alpha1.ActionForbidScheduling && o.Action == v1alpha1.ActionThrottle && r.Threshold.Cmp(o.Threshold) > 0:
				invalid(fmt.Sprintf("a ForbidScheduling rule's threshold must not be above the Throttle threshold of the same metric (rule %q at %s)",
					o.Name, o.Threshold.String()))
			}
		}
		// cmpPct compares the threshold, a percent, with a percent field.
		cmpPct := func(pct int32) int { return r.Threshold.Cmp(*resource.NewQuantity(int64(pct), resource.DecimalSI)) }
		switch {
		case r.Metric == v1alpha1.MetricCPUUtilization && spec.CPU != nil:
			c := spec.CPU
			if r.Action == v1alpha1.ActionEvict {
				if c.ThrottlePercent != nil && cmpPct(*c.ThrottlePercent) <= 0 {
					invalid(fmt.Sprintf("a cpu_utilization Evict rule must be above cpu.throttlePercent (%d)", *c.ThrottlePercent))
				}
				if c.ForbidSchedulingPercent != nil && cmpPct(*c.ForbidSchedulingPercent) <= 0 {
					invalid(fmt.Sprintf("a cpu_utilization Evict rule must be above cpu.forbidSchedulingPercent (%d)", *c.ForbidSchedulingPercent))
				}
				break
			}
			if c.EvictPercent != nil && cmpPct(*c.EvictPercent) >= 0 {
				invalid(fmt.Sprintf("a cpu_utilization %s rule must be below cpu.evictPercent (%d)", r.Action, *c.EvictPercent))
			}
			if r.Action == v1alpha1.ActionThrottle && c.ForbidSchedulingPercent != nil && cmpPct(*c.ForbidSchedulingPercent) < 0 {
				invalid(fmt.Sprintf("a cpu_utilization Throttle rule must be at least cpu.forbidSchedulingPercent (%d)", *c.ForbidSchedulingPercent))
			}
			if r.Action == v1alpha1.ActionForbidScheduling && c.ThrottlePercent != nil && cmpPct(*c.ThrottlePercent) > 0 {
				invalid(fmt.Sprintf("a cpu_utilization ForbidScheduling rule must not be above cpu.throttlePercent (%d)", *c.ThrottlePercent))
			}
		case r.Metric == v1alpha1.MetricMemoryUtilization && spec.Memory != nil:
			m := spec.Memory
			if r.Action == v1alpha1.ActionEvict && m.ForbidSchedulingPercent != nil && cmpPct(*m.ForbidSchedulingPercent) <= 0 {
				invalid(fmt.Sprintf("a memory_utilization Evict rule must be above memory.forbidSchedulingPercent (%d)", *m.ForbidSchedulingPercent))
			}
			if r.Action == v1alpha1.ActionForbidScheduling && m.EvictPercent != nil && cmpPct(*m.EvictPercent) >= 0 {
				invalid(fmt.Sprintf("a memory_utilization ForbidScheduling rule must be below memory.evictPercent (%d)", *m.EvictPercent))
			}
		}
	}
	return errs
}

func validateProtectedNamespaces(fldPath *field.Path, namespaces []string) field.ErrorList {
	var errs field.ErrorList
	if len(namespaces) > maxProtectedNamespaces {
		errs = append(errs, field.TooMany(fldPath, len(namespaces), maxProtectedNamespaces))
	}
	seen := map[string]bool{}
	for i, ns := range namespaces {
		if len(ns) > maxNameLength {
			errs = append(errs, field.TooLong(fldPath.Index(i), ns, maxNameLength))
		}
		if seen[ns] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), ns))
		}
		seen[ns] = true
	}
	return errs
}
