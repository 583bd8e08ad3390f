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
	"time"

	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// benchNode is a 64-core, 256 GiB node with every waterline: forbid 60 %,
// throttle 70 % restoring at 50 %, CPU evict 90 %, memory evict 85 %.
var benchNode = Capacity{CPUMilli: 64_000, MemoryBytes: 256 * gib}

func benchPlanner(b *testing.B) *Planner {
	nq := nodeQOS("bench", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](70),
			RestorePercent: ptr.To[int32](50), EvictPercent: ptr.To[int32](90)}
		s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](85)}
		s.AvoidanceCount = ptr.To[int32](1)
		s.RestoreCount = ptr.To[int32](1)
	})
	waterlines, errs := BuildWaterlines([]*v1alpha1.NodeQOS{nq}, benchNode)
	if len(errs) > 0 {
		b.Fatalf("BuildWaterlines: %v", errs)
	}
	p, err := NewPlanner(DefaultRegistry(), waterlines)
	if err != nil {
		b.Fatalf("NewPlanner: %v", err)
	}
	return p
}

// benchPods returns n pods, one in five protected (Prod, DaemonSet,
// mirror, system-critical); the others Batch or Free, requesting 100m to
// 400m of batch-cpu with a limit of twice that, using up to their request
// (starved ones: 30 % of it, held at a quota of what they use), with
// spread-out priorities and start times.
func benchPods(n int, starved bool) []Candidate {
	rng := rand.New(rand.NewPCG(uint64(n), 99))
	pods := make([]Candidate, 0, n)
	for i := range n {
		b := makePod(fmt.Sprintf("pod-%03d", i)).started(-time.Duration(rng.Int64N(int64(24 * time.Hour))))
		switch i % 5 {
		case 0:
			switch i % 4 {
			case 0:
				b.priority(9500)
			case 1:
				b.owner("DaemonSet")
			case 2:
				b.mirror()
			default:
				b.systemCritical()
			}
		case 1:
			b.band(extension.BandFree)
		default:
			b.priority(5000 + int32(rng.IntN(1000)))
		}
		req := 100 * (1 + rng.Int64N(4))
		if i%5 == 0 {
			// Protected pods ask for plain cpu: batch-cpu would make even a
			// Prod-priority pod Batch (extension.BandOf).
			b.cpu(fmt.Sprintf("%dm", req), fmt.Sprintf("%dm", 2*req))
		} else {
			b.batchCPU(fmt.Sprint(req), fmt.Sprint(2*req))
		}
		u := usage{cpu: 10 + rng.Int64N(req), mem: rng.Int64N(gib)}
		if starved {
			u.cpu = req * 3 / 10
			u.quota = u.cpu
		}
		pods = append(pods, cand(b, u))
	}
	return pods
}

// BenchmarkPlan is one planning cycle for 200 candidate pods in each
// situation the agent meets; BenchmarkSortBaseline is the floor any
// planner pays (sorting the candidates once), measured in the same run.
func BenchmarkPlan(b *testing.B) {
	const n = 200
	p := benchPlanner(b)
	free := benchPods(n, false)
	held := benchPods(n, true)
	cases := []struct {
		name string
		node NodeState
		pods []Candidate
	}{
		{"idle", NodeState{Usage: NodeUsage{MetricCPU: 20_000, MetricMemory: 100 * gib}}, free},
		// 48 000m over the 44 800m throttle line: gap 3200m.
		{"throttle", NodeState{Usage: NodeUsage{MetricCPU: 48_000, MetricMemory: 100 * gib}}, free},
		// 26 000m, under the 32 000m restore line.
		{"restore", NodeState{Usage: NodeUsage{MetricCPU: 26_000, MetricMemory: 100 * gib}}, held},
		// 225 GiB over the 217.6 GiB memory line: gap 7.4 GiB.
		{"evict-memory", NodeState{Usage: NodeUsage{MetricCPU: 20_000, MetricMemory: 225 * gib}}, free},
		// 60 000m over the 57 600m CPU evict line with starved BE pods.
		{"evict-cpu", NodeState{Usage: NodeUsage{MetricCPU: 60_000, MetricMemory: 100 * gib},
			CPUWindow: &CPUWindow{NodeCPUMilli: 59_000, BE: SampleBECPU(benchNode.CPUMilli, 60_000, held)}}, held},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var plan Plan
			for b.Loop() {
				plan = p.Plan(c.node, c.pods, Hysteresis{})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/candidate")
			b.ReportMetric(float64(plan.Acted()), "pods-acted")
		})
	}
}

