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
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

const gib = 1 << 30

// qosPriorityClasses creates the Prod and Batch classes the QoS tests'
// pods use (the Priority admission plugin sets spec.priority from them).
// fixtureCgroups makes a cgroup v1 cgroupfs tree under dir/cgroup for an
// agent to read: fixture files the test writes, not the kernel's.
func fixtureCgroups(t *testing.T, dir string) (*cgroups.Layout, cgroupstest.Tree) {
	t.Helper()
	layout, err := cgroups.NewLayout(filepath.Join(dir, "cgroup"), cgroups.V1, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	tree := cgroupstest.Tree{Layout: layout}
	if err := tree.Init(); err != nil {
		t.Fatal(err)
	}
	return layout, tree
}

func qosPriorityClasses(t *testing.T, c *testutil.Cluster) {
	t.Helper()
	for name, v := range map[string]int32{"qos-prod": 9500, "qos-batch": 5500} {
		_, err := c.Kube.SchedulingV1().PriorityClasses().Create(t.Context(), &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// qosPod creates a pod bound to node and waits until kwok runs it.
func qosPod(t *testing.T, c *testutil.Cluster, ns, name, node, class string, labels map[string]string, res corev1.ResourceRequirements) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, PriorityClassName: class,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: res}}},
	}
	if _, err := c.Kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating pod %s: %v", name, err)
	}
	return c.WaitPodRunning(t, ns, name, time.Minute)
}

// qosEventReasons lists the reasons of the agent's events about one
// object (kwok records its own, "Created" and the like).
func qosEventReasons(t *testing.T, c *testutil.Cluster, ns, kind, name string) []string {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.String()
	list, err := c.Kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Source.Component == "waterline-agent" {
			out = append(out, e.Reason)
		}
	}
	return out
}

// TestAgentQoSEvictsThroughEvictionAPI runs the real agent for a kwok node
// whose pods' memory comes from a fixture cgroup tree: the node uses 14 GiB
// of 16, 2 GiB over a 75 % memory evict line. The largest Batch pod (a,
// 3 GiB) has a PodDisruptionBudget that allows no disruption; the API
// server refuses its eviction (429 with a DisruptionBudget cause). Memory
// relief does not wait on PDBs (kubelet's eviction does not, and the OOM
// killer is next): the agent deletes a with the NodeQOS grace period and
// says so in an Event on a and on the node. a alone closes the gap: the
// Prod pod (6 GiB), b and c are untouched. (The fixture's usage does not
// drop when a goes: a memory budget of one eviction a minute keeps the
// test to the first one.)
func TestAgentQoSEvictsThroughEvictionAPI(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "qos-evict", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "qos-evict"
	c.CreateNamespace(t, ns, nil)

	// Fixture cgroups and /proc: the agent reads memory from them.
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
		pods[p.name] = qosPod(t, c, ns, p.name, node, p.class, map[string]string{"app": p.name}, corev1.ResourceRequirements{})
		cg := layout.PodCgroup(pods[p.name].UID, pods[p.name].Status.QOSClass)
		if err := tree.Cgroup(cg, cgroupstest.Usage{MemoryUsage: uint64(p.gib * gib)}); err != nil {
			t.Fatal(err)
		}
	}

	// A PDB that allows a no disruption. Nothing runs the disruption
	// controller here, so the test writes the status it would.
	pdbs := c.Kube.PolicyV1().PodDisruptionBudgets(ns)
	pdb, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-a"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The NodeQOS budget (CPU evictions) is one a minute; memory relief
	// spends its own (--memory-evictions-per-minute below).
	if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(ctx, &v1alpha1.NodeQOS{
		ObjectMeta: metav1.ObjectMeta{Name: "memory"},
		Spec: v1alpha1.NodeQOSSpec{
			Memory:   &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](75)},
			Eviction: &v1alpha1.EvictionPolicy{GracePeriodSeconds: ptr.To[int64](1), MaxPerMinute: ptr.To[int32](1)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	agent := c.StartAgent(t, testutil.AgentOptions{
		NodeName: node, CgroupRoot: layout.Root(), CgroupVersion: "v1", CgroupDriver: "cgroupfs", ProcRoot: procDir,
		Args: []string{"--memory-evictions-per-minute", "1"},
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
		return gone("a")
	}, "waiting for the agent to delete a past its PodDisruptionBudget")
	// A few more cycles: nothing else may go.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"prod", "b", "c"} {
		if g, err := gone(name); err != nil || g {
			t.Errorf("pod %s was evicted (or is gone: %v); only a should be", name, err)
		}
	}

	want := map[string]string{"a": "EvictedPastDisruptionBudget"}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		for name, reason := range want {
			if got := qosEventReasons(t, c, ns, "Pod", name); !slices.Contains(got, reason) {
				return false, fmt.Errorf("events of pod %s: %v, want %s", name, got, reason)
			}
		}
		if got := qosEventReasons(t, c, metav1.NamespaceDefault, "Node", node); !slices.Contains(got, "EvictedPod") {
			return false, fmt.Errorf("events of node %s: %v, want EvictedPod", node, got)
		}
		return true, nil
	}, "waiting for the eviction events")
	for _, name := range []string{"prod", "b", "c"} {
		if got := qosEventReasons(t, c, ns, "Pod", name); len(got) > 0 {
			t.Errorf("the agent's events on pod %s: %v, want none", name, got)
		}
	}

	page := agent.Metrics(t)
	for result, want := range map[string]float64{"deleted_past_pdb": 1} {
		if got, ok := testutil.MetricValue(page, `waterline_agent_qos_evictions_total{result="`+result+`"`); !ok || got < want {
			t.Errorf("waterline_agent_qos_evictions_total{result=%q} = %v (found %v), want at least %v", result, got, ok, want)
		}
	}
}

