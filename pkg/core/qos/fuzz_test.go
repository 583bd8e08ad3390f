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
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

var (
	fuzzMetrics = []v1alpha1.QOSMetric{v1alpha1.MetricCPUUsage, v1alpha1.MetricCPUUtilization,
		v1alpha1.MetricMemoryUsage, v1alpha1.MetricMemoryUtilization, "gpu_usage"}
	fuzzActions = []v1alpha1.QOSAction{v1alpha1.ActionForbidScheduling, v1alpha1.ActionThrottle, v1alpha1.ActionEvict, "Kill"}
)

// optPct turns a fuzzed number into an optional percent: negative means
// unset.
func optPct(v int32) *int32 {
	if v < 0 && v != -1 {
		return nil
	}
	return ptr.To(v)
}

// FuzzBuildWaterlines feeds one NodeQOS of hostile rules, quantities and
// percents, merged with a second valid one, on a node of any capacity.
// Whatever is accepted must be safe to act on: no line at or below 0, no
// line past the bounds, lines in order, a planner that builds; and a
// merge out of order is reported as an *InvertedLinesError, never planned.
func FuzzBuildWaterlines(f *testing.F) {
	f.Add(uint8(2), uint8(2), "10E", uint8(0), uint8(1), "8", int32(70), int32(90), int32(60), int32(-2), int32(95), int32(-2), int32(10), int64(10_000), int64(10<<30))
	f.Add(uint8(1), uint8(2), "250", uint8(1), uint8(1), "20", int32(80), int32(-2), int32(-2), int32(0), int32(0), int32(50), int32(2147483647), int64(4000), int64(1<<30))
	f.Add(uint8(0), uint8(2), "-1", uint8(3), uint8(0), "0", int32(0), int32(0), int32(0), int32(101), int32(-1), int32(-1), int32(0), int64(1), int64(1))
	f.Add(uint8(0), uint8(1), "1E", uint8(0), uint8(2), "100k", int32(-2), int32(-2), int32(-2), int32(-2), int32(-2), int32(-2), int32(-2), int64(96_000), int64(1<<40))
	// A 1 % line on a 50m node is 0.5m: it must not become a line at 0.
	f.Add(uint8(4), uint8(3), "x", uint8(4), uint8(3), "x", int32(1), int32(2), int32(-2), int32(-2), int32(-2), int32(-2), int32(-2), int64(50), int64(50))
	f.Fuzz(func(t *testing.T, m1, a1 uint8, th1 string, m2, a2 uint8, th2 string,
		throttle, evict, forbid, restore, memEvict, memForbid, maxPerMinute int32, cpuMilli, memBytes int64) {
		spec := v1alpha1.NodeQOSSpec{
			CPU: &v1alpha1.CPUWaterlines{ThrottlePercent: optPct(throttle), EvictPercent: optPct(evict),
				ForbidSchedulingPercent: optPct(forbid), RestorePercent: optPct(restore)},
			Memory:   &v1alpha1.MemoryWaterlines{EvictPercent: optPct(memEvict), ForbidSchedulingPercent: optPct(memForbid)},
			Eviction: &v1alpha1.EvictionPolicy{MaxPerMinute: optPct(maxPerMinute)},
		}
		for i, r := range []struct {
			m, a uint8
			th   string
		}{{m1, a1, th1}, {m2, a2, th2}} {
			q, err := resource.ParseQuantity(r.th)
			if err != nil {
				continue
			}
			spec.Rules = append(spec.Rules, v1alpha1.WaterlineRule{Name: string(rune('a' + i)),
				Metric: fuzzMetrics[int(r.m)%len(fuzzMetrics)], Action: fuzzActions[int(r.a)%len(fuzzActions)], Threshold: q})
		}
		hostile := &v1alpha1.NodeQOS{Spec: spec}
		hostile.Name = "hostile"
		other := nodeQOS("other", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](65), EvictPercent: ptr.To[int32](85)}
		})
		capacity := Capacity{CPUMilli: cpuMilli, MemoryBytes: memBytes}
		waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{hostile, other}, capacity)
		alone, aloneErrs := BuildWaterlines([]*v1alpha1.NodeQOS{hostile}, capacity)
		if len(aloneErrs) == 0 {
			if err := alone.CheckOrder(); err != nil {
				t.Fatalf("an accepted object alone is out of order: %v\nspec %+v", err, spec)
			}
			// A negative capacity (no kubelet reports one) is refused by the
			// planner itself.
			if _, err := NewPlanner(DefaultRegistry(), alone); err != nil && cpuMilli >= 0 && memBytes >= 0 {
				t.Fatalf("an accepted object does not plan: %v", err)
			}
		}
		maxCPU := resource.MustParse(v1alpha1.MaxCPUUsageThreshold)
		maxMem := resource.MustParse(v1alpha1.MaxMemoryUsageThreshold)
		for _, l := range waterlines.Lines {
			if l.Value <= 0 {
				t.Fatalf("line at %d: %+v (errors %v)", l.Value, l, errs)
			}
			if l.Metric == MetricCPU && l.Value > max(maxCPU.MilliValue(), cpuMilli) {
				t.Fatalf("CPU line %d past the bound", l.Value)
			}
			if l.Metric == MetricMemory && l.Value > max(maxMem.Value(), memBytes) {
				t.Fatalf("memory line %d past the bound", l.Value)
			}
		}
		if err := waterlines.CheckOrder(); err != nil {
			var inv *InvertedLinesError
			if !errors.As(err, &inv) {
				t.Fatalf("CheckOrder returned %T, want *InvertedLinesError", err)
			}
			if _, perr := NewPlanner(DefaultRegistry(), waterlines); perr == nil {
				t.Fatal("a planner was built on an inverted merge")
			}
		}
	})
}
