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
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	"github.com/waterline-dev/waterline/test/bench/benchutil"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// tierNode is a kwok node whose Batch pod asks batch-cpu 300 and has a
// real cgroup under a private subtree of /sys/fs/cgroup: the agent's tier
// enforcement holds it to 300m at once (BestEffort to kubelet: unlimited).
type tierNode struct {
	c    *testutil.Cluster
	rn   *resctltest.RealNode
	node string
	pod  *resctltest.RealPod
	opts testutil.AgentOptions
}

func newTierNode(t *testing.T, prefix string) *tierNode {
	t.Helper()
	rn := resctltest.NewRealNode(t, "waterline-test-"+prefix)
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	node := c.CreateNodes(t, prefix, 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	c.CreateNamespace(t, prefix, nil)
	q := resource.MustParse("300")
	p := qosPod(t, c, prefix, "batch", node, "qos-batch", nil, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{extension.ResourceBatchCPU: q}, Limits: corev1.ResourceList{extension.ResourceBatchCPU: q}})
	tn := &tierNode{c: c, rn: rn, node: node, pod: rn.AddPod(p)}
	proc := resctltest.NewFakeProc(t, rn)
	proc.Update()
	tn.opts = testutil.AgentOptions{
		NodeName: node, CgroupRoot: resctltest.RealRoot, KubeletCgroupRoot: "/" + rn.Top,
		CgroupVersion: string(rn.Layout.Version()), CgroupDriver: "cgroupfs", ProcRoot: proc.Dir, StateDir: t.TempDir(),
	}
	return tn
}

func (tn *tierNode) quota() int64 { return tn.rn.Quota(tn.pod.Cgroup) }

func (tn *tierNode) waitQuota(t *testing.T, want int64, msg string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		return tn.quota() == want, fmt.Errorf("quota %dm", tn.quota())
	}, "%s", msg)
}

// TestAgentReleaseCommand: an agent holds a Batch pod to its 300m tier
// limit and is stopped (SIGTERM; no DaemonSet to say it is uninstalled):
// the limit stays, for the next agent to take over. `waterline-agent
// --release` with the same state directory and no API server gives the pod
// kubelet's value back (unlimited) and exits 0.
func TestAgentReleaseCommand(t *testing.T) {
	tn := newTierNode(t, "release-cmd")
	agent := tn.c.StartAgent(t, tn.opts)
	tn.waitQuota(t, 300, "waiting for the agent to hold the Batch pod to its 300m tier limit")
	agent.Stop()
	if q := tn.quota(); q != 300 {
		t.Fatalf("after a plain SIGTERM the quota is %dm, want the tier limit kept (300m) for the next agent", q)
	}
	bin := testutil.BuildBinary(t, "waterline-agent")
	cmd := exec.CommandContext(t.Context(), bin, "--release", "--state-dir", tn.opts.StateDir,
		"--cgroup-root", tn.opts.CgroupRoot, "--kubelet-cgroup-root", tn.opts.KubeletCgroupRoot,
		"--cgroup-version", tn.opts.CgroupVersion, "--cgroup-driver", "cgroupfs",
		"--kubeconfig", "/nonexistent", "--v", "2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("waterline-agent --release: %v\n%s", err, out)
	}
	if q := tn.quota(); q != resctl.Unlimited {
		t.Errorf("after --release the quota is %dm, want kubelet's (unlimited)\n%s", q, out)
	}
}

