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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// lineKey is what a test compares of a line.
type lineKey struct {
	Action         Action
	Metric         MetricName
	Value          int64
	Avoid, Restore int32
}

func keys(w *Waterlines) []lineKey {
	var out []lineKey
	for _, l := range w.Lines {
		out = append(out, lineKey{l.Action, l.Metric, l.Value, l.AvoidanceCount, l.RestoreCount})
	}
	return out
}

func TestBuildWaterlines(t *testing.T) {
	tests := []struct {
		name         string
		nqs          []*v1alpha1.NodeQOS
		want         []lineKey
		wantThrottle ThrottleParams
		wantEvict    CPUEvictionParams
	}{
		{
			name: "first-class percents become absolute lines on a 10-core, 10 GiB node",
			nqs: []*v1alpha1.NodeQOS{nodeQOS("a", func(s *v1alpha1.NodeQOSSpec) {
				s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](70),
					RestorePercent: ptr.To[int32](50), EvictPercent: ptr.To[int32](90)}
				s.Memory = &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](80), EvictPercent: ptr.To[int32](95)}
			})},
			want: []lineKey{
				// 60 % of 10 000m; counts are the spec defaults 2 and 3.
				{ActionForbidScheduling, MetricCPU, 6000, 2, 3},
				// 80 % of 10 GiB = 8 589 934 592 bytes.
				{ActionForbidScheduling, MetricMemory, 8 * gib, 2, 3},
				{ActionThrottleDown, MetricCPU, 7000, 2, 3},
				{ActionThrottleUp, MetricCPU, 5000, 2, 3},
				// The window is the CPU evict line's debounce; memory is
				// evicted at once: one sample each.
				{ActionEvict, MetricCPU, 9000, 1, 1},
				// 95 % of 10 GiB = 10 200 547 328 bytes, rounded down.
				{ActionEvict, MetricMemory, 10200547328, 1, 1},
			},
			wantThrottle: ThrottleParams{StepPercent: 10, MinCPUPercent: 10},
			wantEvict:    CPUEvictionParams{WindowSeconds: 300, SatisfactionLowerPercent: 60, SatisfactionUpperPercent: 80, BEUsageThresholdPercent: 90},
		},
		{
			// Peer trap: with no restore line the throttle gap must stay;
			// the restore line is the throttle line itself.
			name: "throttle line without a restore line restores at the throttle line",
			nqs: []*v1alpha1.NodeQOS{nodeQOS("a", func(s *v1alpha1.NodeQOSSpec) {
				s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
			})},
			want: []lineKey{
				{ActionThrottleDown, MetricCPU, 7000, 2, 3},
				{ActionThrottleUp, MetricCPU, 7000, 2, 3},
			},
			wantThrottle: ThrottleParams{StepPercent: 10, MinCPUPercent: 10},
			wantEvict:    CPUEvictionParams{WindowSeconds: 300, SatisfactionLowerPercent: 60, SatisfactionUpperPercent: 80, BEUsageThresholdPercent: 90},
		},
		{
			name: "the lowest line of an action wins across NodeQOS, with that NodeQOS's tuning",
			nqs: []*v1alpha1.NodeQOS{
				nodeQOS("b-strict", func(s *v1alpha1.NodeQOSSpec) {
					s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](60), EvictPercent: ptr.To[int32](95)}
					s.Throttle = &v1alpha1.ThrottlePolicy{StepPercent: ptr.To[int32](25), MinCPUPercent: ptr.To[int32](5)}
					s.AvoidanceCount = ptr.To[int32](4)
				}),
				nodeQOS("a-loose", func(s *v1alpha1.NodeQOSSpec) {
					s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](80), RestorePercent: ptr.To[int32](50), EvictPercent: ptr.To[int32](90)}
					s.CPUEviction = &v1alpha1.CPUEvictionPolicy{WindowSeconds: ptr.To[int64](120)}
				}),
			},
			want: []lineKey{
				// min(60 %, 80 %) from b-strict, with its avoidance count.
				{ActionThrottleDown, MetricCPU, 6000, 4, 3},
				// min(60 % (b's default = its throttle line), 50 %) from a-loose.
				{ActionThrottleUp, MetricCPU, 5000, 2, 3},
				// min(95 %, 90 %) from a-loose.
				{ActionEvict, MetricCPU, 9000, 1, 1},
			},
			wantThrottle: ThrottleParams{StepPercent: 25, MinCPUPercent: 5},
			wantEvict:    CPUEvictionParams{WindowSeconds: 120, SatisfactionLowerPercent: 60, SatisfactionUpperPercent: 80, BEUsageThresholdPercent: 90},
		},
		{
			name: "generic rules land in the same lines: cores, bytes and utilization percents",
			nqs: []*v1alpha1.NodeQOS{nodeQOS("a", func(s *v1alpha1.NodeQOSSpec) {
				s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](80)}
				s.Rules = []v1alpha1.WaterlineRule{
					// 7.5 cores = 7500m, below the 8000m first-class line: wins.
					{Name: "cpu-cores", Metric: v1alpha1.MetricCPUUsage, Threshold: resource.MustParse("7500m"), Action: v1alpha1.ActionThrottle, AvoidanceCount: ptr.To[int32](5)},
					// 92.5 % of 10 000m = 9250m.
					{Name: "cpu-util", Metric: v1alpha1.MetricCPUUtilization, Threshold: resource.MustParse("92.5"), Action: v1alpha1.ActionEvict},
					{Name: "mem-bytes", Metric: v1alpha1.MetricMemoryUsage, Threshold: resource.MustParse("9Gi"), Action: v1alpha1.ActionEvict, RestoreCount: ptr.To[int32](7)},
					// 50 % of 10 GiB = 5 GiB.
					{Name: "mem-util", Metric: v1alpha1.MetricMemoryUtilization, Threshold: resource.MustParse("50"), Action: v1alpha1.ActionForbidScheduling},
				}
			})},
			want: []lineKey{
				{ActionForbidScheduling, MetricMemory, 5 * gib, 2, 3},
				{ActionThrottleDown, MetricCPU, 7500, 5, 3},
				// A rule's restore line is its threshold.
				{ActionThrottleUp, MetricCPU, 7500, 5, 3},
				{ActionEvict, MetricCPU, 9250, 2, 3},
				{ActionEvict, MetricMemory, 9 * gib, 2, 7},
			},
			wantThrottle: ThrottleParams{StepPercent: 10, MinCPUPercent: 10},
			wantEvict:    CPUEvictionParams{WindowSeconds: 300, SatisfactionLowerPercent: 60, SatisfactionUpperPercent: 80, BEUsageThresholdPercent: 90},
		},
		{
			name:         "no NodeQOS: no lines, default tuning",
			want:         nil,
			wantThrottle: ThrottleParams{StepPercent: 10, MinCPUPercent: 10},
			wantEvict:    CPUEvictionParams{WindowSeconds: 300, SatisfactionLowerPercent: 60, SatisfactionUpperPercent: 80, BEUsageThresholdPercent: 90},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, errs := BuildWaterlines(tt.nqs, node10)
			if len(errs) > 0 {
				t.Fatalf("BuildWaterlines: %v", errs)
			}
			if diff := cmp.Diff(tt.want, keys(w)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantThrottle, w.Throttle); diff != "" {
				t.Errorf("throttle (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvict, w.CPUEviction); diff != "" {
				t.Errorf("CPU eviction (-want +got):\n%s", diff)
			}
			if errs := w.Validate(DefaultRegistry()); len(errs) > 0 {
				t.Errorf("built waterlines do not validate: %v", errs)
			}
		})
	}
}

