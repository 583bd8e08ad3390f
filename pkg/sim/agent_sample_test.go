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
