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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

func batchPod(name string, started time.Duration) *corev1.Pod {
	p := resctltest.MakePod(name).Band(extension.BandBatch).CPU("1", "1").Obj()
	p.Status.StartTime = &metav1.Time{Time: t0.Add(-started)}
	return p
}

// TestThrottleOnlyWhatIsNeeded: a 4-CPU node with a throttle line at 50 %
// (2000m) uses 3500m; the Batch pods a (1000m), b (900m), c (800m) are
// throttled in usage order until the 1500m gap is closed -- a to its floor
// 100m (10 % of its 1 CPU request, releasing 900m), b to 300m (releasing the
// last 600m) -- and c, the Prod pod and the Batch DaemonSet pod are left
// alone. When usage falls under the restore line the quotas are given back
// step by step until none is left.
func TestThrottleOnlyWhatIsNeeded(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50), RestorePercent: i32(45)}
		s.AvoidanceCount, s.RestoreCount = i32(1), i32(1)
		s.Throttle = &v1alpha1.ThrottlePolicy{StepPercent: i32(50)}
	}))
	w.addPod(resctltest.MakePod("prod").Band(extension.BandProd).Obj(), 0.5, 1)
	w.addPod(resctltest.MakePod("ds").Band(extension.BandBatch).OwnedBy("DaemonSet").Obj(), 0.3, 1)
	w.addPod(batchPod("a", 3*time.Hour), 1.0, 1)
	w.addPod(batchPod("b", 2*time.Hour), 0.9, 1)
	w.addPod(batchPod("c", time.Hour), 0.8, 1)
	w.nodeCPU, w.nodeMem = 3.5, 5

	w.cycle()
	if diff := cmp.Diff(map[string]int64{"a": 100, "b": 300}, w.quotas()); diff != "" {
		t.Fatalf("quotas after the first cycle over the line (-want +got):\n%s", diff)
	}
	ev := w.events()
	if n := countPrefix(ev, "Normal Throttled"); n != 2 {
		t.Errorf("Throttled events = %d, want 2: %v", n, ev)
	}
	if w.reports != 1 {
		t.Errorf("early reports requested = %d, want 1 (Throttling turned True)", w.reports)
	}
	var status v1alpha1.NodeMetricStatus
	w.ex.ContributeStatus(&status)
	if c := condition(&status, v1alpha1.ConditionThrottling); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "default/a at 100m") {
		t.Errorf("Throttling condition = %+v, want True naming default/a at 100m", c)
	}

	// The sample now shows the quotas: 0.5 + 0.3 + 0.1 + 0.3 + 0.8 = 2.0,
	// at the line: quotas are held.
	w.use["a"], w.use["b"] = usage{0.1, 1 << 30}, usage{0.3, 1 << 30}
	w.nodeCPU = 2.0
	w.cycle()
	if diff := cmp.Diff(map[string]int64{"a": 100, "b": 300}, w.quotas()); diff != "" {
		t.Errorf("quotas at the line (-want +got):\n%s", diff)
	}
	if ev := w.events(); len(ev) != 0 {
		t.Errorf("events while holding: %v, want none", ev)
	}

	// Load drops to 1.0, under the 1800m restore line: quotas come back,
	// most important (longest running) pod first, at most the room under
	// the line per cycle, until none is left.
	w.use["prod"], w.use["c"] = usage{0.2, 1 << 30}, usage{0.1, 1 << 30}
	w.nodeCPU = 1.0
	for i := 0; i < 6 && len(w.quotas()) > 0; i++ {
		w.cycle()
	}
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("quotas after the load dropped = %v, want none", q)
	}
	if n := countPrefix(w.events(), "Normal ThrottleReleased"); n != 2 {
		t.Errorf("ThrottleReleased events = %d, want 2", n)
	}
	if w.reports != 2 {
		t.Errorf("early reports requested = %d, want 2 (Throttling turned False)", w.reports)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_throttles_total", "dry_run", "false")); got != 2 {
		t.Errorf("throttles metric = %v, want 2", got)
	}
}

