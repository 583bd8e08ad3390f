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
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// throttleQOS: CPU throttle line at 70 % of 10 cores = 7000m, restore line
// the same (none configured), one sample to trigger or release.
func throttleQOS(edits ...func(*v1alpha1.NodeQOSSpec)) *v1alpha1.NodeQOS {
	return nodeQOS("throttle", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
		s.AvoidanceCount = ptr.To[int32](1)
		s.RestoreCount = ptr.To[int32](1)
		for _, e := range edits {
			e(s)
		}
	})
}

// batch returns a Batch pod requesting 1 core, limited to 2: throttle floor
// 100m (10 % of 1000m), restore step 200m (10 % of 2000m).
func batch(name string) *podBuilder { return makePod(name).cpu("1", "2") }

// fourPods use 600m, 500m, 400m and 300m, so CPUSorter orders them a, b, c, d.
func fourPods(quotas ...int64) []Candidate {
	q := make([]int64, 4)
	copy(q, quotas)
	return []Candidate{
		cand(batch("d"), usage{cpu: 300, quota: q[3]}),
		cand(batch("b"), usage{cpu: 500, quota: q[1]}),
		cand(batch("a"), usage{cpu: 600, quota: q[0]}),
		cand(batch("c"), usage{cpu: 400, quota: q[2]}),
	}
}

func TestPlanThrottlePrecise(t *testing.T) {
	tests := []struct {
		name      string
		nodeCPU   int64
		pods      []Candidate
		want      map[string]int64
		wantOut   Outcome
		wantWords string
	}{
		{
			name:    "acts on exactly the shortest sorted prefix that closes the gap",
			nodeCPU: 8000,
			pods:    fourPods(),
			// Gap 8000 − 7000 = 1000.
			// a: max(600 − 1000, floor 100) = 100, releases 500, 500 left;
			// b: max(500 − 500, 100) = 100, releases 400, 100 left;
			// c: 400 − 100 = 300, releases 100, closed; d untouched.
			want:    map[string]int64{"a": 100, "b": 100, "c": 300},
			wantOut: Outcome{Action: ActionThrottleDown, Metric: MetricCPU, Mode: ModePrecise, Gap: 1000, Released: 1000, Acted: 3},
		},
		{
			name:    "one pod closes a small gap",
			nodeCPU: 7300,
			pods:    fourPods(),
			// Gap 300: a goes 600 → 300.
			want:    map[string]int64{"a": 300},
			wantOut: Outcome{Action: ActionThrottleDown, Metric: MetricCPU, Mode: ModePrecise, Gap: 300, Released: 300, Acted: 1},
		},
		{
			name:    "not enough to take: every pod at its floor, the gap reported open",
			nodeCPU: 12000,
			pods:    fourPods(),
			// Gap 5000; floors release 500 + 400 + 300 + 200 = 1400.
			want:      map[string]int64{"a": 100, "b": 100, "c": 100, "d": 100},
			wantOut:   Outcome{Action: ActionThrottleDown, Metric: MetricCPU, Mode: ModePrecise, Gap: 5000, Released: 1400, Acted: 4},
			wantWords: "3600 still open",
		},
		{
			name:    "a quota planned before and not yet in the sample counts first",
			nodeCPU: 8000,
			// b already held at 300m while the sample shows 500m: 200m
			// pending, so 800 left. a: 600 → 100 (500, 300 left);
			// b: 300 → max(300 − 300, 100) = 100 (200 more, 100 left);
			// c: 400 → 300 (100, closed).
			pods:    fourPods(0, 300),
			want:    map[string]int64{"a": 100, "b": 100, "c": 300},
			wantOut: Outcome{Action: ActionThrottleDown, Metric: MetricCPU, Mode: ModePrecise, Gap: 1000, Pending: 200, Released: 800, Acted: 3},
		},
		{
			name:    "quotas already below what closing the gap needs are never raised",
			nodeCPU: 7100,
			// Gap 100; a and b are held far down already, at 50m and 60m,
			// releasing 550 + 440 = 990 pending: closed without acting.
			pods:    fourPods(50, 60),
			want:    map[string]int64{},
			wantOut: Outcome{Action: ActionThrottleDown, Metric: MetricCPU, Mode: ModePrecise, Gap: 100, Pending: 990},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlanner(t, throttleQOS())
			plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: tt.nodeCPU}}, tt.pods, Hysteresis{})
			if diff := cmp.Diff(tt.want, changedQuotas(plan)); diff != "" {
				t.Errorf("changed quotas (-want +got):\n%s", diff)
			}
			got, _ := plan.Outcome(ActionThrottleDown, MetricCPU)
			if diff := cmp.Diff(tt.wantOut, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if len(plan.Quotas) != len(tt.pods) {
				t.Errorf("plan lists %d quotas, want one per candidate (%d)", len(plan.Quotas), len(tt.pods))
			}
			if !strings.Contains(strings.Join(plan.Reasons, "\n"), tt.wantWords) {
				t.Errorf("reasons %q lack %q", plan.Reasons, tt.wantWords)
			}
		})
	}
}

