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

package executor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// TestRefusedMergeKeepsLastGoodLines: a second NodeQOS, valid alone, puts
// a CPU evict line (30 %) under the throttle line of the first (50 %). The
// agent refuses the merge with one Warning event naming both, keeps the
// quotas of the last good lines, and evicts nobody although usage is far
// over the inverted evict line. A fresh agent that only ever saw the
// inverted merge acts on nothing.
func TestRefusedMergeKeepsLastGoodLines(t *testing.T) {
	throttle := nodeQOS("a-throttle", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
		s.AvoidanceCount, s.RestoreCount = i32(1), i32(1)
	})
	evict := nodeQOS("b-evict", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: i32(30)}
		s.CPUEviction = &v1alpha1.CPUEvictionPolicy{WindowSeconds: i64(1)}
		s.AvoidanceCount, s.RestoreCount = i32(1), i32(1)
	})
	w := newWorld(t, throttle)
	w.addPod(batchPod("a", 3*time.Hour), 1.0, 1)
	w.addPod(batchPod("b", 2*time.Hour), 0.9, 1)
	w.addPod(batchPod("c", time.Hour), 0.8, 1)
	w.nodeCPU, w.nodeMem = 3.5, 5
	w.cycle()
	good := w.quotas()
	if len(good) == 0 {
		t.Fatal("the valid NodeQOS throttled nobody")
	}
	w.events()

	w.nqs = append(w.nqs, evict)
	for i := 0; i < 3; i++ {
		w.clock.Step(time.Second)
		err := w.ex.Cycle(t.Context(), w.snapshot())
		var inv *qos.InvertedLinesError
		if !errors.As(err, &inv) {
			t.Fatalf("cycle %d: Cycle = %v, want an *InvertedLinesError", i, err)
		}
	}
	if diff := cmp.Diff(good, w.quotas()); diff != "" {
		t.Errorf("quotas after the refused merge (-last good +got):\n%s", diff)
	}
	if len(w.evictor.calls) != 0 {
		t.Errorf("evicted %v on an inverted set of lines", w.evictor.calls)
	}
	ev := w.events()
	if n := countPrefix(ev, "Warning RefusedNodeQOSMerge"); n != 1 {
		t.Errorf("RefusedNodeQOSMerge events = %d, want 1 over three cycles: %v", n, ev)
	}

	// A fresh agent: no last good lines, so nothing at all.
	fresh := newWorld(t, throttle, evict)
	fresh.addPod(batchPod("a", 3*time.Hour), 1.0, 1)
	fresh.nodeCPU, fresh.nodeMem = 3.5, 5
	for i := 0; i < 3; i++ {
		fresh.clock.Step(time.Second)
		if err := fresh.ex.Cycle(t.Context(), fresh.snapshot()); err == nil {
			t.Fatal("a fresh agent accepted an inverted merge")
		}
	}
	if q := fresh.quotas(); len(q) != 0 || len(fresh.evictor.calls) != 0 {
		t.Errorf("a fresh agent acted on an inverted merge: quotas %v, evictions %v", q, fresh.evictor.calls)
	}
}

// TestNodeQOSListOrderIsNotAChange: the informer lists NodeQOS objects in
// no fixed order. The same objects in another order are the same
// waterlines: an inverted merge is reported once, not again every time the
// order flips.
func TestNodeQOSListOrderIsNotAChange(t *testing.T) {
	throttle := nodeQOS("a-throttle", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
	})
	evict := nodeQOS("b-evict", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: i32(30)}
	})
	w := newWorld(t, throttle, evict)
	w.addPod(batchPod("a", time.Hour), 1.0, 1)
	w.nodeCPU, w.nodeMem = 3.5, 5
	for i := range 6 {
		if i%2 == 0 {
			w.nqs = []*v1alpha1.NodeQOS{throttle, evict}
		} else {
			w.nqs = []*v1alpha1.NodeQOS{evict, throttle}
		}
		w.clock.Step(time.Second)
		_ = w.ex.Cycle(t.Context(), w.snapshot())
	}
	ev := w.events()
	if n := countPrefix(ev, "Warning RefusedNodeQOSMerge"); n != 1 {
		t.Errorf("RefusedNodeQOSMerge events = %d over six cycles listing the same two objects, want 1: %v", n, ev)
	}
}