// starvedCPU sets up the satisfaction-based CPU eviction on the 4-core test node: an
// evict line at 50 %, a 1 s window, a Prod pod using 2.4 cores and n Batch
// pods asking 1 core each and getting 0.3: starved (30 % < 60 %) and busy
// (all of what the node leaves them). Eviction must remove request until
// the rest would be 80 % satisfied.
func starvedCPU(w *world, n int, policy *v1alpha1.EvictionPolicy) {
	w.nqs = []*v1alpha1.NodeQOS{nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: i32(50)}
		s.CPUEviction = &v1alpha1.CPUEvictionPolicy{WindowSeconds: i64(2)}
		s.AvoidanceCount = i32(1)
		s.Eviction = policy
	})}
	w.addPod(resctltest.MakePod("prod").Band(extension.BandProd).Obj(), 2.4, 1)
	for i := range n {
		w.addPod(batchPod(fmt.Sprintf("p%d", i), time.Duration(i+1)*time.Hour), 0.3, 1)
	}
	w.nodeCPU, w.nodeMem = 2.4+0.3*float64(n), 2
}

// TestPDBBlockedEvictionMovesOnToTheNextPod: CPU eviction chooses pods; a
// PodDisruptionBudget refuses one of them. The others are evicted
// with the NodeQOS grace period; Events say so on the pods and the node.
// The refused pod is left out of plans (the planner picks among the rest)
// until its retry time; the Prod pod is never asked; nothing is deleted
// past the PDB (CPU is not memory).
func TestPDBBlockedEvictionMovesOnToTheNextPod(t *testing.T) {
	w := newWorld(t)
	starvedCPU(w, 5, &v1alpha1.EvictionPolicy{GracePeriodSeconds: i64(5)})
	w.cycle() // fills the window
	w.cycle()
	w.cycle()
	first := w.evictor.callList()
	if len(first) == 0 {
		t.Fatalf("no eviction with Batch pods starved over the evict line; events %v", w.events())
	}
	refused := first[0]
	w.evictor.refuse[refused] = fmt.Errorf("wrapped: %w", executor.ErrEvictionBlocked)
	// Start again with the refusal scripted: the executor has asked
	// nobody yet.
	w.evictor.calls, w.evictor.grace = nil, nil
	w.restart()
	w.evictor.refuse[refused] = fmt.Errorf("wrapped: %w", executor.ErrEvictionBlocked)
	for range 5 {
		w.cycle()
	}
	// The evictions of one cycle run side by side: their calls come in
	// any order.
	calls := w.evictor.callList()
	asked := map[string]int{}
	for _, c := range calls {
		asked[c]++
	}
	if asked[refused] != 1 {
		t.Errorf("%s asked %d times before its retry time: %v", refused, asked[refused], calls)
	}
	if len(asked) < len(first) {
		t.Errorf("pods asked = %v, want at least the %d first chosen (%v)", calls, len(first), first)
	}
	if asked["prod"] > 0 {
		t.Errorf("the Prod pod was asked to be evicted: %v", calls)
	}
	if g := w.evictor.grace[0]; g == nil || *g != 5 {
		t.Errorf("grace period = %v, want 5 s from the NodeQOS", g)
	}
	ev := w.events()
	for _, want := range []string{"Warning EvictionBlocked", "Warning Evicted Evicted by node QoS on n1", "Warning EvictedPod Node QoS evicted pod default/"} {
		if countPrefix(ev, want) == 0 {
			t.Errorf("want an event %q, got %v", want, ev)
		}
	}
	if len(w.evictor.deletes) != 0 {
		t.Errorf("CPU eviction deleted %v past a PDB; only memory relief may", w.evictor.deletes)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_evictions_total", "result", "blocked")); got != 1 {
		t.Errorf("blocked evictions metric = %v, want 1", got)
	}
}

