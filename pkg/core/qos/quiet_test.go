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
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// quietLines is a node10 NodeQOS with every kind of line: CPU forbid 60 %
// (6000m), throttle 70 % (7000m), restore 50 % (5000m), evict 90 %
// (9000m); memory evict 90 % (~9.0 GiB).
func quietLines(t testing.TB) *Planner {
	return mustPlanner(t, nodeQOS("q", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{
			ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](70),
			RestorePercent: ptr.To[int32](50), EvictPercent: ptr.To[int32](90),
		}
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](90)}
	}))
}

func TestQuiet(t *testing.T) {
	p := quietLines(t)
	under := NodeUsage{MetricCPU: 4000, MetricMemory: 4 * gib}
	tests := []struct {
		name  string
		usage NodeUsage
		h     Hysteresis
		want  bool
	}{
		{"every metric under every line, fresh state", under, Hysteresis{}, true},
		// 6000m is exactly the forbid line: at or under is under.
		{"at the lowest line", NodeUsage{MetricCPU: 6000, MetricMemory: 4 * gib}, Hysteresis{}, true},
		// Between the restore line (5000m) and the forbid line: the
		// restore line triggers nothing while nothing is throttled.
		{"over the restore line only", NodeUsage{MetricCPU: 5500, MetricMemory: 4 * gib}, Hysteresis{}, true},
		{"one millicore over the forbid line", NodeUsage{MetricCPU: 6001, MetricMemory: 4 * gib}, Hysteresis{}, false},
		{"memory over its evict line", NodeUsage{MetricCPU: 4000, MetricMemory: 9*gib + gib/2}, Hysteresis{}, false},
		{"memory usage missing", NodeUsage{MetricCPU: 4000}, Hysteresis{}, false},
		{"samples counted under only", under,
			Hysteresis{Counters: []Counter{{Action: ActionThrottleDown, Metric: MetricCPU, Under: 7}}}, true},
		// One sample over was counted: Plan must reset it, or the next
		// sample over would trigger after one sample instead of two.
		{"a sample over counted", under,
			Hysteresis{Counters: []Counter{{Action: ActionThrottleDown, Metric: MetricCPU, Over: 1}}}, false},
		{"throttling on", under,
			Hysteresis{Counters: []Counter{{Action: ActionThrottleDown, Metric: MetricCPU, Active: true, Under: 1}}}, false},
		{"forbid scheduling on", under,
			Hysteresis{Counters: []Counter{{Action: ActionForbidScheduling, Metric: MetricCPU, Active: true}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Quiet(NodeState{Usage: tt.usage}, tt.h); got != tt.want {
				t.Errorf("Quiet = %v, want %v", got, tt.want)
			}
		})
	}
}

// decision is what a cycle changes on the node.
type decision struct {
	Forbid    bool
	Evictions []string
	Quotas    map[string]int64
}

func decisionOf(p Plan) decision {
	return decision{Forbid: p.ForbidScheduling, Evictions: evicted(p), Quotas: changedQuotas(p)}
}

// TestQuietSkipsNothing runs two shells side by side over random usage
// walks: one plans every cycle, the other skips Plan (keeping its
// hysteresis) whenever Quiet says so and no pod holds a quota. Every
// cycle both must decide the same: skipping a quiet node changes nothing
// the node would do, now or later.
func TestQuietSkipsNothing(t *testing.T) {
	p := quietLines(t)
	skippingShells(t, 1, false, func(node NodeState, h Hysteresis, pods []Candidate) (decision, Hysteresis, bool) {
		if p.Quiet(node, h) && !anyQuota(pods) {
			return decision{Quotas: map[string]int64{}}, h, true
		}
		return decision{}, h, false
	}, "no cycle was quiet: the walk does not test skipping")
}

// skippingShells runs, for 20 seeds (stream picks the walks), two shells
// of quietLines' planner side by side over 2000 cycles of a random usage
// walk that crosses every line now and then: one plans every cycle, the
// other asks skip first and plans only when skip declines. Every cycle both
// must decide the same, and with sameState keep the same counters. A seed
// in which skip never took a cycle fails with never.
func skippingShells(t *testing.T, stream uint64, sameState bool,
	skip func(node NodeState, h Hysteresis, pods []Candidate) (decision, Hysteresis, bool), never string) {
	t.Helper()
	p := quietLines(t)
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, stream))
			always, skipping := fourPods(), fourPods()
			var hAlways, hSkipping Hysteresis
			cpu, mem := int64(5000), 5*gib
			skipped := 0
			for cycle := range 2000 {
				cpu = min(max(cpu+rng.Int64N(1601)-800, 0), 11000)
				mem = min(max(mem+rng.Int64N(gib)-gib/2, 0), 10*gib)
				node := NodeState{
					Usage: NodeUsage{MetricCPU: cpu, MetricMemory: mem},
					// A one-sample window of starved pods, so that CPU
					// eviction can fire when its line is crossed.
					CPUWindow: &CPUWindow{NodeCPUMilli: cpu, BE: SampleBECPU(node10.CPUMilli, cpu, always)},
				}
				full := p.Plan(node, always, hAlways)
				want := decisionOf(full)
				hAlways = full.Hysteresis
				apply(always, full)

				got, next, ok := skip(node, hSkipping, skipping)
				if ok {
					skipped++
					hSkipping = next
				} else {
					plan := p.Plan(node, skipping, hSkipping)
					got = decisionOf(plan)
					hSkipping = plan.Hysteresis
					apply(skipping, plan)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("cycle %d (cpu %dm, memory %d): the skipping shell decided otherwise (-always +skipping):\n%s", cycle, cpu, mem, diff)
				}
				if sameState && !slices.Equal(hAlways.Counters, hSkipping.Counters) {
					t.Fatalf("cycle %d (cpu %dm, memory %d): the skipping shell's state differs:\nalways   %+v\nskipping %+v", cycle, cpu, mem, hAlways.Counters, hSkipping.Counters)
				}
			}
			if skipped == 0 {
				t.Fatal(never)
			}
		})
	}
}

