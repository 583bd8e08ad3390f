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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/colocation"
	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/test/bench/colocation/report"
	"github.com/waterline-dev/waterline/test/bench/colocation/workload"
)

func TestMachineBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 20 800 50 1 2 3 40 0\ncpu0 50 2 10 400 25 0 1 1 20 0\nintr 1\n"
	if err := os.WriteFile(path, []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, total, err := MachineBusy(path)
	if err != nil {
		t.Fatal(err)
	}
	if busy != 131 || total != 981 {
		t.Errorf("busy, total = %d, %d; want 131 (all but idle, iowait, guest), 981", busy, total)
	}
	if _, _, err := MachineBusy(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("no error for a missing file")
	}
}

// TestCPUReaderOnARealCgroup burns 300 ms of CPU in a cgroup of its own
// and reads it back through the reader the benchmark samples with.
func TestCPUReaderOnARealCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING the real cgroup test: creating a cgroup needs root")
	}
	r, err := NewCPUReader("/sys/fs/cgroup")
	if err != nil {
		t.Skipf("SKIPPING the real cgroup test: %v", err)
	}
	cg := "colobench-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	var dirs []string
	if r.v2 {
		dirs = []string{filepath.Join(r.Mount, cg)}
	} else {
		dirs = []string{filepath.Join(r.Mount, "cpuacct", cg)}
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("SKIPPING the real cgroup test: %v", err)
		}
		t.Cleanup(func() { _ = os.Remove(d) })
	}
	before, err := r.Usage(cg)
	if err != nil {
		t.Fatal(err)
	}
	// A child process joins the cgroup, then burns 300 ms of CPU.
	if err := burnIn(dirs[0], 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	after, err := r.Usage(cg)
	if err != nil {
		t.Fatal(err)
	}
	if used := time.Duration(after - before); used < 250*time.Millisecond || used > 2*time.Second {
		t.Errorf("the cgroup used %v, want about 300ms", used)
	}
}

