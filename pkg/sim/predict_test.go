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
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/core/predict"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// TestPredictCachesAgreeWithWalk holds what predict keeps from one
// prediction to the next -- the pods that feed histograms (predictFeeds)
// and the trackers' Inputs (trackerInput) -- to a walk of the node's pods
// and a fresh Tracker.Input, step by step through a run in which, now and
// then, a service leaves its node (the pods after it change slots) or is
// tracked afresh with new histograms and a new request.
func TestPredictCachesAgreeWithWalk(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 1, Nodes: 4, Duration: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRun(t, w, PolicyWaterline)
	rng := rand.New(rand.NewPCG(5, 6))
	var moved, retracked int
	check := func() {
		t.Helper()
		for _, n := range r.nodes {
			var want []histFeed
			for i, p := range n.pods {
				if n.hot[i].tier == tierProd && p.cpuHist != nil {
					want = append(want, histFeed{pod: p, slot: i, cpu: p.cpuHist, mem: p.memHist})
				}
			}
			if got := predictFeeds(n); !slices.Equal(got, want) {
				t.Fatalf("step %d, node %s: feeds %+v, want %+v", r.step, n.spec.Name, got, want)
			}
			for _, tc := range []struct {
				input *trackerInput
				tr    *predict.Tracker
			}{{&n.cpuInput, n.cpuTracker}, {&n.memInput, n.memTracker}} {
				want := tc.tr.Input(r.now)
				got := tc.input.at(tc.tr, r.now)
				if got.Now != want.Now || got.Node != want.Node || !slices.Equal(got.Pods, want.Pods) {
					t.Fatalf("step %d, node %s: input %+v, want %+v", r.step, n.spec.Name, got, want)
				}
			}
		}
	}
	for ; r.step < r.steps; r.step++ {
		if err := r.oneStep(); err != nil {
			t.Fatal(err)
		}
		check()
		n := r.nodes[rng.IntN(len(r.nodes))]
		var services []*pod
		for _, p := range n.pods {
			if p.cpuHist != nil {
				services = append(services, p)
			}
		}
		if len(services) < 2 {
			continue
		}
		p := services[rng.IntN(len(services))]
		switch rng.IntN(40) {
		case 0:
			if p.nodeIdx < len(n.pods)-1 {
				moved++
			}
			n.remove(p, r.now)
		case 1:
			key := nodeload.PodKey(NamespaceOnline, p.name)
			for _, tr := range []*predict.Tracker{n.cpuTracker, n.memTracker} {
				tr.RemovePod(key)
				tr.SetPod(key, r.now, float64(rng.IntN(4000))/1000)
			}
			p.cpuHist, p.memHist = n.cpuTracker.Pod(key), n.memTracker.Pod(key)
			retracked++
		default:
			continue
		}
		check()
	}
	if moved == 0 || retracked == 0 {
		t.Errorf("%d services moved, %d tracked afresh: want both", moved, retracked)
	}
}
