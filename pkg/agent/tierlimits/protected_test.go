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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
)

// TestBandCapSparesProtectedNamespaces: a Batch pod in a namespace the
// NodeQOS selecting the node lists in spec.protectedNamespaces is never
// held below its own limit (docs/design/node-qos.md#protected-pods): the
// band cap leaves it at its limit and takes that off the allocatable
// first, as it does for every other protected pod. A NodeQOS that does not
// select the node protects nothing on it.
func TestBandCapSparesProtectedNamespaces(t *testing.T) {
	kept := resctltest.MakePod("kept").Namespace("ops").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
	b := resctltest.MakePod("b").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
	other := resctltest.MakePod("other").Namespace("elsewhere").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
	nqs := []*v1alpha1.NodeQOS{
		{ObjectMeta: metav1.ObjectMeta{Name: "colo"}, Spec: v1alpha1.NodeQOSSpec{ProtectedNamespaces: []string{"ops"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: v1alpha1.NodeQOSSpec{
			NodeSelector:        &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}},
			ProtectedNamespaces: []string{"elsewhere"},
		}},
	}
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
	// 1000 − 600 (the protected pod's limit) = 400, split 200:200.
	snap := &agent.Snapshot{Node: nodeWithBatch("1000"), Pods: []*corev1.Pod{kept, b, other}, NodeQOSes: nqs}
	if err := e.Cycle(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	capped := func(q int64) resctl.Intent { return resctl.Intent{CPUQuotaMilli: q, BelowOwnLimits: true} }
	want := map[types.UID]resctl.Intent{b.UID: capped(200), other.UID: capped(200)}
	if diff := cmp.Diff(want, rc.Intents(tierlimits.SourceBatchBand), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("band intents (-want +got):\n%s", diff)
	}
}

// TestBandCapProtectedNamespacesFollowNodeQOS: the protected namespaces
// follow the NodeQOS objects: listed in another order they are the same;
// once the object is replaced without the namespace, its pods share the
// cap again.
func TestBandCapProtectedNamespacesFollowNodeQOS(t *testing.T) {
	kept := resctltest.MakePod("kept").Namespace("ops").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
	b := resctltest.MakePod("b").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
	colo := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "colo"}, Spec: v1alpha1.NodeQOSSpec{ProtectedNamespaces: []string{"ops"}}}
	other := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
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
	node := nodeWithBatch("1000")
	capped := func(q int64) resctl.Intent { return resctl.Intent{CPUQuotaMilli: q, BelowOwnLimits: true} }
	uncolo := colo.DeepCopy()
	uncolo.Spec.ProtectedNamespaces = nil
	steps := []struct {
		name string
		nqs  []*v1alpha1.NodeQOS
		want map[types.UID]resctl.Intent
	}{
		{"ops protected", []*v1alpha1.NodeQOS{colo, other}, map[types.UID]resctl.Intent{b.UID: capped(400)}},
		{"listed in another order", []*v1alpha1.NodeQOS{other, colo}, map[types.UID]resctl.Intent{b.UID: capped(400)}},
		{"namespace dropped", []*v1alpha1.NodeQOS{other, uncolo}, map[types.UID]resctl.Intent{kept.UID: capped(500), b.UID: capped(500)}},
	}
	for _, s := range steps {
		if err := e.Cycle(t.Context(), &agent.Snapshot{Node: node, Pods: []*corev1.Pod{kept, b}, NodeQOSes: s.nqs}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.want, rc.Intents(tierlimits.SourceBatchBand), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: band intents (-want +got):\n%s", s.name, diff)
		}
	}
}