// TestMemoryReliefMovesPastPDB: memory is 2 GiB over the evict line; the
// largest Batch pod (a, 3 GiB) has a PodDisruptionBudget that refuses.
// Memory relief does not wait (kubelet's eviction does not): a is deleted
// with the NodeQOS grace period, an Event says a PDB was overridden, and
// no other pod is touched -- a alone closes the gap.
func TestMemoryReliefMovesPastPDB(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: i32(75)}
		s.Eviction = &v1alpha1.EvictionPolicy{GracePeriodSeconds: i64(5)}
	}))
	w.addPod(resctltest.MakePod("prod").Band(extension.BandProd).Obj(), 0.1, 6)
	w.addPod(batchPod("a", time.Hour), 0.1, 3)
	w.addPod(batchPod("b", time.Hour), 0.1, 2.5)
	w.nodeCPU, w.nodeMem = 1, 14
	w.evictor.refuse["a"] = fmt.Errorf("wrapped: %w", executor.ErrEvictionBlocked)

	w.cycle()
	w.cycle()
	w.cycle()
	if diff := cmp.Diff([]string{"a"}, w.evictor.calls); diff != "" {
		t.Errorf("eviction calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, w.evictor.deletes); diff != "" {
		t.Errorf("deletes past the PDB (-want +got):\n%s", diff)
	}
	ev := w.events()
	if countPrefix(ev, "Warning EvictedPastDisruptionBudget") != 1 || countPrefix(ev, "Warning EvictionBlocked") != 0 {
		t.Errorf("events = %v, want one EvictedPastDisruptionBudget and no EvictionBlocked", ev)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_evictions_total", "result", "deleted_past_pdb")); got != 1 {
		t.Errorf("deleted_past_pdb metric = %v, want 1", got)
	}
}

// TestMemoryEvictionsHaveTheirOwnBudget: the NodeQOS allows one eviction
// a minute, but memory is 4 GiB over its evict line: the four 1 GiB pods
// needed all go in the first cycle, on the memory budget.
func TestMemoryEvictionsHaveTheirOwnBudget(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: i32(50)}
		s.Eviction = &v1alpha1.EvictionPolicy{MaxPerMinute: i32(1)}
	}))
	for i := range 5 {
		w.addPod(batchPod(fmt.Sprintf("p%d", i), time.Duration(i)*time.Hour), 0.1, 1)
	}
	w.nodeCPU, w.nodeMem = 1, 12
	w.cycle()
	if n := len(w.evictor.calls); n != 4 {
		t.Errorf("memory evictions in the first cycle = %v, want 4 although maxPerMinute is 1", w.evictor.calls)
	}
}

// TestEvictionRateLimit: four starved Batch pods must go for CPU but
// maxPerMinute is 2: two now, none a second later, one more when the
// bucket refilled half a minute later.
func TestEvictionRateLimit(t *testing.T) {
	w := newWorld(t)
	starvedCPU(w, 5, &v1alpha1.EvictionPolicy{MaxPerMinute: i32(2)})
	w.cycle()
	w.cycle()
	w.cycle()
	if n := len(w.evictor.calls); n != 2 {
		t.Fatalf("evictions in the first cycles = %v, want 2", w.evictor.calls)
	}
	w.cycle()
	if n := len(w.evictor.calls); n != 2 {
		t.Errorf("evictions a second later = %v, want still 2", w.evictor.calls)
	}
	// 30 s after the first: one token back (the window starts again after
	// the jump and is full at the third cycle).
	w.clock.Step(28 * time.Second)
	for range 3 {
		w.cycle()
	}
	if n := len(w.evictor.calls); n != 3 {
		t.Errorf("evictions after half a minute = %v, want 3", w.evictor.calls)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_evictions_total", "result", "rate_limited")); got < 2 {
		t.Errorf("rate-limited metric = %v, want at least 2", got)
	}
}