// TestPlanThrottleWithoutRestoreLine is the peer trap of dropping the
// throttle gap when no restore line is configured: precise throttling must
// still run, and the restore line must be the throttle line.
func TestPlanThrottleWithoutRestoreLine(t *testing.T) {
	p := mustPlanner(t, throttleQOS())
	waterlines := p.Waterlines()
	if _, ok := waterlines.Line(ActionThrottleUp, MetricCPU); !ok {
		t.Fatalf("no restore line: the throttle line must stand in for it")
	}
	plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 7300}}, fourPods(), Hysteresis{})
	if got := changedQuotas(plan); len(got) != 1 || got["a"] != 300 {
		t.Errorf("changed quotas = %v, want precise throttling of a to 300m", got)
	}
	// And once at the line again, the pod gets its CPU back step by step.
	next := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 6800}}, fourPods(300), plan.Hysteresis)
	// Room 7000 − 6800 = 200m, one step of 10 % of a's 2000m limit = 200m.
	if diff := cmp.Diff(map[string]int64{"a": 500}, changedQuotas(next)); diff != "" {
		t.Errorf("restore (-want +got):\n%s", diff)
	}
}

func TestPlanHysteresis(t *testing.T) {
	// Defaults: 2 samples over to trigger, 3 under to release; restore line
	// 5000m under the 7000m throttle line.
	p := mustPlanner(t, nodeQOS("q", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70), RestorePercent: ptr.To[int32](50)}
	}))
	pods := fourPods()
	steps := []struct {
		nodeCPU int64
		want    map[string]int64
	}{
		{9000, map[string]int64{}}, // one noisy sample over: nothing
		{6000, map[string]int64{}},
		{9000, map[string]int64{}}, // over again, first of a run
		// Second consecutive sample over: gap 2000 takes every pod to
		// its floor (500 + 400 + 300 + 200 = 1400 < 2000).
		{9000, map[string]int64{"a": 100, "b": 100, "c": 100, "d": 100}},
		{4000, map[string]int64{}}, // one sample under: still on, holding
		{4000, map[string]int64{}},
		// Third under the restore line: released, and the most important
		// pod (the oldest; all equal, so by name: d first in reverse order)
		// gets steps back. Room 5000 − 4000 = 1000, steps of 200m each.
		{4000, map[string]int64{"a": 300, "b": 300, "c": 300, "d": 300}},
	}
	var h Hysteresis
	for i, s := range steps {
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: s.nodeCPU}}, pods, h)
		if diff := cmp.Diff(s.want, changedQuotas(plan)); diff != "" {
			t.Fatalf("cycle %d (usage %dm): changed quotas (-want +got):\n%s", i, s.nodeCPU, diff)
		}
		// The shell applies the plan and remembers the quotas.
		for j := range pods {
			pods[j].CPUQuotaMilli = plan.Quotas[j].DesiredMilli
		}
		h = plan.Hysteresis
	}
}