// apply remembers the plan's quotas as the shell would. Evicted pods are
// replaced by a pod of the same name, as their controller would.
func apply(pods []Candidate, plan Plan) {
	for i := range pods {
		pods[i].CPUQuotaMilli = plan.Quotas[i].DesiredMilli
	}
}

func anyQuota(pods []Candidate) bool {
	for i := range pods {
		if pods[i].CPUQuotaMilli != NoQuota {
			return true
		}
	}
	return false
}

func BenchmarkQuiet(b *testing.B) {
	p := quietLines(b)
	node := NodeState{Usage: NodeUsage{MetricCPU: 4000, MetricMemory: 4 * gib}}
	h := Hysteresis{Counters: []Counter{{Action: ActionThrottleDown, Metric: MetricCPU, Under: 7}}}
	pods := fourPods()
	b.Run("quiet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !p.Quiet(node, h) {
				b.Fatal("not quiet")
			}
		}
	})
	b.Run("baseline-plan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Plan(node, pods, h)
		}
	})
}

// TestHeldAgreesWithPlan holds Held to Plan over random nodes, pods and
// states: the hysteresis is always Plan's, and a cycle Held calls held
// is one whose plan changes no quota, evicts no pod and forbids
// scheduling as Held says.
func TestHeldAgreesWithPlan(t *testing.T) {
	heldThrottling, heldRestoring := 0, 0
	for seed := range uint64(4000) {
		rng := rand.New(rand.NewPCG(seed, 45))
		sc := randomScenario(t, rng, rng.IntN(30))
		w := sc.planner.Waterlines()
		if rng.IntN(4) != 0 {
			sc.h = randomCounters(rng, &w)
		}
		if _, ok := sc.node.Usage[MetricCPU]; ok && rng.IntN(2) == 0 {
			// Between the lines, where quotas are held, more often than
			// the pods' usage would put the node there.
			sc.node.Usage[MetricCPU] = w.Capacity.CPUMilli * (40 + rng.Int64N(50)) / 100
		}
		if _, ok := sc.node.Usage[MetricMemory]; ok && rng.IntN(2) == 0 {
			sc.node.Usage[MetricMemory] = w.Capacity.MemoryBytes * rng.Int64N(70) / 100
		}
		plan := sc.planner.Plan(sc.node, sc.pods, sc.h)
		next, forbid, held := sc.planner.Held(sc.node, sc.h, nil)
		if diff := cmp.Diff(plan.Hysteresis, next, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("seed %d: Held's hysteresis differs from Plan's (-Plan +Held):\n%s", seed, diff)
		}
		if !held {
			continue
		}
		if _, ok := plan.Outcome(ActionThrottleDown, MetricCPU); ok {
			heldThrottling++
		} else {
			heldRestoring++
		}
		want := decisionOf(plan)
		if diff := cmp.Diff(want, decision{Forbid: forbid, Quotas: map[string]int64{}}); diff != "" {
			t.Fatalf("seed %d: Held holds a cycle that Plan acts in (-Plan +Held):\n%s", seed, diff)
		}
	}
	// Both kinds of held cycle must occur, or the agreement was checked
	// on nothing.
	if heldThrottling < 50 || heldRestoring < 50 {
		t.Errorf("held %d cycles throttling and %d restoring: the generator does not exercise Held", heldThrottling, heldRestoring)
	}
}