// TestEvictionBudgetSurvivesRestarts: maxPerMinute 2 and several starved
// pods that must go. Two are evicted; the agent restarts twice within
// three seconds (the budget is in its state directory): nobody else is
// evicted until the budget refills, one pod per 30 s (without the
// persisted budget each restart hands out two more: six in three seconds).
func TestEvictionBudgetSurvivesRestarts(t *testing.T) {
	w := newWorld(t)
	starvedCPU(w, 5, &v1alpha1.EvictionPolicy{MaxPerMinute: i32(2)})
	w.cycle()
	w.cycle()
	w.cycle()
	if n := len(w.evictor.calls); n != 2 {
		t.Fatalf("evictions before the restarts = %v, want 2", w.evictor.calls)
	}
	total := 0
	for range 2 {
		w.restart()
		for range 3 {
			w.cycle()
		}
		total += len(w.evictor.calls)
	}
	if total != 0 {
		t.Errorf("evictions in the 4 s after two restarts = %d, want none (2 were spent before)", total)
	}
	w.restart()
	w.clock.Step(23 * time.Second)
	for range 3 {
		w.cycle()
	}
	if got := len(w.evictor.calls); got != 1 {
		t.Errorf("evictions 30-32 s after the first two = %v, want 1", w.evictor.calls)
	}
}

// TestHangingEvictionDoesNotStallTheLoop: the API server does not answer
// (a partition). The cycle that asks for an eviction returns at once and
// keeps throttling on its beat; the eviction gives up after its timeout
// and is asked again a few seconds later, without another pod being
// chosen meanwhile.
func TestHangingEvictionDoesNotStallTheLoop(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: i32(75)}
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
		s.AvoidanceCount = i32(1)
	}))
	w.cfg.EvictionTimeout = ptr.To(time.Second)
	w.restart()
	w.evictor.hang = true
	w.addPod(batchPod("a", time.Hour), 0.2, 3)
	w.addPod(batchPod("b", 2*time.Hour), 1.5, 1)
	w.addPod(batchPod("c", 3*time.Hour), 1.5, 0.5)
	w.nodeCPU, w.nodeMem = 3.5, 14

	ctx := w.t.Context()
	for i := range 3 {
		w.clock.Step(time.Second)
		start := time.Now()
		if err := w.ex.Cycle(ctx, w.snapshot()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 200*time.Millisecond {
			t.Errorf("cycle %d took %v with an eviction hanging, want well under the 1 s beat", i+1, took)
		}
		if len(w.quotas()) == 0 {
			t.Errorf("cycle %d: nothing throttled while an eviction hangs", i+1)
		}
	}
	if got := w.evictor.callList(); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("eviction calls while the first hangs = %v, want [a] only", got)
	}
	w.ex.WaitForEvictions(ctx) // the 1 s timeout
	w.cycle()
	if got := w.evictor.callList(); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("eviction calls right after the timeout = %v, want [a] only (b is not chosen in a's place)", got)
	}
	w.clock.Step(5 * time.Second)
	w.cycle()
	if got := w.evictor.callList(); !cmp.Equal(got, []string{"a", "a"}) {
		t.Errorf("eviction calls 5 s after the timeout = %v, want a asked again", got)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_evictions_total", "result", "error")); got < 1 {
		t.Errorf("error evictions metric = %v, want at least 1", got)
	}
}

