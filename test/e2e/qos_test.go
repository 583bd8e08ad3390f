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

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// nodeQOS creates a NodeQOS for the test and deletes it when it ends.
func (s *system) nodeQOS(t *testing.T, name string, spec v1alpha1.NodeQOSSpec) {
	t.Helper()
	nqs := s.c.Waterline.WaterlineV1alpha1().NodeQOSs()
	if _, err := nqs.Create(t.Context(), &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// t.Context() is canceled before cleanups run: delete with a live one,
	// or the NodeQOS outlives the test and its lines act on the next.
	t.Cleanup(func() {
		if err := nqs.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("Deleting NodeQOS %s: %v", name, err)
		}
	})
}

// podQuota is the CFS quota of the pod's kubelet-made cgroup in
// millicores (-1 for none), read through the agent's cgroup layout (v1
// cpu.cfs_quota_us or v2 cpu.max).
func (s *system) podQuota(t *testing.T, pod *corev1.Pod) int64 {
	t.Helper()
	q, err := s.node.PodCPUQuotaMilli(pod)
	if err != nil {
		t.Fatalf("Reading the quota of pod %s: %v", pod.Name, err)
	}
	return q
}

// throttled returns the names of the pods whose pod cgroup has a quota
// other than their limit's (millicores, -1 when they have no limit).
func (s *system) throttled(t *testing.T, pods map[string]*corev1.Pod, limits map[string]int64) []string {
	t.Helper()
	var out []string
	for name, p := range pods {
		if q := s.podQuota(t, p); q != limits[name] {
			out = append(out, fmt.Sprintf("%s(quota %d)", name, q))
		}
	}
	slices.Sort(out)
	return out
}

