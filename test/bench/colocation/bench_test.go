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
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/test/bench/colocation/loadgen"
	"github.com/waterline-dev/waterline/test/bench/colocation/report"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// busyboxImage is the real node's busybox test image (test/util imports
// it into every real node); the pods run the colobench binary from a
// hostPath directory on top of it.
const busyboxImage = "docker.io/local/busybox:test"

// startRealNode starts test/util's real node (containerd + kubelet) and
// returns it as a Node. It calls (*Cluster).StartRealNode by name so this
// package builds and skips, loudly, on a tree without the real-node
// harness; once that harness is in the tree this can call it directly.
func startRealNode(t *testing.T, c *testutil.Cluster) Node {
	t.Helper()
	m := reflect.ValueOf(c).MethodByName("StartRealNode")
	if !m.IsValid() {
		t.Skip("SKIPPING the colocation benchmark: test/util has no real node (Cluster.StartRealNode) in this tree")
	}
	mt := m.Type()
	if mt.NumIn() != 2 || mt.In(0) != reflect.TypeOf((*testing.TB)(nil)).Elem() || mt.In(1).Kind() != reflect.String ||
		mt.NumOut() != 1 || mt.Out(0).Kind() != reflect.Pointer || mt.Out(0).Elem().Kind() != reflect.Struct {
		t.Fatalf("Cluster.StartRealNode is %v, not func(testing.TB, string) *RealNode: update startRealNode", mt)
	}
	n := m.Call([]reflect.Value{reflect.ValueOf(testing.TB(t)), reflect.ValueOf("colobench")})[0].Elem()
	field := func(name string) string {
		f := n.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.String {
			t.Fatalf("RealNode has no string field %s: update startRealNode", name)
		}
		return f.String()
	}
	return Node{Name: field("Name"), CgroupRoot: field("CgroupRoot"), CgroupMount: field("CgroupMount")}
}

// skipUnlessRealNode skips before a control plane is started when the
// machine cannot run a real node (test/util.RealNodeUnsupported, by the
// same checks: root, containerd, runc, bin/kubelet).
func skipUnlessRealNode(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING the colocation benchmark: a real node needs root")
	}
	for _, b := range []string{"containerd", "runc", "ctr"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("SKIPPING the colocation benchmark: %s is not on PATH (make test-deps installs it where root may)", b)
		}
	}
	if _, err := os.Stat(filepath.Join(testutil.BinDir(), "kubelet")); err != nil {
		t.Skipf("SKIPPING the colocation benchmark: no bin/kubelet (make tools builds it)")
	}
	if _, ok := reflect.TypeOf(&testutil.Cluster{}).MethodByName("StartRealNode"); !ok {
		t.Skip("SKIPPING the colocation benchmark: test/util has no real node (Cluster.StartRealNode) in this tree")
	}
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

// chartNodeQOS is the NodeQOS spec the chart installs (its values.yaml),
// acting (dryRun false); without the chart in the tree, the same defaults
// written here.
func chartNodeQOS(t *testing.T) (v1alpha1.NodeQOSSpec, string) {
	t.Helper()
	spec := v1alpha1.NodeQOSSpec{
		CPU:    &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](65), ThrottlePercent: ptr.To[int32](75), EvictPercent: ptr.To[int32](90)},
		Memory: &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](80), EvictPercent: ptr.To[int32](95)},
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
	skipUnlessRealNode(t)
	c := testutil.StartCluster(t, testutil.Options{})
	node := startRealNode(t, c)
	binDir, bin := buildColobench(t)
	createPriorityClasses(t, c)
	const ns = "colobench"
	if _, err := c.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
	t.Logf("Waterline NodeQOS from %s, acting", qosSource)

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
	waterlineDesc := fmt.Sprintf("agent process for the node, NodeQOS from %s with dryRun false (waterline-nothrottle: without throttlePercent); node usage the agent sees: %s",
		qosSource, map[string]string{"pods": "the node's pods only (kubepods cgroup as /proc/stat)", "machine": "the whole machine's /proc/stat"}[usage])

	startWaterline := func(t testing.TB, scenario string) func() {
		spec := *qos.DeepCopy()
		switch scenario {
		case report.WaterlineNoThrottle:
			// No throttle line: forbid-scheduling and eviction only.
			spec.CPU.ThrottlePercent, spec.CPU.RestorePercent = nil, nil
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
		Batch:  []BatchPod{{Kind: "cpu", Threads: 1}, {Kind: "cpu", Threads: 1}, {Kind: "mem", Threads: 1}},
		Warmup: 4 * time.Second, SampleInterval: 500 * time.Millisecond, Logf: t.Logf,
	}
	rate := float64(envInt(t, "COLOBENCH_RATE", 600))
	out := os.Getenv("COLOBENCH_OUT")
	command := "go test -run TestColocation ./test/bench/colocation/ (smoke run of make bench-colocation)"
	if full {
		plan.Rounds = envInt(t, "COLOBENCH_ROUNDS", 2)
		plan.Loads = loads(envDuration(t, "COLOBENCH_DURATION", 25*time.Second), rate)
		command = "make bench-colocation"
		if out == "" {
			out = filepath.Join(testutil.RepoRoot(), "_output", "bench-colocation")
		}
	} else {
		plan.Loads = map[string][]loadgen.Phase{report.Steady: {{Duration: envDuration(t, "COLOBENCH_DURATION", 6*time.Second), Rate: rate / 2}}}
		if out == "" {
			out = filepath.Join(testutil.RepoRoot(), "_output", "bench-colocation-smoke")
		}
	}
	m := machine()
	env := Env{Kube: c.Kube, Node: node, Namespace: ns, Image: busyboxImage, BinaryDir: binDir, Colobench: bin, HostDir: hostDir, StartWaterline: startWaterline}
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
		if err := updateREADME(filepath.Join(testutil.RepoRoot(), "README.md"), res, string(md)); err != nil {
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

	// What the smoke run proves: every scenario ran and measured.
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

const (
	readmeBegin = "<!-- bench-colocation:begin -->"
	readmeEnd   = "<!-- bench-colocation:end -->"
)

// updateREADME replaces the README's benchmark block with this run's
// table, its command and its machine.
func updateREADME(path string, res *report.Results, table string) error {
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
	block := fmt.Sprintf("%s\n`%s`, %s. %d CPUs (%s), kernel %s, %s. Load: `%s` before, `%s` after.\nProd: %s. Batch: %s. Waterline: %s.\n\n%s%s",
		readmeBegin, res.Command, res.Started.UTC().Format("2006-01-02"), m.CPUs, m.CPUModel, m.Kernel, m.Cgroup, m.UptimeBefore, m.UptimeAfter,
		res.Prod, res.Batch, res.Waterline, table, readmeEnd)
	return os.WriteFile(path, []byte(s[:i]+block+s[j+len(readmeEnd):]), 0o644)
}

func conditions(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Type+"="+string(c.Status))
	}
	return strings.Join(parts, ",")
}
