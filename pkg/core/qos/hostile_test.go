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
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func rule(name string, m v1alpha1.QOSMetric, a v1alpha1.QOSAction, threshold string) v1alpha1.WaterlineRule {
	return v1alpha1.WaterlineRule{Name: name, Metric: m, Action: a, Threshold: resource.MustParse(threshold)}
}

// TestBuildWaterlinesRefusesHostileObjects: each NodeQOS alone is wrong in a
// way that would make the agent act on every Batch pod, or never; it is
// left out whole and the error names the field and the value.
func TestBuildWaterlinesRefusesHostileObjects(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(s *v1alpha1.NodeQOSSpec)
		wantErr string
	}{
		{"memory_usage Evict 10E overflows int64", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "10E")}
		}, `rules[0].threshold: Invalid value: "10E"`},
		{"cpu_usage Evict 10E overflows millicores", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "10E")}
		}, `rules[0].threshold: Invalid value: "10E"`},
		{"cpu_usage 1E: millicores overflow though bytes would not", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "1E")}
		}, `rules[0].threshold: Invalid value: "1E"`},
		{"threshold 0", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "0")}
		}, `rules[0].threshold: Invalid value: "0"`},
		{"threshold -1", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "-1")}
		}, `rules[0].threshold: Invalid value: "-1"`},
		{"cpu_utilization 250", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "250")}
		}, `rules[0].threshold: Invalid value: "250"`},
		{"evictPercent 0", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](0)}
		}, `cpu.evictPercent: Invalid value: 0`},
		{"throttlePercent 0", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](0)}
		}, `cpu.throttlePercent: Invalid value: 0`},
		{"memory evictPercent 0", func(s *v1alpha1.NodeQOSSpec) {
			s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](0)}
		}, `memory.evictPercent: Invalid value: 0`},
		{"maxPerMinute 2147483647", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](90)}
			s.Eviction = &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To[int32](2147483647)}
		}, `eviction.maxPerMinute: Invalid value: 2147483647`},
		{"rule evict line below its throttle line", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{
				rule("throttle", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
				rule("evict", v1alpha1.MetricCPUUsage, v1alpha1.ActionEvict, "6"),
			}
		}, `rules[1].threshold: Invalid value: "6": an Evict rule's threshold must be above the Throttle threshold of the same metric (rule "throttle" at 8)`},
		{"forbid rule above evict rule", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{
				rule("forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "95"),
				rule("evict", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "90"),
			}
		}, `rules[1].threshold: Invalid value: "90": an Evict rule's threshold must be above the ForbidScheduling threshold of the same metric (rule "forbid" at 95)`},
		{"cpu.throttlePercent 80 with an evict rule at 20%", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](80)}
			s.Rules = []v1alpha1.WaterlineRule{rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "20")}
		}, `rules[0].threshold: Invalid value: "20": a cpu_utilization Evict rule must be above cpu.throttlePercent (80)`},
		{"cpu_usage throttle rule above a cpu_utilization evict rule (only the capacity shows it)", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{
				rule("throttle", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "8"),
				rule("evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "50"),
			}
		}, "must be above ThrottleDown cpu_usage 8000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{nodeQOS("hostile", tc.edit)}, node10)
			if len(errs) == 0 {
				t.Fatalf("BuildWaterlines accepted the object; lines %+v", waterlines.Lines)
			}
			if got := errs.ToAggregate().Error(); !strings.Contains(got, tc.wantErr) {
				t.Errorf("error %q does not contain %q", got, tc.wantErr)
			}
			if len(waterlines.Lines) != 0 {
				t.Errorf("the refused object still contributed lines: %+v", waterlines.Lines)
			}
		})
	}
}

// TestBoundsAccepted: the largest values the bounds allow still convert
// exactly.
func TestBoundsAccepted(t *testing.T) {
	nq := nodeQOS("big", func(s *v1alpha1.NodeQOSSpec) {
		s.Rules = []v1alpha1.WaterlineRule{
			rule("cpu", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, v1alpha1.MaxCPUUsageThreshold),
			rule("mem", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, v1alpha1.MaxMemoryUsageThreshold),
		}
		s.Eviction = &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To(v1alpha1.MaxEvictionsPerMinute)}
	})
	waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{nq}, node10)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cpu, _ := waterlines.Line(ActionThrottleDown, MetricCPU)
	mem, _ := waterlines.Line(ActionEvict, MetricMemory)
	if want := resource.MustParse(v1alpha1.MaxCPUUsageThreshold); cpu.Value != want.MilliValue() || cpu.Value <= 0 {
		t.Errorf("cpu line %d, want %d", cpu.Value, want.MilliValue())
	}
	if want := resource.MustParse(v1alpha1.MaxMemoryUsageThreshold); mem.Value != want.Value() || mem.Value <= 0 {
		t.Errorf("memory line %d, want %d", mem.Value, want.Value())
	}
}

