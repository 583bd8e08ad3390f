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

package resctl_test

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// markedNode is a real node with four Batch pods at kubelet's 300m, a
// Batch pod with a 256Mi batch-memory tier limit, and a reconciler (the
// "previous run") that throttles the four to 100m and holds the tier pod
// to its memory tier, with its marks in the state directory. The
// reconciler is then dropped without cleanup, as kill -9 would.
type markedNode struct {
	node  *resctltest.RealNode
	pods  map[string]*resctltest.RealPod
	marks string
}

func newMarkedNode(t *testing.T) *markedNode {
	t.Helper()
	n := &markedNode{node: resctltest.NewRealNode(t, "waterline-test-marks"), pods: map[string]*resctltest.RealPod{},
		marks: filepath.Join(t.TempDir(), resctl.MarksFile)}
	var pods []*corev1.Pod
	throttle := map[types.UID]resctl.Intent{}
	for _, name := range []string{"relabelled", "terminating", "gone", "still-batch"} {
		p := resctltest.MakePod(name).Band(extension.BandBatch).CPU("300m", "300m").Obj()
		n.pods[name] = n.node.AddPod(p)
		pods = append(pods, p)
		throttle[p.UID] = resctl.Intent{CPUQuotaMilli: 100, BelowOwnLimits: true}
	}
	tier := resctltest.MakePod("tier").Band(extension.BandBatch).Tier(extension.ResourceBatchMemory, "256Mi").Obj()
	n.pods["tier"] = n.node.AddPod(tier)
	pods = append(pods, tier)

	old, err := resctl.New(n.node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.UseMarks(n.marks); err != nil {
		t.Fatal(err)
	}
	old.SetIntents("qos", throttle)
	old.SetIntents("tier", map[types.UID]resctl.Intent{tier.UID: {MemoryLimitBytes: 256 << 20}})
	if err := old.Cycle(t.Context(), &agent.Snapshot{Pods: pods, PodsComplete: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"relabelled", "terminating", "gone", "still-batch"} {
		if q := n.node.Quota(n.pods[name].Cgroup); q != 100 {
			t.Fatalf("%s throttled to %dm, want 100m", name, q)
		}
	}
	if m := n.memory(t, "tier"); m != 256<<20 {
		t.Fatalf("tier pod memory limit %d, want 256Mi", m)
	}
	if got := len(old.Marks()); got != 5 {
		t.Fatalf("marks after the first run = %d, want 5", got)
	}
	return n
}

func (n *markedNode) memory(t *testing.T, name string) int64 {
	t.Helper()
	m, err := n.node.Layout.ReadMemoryLimit(n.pods[name].Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRealRestartHealsWhatItsMarksShow: while the agent was down one
// throttled Batch pod was relabelled Prod, one turned terminating, and one
// was deleted from the API (its containers still running). The restarted
// reconciler, with no intents, gives every one of them kubelet's 300m back
// in its first cycle -- its marks say it changed them, whatever they are
// now -- and drops their marks. (The one look at Batch/Free pods alone
// skipped the protected ones and the unlisted one: they stayed at 100m.)
func TestRealRestartHealsWhatItsMarksShow(t *testing.T) {
	n := newMarkedNode(t)
	relabelled := n.pods["relabelled"].Pod.DeepCopy()
	relabelled.Labels = map[string]string{extension.LabelBand: string(extension.BandProd)}
	terminating := n.pods["terminating"].Pod.DeepCopy()
	terminating.DeletionTimestamp = resctltest.MakePod("x").Terminating().Obj().DeletionTimestamp
	if extension.QoSProtection(relabelled) == extension.NotProtected || extension.QoSProtection(terminating) == extension.NotProtected {
		t.Fatal("the relabelled and terminating pods must be protected for this test to mean anything")
	}
	pods := []*corev1.Pod{relabelled, terminating, n.pods["still-batch"].Pod, n.pods["tier"].Pod}

	fresh, err := resctl.New(n.node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.UseMarks(n.marks); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Cycle(t.Context(), &agent.Snapshot{Pods: pods, PodsComplete: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"relabelled", "terminating", "gone", "still-batch"} {
		rp := n.pods[name]
		if p, c := n.node.Quota(rp.Cgroup), n.node.Quota(rp.Containers["main"]); p != 300 || c != 300 {
			t.Errorf("%s after the restart: pod quota %dm, container %dm; want kubelet's 300m", name, p, c)
		}
	}
	if m := n.memory(t, "tier"); m != resctl.Unlimited && m < 1<<40 {
		t.Errorf("tier pod memory limit after the restart without its intent = %d, want kubelet's (unlimited)", m)
	}
	if got := fresh.Marks(); len(got) != 0 {
		t.Errorf("marks left after healing: %v", got)
	}
	again, err := resctl.ReadMarks(n.marks)
	if err != nil || len(again) != 0 {
		t.Errorf("marks file after healing: %v, %v; want empty", again, err)
	}
}

// TestRealReleaseUndoesEveryMark: waterline-agent --release on a node a
// previous run left with four throttled pods and a tier-limited one: with
// no pod list and no API server, every cgroup gets kubelet's values back
// and the marks file is emptied.
func TestRealReleaseUndoesEveryMark(t *testing.T) {
	n := newMarkedNode(t)
	r, err := resctl.New(n.node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UseMarks(n.marks); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(klog.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for _, name := range []string{"relabelled", "terminating", "gone", "still-batch"} {
		rp := n.pods[name]
		if p, c := n.node.Quota(rp.Cgroup), n.node.Quota(rp.Containers["main"]); p != 300 || c != 300 {
			t.Errorf("%s after release: pod quota %dm, container %dm; want kubelet's 300m", name, p, c)
		}
	}
	if m := n.memory(t, "tier"); m != resctl.Unlimited && m < 1<<40 {
		t.Errorf("tier pod memory limit after release = %d, want kubelet's (unlimited)", m)
	}
	if m, err := resctl.ReadMarks(n.marks); err != nil || len(m) != 0 {
		t.Errorf("marks after release: %v, %v; want none", m, err)
	}
}
