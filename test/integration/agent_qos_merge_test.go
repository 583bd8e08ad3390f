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

package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestAgentRefusesInvertedMerge runs the real agent for a kwok node using
// 14 GiB of 16 (fixture cgroups). Two NodeQOS, each valid alone and
// admitted by the API server, merge into a memory forbid-scheduling line
// (90 %) above the memory evict line (75 %): out of order. The agent must
// not act on that set -- no pod is evicted although memory is 2 GiB over
// the evict line -- and says so with a RefusedNodeQOSMerge event on the
// node. Once the forbid object is deleted the merge is in order and the
// agent evicts as the evict line asks.
func TestAgentRefusesInvertedMerge(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "qos-merge", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "qos-merge"
	c.CreateNamespace(t, ns, nil)

	dir := t.TempDir()
	layout, tree := fixtureCgroups(t, dir)
	procDir := filepath.Join(dir, "proc")
	if err := cgroupstest.Proc(procDir, 1000, 100000, 16*gib, 2*gib); err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range []struct {
		name, class string
		gib         float64
	}{{"prod", "qos-prod", 6}, {"a", "qos-batch", 3}, {"b", "qos-batch", 2.5}, {"c", "qos-batch", 1}} {
		pods[p.name] = qosPod(t, c, ns, p.name, node, p.class, nil, corev1.ResourceRequirements{})
		cg := layout.PodCgroup(pods[p.name].UID, pods[p.name].Status.QOSClass)
		if err := tree.Cgroup(cg, cgroupstest.Usage{MemoryUsage: uint64(p.gib * gib)}); err != nil {
			t.Fatal(err)
		}
	}
	nqs := c.Waterline.WaterlineV1alpha1().NodeQOSs()
	for _, nq := range []*v1alpha1.NodeQOS{
		{ObjectMeta: metav1.ObjectMeta{Name: "mem-evict"}, Spec: v1alpha1.NodeQOSSpec{
			Memory:   &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](75)},
			Eviction: &v1alpha1.EvictionPolicy{GracePeriodSeconds: ptr.To[int64](1), MaxPerMinute: ptr.To[int32](1)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mem-forbid"}, Spec: v1alpha1.NodeQOSSpec{
			Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](90)}}},
	} {
		if _, err := nqs.Create(ctx, nq, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the API server refused %s, valid alone: %v", nq.Name, err)
		}
	}
	c.StartAgent(t, testutil.AgentOptions{
		NodeName: node, CgroupRoot: layout.Root(), CgroupVersion: "v1", CgroupDriver: "cgroupfs", ProcRoot: procDir,
	})

	gone := func(name string) bool {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		return p.DeletionTimestamp != nil || p.UID != pods[name].UID
	}
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		got := qosEventReasons(t, c, metav1.NamespaceDefault, "Node", node)
		return slices.Contains(got, "RefusedNodeQOSMerge"), fmt.Errorf("events of node %s: %v, want RefusedNodeQOSMerge", node, got)
	}, "waiting for the agent to refuse the merge")
	// Several cycles on the refused set: nobody may be evicted.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"prod", "a", "b", "c"} {
		if gone(name) {
			t.Errorf("pod %s was evicted on a refused, out-of-order merge", name)
		}
	}
	if n := slices.Index(qosEventReasons(t, c, metav1.NamespaceDefault, "Node", node), "EvictedPod"); n >= 0 {
		t.Error("the agent evicted on a refused merge")
	}

	// Fixed: the evict line alone applies, and a (3 GiB) closes the 2 GiB
	// gap: lowest priority (all equal), then the biggest user.
	if err := nqs.Delete(ctx, "mem-forbid", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		return gone("a"), fmt.Errorf("a still running")
	}, "waiting for the agent to act once the merge is in order")
	for _, name := range []string{"prod", "b", "c"} {
		if gone(name) {
			t.Errorf("pod %s was evicted; only a should be", name)
		}
	}
}
