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
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	testutil "github.com/waterline-dev/waterline/test/util"
)

const (
	mib = 1 << 20
	// burnerCores is the CFS quota of the burner's container: it spins
	// one core and is held to half of one.
	burnerCores = 0.5
	// burnerBytes is what the burner maps and touches.
	burnerBytes = 100 * mib
)

// agentNode is a kwok node with a real pod cgroup for one pod: a batch pod
// on the node in the API server, whose cgroup (by its UID) holds a burner
// capped at burnerCores and holding burnerBytes.
type agentNode struct {
	c       *testutil.Cluster
	node    string
	pod     *corev1.Pod
	cgroup  *testutil.PodCgroup
	burner  *testutil.Workload
	options testutil.AgentOptions
}

// newAgentNode sets up the node, the NodeMetric with the given collect
// policy (as the manager would write it), the pod and its burning cgroup.
// It skips, saying why, where cgroups cannot be created (not root).
func newAgentNode(t *testing.T, policy *v1alpha1.NodeMetricCollectPolicy) *agentNode {
	t.Helper()
	// First, so a machine without writable cgroups skips before starting
	// a control plane. The RealPod's private kubelet cgroup root holds
	// our pod; its own random pod stays empty.
	private := cgroupstest.NewRealPod(t, corev1.PodQOSBurstable)
	// Other work on this shared machine must not starve the burner below
	// its cap.
	if _, err := private.Layout.SetCPUShares(private.TopCgroup(), cgroups.MaxCPUShares); err != nil {
		t.Fatalf("Raising the CPU shares of the test cgroup: %v", err)
	}

	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "agent", 1, testutil.NodeOptions{})[0].Name
	if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(ctx, &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       v1alpha1.NodeMetricSpec{CollectPolicy: policy},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.CreateNamespace(t, "colo", nil)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "colo", Name: "burner", Labels: map[string]string{extension.LabelBand: string(extension.BandBatch)}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "burn", Image: "busybox",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
		},
	}
	if _, err := c.Kube.CoreV1().Pods("colo").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = c.WaitPodRunning(t, "colo", "burner", time.Minute)
	if pod.Status.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("Pod QoS class %q, want Burstable", pod.Status.QOSClass)
	}

	cg := testutil.NewPodCgroup(t, private.Layout, pod.UID, pod.Status.QOSClass)
	if _, err := private.Layout.SetCPUQuota(cg.Container, cgroups.CPUQuota{QuotaMicros: int64(burnerCores * 100000), PeriodMicros: 100000}); err != nil {
		t.Fatalf("Capping the burner: %v", err)
	}
	burner := testutil.StartWorkload(t, "-burn", "1", "-alloc", fmt.Sprint(burnerBytes))
	cg.AddProcess(burner.Cmd.Process.Pid)
	burner.Go(t)

	return &agentNode{
		c: c, node: node, pod: pod, cgroup: cg, burner: burner,
		options: testutil.AgentOptions{
			NodeName:          node,
			CgroupRoot:        private.Layout.Root(),
			KubeletCgroupRoot: "/" + private.TopCgroup(),
			CgroupVersion:     string(private.Layout.Version()),
			CgroupDriver:      string(cgroups.DriverCgroupfs),
		},
	}
}