func TestProgressOf(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(name string, lines ...workload.Progress) {
		var b strings.Builder
		for _, l := range lines {
			j, _ := json.Marshal(l)
			b.Write(append(j, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	// a runs throughout; b is evicted at 1.5 s; c replaces it at 2 s.
	write("batch-a.jsonl", workload.Progress{Time: at(-1), Units: 0}, workload.Progress{Time: at(0), Units: 10}, workload.Progress{Time: at(1), Units: 20},
		workload.Progress{Time: at(2), Units: 30}, workload.Progress{Time: at(3), Units: 40})
	write("batch-b.jsonl", workload.Progress{Time: at(-1), Units: 0}, workload.Progress{Time: at(0), Units: 5}, workload.Progress{Time: at(1.5), Units: 12, Final: true})
	write("batch-c.jsonl", workload.Progress{Time: at(2), Units: 0}, workload.Progress{Time: at(3), Units: 7})
	write("load.json", workload.Progress{}) // not a progress file
	pts, units := progressOf(t, dir, start, at(3), time.Second)
	want := []report.ProgressPoint{{T: 0, Units: 15}, {T: 1, Units: 25}, {T: 2, Units: 42}, {T: 3, Units: 59}}
	if diff := cmp.Diff(want, pts); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if units != 44 {
		t.Errorf("units done = %d, want 44 (a 30, b 7, c 7)", units)
	}
}

// TestPodsKeepTrafficOnLoopback: the pods the benchmark makes listen
// and are probed on loopback, use the host network, and the Batch pods
// are Batch only under Waterline.
func TestPodsKeepTrafficOnLoopback(t *testing.T) {
	env := Env{Namespace: "ns", BatchNamespace: "batch-ns", Image: "img", BinaryDir: "/opt/colobench", Node: Node{Name: "n1"}}
	plan := Plan{ProdCPU: time.Millisecond, ProdPort: 18080, ProdRequest: "1", ProdLimit: "2",
		Batch:       []BatchPod{{Kind: "cpu", Threads: 1, CPU: "400m", Memory: "128Mi"}},
		MemoryBatch: []BatchPod{{Kind: "mem", Threads: 1, CPU: "400m", Memory: "128Mi", MemBytes: 1 << 20, Ramp: 5 * time.Second}}}
	p := prodPod(env, plan, 3)
	c := p.Spec.Containers[0]
	if !p.Spec.HostNetwork || p.Spec.NodeName != "n1" || c.ReadinessProbe.HTTPGet.Host != "127.0.0.1" ||
		!strings.Contains(strings.Join(c.Command, " "), "--listen 127.0.0.1:18080") {
		t.Errorf("prod pod: hostNetwork %v, node %q, probe host %q, command %v", p.Spec.HostNetwork, p.Spec.NodeName, c.ReadinessProbe.HTTPGet.Host, c.Command)
	}
	if got := extension.BandOf(p); got != extension.BandProd {
		t.Errorf("prod pod band %s", got)
	}
	if c.Command[0] != "/colobench/colobench" || p.Spec.Volumes[0].HostPath.Path != "/opt/colobench" {
		t.Errorf("prod pod runs %v with volumes %v", c.Command, p.Spec.Volumes)
	}
	if c.Resources.Requests.Cpu().String() != "1" || c.Resources.Limits.Cpu().String() != "2" {
		t.Errorf("prod resources %v", c.Resources)
	}

	// Plain Kubernetes: BestEffort, no priority, in the plain namespace.
	b := batchPodSpec(env, plan, report.Kubernetes, "/tmp/run", "batch-1-0-0", 0)
	if got := extension.BandOf(b); got != extension.BandProd || b.Namespace != "ns" || b.Spec.PriorityClassName != "" {
		t.Errorf("kubernetes: batch pod band %s (no priority: what Kubernetes alone knows reads as prod), namespace %q, class %q", got, b.Namespace, b.Spec.PriorityClassName)
	}
	if len(b.Spec.Containers[0].Resources.Requests) != 0 || len(b.Spec.Containers[0].Resources.Limits) != 0 {
		t.Errorf("kubernetes: batch pod is not BestEffort: %v", b.Spec.Containers[0].Resources)
	}
	// Waterline: as its user writes it, in the namespace the profile
	// selects; the profile (what the manager's webhook applies) makes it a
	// Batch pod asking for batch-cpu and batch-memory, BestEffort to
	// kubelet.
	for _, sc := range []string{report.Waterline, report.WaterlineNoThrottle, report.WaterlineMemory} {
		b := batchPodSpec(env, plan, sc, "/tmp/run", "batch-1-0-0", 0)
		if b.Namespace != "batch-ns" || b.Labels[extension.LabelBand] != "" || b.Spec.PriorityClassName != "" {
			t.Errorf("%s: batch pod in %q with band label %q and class %q, want the profile's namespace and nothing set by hand", sc, b.Namespace, b.Labels[extension.LabelBand], b.Spec.PriorityClassName)
		}
		if sc == report.WaterlineMemory && !strings.Contains(strings.Join(b.Spec.Containers[0].Command, " "), "--mem-bytes 1048576 --ramp 5s") {
			t.Errorf("%s: command %v lacks the memory growth", sc, b.Spec.Containers[0].Command)
		}
		profile := BatchProfile()
		if _, err := colocation.Match([]v1alpha1.ColocationProfile{profile}, BatchNamespaceLabels, b.Labels); err != nil {
			t.Fatal(err)
		}
		if err := colocation.Apply(b, &profile, &colocation.PriorityClass{Name: "waterline-batch", Value: 5500}); err != nil {
			t.Fatalf("%s: the profile refuses the Batch pod: %v", sc, err)
		}
		res := b.Spec.Containers[0].Resources
		cpu, mem := res.Requests[extension.ResourceBatchCPU], res.Limits[extension.ResourceBatchMemory]
		if extension.BandOf(b) != extension.BandBatch || cpu.Value() != 400 || mem.String() != "128Mi" || !bestEffort(b) {
			t.Errorf("%s: after the profile band %s, batch-cpu %s, batch-memory %s, QoS %s; want batch, 400, 128Mi, BestEffort",
				sc, extension.BandOf(b), cpu.String(), mem.String(), map[bool]string{true: "BestEffort", false: "not BestEffort"}[bestEffort(b)])
		}
		if b.Spec.NodeName != "n1" || !b.Spec.HostNetwork {
			t.Errorf("%s: batch pod node %q hostNetwork %v", sc, b.Spec.NodeName, b.Spec.HostNetwork)
		}
	}
}

// bestEffort is kubelet's QoS rule: no container asks for cpu or memory.
func bestEffort(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			if _, ok := rl[corev1.ResourceCPU]; ok {
				return false
			}
			if _, ok := rl[corev1.ResourceMemory]; ok {
				return false
			}
		}
	}
	return true
}

// TestMain lets the test binary be the burner burnIn starts.
func TestMain(m *testing.M) {
	if cg := os.Getenv("COLOBENCH_TEST_BURN_CGROUP"); cg != "" {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		d, _ := time.ParseDuration(os.Getenv("COLOBENCH_TEST_BURN"))
		workload.BurnCPU(d, 1)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// burnIn runs a child that moves itself into cgroup dir and burns d of
// CPU, and waits for it.
func burnIn(dir string, d time.Duration) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "COLOBENCH_TEST_BURN_CGROUP="+dir, "COLOBENCH_TEST_BURN="+d.String(), "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("burner: %w: %s", err, out)
	}
	return nil
}

// TestNodeProcCountsOnlyThePods: the proc directory the agent reads says
// the node's pods' CPU (a cgroup standing in for kubepods, with a 300 ms
// burner in it) and nothing of the rest of the machine.
func TestNodeProcCountsOnlyThePods(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING the real cgroup test: creating a cgroup needs root")
	}
	r, err := NewCPUReader("/sys/fs/cgroup")
	if err != nil || r.v2 {
		t.Skipf("SKIPPING: the test builds a cgroup v1 cpuacct tree (%v)", err)
	}
	root := "/colobench-nodeproc-test"
	kubepods := filepath.Join(r.Mount, "cpuacct", root, "kubepods")
	if err := os.MkdirAll(kubepods, 0o755); err != nil {
		t.Skipf("SKIPPING the real cgroup test: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(kubepods); _ = os.Remove(filepath.Dir(kubepods)) })
	p, err := NewNodeProc(t.TempDir(), r, Node{CgroupRoot: root, CgroupMount: r.Mount})
	if err != nil {
		t.Fatal(err)
	}
	busy0, _, err := MachineBusy(filepath.Join(p.Dir, "stat"))
	if err != nil {
		t.Fatal(err)
	}
	if err := burnIn(kubepods, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	busy1, _, err := MachineBusy(filepath.Join(p.Dir, "stat"))
	if err != nil {
		t.Fatal(err)
	}
	// 300 ms = 30 jiffies; the machine's other work is not counted.
	if d := busy1 - busy0; d < 25 || d > 60 {
		t.Errorf("the node's busy CPU grew by %d jiffies over a 300 ms burner, want about 30", d)
	}
	if total, err := memTotal(filepath.Join(p.Dir, "meminfo")); err != nil || total == 0 {
		t.Errorf("meminfo MemTotal %d: %v", total, err)
	}
}

func TestUpdateREADME(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	before := "# X\n\n" + readmeBegin + "\nold table\n" + readmeEnd + "\n\n## Next\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	res := &report.Results{Command: "make bench-colocation", Started: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
		Machine: report.Machine{CPUs: 2, UptimeBefore: "load average: 0.10", UptimeAfter: "load average: 1.90"}}
	fit := &sim.InterferenceFit{InterferencePercent: 512, MedianPointPercent: 480, Points: 120, RMSE: 0.2}
	if err := updateREADME(path, res, "| new | table |\n", report.Calibration{Interference: fit}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	for _, want := range []string{"# X\n\n" + readmeBegin, "`make bench-colocation`, 2026-11-24. 2 CPUs", "load average: 0.10", "| new | table |\n\nCalibration for the simulator (`test/bench/colocation/calibration.json`", "κ 512 % (least squares over 120 windows",
		fmt.Sprintf("the simulator's default is κ %.0f %%", sim.DefaultHarm().InterferencePercent), "docs/design/simulator.md).\n" + readmeEnd + "\n\n## Next\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old table") {
		t.Errorf("the old table is still there:\n%s", got)
	}
	if err := os.WriteFile(path, []byte("# no block\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateREADME(path, res, "x", report.Calibration{}); err == nil || !strings.Contains(err.Error(), "has no") {
		t.Errorf("a README without the block: %v, want an error", err)
	}
}

// TestMemoryLines: the memory scenario's lines are the chart's percents
// of a small node, as whole percents of the machine above what is in
// use, evict always above forbid.
func TestMemoryLines(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct {
		name                      string
		capacity, base, node      int64
		forbid, evict             int32
		evictBytesMin, evictBytes int64
	}{
		// 1.6 and 1.9 GiB of 24: 6.7 and 7.9 % rounded up.
		{"pods only", 24 * gib, 0, 2 * gib, 7, 8, 19 * gib / 10, 24 * gib * 8 / 100},
		// The machine's 5 GiB in use under the lines.
		{"machine", 24 * gib, 5 * gib, 2 * gib, 28, 29, 69 * gib / 10, 24 * gib * 29 / 100},
		// A big machine: whole percents cannot be finer; evict stays
		// above forbid.
		{"big machine", 256 * gib, 0, 2 * gib, 1, 2, 19 * gib / 10, 256 * gib * 2 / 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, e, b := memoryLines(c.capacity, c.base, c.node, 80, 95)
			if f != c.forbid || e != c.evict || b != c.evictBytes || b < c.evictBytesMin {
				t.Errorf("memoryLines = %d %%, %d %%, %d MiB; want %d %%, %d %%, %d MiB", f, e, b>>20, c.forbid, c.evict, c.evictBytes>>20)
			}
		})
	}
}