// TestAgentReleasesOnUninstall: the agent runs as the pod of a DaemonSet
// (objects in the real API server; the process is the test's). SIGTERM
// while the DaemonSet stays keeps the tier limit (a rolling update); a new
// agent takes over; deleting the DaemonSet and then SIGTERM -- what an
// uninstall does -- gives the pod kubelet's value back before the agent
// exits.
func TestAgentReleasesOnUninstall(t *testing.T) {
	tn := newTierNode(t, "release-uninstall")
	ctx := t.Context()
	const ns = "release-uninstall"
	labels := map[string]string{"app": "waterline-agent"}
	ds, err := tn.c.Kube.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "waterline-agent"}},
					NodeSelector: map[string]string{"no-such-node": "true"}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own pod, as the DaemonSet controller would make it.
	if _, err := tn.c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent-x", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
		Spec: corev1.PodSpec{NodeName: tn.node, Containers: []corev1.Container{{Name: "agent", Image: "waterline-agent"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tn.opts.Args = []string{"--pod-name", "waterline-agent-x", "--pod-namespace", ns}

	first := tn.c.StartAgent(t, tn.opts)
	tn.waitQuota(t, 300, "waiting for the agent to hold the Batch pod to its 300m tier limit")
	first.Stop()
	if q := tn.quota(); q != 300 {
		t.Fatalf("after SIGTERM with the DaemonSet in place the quota is %dm, want 300m kept", q)
	}
	second := tn.c.StartAgent(t, tn.opts)
	tn.waitQuota(t, 300, "waiting for the second agent")
	if err := tn.c.Kube.AppsV1().DaemonSets(ns).Delete(ctx, ds.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second.Stop()
	if exited, err := second.Exited(); !exited || err != nil {
		t.Errorf("agent exit: exited %v, err %v; want a clean exit", exited, err)
	}
	if q := tn.quota(); q != resctl.Unlimited {
		t.Errorf("after the uninstall's SIGTERM the quota is %dm, want kubelet's (unlimited)", q)
	}
}

// TestAgentProtectsWhileAPIServerUnreachable: an agent throttles Batch
// pods on real cgroups (burners under a throttle line) with the API server
// reached through a proxy, and is stopped. Kubelet-like, the test puts the
// pods back at their 300m. The partition starts (the proxy is cut) and a
// new agent starts: it cannot list anything, yet from the node snapshot
// the previous run saved (pods, Node, NodeQOS) it throttles again, /healthz
// says it is alive and /readyz that it is not synced. When the partition
// ends it syncs and the NodeMetric reports Throttling=True.
func TestAgentProtectsWhileAPIServerUnreachable(t *testing.T) {
	rn := resctltest.NewRealNode(t, "waterline-test-partition")
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "partition", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "partition"
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

	proxy, kubeconfig := c.ProxiedKubeconfig(t)
	opts := testutil.AgentOptions{
		NodeName: node, CgroupRoot: resctltest.RealRoot, KubeletCgroupRoot: "/" + rn.Top,
		CgroupVersion: string(rn.Layout.Version()), CgroupDriver: "cgroupfs", ProcRoot: proc.Dir,
		StateDir: t.TempDir(), Kubeconfig: kubeconfig,
	}
	first := c.StartAgent(t, opts)
	quota := func(name string) int64 { return rn.Quota(pods[name].Cgroup) }
	throttled := func() []string {
		var out []string
		for _, name := range batch {
			if q := quota(name); q != resctl.Unlimited && q < 300 {
				out = append(out, fmt.Sprintf("%s=%dm", name, q))
			}
		}
		return out
	}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		for _, name := range batch {
			if q := quota(name); q != 300 {
				return false, fmt.Errorf("%s quota %dm", name, q)
			}
		}
		return true, nil
	}, "waiting for the agent to hold the Batch pods to their 300m tier limit")
	for _, p := range pods {
		w := testutil.StartWorkload(t, "-burn", "1")
		rn.AddProcess(p.Containers["main"], w.Cmd.Process.Pid)
		w.Go(t)
	}
	use := burnersUse(t, rn, 600) // about 1100m on an idle machine
	percent := int32((use - 260) / 20)
	t.Logf("Burners use %dm of the 2000m node; throttle line at %d %% = %dm", use, percent, percent*20)
	if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(ctx, &v1alpha1.NodeQOS{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec: v1alpha1.NodeQOSSpec{
			CPU:            &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To(percent), RestorePercent: ptr.To(percent - 5)},
			AvoidanceCount: ptr.To[int32](1), RestoreCount: ptr.To[int32](5),
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		return len(throttled()) > 0, fmt.Errorf("quotas %v", throttled())
	}, "waiting for the first agent to throttle")
	snapPath := filepath.Join(opts.StateDir, agent.NodeSnapshotFile)
	testutil.Eventually(t, 40*time.Second, 500*time.Millisecond, func() (bool, error) {
		b, err := os.ReadFile(snapPath)
		if err != nil {
			return false, err
		}
		return strings.Contains(string(b), `"name":"cpu"`), fmt.Errorf("the snapshot has no NodeQOS cpu yet")
	}, "waiting for the node snapshot to hold the NodeQOS")
	first.Stop()

	// Kubelet-like reset, then the partition.
	for _, name := range batch {
		if _, err := rn.Layout.SetCPUQuota(pods[name].Cgroup, cgroups.CPUQuota{QuotaMicros: 30000, PeriodMicros: 100000}); err != nil {
			t.Fatal(err)
		}
	}
	if got := throttled(); len(got) != 0 {
		t.Fatalf("quotas after the reset: %v, want all at 300m", got)
	}
	proxy.Cut()
	opts.NoWait = true
	second := c.StartAgent(t, opts)
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		return len(throttled()) > 0, fmt.Errorf("quotas %v", throttled())
	}, "waiting for the agent started during the partition to throttle from the node snapshot")
	t.Logf("Throttled during the partition: %v", throttled())
	if code := httpStatus(second.HealthURL + "/healthz"); code != 200 {
		t.Errorf("/healthz during the partition = %d, want 200 (protection runs)", code)
	}
	if code := httpStatus(second.HealthURL + "/readyz"); code != 503 {
		t.Errorf("/readyz during the partition = %d, want 503 (not synced)", code)
	}
	if q := quota("prod"); q != 200 {
		t.Errorf("the Prod pod's quota is %dm, want kubelet's 200m", q)
	}

	proxy.Restore(t)
	testutil.Eventually(t, 60*time.Second, 250*time.Millisecond, func() (bool, error) {
		return httpStatus(second.HealthURL+"/readyz") == 200, fmt.Errorf("readyz not 200")
	}, "waiting for the agent to sync once the partition ends")
	testutil.Eventually(t, 60*time.Second, 250*time.Millisecond, func() (bool, error) {
		nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.ConditionThrottling)
		return cond != nil && cond.Status == metav1.ConditionTrue, fmt.Errorf("Throttling condition %+v", cond)
	}, "waiting for the NodeMetric to report Throttling=True after the partition")
}