func TestBuildWaterlinesErrors(t *testing.T) {
	bad := nodeQOS("bad", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](120), RestorePercent: ptr.To[int32](130), EvictPercent: ptr.To[int32](50)}
		s.Rules = []v1alpha1.WaterlineRule{
			{Name: "neg", Metric: v1alpha1.MetricCPUUsage, Threshold: resource.MustParse("-1"), Action: v1alpha1.ActionEvict},
			{Name: "neg", Metric: v1alpha1.MetricMemoryUtilization, Threshold: resource.MustParse("150"), Action: "Explode"},
			{Name: "odd", Metric: "gpu_usage", Threshold: resource.MustParse("1"), Action: v1alpha1.ActionEvict},
		}
		s.AvoidanceCount = ptr.To[int32](0)
		s.CPUEviction = &v1alpha1.CPUEvictionPolicy{SatisfactionLowerPercent: ptr.To[int32](90), SatisfactionUpperPercent: ptr.To[int32](70)}
	})
	good := nodeQOS("good", func(s *v1alpha1.NodeQOSSpec) {
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](90)}
	})
	w, errs := BuildWaterlines([]*v1alpha1.NodeQOS{bad, good}, node10)

	var got []string
	for _, e := range errs {
		got = append(got, e.Field+": "+e.Type.String())
	}
	p := "nodeQOS[bad].spec."
	want := []string{
		p + "avoidanceCount: Invalid value",
		p + "cpuEviction.satisfactionLowerPercent: Invalid value",
		p + "cpu.throttlePercent: Invalid value",
		p + "cpu.restorePercent: Invalid value",
		p + "cpu.restorePercent: Invalid value",
		p + "cpu.evictPercent: Invalid value",
		p + "rules[0].threshold: Invalid value",
		p + "rules[1].name: Duplicate value",
		p + "rules[1].threshold: Invalid value",
		p + "rules[1].action: Unsupported value",
		p + "rules[2].metric: Unsupported value",
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("errors (-want +got):\n%s\nall: %v", diff, errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "bad") {
			t.Errorf("error %q does not name its NodeQOS", e.Error())
		}
	}
	// The bad NodeQOS is left out whole; the good one still protects the node.
	wantLines := []lineKey{{ActionEvict, MetricMemory, 9663676416, 1, 1}}
	if diff := cmp.Diff(wantLines, keys(w)); diff != "" {
		t.Errorf("lines of the valid NodeQOS (-want +got):\n%s", diff)
	}
}