func TestPlanRestore(t *testing.T) {
	// Throttle 70 % (7000m), restore 50 % (5000m), step 10 %, one sample.
	restoreQOS := throttleQOS(func(s *v1alpha1.NodeQOSSpec) { s.CPU.RestorePercent = ptr.To[int32](50) })
	// Pods limited to 4 cores: one step is 400m. x is the most important
	// (highest priority), then y, then the free pod z.
	// Throttled pods are pinned at their quota (a raise is theirs to use);
	// the others use 100m.
	use := func(q int64) int64 {
		if q > 0 {
			return q
		}
		return 100
	}
	pods := func(qx, qy, qz int64) []Candidate {
		return []Candidate{
			cand(makePod("z").band(extension.BandFree).cpu("1", "4"), usage{cpu: use(qz), quota: qz}),
			cand(makePod("y").priority(5000).cpu("1", "4"), usage{cpu: use(qy), quota: qy}),
			cand(makePod("x").priority(5900).cpu("1", "4"), usage{cpu: use(qx), quota: qx}),
		}
	}
	tests := []struct {
		name    string
		nqs     []*v1alpha1.NodeQOS
		nodeCPU int64
		pods    []Candidate
		want    map[string]int64
	}{
		{
			name:    "steps the most important first, never past the room under the restore line",
			nqs:     []*v1alpha1.NodeQOS{restoreQOS},
			nodeCPU: 4500,
			pods:    pods(1000, 1000, 1000),
			// Room 5000 − 4500 = 500: x +400 → 1400 (100 left), y +100 → 1100.
			want: map[string]int64{"x": 1400, "y": 1100},
		},
		{
			// The peer trap: the cap must be in millicores like the step.
			name:    "a 150m room caps a 400m step at exactly 150m",
			nqs:     []*v1alpha1.NodeQOS{restoreQOS},
			nodeCPU: 4850,
			pods:    pods(1000, NoQuota, NoQuota),
			want:    map[string]int64{"x": 1150},
		},
		{
			name:    "plenty of room: one step each per cycle",
			nqs:     []*v1alpha1.NodeQOS{restoreQOS},
			nodeCPU: 1000,
			pods:    pods(1000, 1000, 1000),
			want:    map[string]int64{"x": 1400, "y": 1400, "z": 1400},
		},
		{
			name:    "a quota reaching the limit goes back to none",
			nqs:     []*v1alpha1.NodeQOS{restoreQOS},
			nodeCPU: 1000,
			// 3800 + 400 ≥ 4000.
			pods: pods(3800, NoQuota, NoQuota),
			want: map[string]int64{"x": NoQuota},
		},
		{
			name:    "between the restore and throttle lines: hold",
			nqs:     []*v1alpha1.NodeQOS{restoreQOS},
			nodeCPU: 6000,
			pods:    pods(1000, 1000, 1000),
			want:    map[string]int64{},
		},
		{
			name:    "CPU usage missing: hold, it cannot be confirmed under the line",
			nqs:     []*v1alpha1.NodeQOS{restoreQOS},
			nodeCPU: -1,
			pods:    pods(1000, 1000, 1000),
			want:    map[string]int64{},
		},
		{
			name: "no throttle waterline any more: every quota released at once",
			nqs: []*v1alpha1.NodeQOS{nodeQOS("mem-only", func(s *v1alpha1.NodeQOSSpec) {
				s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](90)}
			})},
			nodeCPU: 9999,
			pods:    pods(1000, 200, NoQuota),
			want:    map[string]int64{"x": NoQuota, "y": NoQuota},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlanner(t, tt.nqs...)
			u := NodeUsage{MetricCPU: tt.nodeCPU, MetricMemory: 0}
			if tt.nodeCPU < 0 {
				delete(u, MetricCPU)
			}
			plan := p.Plan(NodeState{Usage: u}, tt.pods, Hysteresis{})
			if diff := cmp.Diff(tt.want, changedQuotas(plan)); diff != "" {
				t.Errorf("changed quotas (-want +got):\n%s\nreasons: %q", diff, plan.Reasons)
			}
		})
	}
}

// TestPlanLevelTriggered: the plan states every candidate's quota each
// cycle, so the shell can re-apply what kubelet reset, and an agent that
// restarts with no state heals.
func TestPlanLevelTriggered(t *testing.T) {
	p := mustPlanner(t, throttleQOS(func(s *v1alpha1.NodeQOSSpec) { s.CPU.RestorePercent = ptr.To[int32](50) }))

	t.Run("holding: every throttled pod's quota is restated", func(t *testing.T) {
		on := Hysteresis{Counters: []Counter{{Action: ActionThrottleDown, Metric: MetricCPU, Over: 1, Active: true}}}
		// 6500m: at or under the throttle line, over the restore line.
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 6500}}, fourPods(100, 100), on)
		want := map[string]int64{"a": 100, "b": 100, "c": NoQuota, "d": NoQuota}
		got := map[string]int64{}
		for _, q := range plan.Quotas {
			got[q.Pod.Name] = q.DesiredMilli
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("desired quotas (-want +got):\n%s", diff)
		}
	})
	t.Run("agent restart with zero state and no load: throttled pods get CPU back", func(t *testing.T) {
		// 1000m: far under the 5000m restore line; room 4000m, steps of
		// 200m: a and b go from 100m to 300m.
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 1000}}, fourPods(100, 100), Hysteresis{})
		if diff := cmp.Diff(map[string]int64{"a": 300, "b": 300}, changedQuotas(plan)); diff != "" {
			t.Errorf("changed quotas (-want +got):\n%s", diff)
		}
	})
	t.Run("agent restart with zero state under load: nothing moves until the line is confirmed", func(t *testing.T) {
		p := mustPlanner(t, nodeQOS("q", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
		}))
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 9000}}, fourPods(100, 100), Hysteresis{})
		if got := changedQuotas(plan); len(got) != 0 {
			t.Errorf("changed quotas = %v, want none: not confirmed over, not under the restore line", got)
		}
	})
}