// podUsage is the pod's entry in the status, or nil.
func podUsage(nm *v1alpha1.NodeMetric, namespace, name string) *v1alpha1.PodMetricInfo {
	for i := range nm.Status.PodsMetric {
		if p := &nm.Status.PodsMetric[i]; p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

func cores(q resource.Quantity) float64   { return float64(q.MilliValue()) / 1000 }
func bytesOf(q resource.Quantity) float64 { return float64(q.Value()) }

// cpuSample is the pod cgroup's cumulative CPU read by the test itself.
type cpuSample struct {
	at    time.Time
	nanos uint64
}

// rateOver returns the CPU rate over (end − window, end] from the test's
// own samples, taking the samples closest to the window's ends.
func rateOver(samples []cpuSample, end time.Time, window time.Duration) (float64, bool) {
	closest := func(t time.Time) (cpuSample, bool) {
		var best cpuSample
		found := false
		for _, s := range samples {
			if !found || absDur(s.at.Sub(t)) < absDur(best.at.Sub(t)) {
				best, found = s, true
			}
		}
		return best, found && absDur(best.at.Sub(t)) < time.Second
	}
	a, ok1 := closest(end.Add(-window))
	b, ok2 := closest(end)
	if !ok1 || !ok2 || !b.at.After(a.at) {
		return 0, false
	}
	return float64(b.nanos-a.nanos) / float64(b.at.Sub(a.at).Nanoseconds()), true
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestAgentReportsNodeMetric runs the real agent binary for a kwok node
// whose one pod has a real cgroup with a capped CPU burner, and reads back
// the NodeMetric it reports: the pod's CPU and memory match the burner
// and the test's own reading of the same cgroup, the node's and system's
// usage agree with each other, the aggregates are ordered, and the agent's
// /metrics show the pod until it is deleted. SIGTERM stops it with exit 0
// and a checkpoint.
func TestAgentReportsNodeMetric(t *testing.T) {
	const window = 10 * time.Second
	n := newAgentNode(t, &v1alpha1.NodeMetricCollectPolicy{
		AggregateDurationSeconds: ptr.To[int64](10),
		ReportIntervalSeconds:    ptr.To[int64](2),
		AggregateDurations:       []metav1.Duration{{Duration: window}, {Duration: time.Minute}},
	})
	ctx := t.Context()
	nms := n.c.Waterline.WaterlineV1alpha1().NodeMetrics()
	usageFiles := n.cgroup.Layout.UsageFiles(n.cgroup.Cgroup)
	defer usageFiles.Close()
	reader := cgroups.NewReader()
	var samples []cpuSample
	readCPU := func() {
		ns, err := reader.CPUUsage(usageFiles)
		if err != nil {
			t.Fatalf("Reading the pod's CPU: %v", err)
		}
		samples = append(samples, cpuSample{time.Now(), ns})
	}
	readCPU()

	agent := n.c.StartAgent(t, n.options)
	started := time.Now()

	// Wait for a report whose 10 s window lies wholly after the agent's
	// second cycle (the pod's first CPU rate): 13 s after the start,
	// since updateTime has one-second precision.
	var nm *v1alpha1.NodeMetric
	testutil.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		readCPU()
		got, err := nms.Get(ctx, n.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.UpdateTime == nil || got.Status.UpdateTime.Time.Before(started.Add(13*time.Second)) {
			return false, fmt.Errorf("updateTime %v", got.Status.UpdateTime)
		}
		nm = got
		return true, nil
	}, "a NodeMetric report covering 10 s of the burner")
	// Samples a bit past updateTime, for the test's own rate.
	time.Sleep(time.Second)
	readCPU()

	pm := podUsage(nm, "colo", "burner")
	if pm == nil {
		t.Fatalf("podsMetric lacks colo/burner: %+v", nm.Status.PodsMetric)
	}
	if own, ok := rateOver(samples, nm.Status.UpdateTime.Time, window); ok {
		t.Logf("Reported pod CPU %s (test's own reading %.3f), memory %s; node %s/%s, system %s/%s",
			pm.Usage.Cpu(), own, pm.Usage.Memory(), nm.Status.NodeMetric.NodeUsage.Cpu(), nm.Status.NodeMetric.NodeUsage.Memory(),
			nm.Status.NodeMetric.SystemUsage.Cpu(), nm.Status.NodeMetric.SystemUsage.Memory())
	}
	if pm.Band != string(extension.BandBatch) {
		t.Errorf("band %q, want batch (the pod's label)", pm.Band)
	}
	podCPU := cores(pm.Usage[corev1.ResourceCPU])
	// The quota holds the spinning burner to 0.5 cores; the collector
	// measured 0.501-0.504 over 3 s in its own test. 0.05 covers the
	// millicore rounding and a second of scheduling noise over 10 s.
	if math.Abs(podCPU-burnerCores) > 0.05 {
		t.Errorf("pod CPU %.3f cores, want %.2f ± 0.05 (the burner's quota)", podCPU, burnerCores)
	}
	// updateTime is truncated to the second, so the test's window may be
	// off by up to 1 s of a constant 0.5-core load: the same 0.05.
	if own, ok := rateOver(samples, nm.Status.UpdateTime.Time, window); !ok {
		t.Errorf("no own CPU samples around %v", nm.Status.UpdateTime.Time)
	} else if math.Abs(podCPU-own) > 0.05 {
		t.Errorf("pod CPU %.3f cores, the test read %.3f from the same cgroup over the same 10 s", podCPU, own)
	}
	podMem := bytesOf(pm.Usage[corev1.ResourceMemory])
	ownMem, err := reader.MemoryWorkingSet(usageFiles)
	if err != nil {
		t.Fatal(err)
	}
	// The burner's 100 MiB are touched once and stay; its own runtime
	// adds a few MiB. The agent's average and the test's reading of the
	// same cgroup now agree within 5 %.
	if podMem < burnerBytes || math.Abs(podMem-float64(ownMem)) > 0.05*float64(ownMem) {
		t.Errorf("pod memory %.1f MiB, want ≥ %d MiB and within 5%% of the test's reading %.1f MiB", podMem/mib, burnerBytes/mib, float64(ownMem)/mib)
	}

	info := nm.Status.NodeMetric
	nodeCPU, nodeMem := cores(info.NodeUsage[corev1.ResourceCPU]), bytesOf(info.NodeUsage[corev1.ResourceMemory])
	sysCPU, sysMem := cores(info.SystemUsage[corev1.ResourceCPU]), bytesOf(info.SystemUsage[corev1.ResourceMemory])
	// The node runs the burner, so it uses at least as much; system is
	// node − pods per sample (floored at 0, which can only raise it), so
	// over the window it is at least node − pod, to rounding (3 × 0.5m).
	if nodeCPU < podCPU-0.002 || sysCPU < nodeCPU-podCPU-0.002 || sysCPU > nodeCPU+0.002 {
		t.Errorf("node CPU %.3f, system %.3f, pod %.3f: want node ≥ pod and node − pod ≤ system ≤ node", nodeCPU, sysCPU, podCPU)
	}
	// Memory never floors here (the node has far more than the pod):
	// system = node − pod, as in every sample, to within the cache's
	// float32 rounding (a part in 2^24 of each value): the three averages
	// are over the same samples however the node's memory moves with
	// other work on the machine (reporter.BuildUsage reads one window).
	if nodeMem < podMem || math.Abs(sysMem-(nodeMem-podMem)) > 64<<10 {
		t.Errorf("node memory %.1f MiB, system %.1f MiB, pod %.1f MiB: want system = node − pod", nodeMem/mib, sysMem/mib, podMem/mib)
	}
	if len(info.AggregatedNodeUsages) != 2 || info.AggregatedNodeUsages[0].Duration.Duration != window || info.AggregatedNodeUsages[1].Duration.Duration != time.Minute {
		t.Fatalf("aggregatedNodeUsages %+v, want 10s and 1m", info.AggregatedNodeUsages)
	}
	for _, agg := range info.AggregatedNodeUsages {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			var vals []int64
			for _, typ := range []v1alpha1.AggregationType{"p50", "p90", "p95", "p99", "max"} {
				q := agg.Usage[typ][r]
				vals = append(vals, q.MilliValue())
			}
			avg := agg.Usage["avg"][r]
			for i := 1; i < len(vals); i++ {
				if vals[i] < vals[i-1] {
					t.Errorf("%s %s percentiles not ordered: p50..max = %v", agg.Duration.Duration, r, vals)
				}
			}
			if avg.MilliValue() > vals[len(vals)-1] {
				t.Errorf("%s %s avg %s above max", agg.Duration.Duration, r, avg.String())
			}
		}
	}
	// The 10 s aggregate is the same window as nodeUsage.
	if a := cores(info.AggregatedNodeUsages[0].Usage["avg"][corev1.ResourceCPU]); math.Abs(a-nodeCPU) > 0.05 {
		t.Errorf("10s avg CPU %.3f, nodeUsage %.3f over the same window", a, nodeCPU)
	}

	// /metrics: the agent's cost and the pod's latest usage.
	page := agent.Metrics(t)
	podSeries := `waterline_agent_pod_cpu_usage_cores{band="batch",namespace="colo",pod="burner"}`
	if v, ok := testutil.MetricValue(page, podSeries); !ok || math.Abs(v-burnerCores) > 0.1 {
		t.Errorf("%s = %v (present %v), want about %.1f", podSeries, v, ok, burnerCores)
	}
	for _, series := range []string{"waterline_agent_cycle_duration_seconds_count", "waterline_agent_metric_cache_series", "waterline_agent_metric_cache_bytes", "process_resident_memory_bytes", `waterline_agent_reports_total{result="success"}`} {
		if v, ok := testutil.MetricValue(page, series); !ok || v <= 0 {
			t.Errorf("%s = %v (present %v), want > 0", series, v, ok)
		}
	}

	// The pod goes: its gauges go from /metrics, and from the status.
	if err := n.c.Kube.CoreV1().Pods("colo").Delete(ctx, "burner", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		if _, err := n.c.Kube.CoreV1().Pods("colo").Get(ctx, "burner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("pod still there: %w", err)
		}
		if _, ok := testutil.MetricValue(agent.Metrics(t), podSeries); ok {
			return false, fmt.Errorf("%s still served", podSeries)
		}
		got, err := nms.Get(ctx, n.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if podUsage(got, "colo", "burner") != nil {
			return false, fmt.Errorf("still in podsMetric at %v", got.Status.UpdateTime)
		}
		return true, nil
	}, "the deleted pod leaving /metrics and the NodeMetric")

	// SIGTERM: a clean exit 0, with the metric cache checkpointed.
	agent.Stop()
	if _, err := agent.Exited(); err != nil {
		t.Errorf("waterline-agent exit after SIGTERM: %v, want status 0", err)
	}
	if st, err := os.Stat(filepath.Join(agent.Options.StateDir, "metriccache.ckpt")); err != nil || st.Size() == 0 {
		t.Errorf("no checkpoint after SIGTERM: %v", err)
	}
}

// TestAgentRestartKeepsWindow: kill -9 the agent after it watched the
// burner for a while, stop the burner, start the agent again: its first
// report already carries the burner's CPU in the 5-minute averages, which
// only the checkpoint can hold (the pod uses no CPU any more).
func TestAgentRestartKeepsWindow(t *testing.T) {
	n := newAgentNode(t, &v1alpha1.NodeMetricCollectPolicy{
		AggregateDurationSeconds: ptr.To[int64](300),
		// Long: after the restart the first report is the one at start.
		ReportIntervalSeconds: ptr.To[int64](3600),
	})
	ctx := t.Context()
	nms := n.c.Waterline.WaterlineV1alpha1().NodeMetrics()
	n.options.Args = []string{"--checkpoint-interval", "1s"}
	first := n.c.StartAgent(t, n.options)

	// 15 samples of the burner, then at least one checkpoint after them.
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		v, ok := testutil.MetricValue(first.Metrics(t), "waterline_agent_metric_cache_samples")
		return ok && v >= 15, fmt.Errorf("%v samples", v)
	}, "15 samples in the first agent's cache")
	time.Sleep(1500 * time.Millisecond)
	n.burner.Kill()
	first.Kill()

	restarted := time.Now()
	second := n.c.StartAgent(t, first.Options) // the same --state-dir
	var nm *v1alpha1.NodeMetric
	testutil.Eventually(t, time.Minute, 100*time.Millisecond, func() (bool, error) {
		got, err := nms.Get(ctx, n.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.UpdateTime == nil || got.Status.UpdateTime.Time.Before(restarted.Truncate(time.Second)) {
			return false, fmt.Errorf("updateTime %v, restarted at %v", got.Status.UpdateTime, restarted)
		}
		nm = got
		return true, nil
	}, "the first report after the restart")
	if !strings.Contains(readFile(t, second.LogPath), "Restored the metric cache from its checkpoint") {
		t.Errorf("the restarted agent did not log restoring its checkpoint")
	}
	pm := podUsage(nm, "colo", "burner")
	if pm == nil {
		t.Fatalf("first report after the restart lacks the pod: %+v", nm.Status.PodsMetric)
	}
	// ≥ 15 samples at 0.5 cores and, after the restart, a few at 0: the
	// 5-minute average stays well above 0.2 (15 × 0.5 / (15 + 10) = 0.3
	// even with 10 idle samples). A cache started empty would say ~0.
	t.Logf("First report after kill -9 (updateTime %v): pod CPU %s, memory %s over 5 min",
		nm.Status.UpdateTime.Time, pm.Usage.Cpu(), pm.Usage.Memory())
	if c := cores(pm.Usage[corev1.ResourceCPU]); c < 0.2 {
		t.Errorf("pod CPU over 5 min in the first report after kill -9 = %.3f cores, want ≥ 0.2 from the checkpointed burner samples", c)
	}
	// Memory likewise: ≥ 15 samples of ≥ 100 MiB, then ~0 once the
	// burner is gone; ≥ 50 MiB holds with up to 15 idle samples.
	if mem := bytesOf(pm.Usage[corev1.ResourceMemory]); mem < burnerBytes/2 {
		t.Errorf("pod memory over 5 min = %.1f MiB, want ≥ %d MiB from the checkpointed burner samples", mem/mib, burnerBytes/2/mib)
	}
	var fiveMin *v1alpha1.AggregatedUsage
	for i := range nm.Status.NodeMetric.AggregatedNodeUsages {
		if a := &nm.Status.NodeMetric.AggregatedNodeUsages[i]; a.Duration.Duration == 5*time.Minute {
			fiveMin = a
		}
	}
	if fiveMin == nil {
		t.Fatalf("no 5m aggregate in %+v", nm.Status.NodeMetric.AggregatedNodeUsages)
	}
	// The node ran the burner in the checkpointed samples.
	if c := cores(fiveMin.Usage[v1alpha1.AggregationMax][corev1.ResourceCPU]); c < burnerCores-0.05 {
		t.Errorf("5m max node CPU %.3f, want ≥ %.2f (the burner's samples)", c, burnerCores-0.05)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAgentRSS200Pods measures the real agent binary's memory with 200
// pods and a full 30-minute cache: it starts from a checkpoint of 200
// pods × 30 min (what a node's agent restarts with), collects a fixture
// tree of those 200 pods (three containers each) every second and
// reports them, and reads VmRSS and VmHWM after 60 cycles. A second agent
// on a node without pods, same binary and tree, no checkpoint, runs
// beside it as the baseline. Goal: VmHWM ≤ 64 MiB.
func TestAgentRSS200Pods(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: a 60-second measurement (-short)")
	}
	const (
		pods   = 200
		cycles = 60
	)
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	capacity := testutil.DefaultNodeCapacity()
	capacity[corev1.ResourcePods] = resource.MustParse("300")
	nodes := c.CreateNodes(t, "rss", 2, testutil.NodeOptions{Capacity: capacity})
	full, idle := nodes[0].Name, nodes[1].Name
	c.CreateNamespace(t, "rss", nil)

	// The pods, in the API server; their cgroups, in a fixture tree.
	dir := t.TempDir()
	layout, tree := fixtureCgroups(t, dir)
	if err := cgroupstest.Proc(filepath.Join(dir, "proc"), 1000, 9000, 16<<30, 12<<30); err != nil {
		t.Fatal(err)
	}
	var created []*corev1.Pod
	for i := range pods {
		band := extension.Bands[i%len(extension.Bands)]
		p, err := c.Kube.CoreV1().Pods("rss").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", i), Labels: map[string]string{extension.LabelBand: string(band)}},
			Spec:       corev1.PodSpec{NodeName: full, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, p)
		cg := layout.PodCgroup(p.UID, p.Status.QOSClass)
		if err := tree.Cgroup(cg, cgroupstest.Usage{CPUNanos: 1e9, MemoryUsage: 100 * mib, InactiveFile: 10 * mib}); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if err := tree.Cgroup(fmt.Sprintf("%s/%062x%02x", cg, i, j), cgroupstest.Usage{CPUNanos: 1e8, MemoryUsage: 30 * mib, InactiveFile: 3 * mib}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// A full checkpoint: node, system, 4 bands and 200 pods, CPU and
	// memory, one sample a second for the last 30 minutes, values with
	// noise like real usage.
	stateDir := t.TempDir()
	writeFullCheckpoint(t, filepath.Join(stateDir, "metriccache.ckpt"), created)

	opts := func(node, state string) testutil.AgentOptions {
		return testutil.AgentOptions{
			NodeName: node, StateDir: state,
			CgroupRoot: layout.Root(), CgroupVersion: "v1", CgroupDriver: "cgroupfs", ProcRoot: filepath.Join(dir, "proc"),
		}
	}
	agents := map[string]*testutil.Agent{
		"200 pods, 30 min": c.StartAgent(t, opts(full, stateDir)),
		"baseline":         c.StartAgent(t, opts(idle, "")),
	}
	for name, a := range agents {
		testutil.Eventually(t, 3*time.Minute, time.Second, func() (bool, error) {
			v, _ := testutil.MetricValue(a.Metrics(t), "waterline_agent_cycle_duration_seconds_count")
			return v >= cycles, fmt.Errorf("%v cycles", v)
		}, "%d cycles of the %s agent", cycles, name)
	}
	rss := map[string][2]int64{}
	for name, a := range agents {
		vmRSS, err := testutil.ProcStatus(a.PID(), "VmRSS")
		if err != nil {
			t.Fatal(err)
		}
		vmHWM, err := testutil.ProcStatus(a.PID(), "VmHWM")
		if err != nil {
			t.Fatal(err)
		}
		rss[name] = [2]int64{vmRSS, vmHWM}
		page := a.Metrics(t)
		series, _ := testutil.MetricValue(page, "waterline_agent_metric_cache_series")
		samples, _ := testutil.MetricValue(page, "waterline_agent_metric_cache_samples")
		cacheBytes, _ := testutil.MetricValue(page, "waterline_agent_metric_cache_bytes")
		sum, _ := testutil.MetricValue(page, "waterline_agent_cycle_duration_seconds_sum")
		count, _ := testutil.MetricValue(page, "waterline_agent_cycle_duration_seconds_count")
		heap, _ := testutil.MetricValue(page, "go_memstats_heap_inuse_bytes")
		t.Logf("%s: VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB, cache %.0f series, %.0f samples, %.2f MiB; mean cycle %.2f ms",
			name, float64(vmRSS)/mib, float64(vmHWM)/mib, heap/mib, series, samples, cacheBytes/mib, 1000*sum/count)
		if name != "baseline" && samples < 1700 {
			t.Errorf("%s agent holds %.0f samples, want ≥ 1700 restored from the 30-minute checkpoint", name, samples)
		}
	}
	full200, base := rss["200 pods, 30 min"], rss["baseline"]
	t.Logf("200 pods × 30 min over baseline: VmRSS ×%.2f (+%.1f MiB), VmHWM ×%.2f (+%.1f MiB)",
		float64(full200[0])/float64(base[0]), float64(full200[0]-base[0])/mib,
		float64(full200[1])/float64(base[1]), float64(full200[1]-base[1])/mib)
	if full200[1] > 64*mib {
		t.Errorf("VmHWM of the agent with 200 pods and 30 min = %.1f MiB, goal ≤ 64 MiB", float64(full200[1])/mib)
	}
	// The 200 pods are reported.
	nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, full, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nm.Status.PodsMetric) != pods {
		t.Errorf("podsMetric has %d pods, want %d", len(nm.Status.PodsMetric), pods)
	}
}

// writeFullCheckpoint writes a metric cache checkpoint holding 30 minutes
// of one-second samples of the node, the system, the four bands and the
// pods, ending now.
func writeFullCheckpoint(t *testing.T, path string, pods []*corev1.Pod) {
	t.Helper()
	const samples = 30 * 60
	now := time.Now()
	clk := testingclock.NewFakeClock(now.Add(-samples * time.Second))
	cache, err := metriccache.New(t.Context(), metriccache.Config{CheckpointPath: path}, clk)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	noisy := func(base float64) float64 { return base * (0.8 + 0.4*rnd.Float64()) }
	var keys []metriccache.SeriesKey
	for _, r := range []metriccache.Resource{metriccache.ResourceCPU, metriccache.ResourceMemory} {
		keys = append(keys, metriccache.NodeKey(r), metriccache.SystemKey(r))
		for _, b := range extension.Bands {
			keys = append(keys, metriccache.BandKey(b, r))
		}
		for _, p := range pods {
			keys = append(keys, metriccache.PodKey(p.UID, r))
		}
	}
	points := make([]metriccache.Point, len(keys))
	for range samples {
		clk.Step(time.Second)
		for i, k := range keys {
			base := 0.25 // cores
			if k.Resource == metriccache.ResourceMemory {
				base = 512 * mib
			}
			// Page-size jitter on memory, five digits on CPU.
			points[i] = metriccache.Point{Key: k, Value: math.Round(noisy(base)*1e5) / 1e5}
		}
		if err := cache.Append(clk.Now(), points); err != nil {
			t.Fatal(err)
		}
	}
	if err := cache.Checkpoint(); err != nil {
		t.Fatal(err)
	}
}