// TestDryRun: with a dry-run NodeQOS nothing changes -- no quota, no
// eviction, no ForbidScheduling -- but every action is logged, counted
// and recorded as an Event.
func TestDryRun(t *testing.T) {
	w := newWorld(t, nodeQOS("trial", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: i32(40), ThrottlePercent: i32(50)}
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: i32(50)}
		s.AvoidanceCount = i32(1)
		s.DryRun = true
	}))
	w.addPod(batchPod("a", time.Hour), 3, 9)
	w.nodeCPU, w.nodeMem = 3, 10
	w.cycle()
	w.cycle() // the same would-be eviction is reported once a minute, not every cycle
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("dry run stated quotas %v", q)
	}
	if len(w.evictor.calls) != 0 {
		t.Errorf("dry run evicted %v", w.evictor.calls)
	}
	ev := w.events()
	if countPrefix(ev, "Normal WouldEvict") != 1 {
		t.Errorf("events = %v, want a WouldEvict", ev)
	}
	var status v1alpha1.NodeMetricStatus
	w.ex.ContributeStatus(&status)
	if c := condition(&status, v1alpha1.ConditionForbidScheduling); c == nil || c.Status != metav1.ConditionFalse || c.Reason != executor.ReasonDryRun {
		t.Errorf("ForbidScheduling = %+v, want False/DryRun", c)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_evictions_total", "result", "dry_run")); got != 1 {
		t.Errorf("dry-run evictions metric = %v, want 1", got)
	}
}

// TestDryRunThrottle: a dry-run throttle is recorded, not stated.
func TestDryRunThrottle(t *testing.T) {
	w := newWorld(t, nodeQOS("trial", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
		s.AvoidanceCount = i32(1)
		s.DryRun = true
	}))
	w.addPod(batchPod("a", time.Hour), 3, 1)
	w.nodeCPU, w.nodeMem = 3, 2
	w.cycle()
	w.cycle()
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("dry run stated quotas %v", q)
	}
	// One would-throttle: the second cycle counts the first's (virtual)
	// quota as already releasing.
	// Gap 3000 − 2000 = 1000m: a would go from 3000m to 2000m.
	if n := countPrefix(w.events(), "Normal WouldThrottle Dry run, not applied: CPU quota none -> 2000m"); n != 1 {
		t.Errorf("WouldThrottle events = %d, want 1", n)
	}
	if got := promtest.ToFloat64(gathered(t, w, "waterline_agent_qos_throttles_total", "dry_run", "true")); got != 1 {
		t.Errorf("dry-run throttles metric = %v, want 1", got)
	}
}

// TestForbidSchedulingCondition: on after avoidanceCount samples over the
// line, off after restoreCount samples under it; each flip asks for an
// early report, and the condition carries the flip's time.
func TestForbidSchedulingCondition(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: i32(50)}
	}))
	w.addPod(batchPod("a", time.Hour), 1, 1)
	status := func() *metav1.Condition {
		var st v1alpha1.NodeMetricStatus
		w.ex.ContributeStatus(&st)
		return condition(&st, v1alpha1.ConditionForbidScheduling)
	}
	type obs struct {
		Status  metav1.ConditionStatus
		Reason  string
		Since   time.Time
		Reports int
	}
	steps := []struct {
		nodeCPU float64
		want    obs
	}{
		// Line 2000m; default avoidance 2, restore 3.
		{2.5, obs{metav1.ConditionFalse, executor.ReasonUnderWaterline, t0.Add(1 * time.Second), 0}},
		{2.5, obs{metav1.ConditionTrue, executor.ReasonOverWaterline, t0.Add(2 * time.Second), 1}},
		{1.5, obs{metav1.ConditionTrue, executor.ReasonOverWaterline, t0.Add(2 * time.Second), 1}},
		{1.5, obs{metav1.ConditionTrue, executor.ReasonOverWaterline, t0.Add(2 * time.Second), 1}},
		{1.5, obs{metav1.ConditionFalse, executor.ReasonUnderWaterline, t0.Add(5 * time.Second), 2}},
	}
	for i, s := range steps {
		w.nodeCPU, w.nodeMem = s.nodeCPU, 2
		w.cycle()
		c := status()
		got := obs{c.Status, c.Reason, c.LastTransitionTime.Time.UTC(), w.reports}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("cycle %d (usage %.1f): (-want +got):\n%s", i+1, s.nodeCPU, diff)
		}
	}
}