// agentEventList is the agent's events in ns: on pod, or on anything
// when pod is empty.
func (s *system) agentEventList(t *testing.T, ns, pod string) []corev1.Event {
	t.Helper()
	var opts metav1.ListOptions
	if pod != "" {
		opts.FieldSelector = fields.Set{"involvedObject.name": pod}.String()
	}
	evs, err := s.c.Kube.CoreV1().Events(ns).List(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range evs.Items {
		if e.Source.Component == agentName || e.ReportingController == agentName {
			out = append(out, e)
		}
	}
	return out
}

// agentEvents are the reasons of the agent's events on a pod.
func (s *system) agentEvents(t *testing.T, ns, pod string) []string {
	t.Helper()
	var out []string
	for _, e := range s.agentEventList(t, ns, pod) {
		out = append(out, e.Reason)
	}
	return out
}

// nodeCPUFraction is the node's reported CPU usage over its capacity.
func (s *system) nodeCPUFraction(t *testing.T) float64 {
	nm := s.waitNodeMetric(t, time.Now())
	return nm.Status.NodeMetric.NodeUsage.Cpu().AsApproximateFloat64() / s.allocatableCPU(t)
}

// testAgentDeletedMidThrottle: a Prod pod burning a core and three Batch
// burners held to 300m each by their limits put the node over a 70 %
// throttle line. The agent lowers the CFS quota of Batch pods'
// kubelet-made cgroups, never the Prod pod's. The agent's pod is then
// deleted while it throttles: the DaemonSet recreates it, and once the
// Prod load is gone and the node is under the line, the new agent has
// restored every quota the old one lowered. The agent sees the node's pods
// only, weighted over the machine's other work (ownTheNode): the Prod pod
// then takes the node over the line and its deletion takes it under the
// restore line whatever else the machine runs.
func (s *system) testAgentDeletedMidThrottle(t *testing.T) {
	s.ownTheNode(t)
	name := "agent-restart"
	ns := s.namespace(t, name)
	s.nodeQOS(t, name, v1alpha1.NodeQOSSpec{
		CPU:            &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70), RestorePercent: ptr.To[int32](60)},
		AvoidanceCount: ptr.To[int32](2), RestoreCount: ptr.To[int32](2),
	})
	s.createPod(t, ns, podSpec{name: "prod", class: "waterline-prod", burners: 1, cpuRequest: "500m"})
	batch := []string{"batch-1", "batch-2", "batch-3"}
	for _, b := range batch {
		s.createPod(t, ns, podSpec{name: b, class: "waterline-batch", burners: 1, cpuRequest: "100m", cpuLimit: "300m"})
	}
	pods := s.waitRunning(t, ns, append([]string{"prod"}, batch...)...)
	batchPods, limits := map[string]*corev1.Pod{}, map[string]int64{}
	for _, b := range batch {
		batchPods[b], limits[b] = pods[b], 300
	}
	var got []string
	testutil.Eventually(t, 90*time.Second, time.Second, func() (bool, error) {
		got = s.throttled(t, batchPods, limits)
		return len(got) > 0, fmt.Errorf("no Batch pod throttled; node at %.0f %%", 100*s.nodeCPUFraction(t))
	}, "waiting for the agent to throttle a Batch pod in its kubelet-made cgroup")
	t.Logf("Throttled: %v (node at %.0f %% of CPU)", got, 100*s.nodeCPUFraction(t))
	if q := s.podQuota(t, pods["prod"]); q != -1 {
		t.Errorf("the Prod pod's cgroup quota is %d, want -1 (untouched)", q)
	}

	old := s.agentPod(t)
	if err := s.c.Kube.CoreV1().Pods(agentNamespace).Delete(t.Context(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := s.waitAgentReady(t, string(old.UID))
	t.Logf("The DaemonSet recreated the agent: %s replaced %s", fresh.Name, old.Name)

	// The pressure goes.
	if err := s.c.Kube.CoreV1().Pods(ns).Delete(t.Context(), "prod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := func(timeout time.Duration) bool {
		deadline := time.Now().Add(timeout)
		for {
			got = s.throttled(t, batchPods, limits)
			if len(got) == 0 {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(time.Second)
		}
	}
	if !restored(90 * time.Second) {
		// The NodeMetric's usage is an average over its window; the
		// agent restores on consecutive one-second samples under the
		// line. On a machine busy with other work the samples straddle
		// the line while the average sits just under it, so only a
		// node clearly under the line (10 points) convicts the agent.
		f := s.nodeCPUFraction(t)
		if f <= 0.5 {
			t.Fatalf("the node is at %.0f %%, well under the 60 %% restore line, but Batch pods stay throttled: %v", 100*f, got)
		}
		// Other work on this machine keeps the node over the line:
		// take the line away instead. No pod may stay throttled.
		t.Logf("Without the Prod load the node still uses %.0f %% of its CPU (other work on this machine), at or near the 60 %% restore line; deleting the NodeQOS instead", 100*f)
		if err := s.c.Waterline.WaterlineV1alpha1().NodeQOSs().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if !restored(30 * time.Second) {
			t.Fatalf("the NodeQOS is gone but Batch pods stay throttled: %v", got)
		}
	}
	t.Logf("All Batch quotas restored")
}

// testMemoryEviction: a Batch pod holding about 1 GiB takes node memory
// over an evict line set just above the node's usage before it; the agent
// evicts it through the Eviction API and kubelet stops it. The Prod pod
// and the agent's DaemonSet pod stay.
func (s *system) testMemoryEviction(t *testing.T) {
	ns := s.namespace(t, "memory")
	s.createPod(t, ns, podSpec{name: "prod", class: "waterline-prod", cpuRequest: "50m", memRequest: "16Mi"})
	s.waitRunning(t, ns, "prod")
	agentBefore := s.agentPod(t)

	node, err := s.c.Kube.CoreV1().Nodes().Get(t.Context(), s.node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := node.Status.Capacity.Memory().AsApproximateFloat64()
	used := s.waitNodeMetric(t, time.Now()).Status.NodeMetric.NodeUsage.Memory().AsApproximateFloat64()
	const hog = 1 << 30
	line := int32(math.Ceil(100 * (used + hog/3) / capacity))
	if 100*(used+hog)/capacity < float64(line)+1 {
		t.Skipf("SKIP: 1 GiB is too small a share of this node's %.0f GiB to cross a line reliably", capacity/(1<<30))
	}
	t.Logf("Node memory %.2f of %.2f GiB; evict line %d %%", used/(1<<30), capacity/(1<<30), line)
	s.nodeQOS(t, "memory", v1alpha1.NodeQOSSpec{
		Memory:   &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To(line)},
		Eviction: &v1alpha1.EvictionPolicy{GracePeriodSeconds: ptr.To[int64](1)},
	})
	// tail holds the one endless "line" it reads from memory.
	s.createPod(t, ns, podSpec{name: "hog", class: "waterline-batch", cpuRequest: "50m",
		script: "trap 'exit 0' TERM; (head -c 1024m /dev/zero; sleep 100000) | tail"})
	hog1 := s.waitRunning(t, ns, "hog")["hog"]
	testutil.Eventually(t, 2*time.Minute, time.Second, func() (bool, error) {
		p, err := s.c.Kube.CoreV1().Pods(ns).Get(t.Context(), "hog", metav1.GetOptions{})
		if isNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return p.UID != hog1.UID, fmt.Errorf("hog still there (phase %s, deleting %v)", p.Status.Phase, p.DeletionTimestamp != nil)
	}, "waiting for the agent to evict the Batch pod and kubelet to stop it")
	if got := s.agentEvents(t, ns, "hog"); !slices.Contains(got, "Evicted") {
		t.Errorf("the agent's events on hog: %v, want Evicted", got)
	}
	p, err := s.c.Kube.CoreV1().Pods(ns).Get(t.Context(), "prod", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the Prod pod was touched: %v", err)
	}
	if a := s.agentPod(t); a == nil || a.UID != agentBefore.UID {
		t.Errorf("the agent's DaemonSet pod was replaced or removed")
	}
}

// checkQuotasSurviveKubelet: a new pod makes kubelet update its QoS
// cgroups (kubepods/burstable and besteffort shares) and create a pod
// cgroup; for 15 s after, sampled every 100 ms, no pod the agent throttled
// is seen back at its unthrottled quota while the node stays over the
// line (a fraction of the node's CPU).
func (s *system) checkQuotasSurviveKubelet(t *testing.T, ns string, pods map[string]*corev1.Pod, limits map[string]int64, line float64) {
	t.Helper()
	throttledNow := map[string]bool{}
	for name, p := range pods {
		if s.podQuota(t, p) != limits[name] {
			throttledNow[name] = true
		}
	}
	s.createPod(t, ns, podSpec{name: "besteffort", class: "waterline-batch", burners: 0})
	s.waitRunning(t, ns, "besteffort")
	reverted := map[string]int{}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for name := range throttledNow {
			if s.podQuota(t, pods[name]) == limits[name] {
				reverted[name]++
			}
		}
	}
	if f := s.nodeCPUFraction(t); len(reverted) > 0 && f > line {
		t.Errorf("after kubelet updated its QoS cgroups, throttled pods were seen at their unthrottled quota while the node is at %.0f %%: %v (samples)", 100*f, reverted)
	}
	be, err := s.node.QoSCgroup(corev1.PodQOSBestEffort)
	if err != nil {
		t.Fatal(err)
	}
	shares, err := s.node.CgroupCPUShares(be)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubepods/besteffort cpu.shares %d; throttled pods kept their quotas through kubelet's QoS update", shares)
}
