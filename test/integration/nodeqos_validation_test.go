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

package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/apis/v1alpha1/validation"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestNodeQOSValidationAgreesWithAdmission runs each NodeQOS spec through
// the real API server's admission (a dry-run create: the CRD's OpenAPI
// schema and CEL rules, after defaulting) and through
// validation.ValidateNodeQOSSpec, and asserts the same verdict, with every
// error of each at or under the same field (CEL rules on a list name the
// list, where Go names the rule's field in it). The cases cover every
// bound, ordering, count, quantity and rule check the schema declares.
// Where the two differ on purpose the case says why, and asserts each
// side's own verdict, so a difference that goes away is noticed too.
func TestNodeQOSValidationAgreesWithAdmission(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	// What an agent started with a --custom-metrics file defining these
	// metrics knows.
	opts := validation.NodeQOSOptions{CustomMetrics: []validation.CustomMetric{
		{Name: "gpu_usage", Evictable: true},
		{Name: "io_pressure"},
		{Name: "memory_pressure", Evictable: true},
	}}
	pct := func(v int32) *int32 { return ptr.To(v) }
	rule := func(name string, m v1alpha1.QOSMetric, a v1alpha1.QOSAction, threshold string) v1alpha1.WaterlineRule {
		return v1alpha1.WaterlineRule{Name: name, Metric: m, Action: a, Threshold: resource.MustParse(threshold)}
	}
	rules := func(rs ...v1alpha1.WaterlineRule) v1alpha1.NodeQOSSpec { return v1alpha1.NodeQOSSpec{Rules: rs} }
	cpu := func(forbid, throttle, restore, evict int32) *v1alpha1.CPUWaterlines {
		opt := func(v int32) *int32 {
			if v == -1 {
				return nil
			}
			return ptr.To(v)
		}
		return &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: opt(forbid), ThrottlePercent: opt(throttle), RestorePercent: opt(restore), EvictPercent: opt(evict)}
	}
	const unset = -1

	agree := []struct {
		name  string
		spec  v1alpha1.NodeQOSSpec
		field string // "" when both accept
	}{
		// Accepted by both.
		{"an empty spec", v1alpha1.NodeQOSSpec{}, ""},
		{"a complete ordered spec at its bounds", v1alpha1.NodeQOSSpec{
			NodeSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "colo"}},
			CPU:            cpu(60, 70, 60, 100),
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
				rule("io", "io_pressure", v1alpha1.ActionForbidScheduling, "1n"),
			},
			ProtectedNamespaces: []string{"waterline-system", strings.Repeat("n", 63)},
		}, ""},
		// Only the merge with another object can be out of order: the
		// agent refuses that merge.
		{"an evict line alone", v1alpha1.NodeQOSSpec{CPU: cpu(unset, unset, unset, 50)}, ""},
		// Cores against a percent needs the node's capacity: both leave it
		// to the conversion (BuildWaterlines refuses it on a 10-core node).
		{"a cpu_usage Throttle rule above a cpu_utilization Evict rule", rules(
			rule("throttle", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
			rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "50")), ""},
		{"two Throttle rules of a metric under its Evict rule", rules(
			rule("t1", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "5"),
			rule("t2", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "6"),
			rule("evict", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "6001m")), ""},

		// Percents: bounds and order.
		{"cpu.forbidSchedulingPercent 0", v1alpha1.NodeQOSSpec{CPU: cpu(0, unset, unset, unset)}, "spec.cpu.forbidSchedulingPercent"},
		{"cpu.throttlePercent 101", v1alpha1.NodeQOSSpec{CPU: cpu(unset, 101, unset, unset)}, "spec.cpu.throttlePercent"},
		{"cpu.restorePercent 0", v1alpha1.NodeQOSSpec{CPU: cpu(unset, 70, 0, unset)}, "spec.cpu.restorePercent"},
		{"cpu.evictPercent 101", v1alpha1.NodeQOSSpec{CPU: cpu(unset, unset, unset, 101)}, "spec.cpu.evictPercent"},
		{"memory.forbidSchedulingPercent 0", v1alpha1.NodeQOSSpec{Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(0)}}, "spec.memory.forbidSchedulingPercent"},
		{"memory.evictPercent 101", v1alpha1.NodeQOSSpec{Memory: &v1alpha1.MemoryWaterlines{EvictPercent: pct(101)}}, "spec.memory.evictPercent"},
		{"cpu evict at its throttle line", v1alpha1.NodeQOSSpec{CPU: cpu(unset, 70, unset, 70)}, "spec.cpu.evictPercent"},
		{"cpu throttle under its forbid line", v1alpha1.NodeQOSSpec{CPU: cpu(60, 50, unset, unset)}, "spec.cpu.throttlePercent"},
		{"cpu evict at its forbid line", v1alpha1.NodeQOSSpec{CPU: cpu(60, unset, unset, 60)}, "spec.cpu.evictPercent"},
		{"cpu restore above its throttle line", v1alpha1.NodeQOSSpec{CPU: cpu(unset, 70, 80, unset)}, "spec.cpu.restorePercent"},
		{"cpu restore without a throttle line", v1alpha1.NodeQOSSpec{CPU: cpu(unset, unset, 50, unset)}, "spec.cpu.restorePercent"},
		{"memory evict at its forbid line", v1alpha1.NodeQOSSpec{Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(80), EvictPercent: pct(80)}}, "spec.memory.evictPercent"},

		// Counts and tuning.
		{"avoidanceCount 0", v1alpha1.NodeQOSSpec{AvoidanceCount: pct(0)}, "spec.avoidanceCount"},
		{"restoreCount 101", v1alpha1.NodeQOSSpec{RestoreCount: pct(101)}, "spec.restoreCount"},
		{"throttle.stepPercent 0", v1alpha1.NodeQOSSpec{Throttle: &v1alpha1.ThrottlePolicy{StepPercent: pct(0)}}, "spec.throttle.stepPercent"},
		{"throttle.minCPUPercent 101", v1alpha1.NodeQOSSpec{Throttle: &v1alpha1.ThrottlePolicy{MinCPUPercent: pct(101)}}, "spec.throttle.minCPUPercent"},
		{"cpuEviction.windowSeconds 0", v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{WindowSeconds: ptr.To[int64](0)}}, "spec.cpuEviction.windowSeconds"},
		{"cpuEviction.windowSeconds 3601", v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{WindowSeconds: ptr.To[int64](3601)}}, "spec.cpuEviction.windowSeconds"},
		{"cpuEviction.satisfactionLowerPercent -1", v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{SatisfactionLowerPercent: pct(-1)}}, "spec.cpuEviction.satisfactionLowerPercent"},
		{"cpuEviction.satisfactionUpperPercent 1001", v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{SatisfactionUpperPercent: pct(1001)}}, "spec.cpuEviction.satisfactionUpperPercent"},
		// The upper bound is defaulted to 80 before the comparison, by both.
		{"cpuEviction lower 90 above the default upper", v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{SatisfactionLowerPercent: pct(90)}}, "spec.cpuEviction.satisfactionLowerPercent"},
		{"cpuEviction.beUsageThresholdPercent 101", v1alpha1.NodeQOSSpec{CPUEviction: &v1alpha1.CPUEvictionPolicy{BEUsageThresholdPercent: pct(101)}}, "spec.cpuEviction.beUsageThresholdPercent"},
		{"eviction.maxPerMinute 0", v1alpha1.NodeQOSSpec{Eviction: &v1alpha1.EvictionPolicy{MaxPerMinute: pct(0)}}, "spec.eviction.maxPerMinute"},
		{"eviction.maxPerMinute 601", v1alpha1.NodeQOSSpec{Eviction: &v1alpha1.EvictionPolicy{MaxPerMinute: pct(601)}}, "spec.eviction.maxPerMinute"},
		{"eviction.gracePeriodSeconds -1", v1alpha1.NodeQOSSpec{Eviction: &v1alpha1.EvictionPolicy{GracePeriodSeconds: ptr.To[int64](-1)}}, "spec.eviction.gracePeriodSeconds"},

		// Rules on their own.
		{"a rule without a name", rules(rule("", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8")), "spec.rules[0].name"},
		{"a rule name of 64 characters", rules(rule(strings.Repeat("r", 64), v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8")), "spec.rules[0].name"},
		{"two rules of one name", rules(
			rule("a", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
			rule("a", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "8Gi")), "spec.rules[1]"},
		{"33 rules", func() v1alpha1.NodeQOSSpec {
			var s v1alpha1.NodeQOSSpec
			for i := range 33 {
				s.Rules = append(s.Rules, rule(fmt.Sprintf("r%d", i), v1alpha1.MetricCPUUsage, v1alpha1.ActionForbidScheduling, "1"))
			}
			return s
		}(), "spec.rules"},
		{"a metric name with capitals", rules(rule("r", "Bad-Name", v1alpha1.ActionEvict, "1")), "spec.rules[0].metric"},
		{"an empty metric name", rules(rule("r", "", v1alpha1.ActionEvict, "1")), "spec.rules[0].metric"},
		{"a metric name of 64 characters", rules(rule("r", v1alpha1.QOSMetric(strings.Repeat("m", 64)), v1alpha1.ActionEvict, "1")), "spec.rules[0].metric"},
		{"action Kill", rules(rule("r", v1alpha1.MetricCPUUsage, "Kill", "8")), "spec.rules[0].action"},
		{"a rule avoidanceCount 0", rules(v1alpha1.WaterlineRule{Name: "r", Metric: v1alpha1.MetricCPUUsage, Action: v1alpha1.ActionThrottle, Threshold: resource.MustParse("8"), AvoidanceCount: pct(0)}), "spec.rules[0].avoidanceCount"},
		{"a rule restoreCount 101", rules(v1alpha1.WaterlineRule{Name: "r", Metric: v1alpha1.MetricCPUUsage, Action: v1alpha1.ActionThrottle, Threshold: resource.MustParse("8"), RestoreCount: pct(101)}), "spec.rules[0].restoreCount"},
		{"threshold 0", rules(rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "0")), "spec.rules[0].threshold"},
		{"threshold -1", rules(rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "-1")), "spec.rules[0].threshold"},
		{"cpu_usage above 100k cores", rules(rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "100001")), "spec.rules[0].threshold"},
		{"memory_usage 10E", rules(rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "10E")), "spec.rules[0].threshold"},
		{"cpu_utilization 100.5", rules(rule("r", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "100.5")), "spec.rules[0].threshold"},
		{"memory_utilization 250", rules(rule("r", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "250")), "spec.rules[0].threshold"},
		{"a custom metric threshold 2E", rules(rule("r", "gpu_usage", v1alpha1.ActionEvict, "2E")), "spec.rules[0].threshold"},
		// The schema refuses every memory* metric's Throttle rule; the
		// agent's custom metrics are never throttleable.
		{"a custom memory_ metric Throttle rule", rules(rule("r", "memory_pressure", v1alpha1.ActionThrottle, "5")), "spec.rules[0].action"},

		// Rules against each other and against the percents.
		{"an Evict rule under a Throttle rule", rules(
			rule("throttle", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
			rule("evict", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "6")), "spec.rules"},
		{"an Evict rule at a ForbidScheduling rule", rules(
			rule("forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "90"),
			rule("evict", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "90")), "spec.rules"},
		{"a ForbidScheduling rule above a Throttle rule", rules(
			rule("throttle", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "6"),
			rule("forbid", v1alpha1.MetricCPUUsage, v1alpha1.ActionForbidScheduling, "6001m")), "spec.rules"},
		{"an Evict rule between two Throttle rules", rules(
			rule("t1", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "5"),
			rule("t2", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
			rule("evict", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "6")), "spec.rules"},
		{"a custom metric's Evict rule under its ForbidScheduling rule", rules(
			rule("forbid", "gpu_usage", v1alpha1.ActionForbidScheduling, "80"),
			rule("evict", "gpu_usage", v1alpha1.ActionEvict, "70")), "spec.rules"},
		{"a cpu_utilization Evict rule at 20 % with cpu.throttlePercent 80", v1alpha1.NodeQOSSpec{CPU: cpu(unset, 80, unset, unset),
			Rules: []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "20")}}, "spec.rules"},
		{"a cpu_utilization Evict rule at cpu.forbidSchedulingPercent", v1alpha1.NodeQOSSpec{CPU: cpu(60, unset, unset, unset),
			Rules: []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "60")}}, "spec.rules"},
		{"a cpu_utilization Throttle rule above cpu.evictPercent", v1alpha1.NodeQOSSpec{CPU: cpu(unset, unset, unset, 50),
			Rules: []v1alpha1.WaterlineRule{rule("throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "70")}}, "spec.rules"},
		{"a cpu_utilization ForbidScheduling rule at cpu.evictPercent", v1alpha1.NodeQOSSpec{CPU: cpu(unset, unset, unset, 50),
			Rules: []v1alpha1.WaterlineRule{rule("forbid", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "50")}}, "spec.rules"},
		{"a cpu_utilization Throttle rule under cpu.forbidSchedulingPercent", v1alpha1.NodeQOSSpec{CPU: cpu(60, unset, unset, unset),
			Rules: []v1alpha1.WaterlineRule{rule("throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "59.5")}}, "spec.rules"},
		{"a cpu_utilization ForbidScheduling rule above cpu.throttlePercent", v1alpha1.NodeQOSSpec{CPU: cpu(unset, 70, unset, unset),
			Rules: []v1alpha1.WaterlineRule{rule("forbid", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "75")}}, "spec.rules"},
		{"a memory_utilization Evict rule under memory.forbidSchedulingPercent", v1alpha1.NodeQOSSpec{
			Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: pct(90)},
			Rules:  []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "85")}}, "spec.rules"},
		{"a memory_utilization ForbidScheduling rule at memory.evictPercent", v1alpha1.NodeQOSSpec{
			Memory: &v1alpha1.MemoryWaterlines{EvictPercent: pct(90)},
			Rules:  []v1alpha1.WaterlineRule{rule("forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "90")}}, "spec.rules"},

		// Protected namespaces: a set of at most 64 names of at most 63.
		{"65 protected namespaces", v1alpha1.NodeQOSSpec{ProtectedNamespaces: func() []string {
			var ns []string
			for i := range 65 {
				ns = append(ns, fmt.Sprintf("ns-%d", i))
			}
			return ns
		}()}, "spec.protectedNamespaces"},
		{"a protected namespace twice", v1alpha1.NodeQOSSpec{ProtectedNamespaces: []string{"a", "a"}}, "spec.protectedNamespaces[1]"},
		{"a protected namespace of 64 characters", v1alpha1.NodeQOSSpec{ProtectedNamespaces: []string{strings.Repeat("n", 64)}}, "spec.protectedNamespaces[0]"},
	}

	differ := []struct {
		name              string
		spec              v1alpha1.NodeQOSSpec
		apiField, goField string // "" when that side accepts
		why               string
	}{
		{"a rule on a custom metric the agent does not define", rules(rule("r", "nvme_latency", v1alpha1.ActionEvict, "5")),
			"", "spec.rules[0].metric",
			"the API server cannot know which custom metrics each node's agent measures (--custom-metrics); the agent refuses a rule it cannot measure"},
		{"an Evict rule on a custom metric that is not evictable", rules(rule("r", "io_pressure", v1alpha1.ActionEvict, "5")),
			"", "spec.rules[0].action",
			"whether a custom metric is evictable is in the agent's --custom-metrics file, not in the schema"},
		{"a memory_usage Throttle rule", rules(rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionThrottle, "5Gi")),
			"spec.rules[0].action", "",
			"admission refuses it (memory cannot be throttled); the core still plans it with Crane's fallback for a throttle it cannot quantify (one CPU step on every candidate, pkg/core/qos TestPlanThrottleFallback), so an object stored before the rule keeps working as it did"},
		{"a node selector operator Near", v1alpha1.NodeQOSSpec{NodeSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}}},
			"", "spec.nodeSelector.matchExpressions[0].operator",
			"the schema types a label selector's operator as a string; only Go parses selectors (SelectNodeQOS would refuse it too)"},
	}

	// verdict returns the fields each side names for spec.
	verdict := func(t *testing.T, i int, spec v1alpha1.NodeQOSSpec) (api, goFields []string) {
		t.Helper()
		nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agree-%d", i)}, Spec: spec}
		_, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(t.Context(), nq, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			var status *apierrors.StatusError
			if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.ErrStatus.Details == nil {
				t.Fatalf("Create: %v; want admitted or an Invalid error with causes", err)
			}
			for _, cause := range status.ErrStatus.Details.Causes {
				// Where a list is too long, a string too long or an enum
				// wrong, the API server skips the CEL rules whose cost
				// depends on it and says so in a cause of its own, naming
				// no field: a note on the refusal, not a second error.
				if strings.Contains(cause.Message, "validation rules were not checked") {
					continue
				}
				api = append(api, cause.Field)
			}
			if len(api) == 0 {
				t.Fatalf("Create refused without naming a field: %v", err)
			}
		}
		for _, e := range validation.ValidateNodeQOSSpec(&nq.Spec, field.NewPath("spec"), opts) {
			goFields = append(goFields, e.Field)
		}
		t.Logf("admission: %v; Go: %v", err, validation.ValidateNodeQOSSpec(&nq.Spec, field.NewPath("spec"), opts).ToAggregate())
		return api, goFields
	}
	// check fails unless fields is empty for want "", or every field is
	// at or under want.
	check := func(t *testing.T, side string, fields []string, want string) {
		t.Helper()
		if want == "" {
			if len(fields) > 0 {
				t.Errorf("%s refused it, naming %v; want it accepted", side, fields)
			}
			return
		}
		if len(fields) == 0 {
			t.Errorf("%s accepted it; want it refused at %s", side, want)
		}
		for _, f := range fields {
			if f != want && !strings.HasPrefix(f, want+".") && !strings.HasPrefix(f, want+"[") {
				t.Errorf("%s named %s; want %s or a field under it", side, f, want)
			}
		}
	}
	n := 0
	for _, tc := range agree {
		i := n
		n++
		t.Run(tc.name, func(t *testing.T) {
			api, goFields := verdict(t, i, tc.spec)
			check(t, "admission", api, tc.field)
			check(t, "ValidateNodeQOSSpec", goFields, tc.field)
		})
	}
	for _, tc := range differ {
		i := n
		n++
		t.Run("differs/"+tc.name, func(t *testing.T) {
			api, goFields := verdict(t, i, tc.spec)
			check(t, "admission", api, tc.apiField)
			check(t, "ValidateNodeQOSSpec", goFields, tc.goField)
			if t.Failed() {
				t.Logf("the two differ here on purpose: %s", tc.why)
			}
		})
	}
}