// TestRestartForgetsQuotas: after a restart nothing is throttled until the
// planner asks again: under the line, never; over it, after avoidanceCount
// fresh samples.
func TestRestartForgetsQuotas(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
	}))
	w.addPod(batchPod("a", time.Hour), 3, 1)
	w.nodeCPU, w.nodeMem = 3, 2
	w.cycle()
	w.cycle()
	if len(w.quotas()) != 1 {
		t.Fatalf("quotas before the restart = %v, want a throttled", w.quotas())
	}
	w.restart()
	w.use["a"] = usage{1, 1 << 30}
	w.nodeCPU = 1
	w.cycle()
	w.cycle()
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("quotas after a restart under the line = %v, want none", q)
	}
	w.use["a"] = usage{3, 1 << 30}
	w.nodeCPU = 3
	w.cycle()
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("quotas after one sample over the line = %v, want none (avoidanceCount 2)", q)
	}
	w.cycle()
	if q := w.quotas(); len(q) != 1 {
		t.Errorf("quotas after two samples over the line = %v, want a throttled", q)
	}
}

// TestStaleConditionsAfterRestart: the NodeMetric still says Throttling
// True, written by the process that died; the new one, with nothing
// throttled, asks for an early report until the NodeMetric shows False.
func TestStaleConditionsAfterRestart(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
	}))
	w.addPod(batchPod("a", time.Hour), 1, 1)
	w.nodeCPU, w.nodeMem = 1, 2
	w.nm.Status.Conditions[1].Status = metav1.ConditionTrue
	w.cycle()
	if w.reports != 1 {
		t.Fatalf("early reports after the first cycle = %d, want 1", w.reports)
	}
	if c := condition(&w.nm.Status, v1alpha1.ConditionThrottling); c.Status != metav1.ConditionFalse {
		t.Errorf("Throttling after the report = %s, want False", c.Status)
	}
	w.cycle()
	if w.reports != 1 {
		t.Errorf("early reports once the NodeMetric is right = %d, want still 1", w.reports)
	}
}

// TestNoWaterlineReleasesEverything: when the last NodeQOS selecting the
// node goes, every quota is released and the condition says why.
func TestNoWaterlineReleasesEverything(t *testing.T) {
	nq := nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(50)}
		s.AvoidanceCount = i32(1)
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "colo"}}
	})
	w := newWorld(t, nq, nodeQOS("elsewhere", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(10)}
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "other"}}
	}))
	w.addPod(batchPod("a", time.Hour), 3, 1)
	w.nodeCPU, w.nodeMem = 3, 2
	w.cycle()
	if len(w.quotas()) != 1 {
		t.Fatalf("quotas = %v, want a throttled", w.quotas())
	}
	w.nqs = w.nqs[1:]
	w.cycle()
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("quotas without a NodeQOS = %v, want none", q)
	}
	var st v1alpha1.NodeMetricStatus
	w.ex.ContributeStatus(&st)
	if c := condition(&st, v1alpha1.ConditionForbidScheduling); c == nil || c.Reason != executor.ReasonNoWaterline {
		t.Errorf("ForbidScheduling = %+v, want reason NoWaterline", c)
	}
}

// TestNodeNotKnownYet: before the Node is in the informer nothing happens
// and no condition is contributed.
func TestNodeNotKnownYet(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(10)}
		s.AvoidanceCount = i32(1)
	}))
	w.addPod(batchPod("a", time.Hour), 3, 1)
	w.nodeCPU, w.nodeMem, w.noNode = 3, 2, true
	w.cycle()
	var st v1alpha1.NodeMetricStatus
	w.ex.ContributeStatus(&st)
	if len(w.quotas()) != 0 || len(st.Conditions) != 0 {
		t.Errorf("without a node: quotas %v, conditions %v; want none", w.quotas(), st.Conditions)
	}
}