func TestPlanThrottleFallback(t *testing.T) {
	// Pods request 1000m, limit 2000m: one fallback step is 200m below
	// usage, floor 100m.
	tests := []struct {
		name      string
		nq        *v1alpha1.NodeQOS
		usage     NodeUsage
		h         Hysteresis
		want      map[string]int64
		wantWords string
	}{
		{
			name: "a breached metric that is not throttle-quantified throttles every candidate one step by CPU",
			nq: nodeQOS("mem-throttle", func(s *v1alpha1.NodeQOSSpec) {
				s.AvoidanceCount = ptr.To[int32](1)
				s.Rules = []v1alpha1.WaterlineRule{{Name: "mem", Metric: v1alpha1.MetricMemoryUsage,
					Threshold: resource.MustParse("5Gi"), Action: v1alpha1.ActionThrottle}}
			}),
			usage: NodeUsage{MetricCPU: 1000, MetricMemory: 6 * gib},
			// 600 − 200, 500 − 200, 400 − 200, max(300 − 200, 100).
			want:      map[string]int64{"a": 400, "b": 300, "c": 200, "d": 100},
			wantWords: "memory_usage usage 6442450944 over line 5368709120",
		},
		{
			name:  "CPU usage missing while throttling is on: every candidate one step",
			nq:    throttleQOS(),
			usage: NodeUsage{},
			h:     Hysteresis{Counters: []Counter{{Action: ActionThrottleDown, Metric: MetricCPU, Over: 1, Active: true}}},
			want:  map[string]int64{"a": 400, "b": 300, "c": 200, "d": 100},
			// The reason says why precise throttling did not run.
			wantWords: "cpu_usage usage missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlanner(t, tt.nq)
			plan := p.Plan(NodeState{Usage: tt.usage}, fourPods(), tt.h)
			if diff := cmp.Diff(tt.want, changedQuotas(plan)); diff != "" {
				t.Errorf("changed quotas (-want +got):\n%s", diff)
			}
			out, _ := plan.Outcome(ActionThrottleDown, MetricCPU)
			if out.Mode != ModeFallback || out.Acted != 4 {
				t.Errorf("outcome = %+v, want a fallback acting on all 4", out)
			}
			if !strings.Contains(strings.Join(plan.Reasons, "\n"), tt.wantWords) {
				t.Errorf("reasons %q lack %q", plan.Reasons, tt.wantWords)
			}
		})
	}
}

// memoryQOS: memory evict line at 80 % of 10 GiB = 8 GiB.
func memoryQOS() *v1alpha1.NodeQOS {
	return nodeQOS("mem", func(s *v1alpha1.NodeQOSSpec) {
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](80)}
	})
}

const mib = int64(1) << 20

// memoryPods sort, by MemorySorter, m2 (768Mi), m1 (512Mi), m4 (nothing),
// then m3 (higher priority, 4Gi).
func memoryPods() []Candidate {
	return []Candidate{
		cand(makePod("m1").priority(5000), usage{mem: 512 * mib}),
		cand(makePod("m2").priority(5000), usage{mem: 768 * mib}),
		cand(makePod("m3").priority(5900), usage{mem: 4 * gib}),
		cand(makePod("m4").priority(5000), usage{}),
	}
}

