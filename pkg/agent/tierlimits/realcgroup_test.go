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
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
)

// realModules returns the enforcer and the reconciler it feeds, and a cycle
// function running both, in the agent's order, on the snapshot.
func realModules(t *testing.T, node *resctltest.RealNode, snap *agent.Snapshot) (*resctl.Reconciler, func()) {
	t.Helper()
	rc, err := resctl.New(node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tierlimits.New(tierlimits.Config{}, rc)
	if err != nil {
		t.Fatal(err)
	}
	return rc, func() {
		t.Helper()
		for _, m := range []agent.CycleModule{e, rc} {
			if err := m.Cycle(t.Context(), snap); err != nil {
				t.Fatalf("%s: %v", m.Name(), err)
			}
		}
	}
}

// usage returns the cores each cgroup used over d.
func usage(node *resctltest.RealNode, d time.Duration, cgs ...string) []float64 {
	before := make([]uint64, len(cgs))
	for i, cg := range cgs {
		before[i] = node.CPUNanos(cg)
	}
	start := time.Now()
	time.Sleep(d)
	el := float64(time.Since(start).Nanoseconds())
	out := make([]float64, len(cgs))
	for i, cg := range cgs {
		out[i] = float64(node.CPUNanos(cg)-before[i]) / el
	}
	return out
}

// TestRealBatchPodHeldToItsTierLimits: a Batch pod as the colocation
// webhook makes it (batch-cpu 400, batch-memory 256Mi; BestEffort to
// kubelet, which gives it 2 shares and no limit) gets in its cgroup what
// kubelet would have written for 400m and 256Mi: quota 40000/100000 µs,
// 409 shares (v2: the weight of 409), a 256Mi memory limit. A burner in it
// is held to 0.4 cores ± 10 %. A throttle below the tier limit holds; one
// above it does not raise the pod past it.
func TestRealBatchPodHeldToItsTierLimits(t *testing.T) {
	node := resctltest.NewRealNode(t, "waterline-test-tier")
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).
		Tier(extension.ResourceBatchCPU, "400").Tier(extension.ResourceBatchMemory, "256Mi").Obj()
	rp := node.AddPod(pod)
	if pod.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Fatalf("QoS class %s, want BestEffort (tier resources are extended resources)", pod.Status.QOSClass)
	}
	snap := &agent.Snapshot{Node: nodeWithBatch("8000"), Pods: []*corev1.Pod{pod}}
	rc, cycle := realModules(t, node, snap)
	cycle()

	q, err := node.Layout.ReadCPUQuota(rp.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	if q.QuotaMicros != 40000 || q.PeriodMicros != 100000 {
		t.Errorf("quota %d/%d µs, want 40000/100000 (400m)", q.QuotaMicros, q.PeriodMicros)
	}
	shares, err := node.Layout.ReadCPUShares(rp.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	// 400 × 1024 ÷ 1000 = 409.6 → 409.
	wantShares := uint64(409)
	if node.Layout.Version() == cgroups.V2 {
		wantShares = cgroups.CPUWeightToShares(cgroups.CPUSharesToWeight(409))
	}
	if shares != wantShares {
		t.Errorf("shares %d, want %d", shares, wantShares)
	}
	mem, err := node.Layout.ReadMemoryLimit(rp.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	if mem != 256<<20 {
		t.Errorf("memory limit %d, want %d", mem, 256<<20)
	}

	resctltest.StartBurner(t, node, rp.Containers["main"], 1000)
	got := usage(node, 3*time.Second, rp.Cgroup)[0]
	t.Logf("Burner in a pod with batch-cpu 400 used %.3f cores", got)
	if math.Abs(got-0.4) > 0.04 {
		t.Errorf("burner used %.3f cores, want 0.400 ± 0.040 (its tier limit)", got)
	}

	// A throttle (the QoS executor's intent) below the tier limit holds...
	rc.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 150, BelowOwnLimits: true}})
	cycle()
	if got := node.Quota(rp.Cgroup); got != 150 {
		t.Errorf("throttled to 150m under a 400m tier limit: quota %dm, want 150m", got)
	}
	// ...and one above it does not raise the pod past it.
	rc.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 900, BelowOwnLimits: true}})
	cycle()
	if got := node.Quota(rp.Cgroup); got != 400 {
		t.Errorf("throttle of 900m over a 400m tier limit: quota %dm, want 400m", got)
	}
}

// TestRealBandCapHoldsTwoBurnersToBatchAllocatable: two Batch pods with
// batch-cpu 600 each, on a node whose Batch allocatable shrank to 600m:
// each is capped at 600 × 600 ÷ 1200 = 300m, and their two full burners
// together use 0.6 cores ± 10 %.
func TestRealBandCapHoldsTwoBurnersToBatchAllocatable(t *testing.T) {
	node := resctltest.NewRealNode(t, "waterline-test-tier")
	var pods []*corev1.Pod
	var rps []*resctltest.RealPod
	for _, name := range []string{"batch-a", "batch-b"} {
		p := resctltest.MakePod(name).Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "600").Obj()
		pods = append(pods, p)
		rps = append(rps, node.AddPod(p))
	}
	snap := &agent.Snapshot{Node: nodeWithBatch("600"), Pods: pods}
	_, cycle := realModules(t, node, snap)
	cycle()
	for _, rp := range rps {
		if got := node.Quota(rp.Cgroup); got != 300 {
			t.Errorf("pod %s quota %dm, want 300m", rp.Pod.Name, got)
		}
		resctltest.StartBurner(t, node, rp.Containers["main"], 1000)
	}
	got := usage(node, 3*time.Second, node.Top, rps[0].Cgroup, rps[1].Cgroup)
	t.Logf("Two burners under a 600m Batch allocatable used %.3f cores (%.3f + %.3f)", got[0], got[1], got[2])
	if math.Abs(got[0]-0.6) > 0.06 {
		t.Errorf("the Batch band used %.3f cores, want 0.600 ± 0.060", got[0])
	}
	// The allocatable grows back: each pod gets its own 600m limit again.
	snap.Node = nodeWithBatch("5000")
	cycle()
	for _, rp := range rps {
		if got := node.Quota(rp.Cgroup); got != 600 {
			t.Errorf("after the allocatable grew: pod %s quota %dm, want its tier limit 600m", rp.Pod.Name, got)
		}
	}
}
