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

package predictor

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
)

// TestProdReclaimableAtThePolicyRatio: status.prodReclaimable is the
// Reclaimable the manager sells Mid from -- at the reclaim ratio the
// manager writes into the NodeMetric's spec.tiers, not at 100 %. It
// follows a ratio change at the next cycle.
//
// Steady usage, no margin: peak = usage = 1.75 cores and 1.75Gi against
// requests of 3 cores and 3Gi.
func TestProdReclaimableAtThePolicyRatio(t *testing.T) {
	policy := noDecay(v1alpha1.PredictPolicy{Model: v1alpha1.PredictNSigmaV2, SafetyMarginPercent: ptr.To[int32](0), ColdStartSeconds: ptr.To[int64](0)})
	e := newEnv(t, Config{}, policy)
	a := makePod("a").priority(9500).req("2", "2Gi").obj()
	b := makePod("b").priority(9500).req("1", "1Gi").obj()
	e.pods = []*corev1.Pod{a, b}
	e.load = func(time.Time) load {
		return load{nodeCPU: 1.75, nodeMemory: gi + gi/2 + gi/4, pods: []podLoad{{a, 1, gi}, {b, 0.5, gi / 2}}}
	}
	// The manager's view of the same node: tiers.Reclaimable is what Mid
	// is sold from (before the threshold and unused-capacity caps).
	manager := func(ratio int32, requested, peak int64) int64 {
		return tiers.Reclaimable(ratio, tiers.ResourceState{ProdAllocated: requested, ProdPeak: peak, ProdPeakKnown: true})
	}
	for _, tc := range []struct {
		name    string
		ratio   *int32
		wantCPU string
		wantMem int64
	}{
		// 3 × 80 % − 1.75 = 0.65 cores; 3Gi × 80 % − 1.75Gi = 0.65Gi.
		{name: "ratio 80", ratio: ptr.To[int32](80), wantCPU: "650m", wantMem: 3*gi*80/100 - (gi + gi/2 + gi/4)},
		// 1.8 − 1.75 = 50m.
		{name: "ratio 60", ratio: ptr.To[int32](60), wantCPU: "50m", wantMem: 3*gi*60/100 - (gi + gi/2 + gi/4)},
		// Without spec.tiers (a manager that predates it): 100 %.
		{name: "absent", wantCPU: "1250m", wantMem: gi + gi/4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.nm.Spec.Tiers = nil
			if tc.ratio != nil {
				e.nm.Spec.Tiers = &v1alpha1.NodeMetricTiers{ReclaimRatioPercent: tc.ratio}
			}
			e.run(60 * time.Second)
			got := latest(t, e.p)
			if got.ProdPeak != (Amounts{1750, gi + gi/2 + gi/4}) || got.ProdRequests != (Amounts{3000, 3 * gi}) {
				t.Fatalf("peak %v requests %v, want 1750m/1.75Gi and 3000m/3Gi", got.ProdPeak, got.ProdRequests)
			}
			var st v1alpha1.NodeMetricStatus
			e.p.ContributeStatus(&st)
			want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.wantCPU), corev1.ResourceMemory: *resource.NewQuantity(tc.wantMem, resource.BinarySI)}
			if diff := cmp.Diff(want, st.ProdReclaimable, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("status.prodReclaimable (-want +got):\n%s", diff)
			}
			ratio := e.nm.Spec.ReclaimRatioPercent()
			if m := manager(ratio, 3000, 1750); got.ProdReclaimable.MilliCPU != m {
				t.Errorf("agent reports %dm cpu reclaimable, the manager sells from %dm at %d %%", got.ProdReclaimable.MilliCPU, m, ratio)
			}
			if m := manager(ratio, 3*gi, gi+gi/2+gi/4); got.ProdReclaimable.Memory != m {
				t.Errorf("agent reports %d B memory reclaimable, the manager sells from %d B at %d %%", got.ProdReclaimable.Memory, m, ratio)
			}
		})
	}
}