func TestPlanEvictMemory(t *testing.T) {
	tests := []struct {
		name    string
		pods    []Candidate
		usage   NodeUsage
		h       Hysteresis
		want    []string
		wantOut Outcome
	}{
		{
			name: "evicts at once, priority then size, until usage − released ≤ line",
			pods: memoryPods(),
			// Gap 9 GiB − 8 GiB = 1024Mi: m2 (768Mi, 256Mi left), m1 (512Mi).
			usage:   NodeUsage{MetricMemory: 9 * gib},
			want:    []string{"m2", "m1"},
			wantOut: Outcome{Action: ActionEvict, Metric: MetricMemory, Mode: ModePrecise, Gap: 1024 * mib, Released: 1280 * mib, Acted: 2},
		},
		{
			name: "a pod already terminating counts as released",
			pods: append(memoryPods(), cand(makePod("leaving").terminating(), usage{mem: 800 * mib})),
			// 1024Mi − 800Mi pending = 224Mi: m2 alone.
			usage:   NodeUsage{MetricMemory: 9 * gib},
			want:    []string{"m2"},
			wantOut: Outcome{Action: ActionEvict, Metric: MetricMemory, Mode: ModePrecise, Gap: 1024 * mib, Pending: 800 * mib, Released: 768 * mib, Acted: 1},
		},
		{
			// The peer trap: a missing metric must not evict everything.
			name:    "memory usage missing: nothing evicted for it",
			pods:    memoryPods(),
			usage:   NodeUsage{},
			h:       Hysteresis{Counters: []Counter{{Action: ActionEvict, Metric: MetricMemory, Over: 1, Active: true}}},
			want:    nil,
			wantOut: Outcome{Action: ActionEvict, Metric: MetricMemory, Mode: ModeHold},
		},
		{
			name:  "at the line: nothing",
			pods:  memoryPods(),
			usage: NodeUsage{MetricMemory: 8 * gib},
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlanner(t, memoryQOS())
			plan := p.Plan(NodeState{Usage: tt.usage}, tt.pods, tt.h)
			if diff := cmp.Diff(tt.want, evicted(plan)); diff != "" {
				t.Errorf("evictions (-want +got):\n%s", diff)
			}
			got, _ := plan.Outcome(ActionEvict, MetricMemory)
			if diff := cmp.Diff(tt.wantOut, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanEvictPDBReplan(t *testing.T) {
	// The shell evicts the plan's pods in order; a PDB refuses m2. It drops
	// m2 from the candidates and plans again: the gap of 1024Mi is then
	// closed by m1 (512Mi), m4 releasing nothing is skipped, and m3 (4Gi).
	p := mustPlanner(t, memoryQOS())
	var without []Candidate
	for _, c := range memoryPods() {
		if c.Name != "m2" {
			without = append(without, c)
		}
	}
	plan := p.Plan(NodeState{Usage: NodeUsage{MetricMemory: 9 * gib}}, without, Hysteresis{})
	if diff := cmp.Diff([]string{"m1", "m3"}, evicted(plan)); diff != "" {
		t.Errorf("evictions (-want +got):\n%s", diff)
	}
}

// ioMetric is a metric registered by a user: evictable, not quantifiable.
func ioMetric() Metric {
	return Metric{Name: "io_usage", ActionPriority: 2, Evictable: true,
		Evict: func(c *Candidate) int64 { return c.Usage("io_usage") }}
}

func TestPlanEvictNotQuantified(t *testing.T) {
	reg := DefaultRegistry()
	if err := reg.Register(ioMetric()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{memoryQOS()}, node10)
	if len(errs) > 0 {
		t.Fatalf("BuildWaterlines: %v", errs)
	}
	waterlines.Add(Line{Action: ActionEvict, Metric: "io_usage", Value: 100, AvoidanceCount: 1, RestoreCount: 1, Source: "test"})
	p, err := NewPlanner(reg, waterlines)
	if err != nil {
		t.Fatalf("NewPlanner: %v", err)
	}
	tests := []struct {
		name  string
		usage NodeUsage
		want  []string
	}{
		{
			// One pod per cycle, in the highest-priority evictable metric's
			// order (memory: m2 is first), not every candidate.
			name:  "evicts exactly one pod, in the order of the highest-priority evictable metric",
			usage: NodeUsage{"io_usage": 500, MetricMemory: 1 * gib},
			want:  []string{"m2"},
		},
		{
			name:  "a precise eviction this cycle already relieves the node: the fallback adds none",
			usage: NodeUsage{"io_usage": 500, MetricMemory: 9 * gib},
			want:  []string{"m2", "m1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := p.Plan(NodeState{Usage: tt.usage}, memoryPods(), Hysteresis{})
			if diff := cmp.Diff(tt.want, evicted(plan)); diff != "" {
				t.Errorf("evictions (-want +got):\n%s\nreasons: %q", diff, plan.Reasons)
			}
		})
	}
}

// cpuEvictQOS: CPU evict line 90 % of 10 cores = 9000m, default satisfaction
// thresholds (lower 60 %, upper 80 %, BE usage threshold 90 %;
// docs/design/node-qos.md#defaults).
func cpuEvictQOS() *v1alpha1.NodeQOS {
	return nodeQOS("cpu-evict", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](90)}
	})
}

// bePods are Batch pods on batch-cpu requests (no limits), held at quotas:
// R = 2000 + 2000 + 1000 + 1000 = 6000m requested. p5 is a Free pod
// without a request, held at the 10m minimum.
func bePods(cpu, quota [4]int64) []Candidate {
	return []Candidate{
		cand(makePod("p1").priority(5000).batchCPU("2000", ""), usage{cpu: cpu[0], quota: quota[0]}),
		cand(makePod("p2").priority(5000).batchCPU("2000", ""), usage{cpu: cpu[1], quota: quota[1]}),
		cand(makePod("p3").priority(5000).batchCPU("1000", ""), usage{cpu: cpu[2], quota: quota[2]}),
		cand(makePod("p4").priority(5900).batchCPU("1000", ""), usage{cpu: cpu[3], quota: quota[3]}),
		cand(makePod("p5").band(extension.BandFree), usage{quota: 10}),
		// A Prod pod using most of the node: never a victim.
		cand(makePod("prod").priority(9500).cpu("8", ""), usage{cpu: 7900}),
	}
}

func TestPlanCPUEviction(t *testing.T) {
	starvedUse, starvedQuota := [4]int64{600, 500, 300, 200}, [4]int64{600, 500, 300, 300}
	// Base case, now: C = 1600m of R = 6000m (26 % < 60 %); allowance =
	// min(Σ quotas 1710, 10 000 − (9500 − 1600)) = 1710 and 1600 ≥ 90 % of
	// it. Window: node 9400 > 9000; 1500 ÷ 6000 = 25 % < 60 %;
	// 1500 ≥ 90 % of 1600.
	window := CPUWindow{NodeCPUMilli: 9400, BE: BECPU{UsageMilli: 1500, RequestMilli: 6000, AllowanceMilli: 1600}}
	tests := []struct {
		name    string
		nodeCPU int64
		window  *CPUWindow
		pods    []Candidate
		want    []string
		wantOut Outcome
		words   string
	}{
		{
			name:    "starved BE pods: evict lowest priority first, then the biggest request, until the rest are satisfied",
			nodeCPU: 9500,
			window:  &window,
			pods:    bePods(starvedUse, starvedQuota),
			// Remaining request must be ≤ 1600 × 100 ÷ 80 = 2000m, so
			// 6000 − 2000 = 4000m must go: p1 (2000) and p2 (2000).
			// p5 sorts first (Free) but has no request: skipped. p4 has
			// the higher priority and stays.
			want:    []string{"p1", "p2"},
			wantOut: Outcome{Action: ActionEvict, Metric: MetricCPU, Mode: ModeSatisfaction, Gap: 4000, Released: 4000, Acted: 2},
		},
		{
			name:    "window average not over the evict line",
			nodeCPU: 9500,
			window:  &CPUWindow{NodeCPUMilli: 8900, BE: window.BE},
			pods:    bePods(starvedUse, starvedQuota),
			words:   "window CPU average not over the evict line",
		},
		{
			// 4000 ÷ 6000 = 66 % ≥ 60 %, while 4000 ≥ 90 % of 4000.
			name:    "window satisfaction not under the lower bound",
			nodeCPU: 9500,
			window:  &CPUWindow{NodeCPUMilli: 9400, BE: BECPU{UsageMilli: 4000, RequestMilli: 6000, AllowanceMilli: 4000}},
			pods:    bePods(starvedUse, starvedQuota),
			words:   "window BE satisfaction not under the lower bound",
		},
		{
			// 1500 < 90 % of 2000 = 1800.
			name:    "window BE usage not near its allowance",
			nodeCPU: 9500,
			window:  &CPUWindow{NodeCPUMilli: 9400, BE: BECPU{UsageMilli: 1500, RequestMilli: 6000, AllowanceMilli: 2000}},
			pods:    bePods(starvedUse, starvedQuota),
			words:   "window BE usage not near its allowance",
		},
		{
			// Now C = 1200 + 1200 + 600 + 600 = 3600 = 60 % of 6000: not
			// under; held at exactly what they use, so busy.
			name:    "current satisfaction not under the lower bound",
			nodeCPU: 11500,
			window:  &window,
			pods:    bePods([4]int64{1200, 1200, 600, 600}, [4]int64{1200, 1200, 600, 600}),
			words:   "current BE satisfaction not under the lower bound",
		},
		{
			// No quotas and no limits: the allowance is what Prod leaves,
			// 10 000 − 7900 = 2100, and 1600 < 90 % of it.
			name:    "current BE usage not near its allowance",
			nodeCPU: 9500,
			window:  &window,
			pods:    bePods(starvedUse, [4]int64{}),
			words:   "current BE usage not near its allowance",
		},
		{
			name:    "no full window yet",
			nodeCPU: 9500,
			pods:    bePods(starvedUse, starvedQuota),
			words:   "no full 300s window yet",
		},
		{
			name:    "latest usage at the evict line: the line is not crossed",
			nodeCPU: 9000,
			window:  &window,
			pods:    bePods(starvedUse, starvedQuota),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlanner(t, cpuEvictQOS())
			plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: tt.nodeCPU}, CPUWindow: tt.window}, tt.pods, Hysteresis{})
			if diff := cmp.Diff(tt.want, evicted(plan)); diff != "" {
				t.Errorf("evictions (-want +got):\n%s\nreasons: %q", diff, plan.Reasons)
			}
			if tt.want != nil {
				got, _ := plan.Outcome(ActionEvict, MetricCPU)
				if diff := cmp.Diff(tt.wantOut, got); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
			}
			if !strings.Contains(strings.Join(plan.Reasons, "\n"), tt.words) {
				t.Errorf("reasons %q lack %q", plan.Reasons, tt.words)
			}
		})
	}
}