// TestHeldSkipsNothing runs two shells side by side over random usage
// walks, as TestQuietSkipsNothing does: one plans every cycle, the other
// takes the hysteresis and ForbidScheduling from Held whenever it says
// the cycle is held. Every cycle both must decide the same and keep the
// same state.
func TestHeldSkipsNothing(t *testing.T) {
	p := quietLines(t)
	skippingShells(t, 2, true, func(node NodeState, h Hysteresis, _ []Candidate) (decision, Hysteresis, bool) {
		next, forbid, ok := p.Held(node, h, nil)
		return decision{Forbid: forbid, Quotas: map[string]int64{}}, next, ok
	}, "no cycle was held: the walk does not test Held")
}

// quietByLines is Quiet's condition on the usage as its doc states it,
// line by line.
func quietByLines(p *Planner, usage NodeUsage) bool {
	for _, l := range p.waterlines.Lines {
		if l.Action == ActionThrottleUp {
			continue
		}
		if u, ok := usage[l.Metric]; !ok || u > l.Value {
			return false
		}
	}
	return true
}

// TestQuietAgreesWithLines holds Quiet, which compares each metric with
// the lowest of its lines, to the comparison with every line, over random
// waterlines and usage near them.
func TestQuietAgreesWithLines(t *testing.T) {
	quiet := 0
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 46))
		sc := randomScenario(t, rng, 1)
		w := sc.planner.Waterlines()
		usage := NodeUsage{}
		if rng.IntN(10) != 0 {
			usage[MetricCPU] = w.Capacity.CPUMilli * (40 + rng.Int64N(61)) / 100
		}
		if rng.IntN(10) != 0 {
			usage[MetricMemory] = w.Capacity.MemoryBytes * (60 + rng.Int64N(41)) / 100
		}
		want := quietByLines(sc.planner, usage)
		if got := sc.planner.Quiet(NodeState{Usage: usage}, Hysteresis{}); got != want {
			t.Fatalf("seed %d: Quiet = %v with usage %v, want %v; lines %+v", seed, got, usage, want, w.Lines)
		}
		if want {
			quiet++
		}
	}
	if quiet < 100 {
		t.Errorf("only %d quiet nodes: the generator does not exercise Quiet", quiet)
	}
}