func BenchmarkSortBaseline(b *testing.B) {
	pods := benchPods(200, false)
	ptrs := make([]*Candidate, len(pods))
	s := CPUSorter()
	b.ReportAllocs()
	for b.Loop() {
		for i := range pods {
			ptrs[i] = &pods[i]
		}
		s.Sort(ptrs)
	}
}

// BenchmarkOverAction compares the precise planner with the peers' way --
// act on every candidate -- over random seeded scenarios: how many pods
// each acts on and how much it releases per unit of gap. Only scenarios
// where acting on every candidate would close the gap count, so both
// sides are compared where both succeed.
func BenchmarkOverAction(b *testing.B) {
	const scenarios = 1000
	type sample struct {
		sc   scenario
		plan Plan
	}
	var samples []sample
	for seed := range uint64(scenarios) {
		rng := rand.New(rand.NewPCG(seed, 2026))
		sc := randomScenario(b, rng, 10+rng.IntN(50))
		samples = append(samples, sample{sc: sc, plan: sc.planner.Plan(sc.node, sc.pods, sc.h)})
	}

	// tally sums one side of the comparison. The ratio is released ÷ what
	// was left to close once pending releases are counted, aggregated over
	// scenarios (Σ released ÷ Σ need) so that a scenario with a tiny gap
	// does not dominate, and its median.
	type tally struct {
		n              int
		pods           int
		released, need int64
		ratios         []float64
	}
	add := func(t *tally, pods int, released, need int64) {
		t.n++
		t.pods += pods
		t.released += released
		t.need += need
		t.ratios = append(t.ratios, float64(released)/float64(need))
	}
	var evictPrecise, evictAll, throttlePrecise, throttleAll tally
	for _, s := range samples {
		waterlines := s.sc.planner.Waterlines()
		if o, ok := s.plan.Outcome(ActionEvict, MetricMemory); ok && o.Mode == ModePrecise && o.Gap > o.Pending {
			// Evict-all: every eligible pod.
			pods, rel := 0, int64(0)
			for i := range s.sc.pods {
				if c := &s.sc.pods[i]; eligible(c) {
					pods++
					rel += c.MemoryUsageBytes
				}
			}
			if need := o.Gap - o.Pending; rel >= need {
				add(&evictPrecise, o.Acted, o.Released, need)
				add(&evictAll, pods, rel, need)
			}
		}
		if o, ok := s.plan.Outcome(ActionThrottleDown, MetricCPU); ok && o.Mode == ModePrecise && o.Gap > o.Pending {
			// Throttle-all: every eligible pod not being evicted held at
			// its floor (never raised), beyond what its quota already
			// releases.
			evicted := map[PodRef]bool{}
			for _, e := range s.plan.Evictions {
				evicted[e.Pod] = true
			}
			pods, rel := 0, int64(0)
			for i := range s.sc.pods {
				c := &s.sc.pods[i]
				if !eligible(c) || evicted[c.PodRef] {
					continue
				}
				eff := c.CPUUsageMilli
				if c.CPUQuotaMilli != NoQuota {
					eff = min(eff, c.CPUQuotaMilli)
				}
				if floor := CPUFloorMilli(c, waterlines.Throttle.MinCPUPercent); eff > floor {
					pods++
					rel += eff - floor
				}
			}
			if need := o.Gap - o.Pending; rel >= need {
				add(&throttlePrecise, o.Acted, o.Released, need)
				add(&throttleAll, pods, rel, need)
			}
		}
	}
	if evictPrecise.n == 0 || throttlePrecise.n == 0 {
		b.Fatalf("no comparable scenarios (evict %d, throttle %d)", evictPrecise.n, throttlePrecise.n)
	}
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	report := func(prefix string, t tally) {
		b.ReportMetric(float64(t.pods)/float64(t.n), prefix+"-pods")
		b.ReportMetric(float64(t.released)/float64(t.need), prefix+"-released/need")
		b.ReportMetric(median(t.ratios), prefix+"-median-released/need")
	}

	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := &samples[i%len(samples)]
		_ = s.sc.planner.Plan(s.sc.node, s.sc.pods, s.sc.h)
		i++
	}
	b.ReportMetric(float64(evictPrecise.n), "evict-scenarios")
	report("evict-precise", evictPrecise)
	report("evict-all", evictAll)
	b.ReportMetric(float64(throttlePrecise.n), "throttle-scenarios")
	report("throttle-precise", throttlePrecise)
	report("throttle-all", throttleAll)
}