func TestCheckSatisfactionAmount(t *testing.T) {
	p := CPUEvictionParams{WindowSeconds: 300, SatisfactionLowerPercent: 60, SatisfactionUpperPercent: 80, BEUsageThresholdPercent: 90}
	tests := []struct {
		name string
		now  BECPU
		want int64
	}{
		// keep ⌊1600 × 100 ÷ 80⌋ = 2000 of 6000.
		{"R 6000, C 1600", BECPU{UsageMilli: 1600, RequestMilli: 6000}, 4000},
		// keep ⌊1000 × 100 ÷ 80⌋ = 1250 of 1300.
		{"rounding keeps the remaining request at or under C ÷ upper", BECPU{UsageMilli: 1000, RequestMilli: 1300}, 50},
		{"already satisfied: nothing", BECPU{UsageMilli: 900, RequestMilli: 1000}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckSatisfaction(p, 9000, CPUWindow{}, tt.now).NeededRequestMilli
			if got != tt.want {
				t.Errorf("NeededRequestMilli = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestPlanForbidScheduling is also the peer trap of a taint never removed:
// the action must come off after restoreCount samples under the line.
func TestPlanForbidScheduling(t *testing.T) {
	// Forbid at 60 % = 6000m; defaults: 2 samples over, 3 under.
	p := mustPlanner(t, nodeQOS("forbid", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60)}
	}))
	samples := []int64{6500, 5000, 6500, 6500, 5000, 6500, 5000, 5000, 5000, 5000}
	want := []bool{false, false, false, true, true, true, true, true, false, false}
	var h Hysteresis
	var got []bool
	for _, s := range samples {
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: s}}, fourPods(), h)
		got = append(got, plan.ForbidScheduling)
		h = plan.Hysteresis
		if len(changedQuotas(plan)) != 0 || len(plan.Evictions) != 0 {
			t.Fatalf("forbidding scheduling acted on pods: %+v", plan)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ForbidScheduling per cycle (-want +got):\n%s", diff)
	}
}

