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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// TestSampleCandidatesAgreesWithCore holds the agents' CPU sample, which
// runNode adds up from the pods' step state (sampleCandidates), to
// qos.SampleBECPU on the candidates a plan would get (syncCandidates), on
// every node at every step of a busy synthetic cluster, under waterline
// and evict-all, with quotas set here and there.
func TestSampleCandidatesAgreesWithCore(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 3, Nodes: 12, Duration: 3 * time.Hour, BatchLoadPercent: 90})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{PolicyWaterline, PolicyEvictAll} {
		r := newTestRun(t, w, p)
		sampled, throttled := 0, 0
		for r.step = 0; r.step < r.steps; r.step++ {
			if err := r.oneStep(); err != nil {
				t.Fatal(err)
			}
			for _, n := range r.nodes {
				if r.step%50 == 0 && len(n.candPods) > 0 {
					// Quotas, as node QoS would set them, on top of
					// whatever it did: the sample reads them too.
					r.setQuota(n, n.candPods[0], int64(r.step%7)*100)
				}
				r.syncCandidates(n)
				want := qos.SampleBECPU(n.spec.CPUMilli, n.usageCPU, n.cands)
				be, fresh := n.be, n.beFresh
				r.sampleCandidates(n)
				if n.be != want {
					t.Fatalf("%s, step %d, node %s: sampleCandidates %+v, qos.SampleBECPU %+v", p, r.step, n.spec.Name, n.be, want)
				}
				n.be, n.beFresh = be, fresh
				if len(n.cands) > 0 {
					sampled++
				}
				throttled += n.throttled
			}
		}
		if sampled == 0 || throttled == 0 {
			t.Errorf("%s: %d samples with candidates, %d throttled pod-steps: the check saw too little", p, sampled, throttled)
		}
	}
}

// TestExcessKeptAgreesWithSum holds the nodes' LoadAware excess, which
// place and remove keep up to date while it is fresh (addExcess,
// subExcess), to refreshExcess's sum over every pod of the node, at every
// step of a busy cluster, with estimates that expire after scheduling.
func TestExcessKeptAgreesWithSum(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 5, Nodes: 12, Duration: 3 * time.Hour, BatchLoadPercent: 90})
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []time.Duration{0, 45 * time.Second} {
		r := newConfiguredRun(t, w, PolicyWaterline, func(cfg *Config) {
			la := DefaultLoadAwareSpec()
			la.EstimatedAfterPodScheduled = after
			la.ProdUsageThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 55}
			cfg.LoadAware = &la
		})
		checked := 0
		for r.step = 0; r.step < r.steps; r.step++ {
			if err := r.oneStep(); err != nil {
				t.Fatal(err)
			}
			for _, n := range r.nodes {
				if !n.excessFresh || !n.excessUntil.IsZero() && !r.now.Before(n.excessUntil) {
					continue
				}
				kept, keptProd := n.load.Excess, n.load.ProdExcess
				n.excessFresh = false
				n.refreshExcess(r.now)
				if n.load.Excess != kept || n.load.ProdExcess != keptProd {
					t.Fatalf("estimates for %v, step %d, node %s: excess kept %v (Prod %v), summed %v (Prod %v)",
						after, r.step, n.spec.Name, kept, keptProd, n.load.Excess, n.load.ProdExcess)
				}
				checked++
			}
		}
		if checked == 0 {
			t.Errorf("estimates for %v: no node had a fresh excess to check", after)
		}
	}
}

// TestQoSUnsettledKeptWithHysteresis holds node.qosUnsettled, which nodeQoS
// keeps beside the node's QoS hysteresis so that the quiet check reads no
// counter, to the hysteresis itself, on every node at every step of a
// busy synthetic cluster under waterline and evict-all, with CPU lines
// low enough for nodes to cross them both ways.
func TestQoSUnsettledKeptWithHysteresis(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 3, Nodes: 12, Duration: 3 * time.Hour, BatchLoadPercent: 90})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{PolicyWaterline, PolicyEvictAll} {
		r := newConfiguredRun(t, w, p, func(cfg *Config) {
			cfg.NodeQOS = DefaultNodeQOS()
			cfg.NodeQOS[0].Spec.CPU = &v1alpha1.CPUWaterlines{
				ForbidSchedulingPercent: ptr.To[int32](45), ThrottlePercent: ptr.To[int32](45),
				RestorePercent: ptr.To[int32](35), EvictPercent: ptr.To[int32](60),
			}
		})
		unsettled, settled := 0, 0
		for r.step = 0; r.step < r.steps; r.step++ {
			if err := r.oneStep(); err != nil {
				t.Fatal(err)
			}
			for _, n := range r.nodes {
				want := !n.hysteresis.Settled()
				if n.qosUnsettled != want {
					t.Fatalf("%s, step %d, node %s: unsettled %v, hysteresis %+v", p, r.step, n.spec.Name, n.qosUnsettled, n.hysteresis)
				}
				switch {
				case want:
					unsettled++
				case len(n.hysteresis.Counters) > 0:
					settled++
				}
			}
		}
		if unsettled == 0 || settled == 0 {
			t.Errorf("%s: %d node-steps unsettled, %d settled with counters: the check saw too little", p, unsettled, settled)
		}
	}
}

// TestRefreshExcessPassesOverSettledPods holds refreshExcess, which sums
// only the node's unsettled pods, to the sum of every pod's
// AssignedPod.ExcessOf (the excess and its time limit), at every step of
// a busy cluster, with estimates that expire after scheduling and with
// estimates held until initialization (which the simulation's pods never
// report, so that they never settle).
func TestRefreshExcessPassesOverSettledPods(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 7, Nodes: 12, Duration: 3 * time.Hour, BatchLoadPercent: 90})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		afterScheduled, afterInitialized time.Duration
	}{{0, 0}, {45 * time.Second, 0}, {0, 30 * time.Second}} {
		r := newConfiguredRun(t, w, PolicyWaterline, func(cfg *Config) {
			la := DefaultLoadAwareSpec()
			la.EstimatedAfterPodScheduled = tc.afterScheduled
			la.EstimatedAfterInitialized = tc.afterInitialized
			la.ProdUsageThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 55}
			cfg.LoadAware = &la
		})
		settled, excess := 0, 0
		for r.step = 0; r.step < r.steps; r.step++ {
			if err := r.oneStep(); err != nil {
				t.Fatal(err)
			}
			for _, n := range r.nodes {
				var want nodeload.ExcessSum
				for i := range n.seen {
					s := &n.seen[i]
					e, until := s.assigned.ExcessOf(n.load.Metric, s.report, r.now)
					want.Add(&s.assigned, e, until)
					if n.unsettled[i>>6]>>(i&63)&1 == 0 {
						settled++
					}
				}
				n.excessFresh = false
				n.refreshExcess(r.now)
				got := nodeload.ExcessSum{All: n.load.Excess, Prod: n.load.ProdExcess, Until: n.excessUntil}
				if got.All != want.All || got.Prod != want.Prod || !got.Until.Equal(want.Until) {
					t.Fatalf("%+v, step %d, node %s: refreshExcess %+v, the sum over every pod %+v", tc, r.step, n.spec.Name, got, want)
				}
				if want.All != (nodeload.Vector{}) {
					excess++
				}
			}
		}
		if excess == 0 || tc.afterInitialized == 0 && settled == 0 {
			t.Errorf("%+v: %d node-steps with excess, %d settled pod-steps: the check saw too little", tc, excess, settled)
		}
	}
}
