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
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestNodeQOSAdmissionRefusesHostileObjects creates, on the real API server
// with our CRDs, NodeQOS objects that alone would make the agent act on
// every Batch pod (a threshold that wraps to 0, a line at 0) or in the
// wrong order (evict before throttle); each must be refused with a message
// naming the field. Orderings only the node's capacity or the merge of
// several objects shows are the agent's to refuse (pkg/core/qos).
func TestNodeQOSAdmissionRefusesHostileObjects(t *testing.T) {
	c := testutil.StartCluster(t, testutil.Options{})
	rule := func(name string, m v1alpha1.QOSMetric, a v1alpha1.QOSAction, threshold string) v1alpha1.WaterlineRule {
		return v1alpha1.WaterlineRule{Name: name, Metric: m, Action: a, Threshold: resource.MustParse(threshold)}
	}
	tests := []struct {
		name string
		spec v1alpha1.NodeQOSSpec
		want string // "" means admitted
	}{
		{"memory_usage Evict 10E", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "10E")}}, "memory_usage threshold must not be above 1Pi"},
		{"cpu_usage Evict 10E", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "10E")}}, "cpu_usage threshold must not be above 100k cores"},
		{"threshold 0", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "0")}}, "threshold must be greater than 0"},
		{"threshold -1", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "-1")}}, "threshold must be greater than 0"},
		{"cpu_utilization 250", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("r", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "250")}}, "must not be above 100"},
		{"evictPercent 0", v1alpha1.NodeQOSSpec{CPU: &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](0)}},
			"spec.cpu.evictPercent"},
		{"throttlePercent 0", v1alpha1.NodeQOSSpec{CPU: &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](0)}},
			"spec.cpu.throttlePercent"},
		{"maxPerMinute 2147483647", v1alpha1.NodeQOSSpec{Eviction: &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To[int32](2147483647)}},
			"spec.eviction.maxPerMinute"},
		{"evict rule below its throttle rule", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("throttle", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
			rule("evict", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "6")}}, "an Evict rule's threshold must be above"},
		{"forbid rule above evict rule", v1alpha1.NodeQOSSpec{Rules: []v1alpha1.WaterlineRule{
			rule("forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "95"),
			rule("evict", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "90")}}, "an Evict rule's threshold must be above"},
		{"cpu.throttlePercent 80 with an evict rule at 20%", v1alpha1.NodeQOSSpec{
			CPU:   &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](80)},
			Rules: []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "20")}},
			"a cpu_utilization Evict rule must be above cpu.throttlePercent"},
		{"cpu.evictPercent 50 with a throttle rule at 70%", v1alpha1.NodeQOSSpec{
			CPU:   &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](50)},
			Rules: []v1alpha1.WaterlineRule{rule("throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "70")}},
			"must be below cpu.evictPercent"},
		{"memory forbid 90% with an evict rule at 85%", v1alpha1.NodeQOSSpec{
			Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](90)},
			Rules:  []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "85")}},
			"forbidScheduling < evict"},
		// What must still be admitted.
		{"ordered lines and rules at their bounds", v1alpha1.NodeQOSSpec{
			CPU:      &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](70), EvictPercent: ptr.To[int32](90)},
			Memory:   &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](80), EvictPercent: ptr.To[int32](95)},
			Eviction: &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To(v1alpha1.MaxEvictionsPerMinute)},
			Rules: []v1alpha1.WaterlineRule{
				rule("cpu-forbid", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "65"),
				rule("cpu-throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "75"),
				rule("cpu-evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "95"),
				rule("cpu-cores", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, v1alpha1.MaxCPUUsageThreshold),
				rule("mem-bytes", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, v1alpha1.MaxMemoryUsageThreshold),
				rule("mem-forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "85"),
			}}, ""},
		// Only the merge with another object shows this one is wrong: the
		// agent refuses that merge.
		{"an evict line alone", v1alpha1.NodeQOSSpec{CPU: &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](50)}}, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "hostile-" + string(rune('a'+i))}, Spec: tc.spec}
			_, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(t.Context(), nq, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Create refused a valid NodeQOS: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("Create admitted the NodeQOS; want a refusal containing %q", tc.want)
			case !apierrors.IsInvalid(err):
				t.Fatalf("Create: %v; want an Invalid error", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("Create refused with %q; want it to contain %q", err, tc.want)
			}
		})
	}
}
