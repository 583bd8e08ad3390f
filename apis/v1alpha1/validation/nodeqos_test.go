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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func rule(name string, m v1alpha1.QOSMetric, a v1alpha1.QOSAction, threshold string) v1alpha1.WaterlineRule {
	return v1alpha1.WaterlineRule{Name: name, Metric: m, Action: a, Threshold: resource.MustParse(threshold)}
}

func pct(v int32) *int32 { return ptr.To(v) }

// got renders errors as "field: type: detail", the way kubectl shows them
// without the value.
func got(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	return out
}

var gpu = NodeQOSOptions{CustomMetrics: []CustomMetric{
	{Name: "gpu_usage", Evictable: true},
	{Name: "io_pressure"},
}}

func TestValidateNodeQOSSpec(t *testing.T) {
	tests := []struct {
		name string
		spec v1alpha1.NodeQOSSpec
		opts NodeQOSOptions
		want []string // "field: type: detail"
	}{
		{name: "an empty spec is valid: every waterline off, tuning defaulted"},
		{
			name: "a complete ordered spec at its bounds is valid",
			spec: v1alpha1.NodeQOSSpec{
				NodeSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "colo"}},
				CPU:            &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: pct(60), ThrottlePercent: pct(70), RestorePercent: pct(60), EvictPercent: pct(100)},
				Memory:         &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(1), EvictPercent: pct(95)},
				AvoidanceCount: pct(100), RestoreCount: pct(1),
				Throttle:    &v1alpha1.ThrottlePolicy{StepPercent: pct(100), MinCPUPercent: pct(1)},
				CPUEviction: &v1alpha1.CPUEvictionPolicy{WindowSeconds: ptr.To[int64](3600), SatisfactionLowerPercent: pct(0), SatisfactionUpperPercent: pct(1000), BEUsageThresholdPercent: pct(100)},
				Eviction:    &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To(v1alpha1.MaxEvictionsPerMinute), GracePeriodSeconds: ptr.To[int64](0)},
				Rules: []v1alpha1.WaterlineRule{
					rule("cpu-forbid", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "65"),
					rule("cpu-throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "70"),
					rule("cpu-cores", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, v1alpha1.MaxCPUUsageThreshold),
					rule("mem-bytes", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, v1alpha1.MaxMemoryUsageThreshold),
					rule("mem-util", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "100"),
					rule("gpu", "gpu_usage", v1alpha1.ActionEvict, v1alpha1.MaxCustomMetricThreshold),
					rule("tiny", v1alpha1.MetricCPUUsage, v1alpha1.ActionForbidScheduling, "1n"),
				},
				ProtectedNamespaces: []string{"waterline-system", strings.Repeat("n", 63)},
			},
			opts: gpu,
		},
		{
			name: "percents outside 1-100",
			spec: v1alpha1.NodeQOSSpec{
				CPU:    &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: pct(0), ThrottlePercent: pct(101)},
				Memory: &v1alpha1.MemoryWaterlines{EvictPercent: pct(-1)},
			},
			want: []string{
				"spec.cpu.forbidSchedulingPercent: Invalid value: must be between 1 and 100",
				"spec.cpu.throttlePercent: Invalid value: must be between 1 and 100",
				"spec.memory.evictPercent: Invalid value: must be between 1 and 100",
			},
		},
		{
			name: "cpu percents out of order, each named where the schema names it",
			spec: v1alpha1.NodeQOSSpec{CPU: &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: pct(80), ThrottlePercent: pct(70), RestorePercent: pct(75), EvictPercent: pct(70)}},
			want: []string{
				"spec.cpu.restorePercent: Invalid value: must not be above throttlePercent (70)",
				"spec.cpu.evictPercent: Invalid value: must be greater than throttlePercent (70)",
				"spec.cpu.throttlePercent: Invalid value: must be at least forbidSchedulingPercent (80)",
				"spec.cpu.evictPercent: Invalid value: must be greater than forbidSchedulingPercent (80)",
			},
		},
		{
			name: "a restore line without a throttle line",
			spec: v1alpha1.NodeQOSSpec{CPU: &v1alpha1.CPUWaterlines{RestorePercent: pct(50)}},
			want: []string{"spec.cpu.restorePercent: Invalid value: needs throttlePercent"},
		},
		{
			name: "memory evict at its forbid line",
			spec: v1alpha1.NodeQOSSpec{Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(90), EvictPercent: pct(90)}},
			want: []string{"spec.memory.evictPercent: Invalid value: must be greater than forbidSchedulingPercent"},
		},
		{
			name: "counts and tuning out of range",
			spec: v1alpha1.NodeQOSSpec{
				AvoidanceCount: pct(0), RestoreCount: pct(101),
				Throttle:    &v1alpha1.ThrottlePolicy{StepPercent: pct(0), MinCPUPercent: pct(101)},
				CPUEviction: &v1alpha1.CPUEvictionPolicy{WindowSeconds: ptr.To[int64](3601), SatisfactionUpperPercent: pct(1001), BEUsageThresholdPercent: pct(-1)},
				Eviction:    &v1alpha1.EvictionPolicy{MaxPerMinute: pct(601), GracePeriodSeconds: ptr.To[int64](-1)},
			},
			want: []string{
				"spec.avoidanceCount: Invalid value: must be between 1 and 100",
				"spec.restoreCount: Invalid value: must be between 1 and 100",
				"spec.throttle.stepPercent: Invalid value: must be between 1 and 100",
				"spec.throttle.minCPUPercent: Invalid value: must be between 1 and 100",
				"spec.cpuEviction.windowSeconds: Invalid value: must be between 1 and 3600",
				"spec.cpuEviction.satisfactionUpperPercent: Invalid value: must be between 0 and 1000",
				"spec.cpuEviction.beUsageThresholdPercent: Invalid value: must be between 0 and 100",
				"spec.eviction.maxPerMinute: Invalid value: must be between 1 and 600",
				"spec.eviction.gracePeriodSeconds: Invalid value: must not be negative",
			},
		},
		{
			// The API server defaults satisfactionUpperPercent to 80 before
			// its CEL rule compares the two; so does the validation.
			name: "a lower satisfaction above the defaulted upper one",
			spec: v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{SatisfactionLowerPercent: pct(90)}},
			want: []string{"spec.cpuEviction.satisfactionLowerPercent: Invalid value: must not be above satisfactionUpperPercent (80)"},
		},
		{
			// A rule inherits the spec's invalid count; it is reported once,
			// at the spec.
			name: "an invalid spec count is not reported again on each rule",
			spec: v1alpha1.NodeQOSSpec{AvoidanceCount: pct(0), Rules: []v1alpha1.WaterlineRule{
				rule("a", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8")}},
			want: []string{"spec.avoidanceCount: Invalid value: must be between 1 and 100"},
		},
		{
			name: "rule names, counts, metrics and actions",
			spec: v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
				{Name: "", Metric: v1alpha1.MetricCPUUsage, Action: v1alpha1.ActionThrottle, Threshold: resource.MustParse("1"), AvoidanceCount: pct(0)},
				{Name: "a", Metric: "Bad-Name", Action: "Kill", Threshold: resource.MustParse("1"), RestoreCount: pct(101)},
				{Name: "a", Metric: v1alpha1.MetricMemoryUsage, Action: v1alpha1.ActionForbidScheduling, Threshold: resource.MustParse("1Gi")},
				{Name: strings.Repeat("r", 64), Metric: v1alpha1.MetricCPUUsage, Action: v1alpha1.ActionForbidScheduling, Threshold: resource.MustParse("1")},
			}},
			want: []string{
				"spec.rules[0].name: Required value: a rule needs a name",
				"spec.rules[0].avoidanceCount: Invalid value: must be between 1 and 100",
				"spec.rules[1].restoreCount: Invalid value: must be between 1 and 100",
				`spec.rules[1].metric: Unsupported value: supported values: "cpu_usage", "cpu_utilization", "memory_usage", "memory_utilization"`,
				`spec.rules[1].action: Unsupported value: supported values: "ForbidScheduling", "Throttle", "Evict"`,
				"spec.rules[2].name: Duplicate value: ",
				"spec.rules[3].name: Too long: may not be more than 63 bytes",
			},
		},
		{
			name: "thresholds: above 0 and within each metric's bound, checked on the quantity",
			spec: v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
				rule("zero", v1alpha1.MetricCPUUsage, v1alpha1.ActionForbidScheduling, "0"),
				rule("negative", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "-1"),
				// 10E bytes wraps int64 (it was once a line at 0).
				rule("bytes", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "10E"),
				// 1E cores is 10^21 millicores: it wraps int64 too.
				rule("millicores", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "1E"),
				rule("percent", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "100.5"),
				rule("gpu", "gpu_usage", v1alpha1.ActionEvict, "2E"),
			}},
			opts: gpu,
			want: []string{
				"spec.rules[0].threshold: Invalid value: must be greater than 0",
				"spec.rules[1].threshold: Invalid value: must be greater than 0",
				"spec.rules[2].threshold: Invalid value: must not be above 1Pi bytes",
				"spec.rules[3].threshold: Invalid value: must not be above 100k cores",
				"spec.rules[4].threshold: Invalid value: a utilization is a percent and must not be above 100",
				"spec.rules[5].threshold: Invalid value: must not be above 1E",
			},
		},
		{
			name: "custom metrics: only the ones the options know, and only the actions they allow",
			spec: v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
				rule("unknown", "nvme_latency", v1alpha1.ActionEvict, "5"),
				rule("throttle", "gpu_usage", v1alpha1.ActionThrottle, "5"),
				rule("evict", "io_pressure", v1alpha1.ActionEvict, "5"),
				rule("forbid", "io_pressure", v1alpha1.ActionForbidScheduling, "3"),
			}},
			opts: gpu,
			want: []string{
				`spec.rules[0].metric: Unsupported value: supported values: "cpu_usage", "cpu_utilization", "memory_usage", "memory_utilization", "gpu_usage", "io_pressure"`,
				"spec.rules[1].action: Invalid value: metric gpu_usage is not throttleable",
				"spec.rules[2].action: Invalid value: metric io_pressure is not evictable",
			},
		},
		{
			name: "without options a custom metric is not supported",
			spec: v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{rule("gpu", "gpu_usage", v1alpha1.ActionEvict, "5")}},
			want: []string{`spec.rules[0].metric: Unsupported value: supported values: "cpu_usage", "cpu_utilization", "memory_usage", "memory_utilization"`},
		},
		{
			name: "rules of one metric out of order, pair by pair",
			spec: v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
				rule("throttle-low", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "5"),
				rule("throttle-high", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
				rule("evict", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "6"),
				rule("forbid", v1alpha1.MetricCPUUsage, v1alpha1.ActionForbidScheduling, "7"),
				// Another metric: no order with the cpu_usage rules.
				rule("util-evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "1"),
			}},
			want: []string{
				// The lowest throttle line (5) would be the effective one, but the
				// rule at 8 above the evict rule is as wrong as the schema says.
				`spec.rules[2].threshold: Invalid value: an Evict rule's threshold must be above the Throttle threshold of the same metric (rule "throttle-high" at 8)`,
				`spec.rules[2].threshold: Invalid value: an Evict rule's threshold must be above the ForbidScheduling threshold of the same metric (rule "forbid" at 7)`,
				`spec.rules[3].threshold: Invalid value: a ForbidScheduling rule's threshold must not be above the Throttle threshold of the same metric (rule "throttle-low" at 5)`,
			},
		},
		{
			name: "a cpu_utilization Evict rule at or under the cpu percents",
			spec: v1alpha1.NodeQOSSpec{
				CPU:   &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: pct(60), ThrottlePercent: pct(70), EvictPercent: pct(90)},
				Rules: []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "60")}},
			want: []string{
				"spec.rules[0].threshold: Invalid value: a cpu_utilization Evict rule must be above cpu.throttlePercent (70)",
				"spec.rules[0].threshold: Invalid value: a cpu_utilization Evict rule must be above cpu.forbidSchedulingPercent (60)",
			},
		},
		{
			name: "a cpu_utilization Throttle rule under cpu.forbidSchedulingPercent",
			spec: v1alpha1.NodeQOSSpec{
				CPU:   &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: pct(60), ThrottlePercent: pct(70), EvictPercent: pct(90)},
				Rules: []v1alpha1.WaterlineRule{rule("throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "59.5")}},
			want: []string{"spec.rules[0].threshold: Invalid value: a cpu_utilization Throttle rule must be at least cpu.forbidSchedulingPercent (60)"},
		},
		{
			name: "a cpu_utilization ForbidScheduling rule at cpu.evictPercent",
			spec: v1alpha1.NodeQOSSpec{
				CPU:   &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: pct(60), ThrottlePercent: pct(70), EvictPercent: pct(90)},
				Rules: []v1alpha1.WaterlineRule{rule("forbid", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "90")}},
			want: []string{
				"spec.rules[0].threshold: Invalid value: a cpu_utilization ForbidScheduling rule must be below cpu.evictPercent (90)",
				"spec.rules[0].threshold: Invalid value: a cpu_utilization ForbidScheduling rule must not be above cpu.throttlePercent (70)",
			},
		},
		{
			name: "memory_utilization rules against the memory percents",
			spec: v1alpha1.NodeQOSSpec{
				Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(80), EvictPercent: pct(90)},
				Rules: []v1alpha1.WaterlineRule{
					rule("evict", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "80"),
					// Bytes against a percent needs the node (1Pi is above
					// 90 % of any real node's memory): not checked here.
					rule("bytes", v1alpha1.MetricMemoryUsage, v1alpha1.ActionForbidScheduling, "1Pi"),
				}},
			want: []string{
				"spec.rules[0].threshold: Invalid value: a memory_utilization Evict rule must be above memory.forbidSchedulingPercent (80)",
			},
		},
		{
			name: "a memory_utilization ForbidScheduling rule at memory.evictPercent",
			spec: v1alpha1.NodeQOSSpec{
				Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(80), EvictPercent: pct(90)},
				Rules:  []v1alpha1.WaterlineRule{rule("forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "90")}},
			want: []string{"spec.rules[0].threshold: Invalid value: a memory_utilization ForbidScheduling rule must be below memory.evictPercent (90)"},
		},
		{
			name: "list sizes, names and sets",
			spec: func() v1alpha1.NodeQOSSpec {
				var s v1alpha1.NodeQOSSpec
				for i := range 33 {
					s.Rules = append(s.Rules, rule(fmt.Sprintf("r%d", i), v1alpha1.MetricCPUUsage, v1alpha1.ActionForbidScheduling, "1"))
				}
				for i := range 65 {
					s.ProtectedNamespaces = append(s.ProtectedNamespaces, fmt.Sprintf("ns-%d", i))
				}
				s.ProtectedNamespaces[1] = s.ProtectedNamespaces[0]
				s.ProtectedNamespaces[2] = strings.Repeat("n", 64)
				return s
			}(),
			want: []string{
				"spec.rules: Too many: must have at most 32 items",
				"spec.protectedNamespaces: Too many: must have at most 64 items",
				"spec.protectedNamespaces[1]: Duplicate value: ",
				"spec.protectedNamespaces[2]: Too long: may not be more than 63 bytes",
			},
		},
		{
			name: "a node selector that cannot select",
			spec: v1alpha1.NodeQOSSpec{NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}}},
			want: []string{`spec.nodeSelector.matchExpressions[0].operator: Invalid value: not a valid selector operator`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateNodeQOSSpec(&tt.spec, field.NewPath("spec"), tt.opts)
			if diff := cmp.Diff(tt.want, got(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateNodeQOSSpecNamesTheValue: an error carries the value it
// refuses, so that a user reading an event or a status can find it.
func TestValidateNodeQOSSpecNamesTheValue(t *testing.T) {
	spec := &v1alpha1.NodeQOSSpec{
		CPU:   &v1alpha1.CPUWaterlines{EvictPercent: pct(0)},
		Rules: []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "10E")},
	}
	errs := ValidateNodeQOSSpec(spec, field.NewPath("nodeQOS").Key("colo").Child("spec"), NodeQOSOptions{})
	want := []string{
		"nodeQOS[colo].spec.cpu.evictPercent: Invalid value: 0: must be between 1 and 100",
		`nodeQOS[colo].spec.rules[0].threshold: Invalid value: "10E": must not be above 1Pi bytes`,
	}
	var gotErrs []string
	for _, e := range errs {
		gotErrs = append(gotErrs, e.Error())
	}
	if diff := cmp.Diff(want, gotErrs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateNodeQOSSpecNil(t *testing.T) {
	if errs := ValidateNodeQOSSpec(nil, field.NewPath("spec"), NodeQOSOptions{}); len(errs) != 0 {
		t.Errorf("a nil spec: %v", errs)
	}
}

// TestValidateNodeQOSSpecDoesNotChangeTheSpec: validation never defaults
// or repairs what it is given.
func TestValidateNodeQOSSpecDoesNotChangeTheSpec(t *testing.T) {
	spec := &v1alpha1.NodeQOSSpec{
		CPU:   &v1alpha1.CPUWaterlines{ThrottlePercent: pct(70)},
		Rules: []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8")},
	}
	before := spec.DeepCopy()
	ValidateNodeQOSSpec(spec, field.NewPath("spec"), NodeQOSOptions{})
	if diff := cmp.Diff(before, spec); diff != "" {
		t.Errorf("the spec changed (-before +after):\n%s", diff)
	}
}