func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// procCPU returns the user+system CPU time of a process.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	sec, err := benchutil.CPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(sec * float64(time.Second))
}

// TestAgentCostRealCgroups200Pods measures the whole agent binary with 200
// pods whose cgroups are real (created by the test under a private
// kubelet root of /sys/fs/cgroup, cgroup v1 here, one container each) and
// a 30-minute metric cache restored from a checkpoint: process CPU per
// 1 s cycle over 120 cycles and VmRSS/VmHWM, against a baseline agent on a
// node without pods in the same run. Goals: ≤ 2 ms CPU a cycle, VmHWM ≤
// 64 MiB. Not a real kubelet node: the cgroups are the test's.
func TestAgentCostRealCgroups200Pods(t *testing.T) {
	if os.Getenv("COSTTEST") == "" && os.Getenv("COSTTEST_PPROF_DIR") == "" {
		t.Skip("SKIPPING: a 3-minute measurement, not a check: `make bench-agent` runs it (COSTTEST=1)")
	}
	// 120 cycles: /proc/<pid>/stat counts CPU in 10 ms ticks, ±0.08 ms a
	// cycle over 120; and four checkpoints and two reports fall in them.
	const pods, cycles = 200, 120
	rn := resctltest.NewRealNode(t, "waterline-test-cost")
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	capacity := testutil.DefaultNodeCapacity()
	capacity[corev1.ResourcePods] = resource.MustParse("300")
	nodes := c.CreateNodes(t, "cost", 2, testutil.NodeOptions{Capacity: capacity})
	full, idle := nodes[0].Name, nodes[1].Name
	c.CreateNamespace(t, "cost", nil)
	var created []*corev1.Pod
	for i := range pods {
		band := extension.Bands[i%len(extension.Bands)]
		p, err := c.Kube.CoreV1().Pods("cost").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", i), Labels: map[string]string{extension.LabelBand: string(band)}},
			Spec:       corev1.PodSpec{NodeName: full, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, p)
		rn.AddPod(p.DeepCopy())
	}
	proc := resctltest.NewFakeProc(t, rn)
	procCtx, stopProc := context.WithCancel(ctx)
	defer stopProc()
	go proc.Run(procCtx, 500*time.Millisecond)
	stateDir := t.TempDir()
	writeFullCheckpoint(t, filepath.Join(stateDir, "metriccache.ckpt"), created)
	opts := func(node, state string) testutil.AgentOptions {
		return testutil.AgentOptions{NodeName: node, StateDir: state, CgroupRoot: resctltest.RealRoot, KubeletCgroupRoot: "/" + rn.Top,
			CgroupVersion: string(rn.Layout.Version()), CgroupDriver: "cgroupfs", ProcRoot: proc.Dir}
	}
	// With COSTTEST_PPROF_DIR set, the 200-pod agent serves Go's profiles
	// and the test saves there a CPU profile of the measured cycles and the
	// allocation profiles at their start and end.
	pprofDir := os.Getenv("COSTTEST_PPROF_DIR")
	fullOpts := opts(full, stateDir)
	pprofURL := ""
	if pprofDir != "" {
		addr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
		fullOpts.Args = append(fullOpts.Args, "--profiling-address", addr)
		pprofURL = "http://" + addr + "/debug/pprof/"
	}
	agents := map[string]*testutil.Agent{
		"200 pods": c.StartAgent(t, fullOpts),
		"baseline": c.StartAgent(t, opts(idle, "")),
	}
	cyclesOf := func(a *testutil.Agent) float64 {
		v, _ := testutil.MetricValue(a.Metrics(t), "waterline_agent_cycle_duration_seconds_count")
		return v
	}
	// Past the start (restore, first reads, first reports).
	for name, a := range agents {
		testutil.Eventually(t, 3*time.Minute, time.Second, func() (bool, error) {
			return cyclesOf(a) >= 20, fmt.Errorf("%v cycles", cyclesOf(a))
		}, "20 cycles of the %s agent", name)
	}
	type mark struct {
		cpu                    time.Duration
		cycles, bytes, mallocs float64
	}
	// The Go runtime's cumulative allocation counters, from /metrics.
	allocs := func(a *testutil.Agent) (bytes, mallocs float64) {
		page := a.Metrics(t)
		bytes, _ = testutil.MetricValue(page, "go_memstats_alloc_bytes_total")
		mallocs, _ = testutil.MetricValue(page, "go_memstats_mallocs_total")
		return bytes, mallocs
	}
	// A scrape of /metrics allocates what the per-pod gauges need (about
	// 50,000 objects with 200 pods): two scrapes back to back measure it,
	// and the one at the end is taken off.
	start := map[string]mark{}
	scrape := map[string]mark{}
	for name, a := range agents {
		b0, m0 := allocs(a)
		b, m := allocs(a)
		scrape[name] = mark{bytes: b - b0, mallocs: m - m0}
		start[name] = mark{procCPU(t, a.PID()), cyclesOf(a), b, m}
	}
	if pprofURL != "" {
		// The allocations of the measured cycles: go tool pprof -base
		// agent-allocs-start.pprof agent-allocs.pprof.
		saveProfile(t, pprofURL+"allocs", filepath.Join(pprofDir, "agent-allocs-start.pprof"))
		saveProfile(t, pprofURL+"profile?seconds="+strconv.Itoa(cycles-5), filepath.Join(pprofDir, "agent-cpu.pprof"))
		saveProfile(t, pprofURL+"allocs", filepath.Join(pprofDir, "agent-allocs.pprof"))
	} else {
		time.Sleep(cycles * time.Second)
	}
	perCycle := map[string]float64{}
	for name, a := range agents {
		cpu, n := procCPU(t, a.PID())-start[name].cpu, cyclesOf(a)-start[name].cycles
		perCycle[name] = float64(cpu.Microseconds()) / 1000 / n
		vmRSS, _ := testutil.ProcStatus(a.PID(), "VmRSS")
		vmHWM, _ := testutil.ProcStatus(a.PID(), "VmHWM")
		b, m := allocs(a)
		b, m = b-scrape[name].bytes, m-scrape[name].mallocs
		t.Logf("%s: process CPU %.2f ms per cycle over %.0f cycles; VmRSS %.1f MiB, VmHWM %.1f MiB; allocated %.1f KiB in %.0f objects per cycle",
			name, perCycle[name], n, float64(vmRSS)/mib, float64(vmHWM)/mib, (b-start[name].bytes)/1024/n, (m-start[name].mallocs)/n)
		if name == "200 pods" && vmHWM > 64*mib {
			t.Errorf("VmHWM with 200 pods and 30 min = %.1f MiB, goal ≤ 64 MiB", float64(vmHWM)/mib)
		}
	}
	t.Logf("200 pods over baseline: CPU per cycle ×%.1f (+%.2f ms)", perCycle["200 pods"]/perCycle["baseline"], perCycle["200 pods"]-perCycle["baseline"])
	if perCycle["200 pods"] > 2 {
		t.Logf("MISSES the 2 ms goal: %.2f ms per cycle (see pkg/agent/README.md)", perCycle["200 pods"])
	}
}

