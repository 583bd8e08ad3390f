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
	"testing"
)

// TestReportAveragesAgreeWithHistory holds the NodeMetric's averages
// (reportSnaps for the node, avgSnaps for its pods, which share the node's
// step counts) to the averages worked out from each one's whole history of
// reports -- sum and steps since k of its reports ago, or since it started
// when it had fewer -- through random usage, pods coming and going (leaving
// as node.remove does, the last pod taking the slot) and reports at random
// steps.
func TestReportAveragesAgreeWithHistory(t *testing.T) {
	type snap struct{ sum, steps int64 }
	// average is the straightforward average of the last report of hist
	// over the k reports before it.
	average := func(hist []snap, k int) int64 {
		now := hist[len(hist)-1]
		var base snap
		if len(hist) > k {
			base = hist[len(hist)-1-k]
		}
		if now.steps == base.steps {
			return 0
		}
		return (now.sum - base.sum) / (now.steps - base.steps)
	}
	type testPod struct {
		id       int
		sum      int64
		placedAt int64
		snaps    avgSnaps
		hist     []snap
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := 1 + rng.IntN(maxSnaps)
		var (
			node               reportSnaps
			nodeHist           []snap
			steps, sum         int64
			pods               []testPod
			nextID, young, old int
		)
		for step := range 3000 {
			if rng.IntN(6) == 0 || len(pods) == 0 {
				pods = append(pods, testPod{id: nextID, placedAt: steps})
				nextID++
			}
			if rng.IntN(8) == 0 && len(pods) > 0 {
				i, last := rng.IntN(len(pods)), len(pods)-1
				pods[i] = pods[last]
				pods = pods[:last]
			}
			if rng.IntN(4) == 0 {
				avg, slot, sinceK := node.report(k, sum, steps)
				nodeHist = append(nodeHist, snap{sum, steps})
				if want := average(nodeHist, k); avg != want {
					t.Fatalf("seed %d, step %d: node average %d, want %d", seed, step, avg, want)
				}
				for i := range pods {
					p := &pods[i]
					got := p.snaps.report(k, slot, p.sum, sinceK, steps-p.placedAt)
					p.hist = append(p.hist, snap{p.sum, steps - p.placedAt})
					if want := average(p.hist, k); got != want {
						t.Fatalf("seed %d, step %d (k %d): pod %d's average %d after %d reports, want %d",
							seed, step, k, p.id, got, len(p.hist), want)
					}
					if len(p.hist) > k {
						old++
					} else {
						young++
					}
				}
			}
			steps++
			for i := range pods {
				u := rng.Int64N(4000)
				pods[i].sum += u
				sum += u
			}
		}
		if young == 0 || old == 0 {
			t.Errorf("seed %d: %d reports of pods with fewer than k reports, %d with more: want both", seed, young, old)
		}
	}
}
