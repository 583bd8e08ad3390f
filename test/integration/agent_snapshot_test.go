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
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestAgentDoesNotEvictFromAStaleNodeSnapshot: an agent saw a NodeQOS
// with a 95 % memory evict line and stopped, leaving its node snapshot.
// While it was down the NodeQOS was switched to dry run and the node's
// memory rose over the line. A new agent with the same state directory,
// the API server reachable, starts from the snapshot until its informers
// sync: it must not evict on the snapshot's out-of-date NodeQOS (an
// eviction cannot be undone, and it needs the API server anyway), and once
// synced the dry run holds: no pod is evicted.
func TestAgentDoesNotEvictFromAStaleNodeSnapshot(t *testing.T) {
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "stale-snapshot", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "stale-snapshot"
	c.CreateNamespace(t, ns, nil)
	dir := t.TempDir()
	layout, tree := fixtureCgroups(t, dir)
	procDir := filepath.Join(dir, "proc")
	if err := cgroupstest.Proc(procDir, 1000, 100000, 16*gib, 8*gib); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name, class string
		gib         float64
	}{{"prod", "qos-prod", 6}, {"a", "qos-batch", 3}, {"b", "qos-batch", 2.5}} {
		pod := qosPod(t, c, ns, p.name, node, p.class, nil, corev1.ResourceRequirements{})
		if err := tree.Cgroup(layout.PodCgroup(pod.UID, pod.Status.QOSClass), cgroupstest.Usage{MemoryUsage: uint64(p.gib * gib)}); err != nil {
			t.Fatal(err)
		}
	}
	nq, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(ctx, &v1alpha1.NodeQOS{
		ObjectMeta: metav1.ObjectMeta{Name: "memory"},
		Spec:       v1alpha1.NodeQOSSpec{Memory: &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](95)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := testutil.AgentOptions{NodeName: node, CgroupRoot: layout.Root(), CgroupVersion: "v1", CgroupDriver: "cgroupfs", ProcRoot: procDir, StateDir: t.TempDir()}
	first := c.StartAgent(t, opts)
	time.Sleep(2 * time.Second) // the NodeQOS is in the informer, and so in the snapshot saved on stop
	first.Stop()

	// While the agent is down: dry run, and memory over the line (15.5 GiB
	// of 16, the line at 15.2).
	nq, err = c.Waterline.WaterlineV1alpha1().NodeQOSs().Get(ctx, nq.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nq.Spec.DryRun = true
	if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Update(ctx, nq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cgroupstest.Proc(procDir, 1000, 100000, 16*gib, gib/2); err != nil {
		t.Fatal(err)
	}

	second := c.StartAgent(t, opts)
	time.Sleep(5 * time.Second)
	for _, name := range []string{"a", "b"} {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s: %v; want it left alone", name, err)
			continue
		}
		if p.DeletionTimestamp != nil {
			t.Errorf("pod %s was evicted by the restarted agent: its NodeQOS is in dry run", name)
		}
	}
	page := second.Metrics(t)
	if v, _ := testutil.MetricValue(page, `waterline_agent_qos_evictions_total{result="evicted"`); v != 0 {
		t.Errorf("evictions by the restarted agent = %v, want 0", v)
	}
	if v, ok := testutil.MetricValue(page, `waterline_agent_qos_evictions_total{result="dry_run"`); !ok || v < 1 {
		t.Errorf("dry-run evictions = %v (found %v), want at least 1: the line is crossed and the current NodeQOS says dry run", v, ok)
	}
}