// TestAgentEvictionDuringPartitionKeepsTheBeat: the real agent reaches the
// API server through a proxy; its fixture node is under a 95 % memory
// evict line. The proxy turns into a black hole (connections accepted,
// never answered) and the node's memory rises over the line: the agent
// asks to evict the largest Batch pod, and the request hangs. The collect
// loop keeps its 1 s beat meanwhile (cycles counted on /metrics, each
// short), /healthz stays 200, and the eviction gives up after
// --eviction-timeout, counted as an error. (Evict used to run inside the
// cycle with no timeout: the loop stopped and /healthz went 503.)
func TestAgentEvictionDuringPartitionKeepsTheBeat(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "partition-evict", 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	const ns = "partition-evict"
	c.CreateNamespace(t, ns, nil)
	dir := t.TempDir()
	layout, tree := fixtureCgroups(t, dir)
	procDir := filepath.Join(dir, "proc")
	if err := cgroupstest.Proc(procDir, 1000, 100000, 16*gib, 2*gib); err != nil {
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
	if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(ctx, &v1alpha1.NodeQOS{
		ObjectMeta: metav1.ObjectMeta{Name: "memory"},
		Spec:       v1alpha1.NodeQOSSpec{Memory: &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](95)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy, kubeconfig := c.ProxiedKubeconfig(t)
	agent := c.StartAgent(t, testutil.AgentOptions{
		NodeName: node, CgroupRoot: layout.Root(), CgroupVersion: "v1", CgroupDriver: "cgroupfs", ProcRoot: procDir,
		Kubeconfig: kubeconfig, Args: []string{"--eviction-timeout", "8s"},
	})
	time.Sleep(2 * time.Second) // the NodeQOS is in the informer
	metric := func(series string) float64 {
		v, _ := testutil.MetricValue(agent.Metrics(t), series)
		return v
	}
	proxy.Blackhole()
	// 15.5 GiB used of 16: over the 15.2 GiB line.
	if err := cgroupstest.Proc(procDir, 1000, 100000, 16*gib, gib/2); err != nil {
		t.Fatal(err)
	}
	count0, sum0 := metric("waterline_agent_cycle_duration_seconds_count"), metric("waterline_agent_cycle_duration_seconds_sum")
	start := time.Now()
	time.Sleep(12 * time.Second)
	count, sum := metric("waterline_agent_cycle_duration_seconds_count")-count0, metric("waterline_agent_cycle_duration_seconds_sum")-sum0
	elapsed := time.Since(start).Seconds()
	t.Logf("During the partition: %.0f cycles in %.1f s, mean %.1f ms", count, elapsed, 1000*sum/max(count, 1))
	if count < elapsed-3 {
		t.Errorf("%.0f cycles in %.1f s of partition with an eviction hanging, want one a second", count, elapsed)
	}
	if count > 0 && sum/count > 0.2 {
		t.Errorf("mean cycle %.0f ms during the partition, want well under the 1 s beat", 1000*sum/count)
	}
	if code := httpStatus(agent.HealthURL + "/healthz"); code != 200 {
		t.Errorf("/healthz during the partition = %d, want 200", code)
	}
	testutil.Eventually(t, 20*time.Second, 500*time.Millisecond, func() (bool, error) {
		v := metric(`waterline_agent_qos_evictions_total{result="error"`)
		return v >= 1, fmt.Errorf("error evictions %v", v)
	}, "waiting for the hanging eviction to time out")
}

// saveProfile writes what url serves to path.
func saveProfile(t *testing.T, url, path string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s (%d bytes)", path, len(b))
}