// TestMergeInverted: two objects valid alone merge into evict 50 % under
// throttle 70 %; the merge is refused with a typed error and no planner
// acts on it.
func TestMergeInverted(t *testing.T) {
	a := nodeQOS("a-throttle", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
	})
	b := nodeQOS("b-evict", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](50)}
	})
	waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{a, b}, node10)
	if len(errs) > 0 {
		t.Fatalf("each object is valid alone: %v", errs)
	}
	err := waterlines.CheckOrder()
	var inv *InvertedLinesError
	if !errors.As(err, &inv) {
		t.Fatalf("CheckOrder = %v, want an *InvertedLinesError", err)
	}
	if got := err.Error(); !strings.Contains(got, "a-throttle") || !strings.Contains(got, "b-evict") {
		t.Errorf("error %q does not name both NodeQOS", got)
	}
	if _, err := NewPlanner(DefaultRegistry(), waterlines); err == nil {
		t.Error("NewPlanner accepted an inverted set of lines")
	}

	// Ordered lines from two objects pass.
	c := nodeQOS("c-evict", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](90)}
	})
	waterlines, _ = BuildWaterlines([]*v1alpha1.NodeQOS{a, c}, node10)
	if err := waterlines.CheckOrder(); err != nil {
		t.Errorf("CheckOrder of throttle 70 / evict 90 = %v", err)
	}
}

// TestProtectedNamespaces: a kube-system pod at Batch priority, or labelled
// batch, and a pod of a namespace a NodeQOS protects are never throttled
// nor evicted, while the same pod in another namespace is.
func TestProtectedNamespaces(t *testing.T) {
	nq := nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](50)}
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](50)}
		s.AvoidanceCount = ptr.To[int32](1)
		s.ProtectedNamespaces = []string{"waterline-system"}
	})
	p := mustPlanner(t, nq)
	cands := []Candidate{
		cand(makePod("sys-batch").namespace("kube-system").cpu("1", "4"), usage{cpu: 3000, mem: 4 * gib}),
		cand(makePod("sys-label").namespace("kube-system").priority(0).band("batch").cpu("1", "4"), usage{cpu: 3000, mem: 4 * gib}),
		cand(makePod("wl-batch").namespace("waterline-system").cpu("1", "4"), usage{cpu: 3000, mem: 4 * gib}),
		cand(makePod("user-batch").cpu("1", "4"), usage{cpu: 1000, mem: 1 * gib}),
	}
	// 8 cores and 13 GiB used on a 10-core, 10 GiB node: both lines crossed.
	plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 8000, MetricMemory: 13 * gib}}, cands, Hysteresis{})
	for _, e := range plan.Evictions {
		if e.Pod.Name != "user-batch" {
			t.Errorf("evicted protected pod %s", e.Pod)
		}
	}
	for name := range changedQuotas(plan) {
		if name != "user-batch" {
			t.Errorf("throttled protected pod %s", name)
		}
	}
	if len(plan.Evictions) == 0 && len(changedQuotas(plan)) == 0 {
		t.Errorf("the unprotected pod was not acted on either: %v", plan.Reasons)
	}
}

// TestNoLineAtZero: on a node so small that a 1 % line rounds to 0, the
// object is refused rather than turned into a line every usage crosses.
func TestNoLineAtZero(t *testing.T) {
	tiny := Capacity{CPUMilli: 50, MemoryBytes: 50}
	for name, edit := range map[string]func(s *v1alpha1.NodeQOSSpec){
		"percent": func(s *v1alpha1.NodeQOSSpec) { s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](1)} },
		"utilization": func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{rule("r", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionEvict, "1")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{nodeQOS("tiny", edit)}, tiny)
			if len(errs) == 0 || len(waterlines.Lines) != 0 {
				t.Errorf("accepted: lines %+v", waterlines.Lines)
			}
		})
	}
}