func TestBuildWaterlinesNeedsCapacity(t *testing.T) {
	nq := nodeQOS("a", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
		s.Rules = []v1alpha1.WaterlineRule{{Name: "m", Metric: v1alpha1.MetricMemoryUtilization, Threshold: resource.MustParse("80"), Action: v1alpha1.ActionEvict}}
	})
	_, errs := BuildWaterlines([]*v1alpha1.NodeQOS{nq}, Capacity{})
	if len(errs) != 2 {
		t.Fatalf("want one error for the cpu percent and one for the memory utilization without capacity, got %v", errs)
	}
}

func TestGaps(t *testing.T) {
	w := NewWaterlines(node10)
	w.Add(Line{Action: ActionThrottleDown, Metric: MetricCPU, Value: 7000, AvoidanceCount: 1, RestoreCount: 1})
	w.Add(Line{Action: ActionThrottleUp, Metric: MetricCPU, Value: 5000, AvoidanceCount: 1, RestoreCount: 1})
	w.Add(Line{Action: ActionThrottleDown, Metric: MetricMemory, Value: 100, AvoidanceCount: 1, RestoreCount: 1})
	// A higher line for the same action and metric loses.
	if w.Add(Line{Action: ActionThrottleDown, Metric: MetricCPU, Value: 7500, AvoidanceCount: 1, RestoreCount: 1}) {
		t.Errorf("Add of a higher line reported a win")
	}
	tests := []struct {
		name   string
		action Action
		usage  NodeUsage
		want   []Gap
	}{
		{"down: usage − line, positive only", ActionThrottleDown, NodeUsage{MetricCPU: 7300, MetricMemory: 90},
			[]Gap{{Metric: MetricCPU, Line: 7000, Usage: 7300, Value: 300}}},
		{"down: at the line is no gap", ActionThrottleDown, NodeUsage{MetricCPU: 7000, MetricMemory: 100}, nil},
		{"up: line − usage", ActionThrottleUp, NodeUsage{MetricCPU: 4200},
			[]Gap{{Metric: MetricCPU, Line: 5000, Usage: 4200, Value: 800}}},
		{"missing usage is marked missing", ActionThrottleDown, NodeUsage{MetricCPU: 6000},
			[]Gap{{Metric: MetricMemory, Line: 100, Missing: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, w.Gaps(tt.action, tt.usage)); diff != "" {
				t.Errorf("gaps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectNodeQOS(t *testing.T) {
	all := []v1alpha1.NodeQOS{
		{ObjectMeta: metav1.ObjectMeta{Name: "everyone"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: v1alpha1.NodeQOSSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Spec: v1alpha1.NodeQOSSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "cpu"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: v1alpha1.NodeQOSSpec{NodeSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}}}},
	}
	got, errs := SelectNodeQOS(all, map[string]string{"pool": "cpu"})
	var names []string
	for _, nq := range got {
		names = append(names, nq.Name)
	}
	if diff := cmp.Diff([]string{"everyone", "cpu"}, names); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Field, "broken") {
		t.Errorf("want one error naming the broken selector, got %v", errs)
	}
}

func TestPercentOfLargeCapacity(t *testing.T) {
	// 1 PiB of memory times 95 000 milli-percent overflows int64; the line
	// must still be 95 % of it.
	const pib = int64(1) << 50
	// 2^50 × 0.95 = 1 069 604 911 500 492.8, rounded down.
	if got, want := percentOf(pib, 95_000), int64(1069604911500492); got != want {
		t.Errorf("percentOf(1 PiB, 95%%) = %d, want %d", got, want)
	}
}
