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
	"os"
	"path/filepath"
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

// TestAgentCustomMetricEvicts runs the real agent binary with a
// --custom-metrics file defining memory_charged_mib (the pods'
// memory.usage_in_bytes as a gauge, in MiB; evictable, evict-quantified,
// sortable) against fixture cgroups, and a NodeQOS Evict rule on that
// metric. The pods charge a 500, b 3000, c 2000 and Prod 4000 MiB: 9500
// against a 7000 line, a gap of 2500 that b alone closes. The agent evicts
// b through the Eviction API -- the biggest user of the metric, not the
// first by name -- and nobody else.
func TestAgentCustomMetricEvicts(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "qos-custom", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "qos-custom"
	c.CreateNamespace(t, ns, nil)

	dir := t.TempDir()
	layout, tree := fixtureCgroups(t, dir)
	// The kubepods cgroup has every file its pods have: the agent checks
	// the configured file there at start.
	if err := tree.Cgroup(layout.KubepodsCgroup(), cgroupstest.Usage{MemoryUsage: 10 * gib}); err != nil {
		t.Fatal(err)
	}
	procDir := filepath.Join(dir, "proc")
	if err := cgroupstest.Proc(procDir, 1000, 100000, 16*gib, 12*gib); err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range []struct {
		name, class string
		mib         uint64
	}{{"prod", "qos-prod", 4000}, {"a", "qos-batch", 500}, {"b", "qos-batch", 3000}, {"c", "qos-batch", 2000}} {
		pods[p.name] = qosPod(t, c, ns, p.name, node, p.class, nil, corev1.ResourceRequirements{})
		cg := layout.PodCgroup(pods[p.name].UID, pods[p.name].Status.QOSClass)
		if err := tree.Cgroup(cg, cgroupstest.Usage{MemoryUsage: p.mib << 20}); err != nil {
			t.Fatal(err)
		}
	}
	metricsFile := filepath.Join(dir, "custom-metrics.yaml")
	if err := os.WriteFile(metricsFile, []byte(`metrics:
- name: memory_charged_mib
  controller: memory
  file: memory.usage_in_bytes
  type: gauge
  divisor: 1048576
  actionPriority: 3
  sortable: true
  evictable: true
  evictQuantified: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(ctx, &v1alpha1.NodeQOS{
		ObjectMeta: metav1.ObjectMeta{Name: "custom"},
		Spec: v1alpha1.NodeQOSSpec{
			Rules: []v1alpha1.WaterlineRule{{Name: "charged", Metric: "memory_charged_mib", Threshold: resource.MustParse("7000"),
				Action: v1alpha1.ActionEvict, AvoidanceCount: ptr.To[int32](1)}},
			Eviction: &v1alpha1.EvictionPolicy{GracePeriodSeconds: ptr.To[int64](1)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.StartAgent(t, testutil.AgentOptions{
		NodeName: node, CgroupRoot: layout.Root(), CgroupVersion: "v1", CgroupDriver: "cgroupfs", ProcRoot: procDir,
		Args: []string{"--custom-metrics", metricsFile},
	})
	gone := func(name string) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil || p.UID != pods[name].UID, nil
	}
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		return gone("b")
	}, "waiting for the agent to evict b, the biggest user of memory_charged_mib")
	// A few more cycles: the pod leaving counts as released, nobody else
	// may go.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"prod", "a", "c"} {
		if g, err := gone(name); err != nil || g {
			t.Errorf("pod %s was evicted (or is gone: %v); only b should be", name, err)
		}
	}
}