// TestKeepsOtherConditions: the executor sets its two conditions and
// leaves the others (the predictor's) alone.
func TestKeepsOtherConditions(t *testing.T) {
	w := newWorld(t)
	w.nodeCPU, w.nodeMem = 1, 1
	w.cycle()
	st := v1alpha1.NodeMetricStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPredictionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}}
	w.ex.ContributeStatus(&st)
	var types []string
	for _, c := range st.Conditions {
		types = append(types, c.Type)
	}
	if diff := cmp.Diff([]string{v1alpha1.ConditionForbidScheduling, v1alpha1.ConditionPredictionReady, v1alpha1.ConditionThrottling}, types, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("condition types (-want +got):\n%s", diff)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := executor.New(executor.Config{EvictionRetryAfter: ptrDuration(time.Hour)}, executor.Deps{})
	if err == nil {
		t.Fatal("New accepted an hour's retry and no dependencies")
	}
	for _, want := range []string{"qos.evictionRetryAfter: Invalid value: \"1h0m0s\"", "deps.evictor: Required", "deps.reconciler: Required", "deps.recorder: Required", "deps.clock: Required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func ptrDuration(d time.Duration) *time.Duration { return &d }

// TestRefusedEvictionKeepsNoQuotaInAProtectedNamespace: a throttled Batch
// pod whose eviction a PodDisruptionBudget refused keeps its quota while
// the refusal runs out -- unless its namespace has meanwhile been put in
// the NodeQOS spec.protectedNamespaces: then it is never throttled
// (docs/design/node-qos.md#protected-pods), refusal or not.
func TestRefusedEvictionKeepsNoQuotaInAProtectedNamespace(t *testing.T) {
	w := newWorld(t)
	starvedCPU(w, 5, nil)
	w.nqs[0].Spec.CPU.ThrottlePercent = i32(40)
	for _, p := range w.pods {
		w.evictor.refuse[p.Name] = fmt.Errorf("wrapped: %w", executor.ErrEvictionBlocked)
	}
	for range 4 {
		w.cycle()
	}
	w.ex.WaitForEvictions(t.Context())
	w.cycle()
	if len(w.evictor.callList()) == 0 || len(w.quotas()) == 0 {
		t.Fatalf("want throttled pods whose evictions were refused: evictions asked %v, quotas %v", w.evictor.callList(), w.quotas())
	}
	protected := w.nqs[0].DeepCopy()
	protected.Spec.ProtectedNamespaces = []string{w.pods[1].Namespace}
	protected.ResourceVersion = "2"
	w.nqs = []*v1alpha1.NodeQOS{protected}
	w.cycle()
	if q := w.quotas(); len(q) != 0 {
		t.Errorf("quotas once the pods' namespace is protected = %v, want none", q)
	}
}

// TestNoEvictionFromTheNodeSnapshot: right after a restart the agent sees
// the node snapshot a previous run saved until its informers sync; the
// pods and NodeQOS objects in it may be long out of date (an agent
// reinstalled weeks later, a NodeQOS switched to dry run while the agent
// was down). Memory over the snapshot's evict line evicts nothing until
// the current view is there; then it does.
func TestNoEvictionFromTheNodeSnapshot(t *testing.T) {
	w := newWorld(t, nodeQOS("colo", func(s *v1alpha1.NodeQOSSpec) {
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: i32(75)}
	}))
	w.addPod(resctltest.MakePod("prod").Band(extension.BandProd).Obj(), 0.1, 6)
	w.addPod(batchPod("a", time.Hour), 0.1, 3)
	w.nodeCPU, w.nodeMem = 1, 14
	for range 3 {
		w.clock.Step(time.Second)
		s := w.snapshot()
		s.FromNodeSnapshot = true
		if err := w.ex.Cycle(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		w.ex.WaitForEvictions(t.Context())
	}
	if calls := w.evictor.callList(); len(calls) != 0 {
		t.Errorf("evictions from the node snapshot: %v, want none", calls)
	}
	w.cycle()
	w.ex.WaitForEvictions(t.Context())
	if diff := cmp.Diff([]string{"a"}, w.evictor.callList()); diff != "" {
		t.Errorf("evictions once the current view is there (-want +got):\n%s", diff)
	}
}
