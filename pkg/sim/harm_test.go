package sim

import (
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

// A contended cluster: a batch backlog of twice the cluster's CPU, and
// online services that use 60-90 % of their requests, with a wide daily
// swing and frequent bursts, so that Prod grows into what was sold to
// Batch.
func contended(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Synthetic(workload.SyntheticParams{
		Seed: 5, Nodes: 12, Duration: 12 * time.Hour, BatchLoadPercent: 200,
		ServiceMeanUsageMinPercent: 60, ServiceMeanUsageMaxPercent: 90,
		BurstProbabilityPercent: 10, BurstFactor: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestHarmCanAppear: Waterline's node QoS is what keeps Prod whole. With
// every NodeQOS line removed, the same workload must show harm to Prod
// that the default lines prevent -- and BestEffort batch, which nothing
// watches, must harm Prod too.
func TestHarmCanAppear(t *testing.T) {
	w := contended(t)
	run := func(nqs []v1alpha1.NodeQOS, policies ...Policy) *Result {
		t.Helper()
		res, err := Run(t.Context(), Config{Policies: policies, Seed: 1, NodeQOS: nqs}, w)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	lined := run(nil, PolicyWaterline, PolicyK8sBestEffort)
	unlined := run([]v1alpha1.NodeQOS{}, PolicyWaterline)
	with, be := lined.Policies[0].Summary, lined.Policies[1].Summary
	without := unlined.Policies[0].Summary
	t.Logf("Prod SLO-violation time: waterline %.3f %%, without lines %.3f %%, k8s-besteffort %.3f %%",
		with.ProdSLOViolationPercent, without.ProdSLOViolationPercent, be.ProdSLOViolationPercent)
	t.Logf("Prod p99 ÷ alone: waterline %.2f, without lines %.2f, k8s-besteffort %.2f",
		with.ProdLatencyFactorMean, without.ProdLatencyFactorMean, be.ProdLatencyFactorMean)
	if without.ProdSLOViolationPercent < 10*with.ProdSLOViolationPercent || without.ProdSLOViolationPercent < 0.1 {
		t.Errorf("without NodeQOS lines Prod is over its SLO %.3f %% of the time, with them %.3f %%: removing the lines must cost Prod ten times as much, and at least 0.1 %%",
			without.ProdSLOViolationPercent, with.ProdSLOViolationPercent)
	}
	if without.ProdLatencyFactorMean <= with.ProdLatencyFactorMean {
		t.Errorf("Prod latency without lines %.3f, with %.3f: must grow", without.ProdLatencyFactorMean, with.ProdLatencyFactorMean)
	}
	if be.ProdSLOViolationPercent < 1 {
		t.Errorf("k8s-besteffort: Prod over its SLO %.3f %% of the time, want at least 1 %%", be.ProdSLOViolationPercent)
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
