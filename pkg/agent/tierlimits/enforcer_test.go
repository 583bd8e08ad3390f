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

package tierlimits_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
)

func nodeWithBatch(cpu string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if cpu != "" {
		n.Status.Allocatable = corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse(cpu)}
	}
	return n
}

// TestEnforcerIntents: every tier pod gets its own limits as a "tier"
// intent; the pods that take batch-cpu share the Batch allocatable through
// "batch-band" intents once it no longer covers their limits; protected
// pods keep their limit and are taken off the allocatable first.
func TestEnforcerIntents(t *testing.T) {
	b1 := resctltest.MakePod("b1").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Tier(extension.ResourceBatchMemory, "1Gi").Obj()
	b2 := resctltest.MakePod("b2").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
	ds := resctltest.MakePod("ds").Band(extension.BandBatch).OwnedBy("DaemonSet").Tier(extension.ResourceBatchCPU, "200").Obj()
	mid := resctltest.MakePod("mid").Band(extension.BandMid).Tier(extension.ResourceMidCPU, "400").Obj()
	prod := resctltest.MakePod("prod").Band(extension.BandProd).CPU("1", "1").Obj()
	pods := []*corev1.Pod{b1, b2, ds, mid, prod}
	wantTier := map[types.UID]resctl.Intent{
		b1.UID:  {CPUQuotaMilli: 600, CPUShares: 614, MemoryLimitBytes: 1 << 30},
		b2.UID:  {CPUQuotaMilli: 600, CPUShares: 614},
		ds.UID:  {CPUQuotaMilli: 200, CPUShares: 204},
		mid.UID: {CPUQuotaMilli: 400, CPUShares: 409},
	}
	capped := func(q int64) resctl.Intent { return resctl.Intent{CPUQuotaMilli: q, BelowOwnLimits: true} }
	tests := []struct {
		name     string
		node     *corev1.Node
		cfg      tierlimits.Config
		wantBand map[types.UID]resctl.Intent
	}{
		// 3000 − 200 (DaemonSet) = 2800 ≥ 600 + 600: limits fit.
		{"allocatable covers the limits", nodeWithBatch("3000"), tierlimits.Config{}, map[types.UID]resctl.Intent{}},
		// 1000 − 200 = 800, split by request 600:600 → 400 each.
		{"allocatable shrank: split by request", nodeWithBatch("1000"), tierlimits.Config{}, map[types.UID]resctl.Intent{b1.UID: capped(400), b2.UID: capped(400)}},
		// 100 − 200 < 0 → 0: the floor, 10 % of 600 = 60.
		{"nothing left: the floor", nodeWithBatch("100"), tierlimits.Config{}, map[types.UID]resctl.Intent{b1.UID: capped(60), b2.UID: capped(60)}},
		{"band cap off", nodeWithBatch("1000"), tierlimits.Config{BandCap: ptr.To(false)}, map[types.UID]resctl.Intent{}},
		{"node without Batch tier: no cap", nodeWithBatch(""), tierlimits.Config{}, map[types.UID]resctl.Intent{}},
		{"node not known yet: no cap", nil, tierlimits.Config{}, map[types.UID]resctl.Intent{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, err := cgroups.NewLayout(t.TempDir(), cgroups.V1, cgroups.DriverCgroupfs, "/")
			if err != nil {
				t.Fatal(err)
			}
			rc, err := resctl.New(layout, nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := tierlimits.New(tt.cfg, rc)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Cycle(t.Context(), &agent.Snapshot{Node: tt.node, Pods: pods}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantTier, rc.Intents(tierlimits.SourceTier), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tier intents (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBand, rc.Intents(tierlimits.SourceBatchBand), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("band intents (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnforcerForgetsGonePods: intents are restated every cycle, so a pod
// that left the node has none.
func TestEnforcerForgetsGonePods(t *testing.T) {
	layout, err := cgroups.NewLayout(t.TempDir(), cgroups.V1, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := resctl.New(layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tierlimits.New(tierlimits.Config{}, rc)
	if err != nil {
		t.Fatal(err)
	}
	b := resctltest.MakePod("b").Tier(extension.ResourceBatchCPU, "500").Obj()
	if err := e.Cycle(t.Context(), &agent.Snapshot{Node: nodeWithBatch("100"), Pods: []*corev1.Pod{b}}); err != nil {
		t.Fatal(err)
	}
	if len(rc.Intents(tierlimits.SourceTier)) != 1 || len(rc.Intents(tierlimits.SourceBatchBand)) != 1 {
		t.Fatalf("intents for the pod: tier %v, band %v; want one each", rc.Intents(tierlimits.SourceTier), rc.Intents(tierlimits.SourceBatchBand))
	}
	if err := e.Cycle(t.Context(), &agent.Snapshot{Node: nodeWithBatch("100")}); err != nil {
		t.Fatal(err)
	}
	if len(rc.Intents(tierlimits.SourceTier))+len(rc.Intents(tierlimits.SourceBatchBand)) != 0 {
		t.Errorf("intents after the pod left: tier %v, band %v; want none", rc.Intents(tierlimits.SourceTier), rc.Intents(tierlimits.SourceBatchBand))
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := tierlimits.New(tierlimits.Config{BandCapFloorPercent: ptr.To[int32](101)}, nil); err == nil {
		t.Error("New accepted a floor of 101 % and no reconciler")
	}
}