// TestAgentQoSCrashWhileThrottled runs the real agent binary for a kwok
// node whose pods have real cgroups under a private subtree of
// /sys/fs/cgroup (the subtree is the node: a fake /proc/stat counts its
// CPU). Three Batch pods with batch-cpu 300 -- held to 300m by the agent's
// tier enforcement -- and a Prod pod with a 200m limit run full burners;
// the throttle line is put about 260m under their use. Once the agent
// throttles, it is killed with SIGKILL (no cleanup), two Batch burners
// stop, and a new agent starts: after two cycles no pod is throttled, each
// Batch pod is back at its 300m tier limit, and the NodeMetric's Throttling
// condition turns False.
func TestAgentQoSCrashWhileThrottled(t *testing.T) {
	// First, so a machine without writable cgroups skips before starting
	// a control plane.
	rn := resctltest.NewRealNode(t, "waterline-test-qos")
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "qos-crash", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "qos-crash"
	c.CreateNamespace(t, ns, nil)

	batch := []string{"batch-a", "batch-b", "batch-c"}
	pods := map[string]*resctltest.RealPod{}
	for _, name := range batch {
		q := resource.MustParse("300")
		p := qosPod(t, c, ns, name, node, "qos-batch", nil, corev1.ResourceRequirements{
			Requests: corev1.ResourceList{extension.ResourceBatchCPU: q}, Limits: corev1.ResourceList{extension.ResourceBatchCPU: q}})
		pods[name] = rn.AddPod(p)
	}
	prod := qosPod(t, c, ns, "prod", node, "qos-prod", nil, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}})
	pods["prod"] = rn.AddPod(prod)

	proc := resctltest.NewFakeProc(t, rn)
	procCtx, stopProc := context.WithCancel(ctx)
	defer stopProc()
	go proc.Run(procCtx, 100*time.Millisecond)
	opts := testutil.AgentOptions{
		NodeName: node, CgroupRoot: resctltest.RealRoot, KubeletCgroupRoot: "/" + rn.Top,
		CgroupVersion: string(rn.Layout.Version()), CgroupDriver: "cgroupfs", ProcRoot: proc.Dir,
	}
	agent := c.StartAgent(t, opts)

	// The tier limits first, then the burners: BestEffort to kubelet,
	// they would otherwise spin unbounded.
	quota := func(name string) int64 { return rn.Quota(pods[name].Cgroup) }
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		for _, name := range batch {
			if q := quota(name); q != 300 {
				return false, fmt.Errorf("%s quota %dm", name, q)
			}
		}
		return true, nil
	}, "waiting for the agent to hold the Batch pods to their 300m tier limit")
	burners := map[string]*testutil.Workload{}
	for name, p := range pods {
		w := testutil.StartWorkload(t, "-burn", "1")
		rn.AddProcess(p.Containers["main"], w.Cmd.Process.Pid)
		w.Go(t)
		burners[name] = w
	}
	use := burnersUse(t, rn, 600) // about 1100m on an idle machine
	percent := int32((use - 260) / 20)
	t.Logf("Burners use %dm of the 2000m node; throttle line at %d %% = %dm", use, percent, percent*20)
	if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(ctx, &v1alpha1.NodeQOS{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec: v1alpha1.NodeQOSSpec{
			CPU:            &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To(percent), RestorePercent: ptr.To(percent - 5)},
			AvoidanceCount: ptr.To[int32](1), RestoreCount: ptr.To[int32](2),
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	throttled := func() []string {
		var out []string
		for _, name := range batch {
			if q := quota(name); q < 300 {
				out = append(out, fmt.Sprintf("%s=%dm", name, q))
			}
		}
		return out
	}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		return len(throttled()) > 0, fmt.Errorf("quotas %v", throttled())
	}, "waiting for the agent to throttle")
	throttling := func(want metav1.ConditionStatus) func() (bool, error) {
		return func() (bool, error) {
			nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.ConditionThrottling)
			if cond == nil || cond.Status != want {
				return false, fmt.Errorf("Throttling condition %+v", cond)
			}
			return true, nil
		}
	}
	testutil.Eventually(t, 30*time.Second, 250*time.Millisecond, throttling(metav1.ConditionTrue),
		"waiting for the NodeMetric to report Throttling=True (an early report)")
	if q := quota("prod"); q != 200 {
		t.Errorf("the Prod pod's quota is %dm, want kubelet's 200m", q)
	}

	agent.Kill()
	left := throttled()
	t.Logf("Killed the agent with pods throttled: %v", left)
	if len(left) == 0 {
		t.Fatal("no pod throttled right after the kill: the test proves nothing")
	}
	burners["batch-a"].Kill()
	burners["batch-b"].Kill()

	c.StartAgent(t, opts) // ready after its first cycle
	time.Sleep(1100 * time.Millisecond)
	for _, name := range batch {
		if q := quota(name); q != 300 {
			t.Errorf("two cycles after the restart %s is at %dm, want its 300m tier limit", name, q)
		}
	}
	testutil.Eventually(t, 30*time.Second, 250*time.Millisecond, throttling(metav1.ConditionFalse),
		"waiting for the NodeMetric to report Throttling=False")
	// The load stays under the line: nothing is throttled again.
	time.Sleep(3 * time.Second)
	if got := throttled(); len(got) > 0 {
		t.Errorf("throttled again under the line: %v", got)
	}
}
