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

package colocation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/test/bench/colocation/loadgen"
	"github.com/waterline-dev/waterline/test/bench/colocation/report"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// busyboxImage is the real node's busybox test image (test/util imports
// it into every real node); the pods run the colobench binary from a
// hostPath directory on top of it.
const busyboxImage = testutil.BusyboxImage

// startRealNode starts test/util's real node (containerd + kubelet).
func startRealNode(t *testing.T, c *testutil.Cluster) Node {
	t.Helper()
	n := c.StartRealNode(t, "colobench")
	return Node{Name: n.Name, CgroupRoot: n.CgroupRoot, CgroupMount: n.CgroupMount}
}

// buildColobench builds the static colobench binary into a directory of
// its own (mounted into the pods) and returns both.
func buildColobench(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "colobench-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "colobench")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./test/bench/colocation/cmd/colobench")
	cmd.Dir = testutil.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Building colobench: %v\n%s", err, out)
	}
	return dir, bin
}

// chartColocationPolicy is the ColocationPolicy spec the chart installs
// (its values.yaml colocationPolicy.spec: tiers on with the API's
// defaults, no profile).
func chartColocationPolicy(t *testing.T) v1alpha1.ColocationPolicySpec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "charts", "waterline", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		ColocationPolicy struct {
			Spec v1alpha1.ColocationPolicySpec `json:"spec"`
		} `json:"colocationPolicy"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatalf("Reading charts/waterline/values.yaml: %v", err)
	}
	return values.ColocationPolicy.Spec
}

// colocationWebhookConfiguration is the MutatingWebhookConfiguration the
// manager fills with its colocation-profile webhook (the chart's name).
const colocationWebhookConfiguration = "waterline-colocation-profiles"

// startManager runs waterline-manager as the chart would on a local
// cluster: its webhooks on 127.0.0.1 (the API server calls them by URL,
// there is no Service network here), the colocation-profile webhook
// failing closed, every controller on (NodeMetric lifecycle, tiers).
// It returns once the profile webhook applies to a dry-run pod of the
// Batch namespace.
func startManager(t *testing.T, c *testutil.Cluster, batchNS string) {
	t.Helper()
	c.CreateNamespace(t, "waterline-system", nil)
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: colocationWebhookConfiguration},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(testutil.FreePort(t))
	c.StartManager(t,
		"--webhooks=true", "--webhook-host=127.0.0.1", "--webhook-port="+port,
		"--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"), "--webhook-cert-mode=secret",
		"--webhook-namespace=waterline-system", "--webhook-url=https://127.0.0.1:"+port,
		"--colocation-webhook-configuration="+colocationWebhookConfiguration, "--colocation-webhook-failure-policy=Fail")
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: batchNS},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: busyboxImage,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	testutil.Eventually(t, time.Minute, 300*time.Millisecond, func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods(batchNS).Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Labels[extension.LabelBand] == string(extension.BandBatch), fmt.Errorf("not mutated yet: labels %v", got.Labels)
	}, "waiting for the manager's colocation-profile webhook to apply to namespace %s", batchNS)
}

// memoryLines places the memory-pressure scenario's waterlines. The
// agent's lines are percents of the Node's memory capacity (the whole
// machine here, tens of GiB on a machine shared with other work), so
// pushing the node over the chart's evict line would take the machine
// down. The scenario scales the node instead: the chart's evict and forbid
// lines (evictPct, forbidPct) of a node of nodeMemory, above what the agent
// sees in use now (base: nothing of the node's pods, or the machine's use
// with COLOBENCH_NODE_USAGE=machine), rounded to whole percents of
// capacity; the evict line is then at evictBytes of the agent's usage
// figure.
func memoryLines(capacity, base, nodeMemory int64, forbidPct, evictPct int32) (forbid, evict int32, evictBytes int64) {
	pct := func(b int64) int32 { return int32(min(100, max(1, (100*b+capacity-1)/capacity))) }
	evict = max(2, pct(base+nodeMemory*int64(evictPct)/100))
	forbid = min(evict-1, max(1, pct(base+nodeMemory*int64(forbidPct)/100)))
	return forbid, evict, int64(evict) * capacity / 100
}

// chartNodeQOS is the NodeQOS spec the chart installs (its values.yaml),
// acting (dryRun false); without the chart in the tree, the same defaults
// written here.
func chartNodeQOS(t *testing.T) (v1alpha1.NodeQOSSpec, string) {
	t.Helper()
	spec := v1alpha1.NodeQOSSpec{
		CPU: &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](70), ThrottlePercent: ptr.To[int32](70),
			RestorePercent: ptr.To[int32](60), EvictPercent: ptr.To[int32](80)},
		Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](85), EvictPercent: ptr.To[int32](90)},
	}
	source := "the chart's defaults as of this benchmark (charts/waterline/values.yaml not in this tree)"
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "charts", "waterline", "values.yaml"))
	if err == nil {
		var values struct {
			NodeQOS struct {
				Spec v1alpha1.NodeQOSSpec `json:"spec"`
			} `json:"nodeQOS"`
		}
		if err := yaml.Unmarshal(b, &values); err != nil {
			t.Fatalf("Reading charts/waterline/values.yaml: %v", err)
		}
		spec, source = values.NodeQOS.Spec, "charts/waterline/values.yaml nodeQOS.spec"
	}
	spec.DryRun = false
	return spec, source
}

func createPriorityClasses(t *testing.T, c *testutil.Cluster) {
	t.Helper()
	f, err := os.Open(filepath.Join(testutil.RepoRoot(), "config", "priorityclasses", "priorityclasses.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var pc schedulingv1.PriorityClass
		if err := dec.Decode(&pc); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		if pc.Name == "" {
			continue
		}
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(t.Context(), &pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func uptime() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "uptime: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

func machine() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), UptimeBefore: uptime()}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	m.Cgroup = "cgroup v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		m.Cgroup = "cgroup v2"
	}
	return m
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// Loads of a 2-CPU node, 1 ms of CPU a request: steady 600/s (0.6 of a
// core); bursty steps between 300/s and 1000/s.
func loads(d time.Duration, rate float64) map[string][]loadgen.Phase {
	q := d / 4
	return map[string][]loadgen.Phase{
		report.Steady: {{Duration: d, Rate: rate}},
		report.Bursty: {{Duration: q, Rate: rate / 2}, {Duration: q, Rate: rate * 5 / 3}, {Duration: q, Rate: rate / 2}, {Duration: q, Rate: rate * 5 / 3}},
	}
}

// TestColocation runs the benchmark on a real node. Under `make test` it
// is a smoke run (one round, steady load, a few seconds a scenario): it
// proves the harness end to end and that its report renders, not any
// number. `make bench-colocation` sets COLOBENCH_FULL=1 for the full run
// (COLOBENCH_ROUNDS, COLOBENCH_DURATION, COLOBENCH_RATE, COLOBENCH_OUT
// override it).
func TestColocation(t *testing.T) {
	full := os.Getenv("COLOBENCH_FULL") == "1"
	if testing.Short() && !full {
		t.Skip("SKIPPING the colocation benchmark smoke run in -short mode")
	}
	testutil.SkipUnlessRealNode(t)
	began := time.Now()
	c := testutil.StartCluster(t, testutil.Options{})
	node := startRealNode(t, c)
	binDir, bin := buildColobench(t)
	createPriorityClasses(t, c)
	// Prod and plain Kubernetes' Batch pods in one namespace; Waterline's
	// Batch pods in one the colocation profile selects.
	const ns, batchNS = "colobench", "colobench-batch"
	c.CreateNamespace(t, ns, nil)
	c.CreateNamespace(t, batchNS, BatchNamespaceLabels)

	// The ColocationPolicy: the chart's (tiers on, the API's defaults)
	// with the benchmark's profile and a 5 s NodeMetric report (the
	// chart's 60 s is longer than a run: the manager's Batch allocatable
	// and LoadAware would see one report a run).
	policy := chartColocationPolicy(t)
	policy.Profiles = []v1alpha1.ColocationProfile{BatchProfile()}
	policy.CollectPolicy = &v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](5)}
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(t.Context(), &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: policy}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating the ColocationPolicy: %v", err)
	}
	startManager(t, c, batchNS)
	hostDir, err := os.MkdirTemp("", "colobench-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(hostDir) })
	if err := os.Chmod(hostDir, 0o777); err != nil {
		t.Fatal(err)
	}

	// waterline-scheduler places replacement Batch pods (LoadAware refuses
	// the node while the agent reports forbid-scheduling).
	body, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "scheduler", "local-up.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, profiles, ok := strings.Cut(string(body), "\nprofiles:")
	if !ok {
		t.Fatal("config/scheduler/local-up.yaml has no profiles")
	}
	c.StartScheduler(t, "profiles:"+profiles)
	qos, qosSource := chartNodeQOS(t)
	// CPU eviction averages over a window and acts only on a full one:
	// the API's 300 s is longer than a run, so it could never act.
	if qos.CPUEviction == nil {
		qos.CPUEviction = &v1alpha1.CPUEvictionPolicy{}
	}
	qos.CPUEviction.WindowSeconds = ptr.To[int64](10)
	t.Logf("Waterline NodeQOS from %s, acting, CPU eviction window 10 s", qosSource)

	// Where the agent reads node usage: the node's pods only (default; the
	// machine is shared with other work) or the whole machine's /proc.
	usage := os.Getenv("COLOBENCH_NODE_USAGE")
	var procRoot string
	switch usage {
	case "", "pods":
		usage = "pods"
		cpu, err := NewCPUReader(node.CgroupMount)
		if err != nil {
			t.Fatal(err)
		}
		np, err := NewNodeProc(t.TempDir(), cpu, node)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if err := np.Run(t.Context(), 200*time.Millisecond); err != nil {
				t.Errorf("Node proc: %v", err)
			}
		}()
		procRoot = np.Dir
	case "machine":
	default:
		t.Fatalf("COLOBENCH_NODE_USAGE=%q: want pods or machine", usage)
	}

	// The memory-pressure scenario's lines and Batch pods: two pods whose
	// memory grows to 65 % of the gap to the evict line each, so together
	// they cross it and one alone stays under the forbid line.
	n, err := c.Kube.CoreV1().Nodes().Get(t.Context(), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	memCapacity := n.Status.Capacity.Memory().Value()
	var memBase int64
	if usage == "machine" {
		total, avail, err := meminfo("/proc/meminfo")
		if err != nil {
			t.Fatal(err)
		}
		memBase = total - avail
	}
	// The smoke run scales to a smaller node: its Batch pods must cross
	// the evict line within seconds on a busy machine, where a BestEffort
	// pod (two CPU shares) gets little CPU to back its pages with.
	defNodeMemory := 2048
	if !full {
		defNodeMemory = 512
	}
	nodeMemory := int64(envInt(t, "COLOBENCH_NODE_MEMORY_MIB", defNodeMemory)) << 20
	chartMemForbid, chartMemEvict := *qos.Memory.ForbidSchedulingPercent, *qos.Memory.EvictPercent
	memForbid, memEvict, memEvictBytes := memoryLines(memCapacity, memBase, nodeMemory, chartMemForbid, chartMemEvict)
	growBytes := (memEvictBytes - memBase) * 65 / 100
	growLimit := resource.NewQuantity(growBytes+256<<20, resource.BinarySI).String()
	waterlineDesc := fmt.Sprintf("waterline-manager (NodeMetric, tiers, the colocation-profile webhook that makes the Batch pods Batch pods asking for batch-cpu/batch-memory) and waterline-scheduler throughout; "+
		"per run an agent process for the node and a NodeQOS from %s with dryRun false and a 10 s CPU eviction window (waterline-nothrottle: without throttlePercent; "+
		"waterline-memory: memory forbid/evict lines at %d/%d %% of the node's %d MiB, the chart's %d/%d %% of a %d MiB node); ColocationPolicy: the chart's with the profile and a 5 s NodeMetric report; node usage the agent sees: %s",
		qosSource, memForbid, memEvict, memCapacity>>20, chartMemForbid, chartMemEvict, nodeMemory>>20,
		map[string]string{"pods": "the node's pods only (kubepods cgroup as /proc/stat and /proc/meminfo)", "machine": "the whole machine's /proc"}[usage])

	startWaterline := func(t testing.TB, scenario string) func() {
		spec := *qos.DeepCopy()
		switch scenario {
		case report.WaterlineNoThrottle:
			// No throttle line: forbid-scheduling and eviction only.
			spec.CPU.ThrottlePercent, spec.CPU.RestorePercent = nil, nil
		case report.WaterlineMemory:
			spec.Memory = &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To(memForbid), EvictPercent: ptr.To(memEvict)}
		case ScenarioProbe:
			// Lines under what the Batch pods use on any machine (the
			// node is its pods): the agent must throttle.
			spec.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](1), ThrottlePercent: ptr.To[int32](2), EvictPercent: ptr.To[int32](100)}
		}
		nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "colobench"}, Spec: spec}
		if _, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(context.Background(), nq, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating NodeQOS for %s: %v", scenario, err)
		}
		agent := c.StartAgent(t, testutil.AgentOptions{NodeName: node.Name, KubeletCgroupRoot: node.CgroupRoot, ProcRoot: procRoot})
		return func() {
			// The Waterline scenarios measured a live agent: it reported
			// its node.
			nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(context.Background(), node.Name, metav1.GetOptions{})
			if err != nil || nm.Status.UpdateTime == nil {
				t.Errorf("%s: the agent never reported the node's NodeMetric (%v)", scenario, err)
			} else {
				t.Logf("  agent's NodeMetric: node usage %v, conditions %s", nm.Status.NodeMetric.NodeUsage, conditions(nm.Status.Conditions))
			}
			agent.Stop()
			if err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Delete(context.Background(), "colobench", metav1.DeleteOptions{}); err != nil {
				t.Errorf("Deleting NodeQOS: %v", err)
			}
		}
	}

	plan := Plan{
		Rounds: 1, Scenarios: report.Scenarios, Arrival: loadgen.Poisson,
		ProdCPU: time.Millisecond, ProdPort: testutil.FreePort(t), ProdRequest: "1", ProdLimit: "2",
		// Under Waterline each asks for 400m and 128Mi: the three fit in
		// what the chart's tier policy sells on an idle 2-CPU node (65 %
		// of 2 cores = 1.3 cores), and the agent holds each to 400m.
		Batch: []BatchPod{{Kind: "cpu", Threads: 1, CPU: "400m", Memory: "128Mi"}, {Kind: "cpu", Threads: 1, CPU: "400m", Memory: "128Mi"},
			{Kind: "mem", Threads: 1, CPU: "400m", Memory: "128Mi"}},
		MemoryBatch: []BatchPod{{Kind: "cpu", Threads: 1, CPU: "400m", Memory: "128Mi"},
			{Kind: "mem", Threads: 1, CPU: "400m", Memory: growLimit, MemBytes: growBytes, Ramp: 8 * time.Second},
			{Kind: "mem", Threads: 1, CPU: "400m", Memory: growLimit, MemBytes: growBytes, Ramp: 8 * time.Second}},
		Warmup: 4 * time.Second, SampleInterval: 500 * time.Millisecond, Logf: t.Logf,
	}
	rate := float64(envInt(t, "COLOBENCH_RATE", 600))
	out := os.Getenv("COLOBENCH_OUT")
	command := "go test -run TestColocation ./test/bench/colocation/ (smoke run of make bench-colocation)"
	if full {
		plan.Rounds = envInt(t, "COLOBENCH_ROUNDS", 2)
		plan.Loads = loads(envDuration(t, "COLOBENCH_DURATION", 20*time.Second), rate)
		command = "make bench-colocation"
		if out == "" {
			out = filepath.Join(testutil.RepoRoot(), "_output", "bench-colocation")
		}
	} else {
		plan.Loads = map[string][]loadgen.Phase{report.Steady: {{Duration: envDuration(t, "COLOBENCH_DURATION", 6*time.Second), Rate: rate / 2}}}
		for i := range plan.MemoryBatch {
			if plan.MemoryBatch[i].Ramp > 0 {
				plan.MemoryBatch[i].Ramp = 4 * time.Second
			}
		}
		if out == "" {
			out = filepath.Join(testutil.RepoRoot(), "_output", "bench-colocation-smoke")
		}
	}
	m := machine()
	env := Env{Kube: c.Kube, Node: node, Namespace: ns, BatchNamespace: batchNS, Image: busyboxImage, BinaryDir: binDir, Colobench: bin, HostDir: hostDir, StartWaterline: startWaterline}
	res := Run(t, env, plan)
	m.UptimeAfter = uptime()
	res.Machine, res.Command, res.Smoke, res.Waterline = m, command, !full, waterlineDesc
	index, err := report.WriteDir(out, res)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	t.Logf("Report: %s\nMachine load before: %s\nafter: %s\n%s", index, m.UptimeBefore, m.UptimeAfter, md)
	if os.Getenv("COLOBENCH_README") == "1" {
		if !full {
			t.Fatal("COLOBENCH_README=1 needs the full run (make bench-colocation): a smoke run is not a result")
		}
		calJSON, err := os.ReadFile(filepath.Join(out, "calibration.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(testutil.RepoRoot(), CheckedInCalibration), calJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := updateREADME(filepath.Join(testutil.RepoRoot(), "README.md"), res, string(md), report.Calibrate(res, 0.25)); err != nil {
			t.Fatal(err)
		}
	}

	if !full {
		// The probe: lines the Batch pods cross on any machine. The harness
		// must see the agent's throttles with the gap each meant to close,
		// and the Batch pods' CPU must fall.
		probe := RunOne(t, env, plan, ScenarioProbe, report.Steady, len(res.Runs)+1)
		var gaps int
		for _, a := range probe.Actions {
			if a.Kind == report.ActionThrottle && a.GapMilli > 0 {
				gaps++
			}
		}
		effects := report.MeasureOverAction(probe.Samples, probe.Actions, report.DefaultOverActionWindows)
		t.Logf("Probe (throttle line 2 %%): %d actions, %d throttles with a gap, over-action measured on %d cycles: %+v", len(probe.Actions), gaps, len(effects), effects)
		if gaps == 0 {
			t.Errorf("probe: the agent throttled nothing the harness saw over a 2 %% throttle line; actions %+v", probe.Actions)
		}
	}

	// What the smoke run proves: every scenario ran and measured, and
	// Waterline's pieces acted: the webhook made the Batch pods Batch pods
	// asking for tier resources (plain Kubernetes' stayed BestEffort), and
	// in the memory scenario the agent evicted.
	for _, r := range res.Runs {
		checkBatchPods(t, r)
		if r.Scenario == report.WaterlineMemory {
			var evictions int
			for _, a := range r.Actions {
				if a.Kind == report.ActionEvict {
					evictions++
				}
			}
			t.Logf("%s: %d evictions, Batch memory peak %d MiB (evict line %d MiB of the agent's usage)", r.Scenario, evictions, peakBatchMemory(r)>>20, memEvictBytes>>20)
			if evictions == 0 {
				why := "though they crossed it"
				if usage == "pods" && peakNodeMemory(r) < memEvictBytes {
					why = "which they never reached (their growth lacked CPU?)"
				}
				t.Errorf("%s round %d: the agent evicted nothing; the node's pods peaked at %d MiB (Batch %d MiB) against the %d MiB evict line, %s; actions %+v",
					r.Scenario, r.Round, peakNodeMemory(r)>>20, peakBatchMemory(r)>>20, memEvictBytes>>20, why, r.Actions)
			}
		}
	}
	t.Logf("TestColocation took %v", time.Since(began).Round(time.Second))
	for _, r := range res.Runs {
		if r.Scenario != report.BatchAlone {
			if r.Prod == nil || r.Prod.OK == 0 {
				t.Errorf("%s/%s round %d: the Prod server answered no request", r.Scenario, r.Load, r.Round)
			}
		}
		if r.Scenario != report.Alone && r.BatchUnits == 0 {
			t.Errorf("%s/%s round %d: the Batch pods reported no progress", r.Scenario, r.Load, r.Round)
		}
		if len(r.Samples) == 0 {
			t.Errorf("%s/%s round %d: no cgroup sample", r.Scenario, r.Load, r.Round)
		}
	}
}

func peakBatchMemory(r report.Run) int64 {
	var peak int64
	for _, s := range r.Samples {
		peak = max(peak, s.BatchMemory)
	}
	return peak
}

func peakNodeMemory(r report.Run) int64 {
	var peak int64
	for _, s := range r.Samples {
		peak = max(peak, s.NodeMemory)
	}
	return peak
}

// checkBatchPods: under Waterline every Batch pod went through the
// colocation profile (band batch, waterline-batch, batch-cpu and
// batch-memory instead of cpu and memory); under plain Kubernetes every
// one is BestEffort with no priority class.
func checkBatchPods(t *testing.T, r report.Run) {
	t.Helper()
	if r.Scenario != report.Alone && len(r.BatchPods) == 0 {
		t.Errorf("%s/%s round %d: no Batch pod recorded", r.Scenario, r.Load, r.Round)
	}
	for _, p := range r.BatchPods {
		_, cpu := p.Requests[string(corev1.ResourceCPU)]
		_, mem := p.Requests[string(corev1.ResourceMemory)]
		batchCPU, batchMem := p.Requests[string(extension.ResourceBatchCPU)], p.Requests[string(extension.ResourceBatchMemory)]
		if waterlineScenarios[r.Scenario] {
			if p.Band != string(extension.BandBatch) || p.PriorityClassName != "waterline-batch" || cpu || mem || batchCPU != "400" || batchMem == "" {
				t.Errorf("%s: Batch pod %s/%s as admitted: band %q, class %q, requests %v; want the profile's batch, waterline-batch, batch-cpu 400 and batch-memory, no cpu or memory",
					r.Scenario, p.Namespace, p.Name, p.Band, p.PriorityClassName, p.Requests)
			}
			continue
		}
		if p.Band != "" || p.PriorityClassName != "" || len(p.Requests) != 0 || len(p.Limits) != 0 {
			t.Errorf("%s: Batch pod %s/%s: band %q, class %q, requests %v, limits %v; want a BestEffort pod no profile touched",
				r.Scenario, p.Namespace, p.Name, p.Band, p.PriorityClassName, p.Requests, p.Limits)
		}
	}
}

const (
	readmeBegin = "<!-- bench-colocation:begin -->"
	readmeEnd   = "<!-- bench-colocation:end -->"
)

// CheckedInCalibration is where COLOBENCH_README=1 keeps the run's
// calibration.json, beside the README table it belongs to, for
// waterline sim --calibration.
const CheckedInCalibration = "test/bench/colocation/calibration.json"

// updateREADME replaces the README's benchmark block with this run's
// table, its command, its machine and the simulator's calibration.
func updateREADME(path string, res *report.Results, table string, cal report.Calibration) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, readmeBegin), strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s block", path, readmeBegin, readmeEnd)
	}
	m := res.Machine
	calLine := "Calibration for the simulator: no fit (" + cal.InterferenceError + ")."
	if f := cal.Interference; f != nil {
		calLine = fmt.Sprintf("Calibration for the simulator (`%s`, `waterline sim --calibration %s`): interference %v; the simulator's default is κ %.0f %% (docs/design/simulator.md).",
			CheckedInCalibration, CheckedInCalibration, *f, sim.DefaultHarm().InterferencePercent)
		if cal.CensoredWindows > 0 {
			calLine += fmt.Sprintf(" %d windows with failed or timed-out requests left out.", cal.CensoredWindows)
		}
	}
	block := fmt.Sprintf("%s\n`%s`, %s. %d CPUs (%s), kernel %s, %s. Load: `%s` before, `%s` after.\nProd: %s. Batch: %s. Waterline: %s.\n\n%s\n%s\n%s",
		readmeBegin, res.Command, res.Started.UTC().Format("2006-01-02"), m.CPUs, m.CPUModel, m.Kernel, m.Cgroup, m.UptimeBefore, m.UptimeAfter,
		res.Prod, res.Batch, res.Waterline, table, calLine, readmeEnd)
	return os.WriteFile(path, []byte(s[:i]+block+s[j+len(readmeEnd):]), 0o644)
}

func conditions(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Type+"="+string(c.Status))
	}
	return strings.Join(parts, ",")
}
