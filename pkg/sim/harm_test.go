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

package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

func TestCFSShare(t *testing.T) {
	tests := []struct {
		name           string
		avail          int64
		demand, weight []int64
		want           []int64
	}{
		{"enough for all", 10000, []int64{3000, 4000}, []int64{1024, 2}, []int64{3000, 4000}},
		{"by weight", 4000, []int64{4000, 4000}, []int64{3072, 1024}, []int64{3000, 1000}},
		{"a small claim is served, the rest shared", 4000, []int64{500, 4000, 4000}, []int64{1024, 1024, 1024}, []int64{500, 1750, 1750}},
		// Two shares against a request of 2 cores: BestEffort gets what
		// the requester leaves, and almost nothing of what it wants.
		{"besteffort's two shares", 4000, []int64{3000, 4000}, []int64{2048, 2}, []int64{3000, 1000}},
		{"besteffort against a full node", 4000, []int64{4000, 4000}, []int64{2048, 2}, []int64{3996, 3}},
		{"no demand", 4000, []int64{0, 0}, []int64{2, 2}, []int64{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]int64, len(tc.demand))
			cfsShare(tc.avail, tc.demand, tc.weight, got, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
}

// A contended cluster: a batch backlog of three times the cluster's CPU,
// and online services that use 60-95 % of their requests, with a wide
// daily swing and frequent tripling bursts, so that Prod grows into what
// was sold to Batch after LoadAware placed it. (With milder bursts
// LoadAware's estimation alone keeps these nodes cool and the lines have
// nothing to do.)
func contended(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Synthetic(workload.SyntheticParams{
		Seed: 5, Nodes: 12, Duration: 12 * time.Hour, BatchLoadPercent: 300,
		ServiceMeanUsageMinPercent: 60, ServiceMeanUsageMaxPercent: 95,
		BurstProbabilityPercent: 20, BurstFactor: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestHarmCanAppear: Waterline's node QoS and the agent's Batch band cap
// are what keep Prod whole when Prod bursts after placement. With every
// NodeQOS line removed and no band cap, the same workload must show clearly
// more harm to Prod than with the defaults;
// with the lines removed but the band cap on, no less harm than with both;
// and k8s-besteffort, which nothing watches, must harm Prod too.
func TestHarmCanAppear(t *testing.T) {
	w := contended(t)
	run := func(nqs []v1alpha1.NodeQOS, bandCap bool, policies ...Policy) *Result {
		t.Helper()
		res, err := Run(t.Context(), Config{Policies: policies, Seed: 1, NodeQOS: nqs, BandCap: &bandCap}, w)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	lined := run(nil, true, PolicyWaterline, PolicyK8sBestEffort)
	with, be := lined.Policies[0].Summary, lined.Policies[1].Summary
	capped := run([]v1alpha1.NodeQOS{}, true, PolicyWaterline).Policies[0].Summary
	without := run([]v1alpha1.NodeQOS{}, false, PolicyWaterline).Policies[0].Summary
	t.Logf("Prod SLO-violation time: waterline %.3f %%, without lines %.3f %%, without lines or band cap %.3f %%, k8s-besteffort %.3f %%",
		with.ProdSLOViolationPercent, capped.ProdSLOViolationPercent, without.ProdSLOViolationPercent, be.ProdSLOViolationPercent)
	t.Logf("Prod p99 ÷ alone: waterline %.2f, without lines or band cap %.2f, k8s-besteffort %.2f",
		with.ProdLatencyFactorMean, without.ProdLatencyFactorMean, be.ProdLatencyFactorMean)
	// Prod bursts past what any policy can give it here, so some harm
	// stays with the lines; removing them must at least double it.
	if without.ProdSLOViolationPercent < 2*with.ProdSLOViolationPercent || without.ProdSLOViolationPercent < with.ProdSLOViolationPercent+1 {
		t.Errorf("without NodeQOS lines and band cap Prod is over its SLO %.3f %% of the time, with them %.3f %%: removing them must at least double it, and add a point",
			without.ProdSLOViolationPercent, with.ProdSLOViolationPercent)
	}
	if capped.ProdSLOViolationPercent < with.ProdSLOViolationPercent {
		t.Errorf("without NodeQOS lines (band cap on) Prod is over its SLO %.3f %% of the time, less than with them (%.3f %%)",
			capped.ProdSLOViolationPercent, with.ProdSLOViolationPercent)
	}
	if without.ProdLatencyFactorMean <= with.ProdLatencyFactorMean {
		t.Errorf("Prod latency without lines or band cap %.3f, with %.3f: must grow", without.ProdLatencyFactorMean, with.ProdLatencyFactorMean)
	}
	if be.ProdSLOViolationPercent < 1 {
		t.Errorf("k8s-besteffort: Prod over its SLO %.3f %% of the time, want at least 1 %%", be.ProdSLOViolationPercent)
	}
}

// TestBandCapHoldsBatch: when the Batch allocatable falls below what the
// node's Batch pods request, the agent's band cap holds them to it, lines
// or not.
func TestBandCapHoldsBatch(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg := Config{NodeQOS: []v1alpha1.NodeQOS{}, BandCap: &on}
		at65(&cfg)
		cfg = cfg.WithDefaults()
		r, err := newRun(&cfg, tiny(1, 30, 1.9, 800, 800), PolicyWaterline)
		if err != nil {
			t.Fatal(err)
		}
		stepTo(t, r, 31)
		// The report at step 30 publishes Batch 1570m for 1600m requested.
		want := int64(800)
		if on {
			want = 785
		}
		for _, js := range r.jobs {
			if got := int64(js.pod.st().usageCPU); got != want {
				t.Errorf("band cap %v: job %s uses %dm at step 31, want %dm", on, js.spec.Name, got, want)
			}
		}
	}
}

// TestCFSStarvesProdOverItsRequest: with plain Kubernetes, a Batch pod
// whose request is its limit keeps its CPU share when Prod bursts above
// its own request, so Prod is not served in full; a BestEffort Batch pod
// (cpu.shares 2) gives the CPU back.
func TestCFSStarvesProdOverItsRequest(t *testing.T) {
	// web asks 2 cores and bursts to 3.5 at step 30; a Batch job asks 2
	// cores and uses them. The node has 4.
	w := tiny(1, 30, 3.5, 2000)
	w.Duration = 10 * time.Minute
	for _, tc := range []struct {
		policy  Policy
		starved bool
	}{{PolicyK8sDefault, true}, {PolicyK8sBestEffort, false}} {
		res, err := Run(t.Context(), Config{Policies: []Policy{tc.policy}}, w)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Policies[0].Summary
		// 30 steps of 10 s, 1.5 cores short, less 2/... when shared by
		// weight: web gets 4000 × 2048/4096 = 2000m of its 3500m.
		if got := s.ProdShortfallCoreSeconds > 0; got != tc.starved {
			t.Errorf("%s: Prod work not served %.0f core-s, want starved=%v", tc.policy, s.ProdShortfallCoreSeconds, tc.starved)
		}
		if tc.starved {
			// 30 steps × 10 s × 1.5 cores.
			if want := 450.0; s.ProdShortfallCoreSeconds != want {
				t.Errorf("%s: Prod work not served %.1f core-s, want %.1f", tc.policy, s.ProdShortfallCoreSeconds, want)
			}
		}
	}
}

// TestWaitTableIsLatencyFactor holds the remembered queueing terms to the
// formula: for node shapes of every size and loads up to and past what the
// node can give pods, latencyFactorOn returns latencyFactor's value bit for
// bit, whether the entries are computed in the call or remembered from an
// earlier one, and two shapes never share entries.
func TestWaitTableIsLatencyFactor(t *testing.T) {
	h := DefaultHarm()
	rng := rand.New(rand.NewPCG(1, 2))
	var ts waitTables
	type shape struct{ capacity, avail int64 }
	shapes := []shape{{2000, 1800}, {2000, 1900}, {4000, 4000}, {32000, 31000}, {64000, 63000}, {96000, 95500}, {1000, 1}}
	for range 20 {
		c := 1000 + rng.Int64N(128000)
		shapes = append(shapes, shape{c, 1 + rng.Int64N(c)})
	}
	for round := range 2 { // the second round reads what the first wrote
		for _, s := range shapes {
			tab := ts.forNode(s.capacity, s.avail)
			if tab == nil {
				t.Fatalf("no table for %+v", s)
			}
			if tab.avail != s.avail {
				t.Fatalf("shape %+v got the table of avail %d", s, tab.avail)
			}
			for range 500 {
				prod := rng.Int64N(s.avail + 1)
				competing := rng.Int64N(s.avail - prod + 1)
				if rng.IntN(10) == 0 {
					competing += rng.Int64N(s.avail + 1) // past avail: not in the table
				}
				nonProd := competing + rng.Int64N(s.capacity)
				want := h.latencyFactor(prod, nonProd, competing, s.avail, s.capacity)
				got := h.latencyFactorOn(tab, prod, nonProd, competing, s.avail, s.capacity)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("round %d, shape %+v, prod %d, nonProd %d, competing %d: %v, want %v",
						round, s, prod, nonProd, competing, got, want)
				}
			}
		}
	}
	if got := h.latencyFactorOn(nil, 500, 300, 200, 1800, 2000); got != h.latencyFactor(500, 300, 200, 1800, 2000) {
		t.Errorf("without a table: %v", got)
	}
}

// TestWaitTablesBoundMemory: past maxWaitEntries a node gets no table (its
// terms are computed), and a shape met again reuses its table.
func TestWaitTablesBoundMemory(t *testing.T) {
	var ts waitTables
	a := ts.forNode(64000, 63000)
	if a == nil || ts.forNode(64000, 63000) != a {
		t.Fatal("a shape met twice must share one table")
	}
	if ts.forNode(64000, 0) != nil {
		t.Error("a node with no CPU for pods needs no table")
	}
	big := int64(maxWaitEntries) // 8 Mi millicores: one table alone passes the bound
	if ts.forNode(big+1000, big) != nil {
		t.Errorf("a table of %d entries was made past the bound of %d", big+1, maxWaitEntries)
	}
	if ts.entries > maxWaitEntries {
		t.Errorf("%d entries kept, bound %d", ts.entries, maxWaitEntries)
	}
}