// TestPlanNeverActsOnProtectedPods breaches every line at once with only
// protected pods (and one eligible pod to prove the plan does act).
func TestPlanNeverActsOnProtectedPods(t *testing.T) {
	all := nodeQOS("all", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](50), ThrottlePercent: ptr.To[int32](60), EvictPercent: ptr.To[int32](70)}
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](50)}
		s.AvoidanceCount = ptr.To[int32](1)
	})
	p := mustPlanner(t, all)
	big := usage{cpu: 3000, mem: 4 * gib}
	pods := []Candidate{
		cand(makePod("prod").priority(9500), big),
		cand(makePod("mid").band(extension.BandMid), big),
		cand(makePod("ds").owner("DaemonSet"), big),
		cand(makePod("static").owner("Node"), big),
		cand(makePod("mirror").mirror(), big),
		cand(makePod("critical").systemCritical(), big),
		cand(makePod("dying").terminating(), big),
		cand(makePod("batch-labelled-prod").band(extension.BandProd), big),
		cand(makePod("ok").batchCPU("1000", ""), usage{cpu: 100, mem: 1 * gib}),
	}
	window := &CPUWindow{NodeCPUMilli: 10_000, BE: BECPU{UsageMilli: 100, RequestMilli: 1000}}
	plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 10_000, MetricMemory: 10 * gib}, CPUWindow: window}, pods, Hysteresis{})
	for _, q := range plan.Quotas {
		if q.Pod.Name != "ok" {
			t.Errorf("protected pod %s in the plan's quotas", q.Pod)
		}
	}
	for _, e := range plan.Evictions {
		if e.Pod.Name != "ok" {
			t.Errorf("protected pod %s evicted", e.Pod)
		}
	}
	if diff := cmp.Diff([]string{"ok"}, evicted(plan)); diff != "" {
		t.Errorf("evictions (-want +got):\n%s", diff)
	}
	if !plan.ForbidScheduling {
		t.Errorf("ForbidScheduling off with usage over its line")
	}
}

