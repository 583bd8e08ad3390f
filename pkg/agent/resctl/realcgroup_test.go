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
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// measure returns the cores a cgroup used over d.
func measure(node *resctltest.RealNode, cg string, d time.Duration) float64 {
	a := node.CPUNanos(cg)
	start := time.Now()
	time.Sleep(d)
	return float64(node.CPUNanos(cg)-a) / float64(time.Since(start).Nanoseconds())
}

// TestRealThrottleBelowContainerLimit runs a burner in a Burstable Batch
// pod whose container has the runtime's 300m quota, and throttles the pod to
// 100m through the kernel: on cgroup v1 the kernel refuses a pod quota below
// a child's, so this passes only if the container is lowered first. The
// burner is then held to 100m (± 10 %), and releasing gives both cgroups
// their 300m back.
func TestRealThrottleBelowContainerLimit(t *testing.T) {
	node := resctltest.NewRealNode(t, "waterline-test-resctl")
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj()
	rp := node.AddPod(pod)
	resctltest.StartBurner(t, node, rp.Containers["main"], 1000)
	r, err := resctl.New(node.Layout, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cycle := func() {
		t.Helper()
		if err := r.Cycle(t.Context(), &agent.Snapshot{Pods: []*corev1.Pod{pod}}); err != nil {
			t.Fatalf("Cycle: %v", err)
		}
	}

	if got := measure(node, rp.Cgroup, 2*time.Second); math.Abs(got-0.3) > 0.03 {
		t.Errorf("burner under kubelet's 300m quota used %.3f cores, want 0.300 ± 0.030", got)
	}
	r.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 100, BelowOwnLimits: true}})
	cycle()
	if p, c := node.Quota(rp.Cgroup), node.Quota(rp.Containers["main"]); p != 100 || (node.Layout.Version() == cgroups.V1 && c != 100) {
		t.Fatalf("throttled: pod quota %s, container %s; want 100m (container too on v1)", q(p), q(c))
	}
	got := measure(node, rp.Cgroup, 3*time.Second)
	t.Logf("Burner throttled to 100m used %.3f cores", got)
	if math.Abs(got-0.1) > 0.01 {
		t.Errorf("throttled burner used %.3f cores, want 0.100 ± 0.010", got)
	}

	r.SetIntents("qos", nil)
	cycle()
	if p, c := node.Quota(rp.Cgroup), node.Quota(rp.Containers["main"]); p != 300 || c != 300 {
		t.Errorf("released: pod quota %s, container %s; want kubelet's 300m for both", q(p), q(c))
	}
}

// TestRealRestartHeals: a pod left throttled (pod and container at 50m) by
// a reconciler that is then dropped without cleanup, as a kill -9 would; a
// new reconciler with no intent gives both kubelet's 300m back in its first
// cycle.
func TestRealRestartHeals(t *testing.T) {
	node := resctltest.NewRealNode(t, "waterline-test-resctl")
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj()
	rp := node.AddPod(pod)
	snap := &agent.Snapshot{Pods: []*corev1.Pod{pod}}
	old, err := resctl.New(node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	old.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 50, BelowOwnLimits: true}})
	if err := old.Cycle(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	if p := node.Quota(rp.Cgroup); p != 50 {
		t.Fatalf("throttled quota %s, want 50m", q(p))
	}
	fresh, err := resctl.New(node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Cycle(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	if p, c := node.Quota(rp.Cgroup), node.Quota(rp.Containers["main"]); p != 300 || c != 300 {
		t.Errorf("after a restart and one cycle: pod quota %s, container %s; want 300m for both", q(p), q(c))
	}
}

// TestRealMemoryLimitPageRounding: the kernel rounds a memory limit down to
// a page; the reconciler compares as the kernel stores, so an unaligned
// intent is written once, not every cycle.
func TestRealMemoryLimitPageRounding(t *testing.T) {
	node := resctltest.NewRealNode(t, "waterline-test-resctl")
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).Tier(extension.ResourceBatchMemory, "256Mi").Obj()
	rp := node.AddPod(pod)
	reg := prometheus.NewRegistry()
	r, err := resctl.New(node.Layout, reg)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 256<<20 + 1000 // not a multiple of a page
	r.SetIntents("tier", map[types.UID]resctl.Intent{pod.UID: {MemoryLimitBytes: limit}})
	for range 3 {
		if err := r.Cycle(t.Context(), &agent.Snapshot{Pods: []*corev1.Pod{pod}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := node.Layout.ReadMemoryLimit(rp.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	if got != 256<<20 {
		t.Errorf("memory limit read back %d, want %d (rounded down to a page)", got, 256<<20)
	}
	f := &fixture{t: t, reg: reg}
	if w := f.writes("memory_limit", "ok"); w != 1 {
		t.Errorf("memory limit writes over 3 cycles = %v, want 1", w)
	}
}