func TestPlanRestoreAfterFallback(t *testing.T) {
	// Only a memory throttle rule: CPU has no line to measure room under,
	// so once memory is back under its line each throttled pod gets one
	// step (10 % of its 2000m limit = 200m) per cycle.
	p := mustPlanner(t, nodeQOS("mem-throttle", func(s *v1alpha1.NodeQOSSpec) {
		s.AvoidanceCount = ptr.To[int32](1)
		s.RestoreCount = ptr.To[int32](1)
		s.Rules = []v1alpha1.WaterlineRule{{Name: "mem", Metric: v1alpha1.MetricMemoryUsage,
			Threshold: resource.MustParse("5Gi"), Action: v1alpha1.ActionThrottle}}
	}))
	plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 1000, MetricMemory: 4 * gib}}, fourPods(400, 300, 200, 100), Hysteresis{})
	want := map[string]int64{"a": 600, "b": 500, "c": 400, "d": 300}
	if diff := cmp.Diff(want, changedQuotas(plan)); diff != "" {
		t.Errorf("changed quotas (-want +got):\n%s", diff)
	}
	if out, _ := plan.Outcome(ActionThrottleUp, MetricCPU); out.Mode != ModeFallback || out.Acted != 4 {
		t.Errorf("outcome = %+v, want one fallback step on all 4", out)
	}
}

func TestNewPlannerRejectsUnknownMetrics(t *testing.T) {
	waterlines := NewWaterlines(node10)
	waterlines.Add(Line{Action: ActionEvict, Metric: "gpu_usage", Value: 1, AvoidanceCount: 0, RestoreCount: 1})
	_, err := NewPlanner(DefaultRegistry(), waterlines)
	if err == nil {
		t.Fatalf("NewPlanner accepted a line of an unregistered metric")
	}
	for _, w := range []string{"gpu_usage", "avoidanceCount"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// TestPlanCustomMetric registers a metric through the Go API and plans a
// precise eviction with it, as the metric registry promises for user metrics
// (docs/design/node-qos.md#metrics-and-their-attributes).
func TestPlanCustomMetric(t *testing.T) {
	reg := DefaultRegistry()
	io := Metric{Name: "io_usage", ActionPriority: 9, Sortable: true,
		Sorter:    OrderedBy(ClassAndPriority, func(a, b *Candidate) int { return int(b.Usage("io_usage") - a.Usage("io_usage")) }),
		Evictable: true, EvictQuantified: true,
		Evict: func(c *Candidate) int64 { return c.Usage("io_usage") }}
	if err := reg.Register(io); err != nil {
		t.Fatalf("Register: %v", err)
	}
	waterlines := NewWaterlines(node10)
	waterlines.Add(Line{Action: ActionEvict, Metric: "io_usage", Value: 100, AvoidanceCount: 1, RestoreCount: 1, Source: "test"})
	p, err := NewPlanner(reg, waterlines)
	if err != nil {
		t.Fatalf("NewPlanner: %v", err)
	}
	pod := func(name string, io int64) Candidate {
		return NewCandidate(makePod(name).obj(), PodUsage{CPUQuotaMilli: NoQuota, Metrics: map[MetricName]int64{"io_usage": io}})
	}
	// Gap 180 − 100 = 80: the biggest user r (50), then q (40) closes it.
	plan := p.Plan(NodeState{Usage: NodeUsage{"io_usage": 180}}, []Candidate{pod("p", 10), pod("q", 40), pod("r", 50)}, Hysteresis{})
	if diff := cmp.Diff([]string{"r", "q"}, evicted(plan)); diff != "" {
		t.Errorf("evictions (-want +got):\n%s", diff)
	}
}

func TestOutcomeOverAction(t *testing.T) {
	tests := []struct {
		name       string
		o          Outcome
		wantRatio  float64
		wantClosed bool
	}{
		// 1000 to close, 300 pending: 700 left, 700 released.
		{"exact", Outcome{Gap: 1000, Pending: 300, Released: 700}, 1, true},
		// 400 left, 1000 released by one big pod.
		{"over-action", Outcome{Gap: 1000, Pending: 600, Released: 1000}, 2.5, true},
		// 1000 left, candidates ran out at 500.
		{"ran out", Outcome{Gap: 1000, Released: 500}, 0.5, false},
		{"pending alone closes it", Outcome{Gap: 1000, Pending: 1200}, 0, true},
		{"unknown gap", Outcome{Mode: ModeFallback, Released: 300}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.ReleasedPerGap(); got != tt.wantRatio {
				t.Errorf("ReleasedPerGap = %v, want %v", got, tt.wantRatio)
			}
			if got := tt.o.Closed(); got != tt.wantClosed {
				t.Errorf("Closed = %v, want %v", got, tt.wantClosed)
			}
		})
	}
}
