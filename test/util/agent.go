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

package util

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// AgentOptions are the flags of a waterline-agent a test starts; empty
// fields keep the agent's defaults.
type AgentOptions struct {
	// NodeName is the (kwok) node the agent reports for. Required.
	NodeName string
	// CgroupRoot, KubeletCgroupRoot, CgroupVersion, CgroupDriver and
	// ProcRoot locate the node's cgroups and proc: a fixture tree, or a
	// private kubepods subtree of the real /sys/fs/cgroup.
	CgroupRoot, KubeletCgroupRoot, CgroupVersion, CgroupDriver, ProcRoot string
	// StateDir holds the checkpoint; empty uses a new temporary
	// directory. Start a second agent with the first one's StateDir to
	// test a restart.
	StateDir string
	// Kubeconfig, when set, replaces the cluster's (e.g. one through a
	// Proxy the test can cut).
	Kubeconfig string
	// NoWait returns from StartAgent without waiting for /readyz (an agent
	// started while the API server is unreachable is alive, not ready).
	NoWait bool
	// SecureMetrics keeps the agent's default, /metrics over HTTPS to
	// callers the API server authorizes (read it with Scrape and a
	// ServiceAccount's token). Without it the agent serves /metrics in
	// plain HTTP (--metrics-secure=false), for Metrics: a test that cuts
	// the API server still reads it.
	SecureMetrics bool
	// Args are more flags.
	Args []string
}

// Agent is a running waterline-agent.
type Agent struct {
	*Process
	// Options are the options it was started with, StateDir filled in.
	Options AgentOptions
	// HealthURL and MetricsURL are the base URLs of its two servers
	// (MetricsURL https with SecureMetrics).
	HealthURL, MetricsURL string
}

// StartAgent builds waterline-agent from this checkout and runs it against
// the cluster, returning once its /readyz answers 200 (informers synced,
// one collect cycle done). The test's cleanup stops it.
func (c *Cluster) StartAgent(t testing.TB, o AgentOptions) *Agent {
	t.Helper()
	bin := BuildBinary(t, "waterline-agent")
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	health, metrics := FreePort(t), FreePort(t)
	kubeconfig := c.Kubeconfig
	if o.Kubeconfig != "" {
		kubeconfig = o.Kubeconfig
	}
	args := []string{
		"--node-name", o.NodeName,
		"--kubeconfig", kubeconfig,
		"--state-dir", o.StateDir,
		"--health-address", "127.0.0.1:" + strconv.Itoa(health),
		"--metrics-address", "127.0.0.1:" + strconv.Itoa(metrics),
		"--v", "2",
	}
	for flag, v := range map[string]string{
		"--cgroup-root": o.CgroupRoot, "--kubelet-cgroup-root": o.KubeletCgroupRoot,
		"--cgroup-version": o.CgroupVersion, "--cgroup-driver": o.CgroupDriver, "--proc-root": o.ProcRoot,
	} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	scheme := "https"
	if !o.SecureMetrics {
		scheme = "http"
		args = append(args, "--metrics-secure=false")
	}
	args = append(args, o.Args...)
	a := &Agent{
		Process:    StartProcess(t, "waterline-agent", bin, args...),
		Options:    o,
		HealthURL:  fmt.Sprintf("http://127.0.0.1:%d", health),
		MetricsURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, metrics),
	}
	if !o.NoWait {
		WaitHealthy(t, a.Process, a.HealthURL+"/readyz", 2*time.Minute)
	}
	return a
}

// Metrics returns the /metrics page of an agent started without
// SecureMetrics.
func (a *Agent) Metrics(t testing.TB) string {
	t.Helper()
	if a.Options.SecureMetrics {
		t.Fatal("Agent.Metrics reads plain /metrics; this agent serves it securely: use Scrape with a token")
	}
	resp, err := http.Get(a.MetricsURL + "/metrics")
	if err != nil {
		t.Fatalf("Getting the agent's metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("Reading the agent's metrics: %v", err)
	}
	return string(b)
}

// MetricValue returns the value of the first sample on a /metrics page
// whose name and labels start with series (e.g. `foo{a="b"`), and false
// when there is none.
func MetricValue(page, series string) (float64, bool) {
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, series) {
			continue
		}
		rest := line[len(series):]
		if !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, ",") && !strings.HasPrefix(rest, "}") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// ProcStatus returns a field of /proc/<pid>/status in bytes (for the
// kB-valued ones such as VmRSS and VmHWM).
func ProcStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		fs := strings.Fields(v)
		n, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, err
		}
		if len(fs) > 1 && fs[1] == "kB" {
			n <<= 10
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// PodCgroup is a pod's cgroup (and one container's) made by a test in a
// real cgroup hierarchy for a pod the API server knows, so the agent finds
// it by the pod's UID as it would find kubelet's.
type PodCgroup struct {
	Layout *cgroups.Layout
	// Cgroup and Container are relative to each hierarchy root.
	Cgroup, Container string

	t    testing.TB
	dirs []string
}

// NewPodCgroup creates the cgroup of pod uid of class qos, with one
// container, under layout (whose kubelet cgroup root must exist, e.g. a
// cgroupstest.RealPod's private root), and removes it when the test ends,
// moving any process left inside to the hierarchy root first.
func NewPodCgroup(t testing.TB, layout *cgroups.Layout, uid types.UID, qos corev1.PodQOSClass) *PodCgroup {
	t.Helper()
	p := &PodCgroup{Layout: layout, Cgroup: layout.PodCgroup(uid, qos), t: t}
	p.Container = p.Cgroup + "/0123456789abcdef" + strings.ReplaceAll(string(uid), "-", "")
	t.Cleanup(p.cleanup)
	for _, cg := range []string{p.Cgroup, p.Container} {
		for _, dir := range p.dirsOf(cg) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatalf("Creating cgroup %s: %v", dir, err)
			}
			p.dirs = append(p.dirs, dir)
		}
	}
	return p
}

func (p *PodCgroup) dirsOf(cg string) []string {
	if p.Layout.Version() == cgroups.V2 {
		return []string{p.Layout.Path("", cg)}
	}
	var out []string
	for _, c := range []cgroups.Controller{cgroups.ControllerCPU, cgroups.ControllerCPUAcct, cgroups.ControllerMemory} {
		out = append(out, p.Layout.Path(c, cg))
	}
	return out
}

// AddProcess moves a process into the container cgroup.
func (p *PodCgroup) AddProcess(pid int) {
	p.t.Helper()
	for _, dir := range p.dirsOf(p.Container) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			p.t.Fatalf("Moving pid %d into %s: %v", pid, dir, err)
		}
	}
}

func (p *PodCgroup) cleanup() {
	for i := len(p.dirs) - 1; i >= 0; i-- {
		dir := p.dirs[i]
		root := p.Layout.Root()
		if p.Layout.Version() == cgroups.V1 {
			rel := strings.TrimPrefix(dir, root+"/")
			root = filepath.Join(root, strings.SplitN(rel, "/", 2)[0])
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(pid), 0)
			}
		}
		var err error
		for range 50 {
			if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			p.t.Errorf("Cleanup: removing cgroup %s: %v (remove it by hand)", dir, err)
		}
	}
}

// Workload is a running test/util/workload process.
type Workload struct {
	Cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// StartWorkload starts test/util/workload with args (-burn N, -alloc
// bytes), held before it does anything until Go is called, so the caller
// can move it into a cgroup first. It is killed when the test ends.
func StartWorkload(t testing.TB, args ...string) *Workload {
	t.Helper()
	bin := buildWorkload(t)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("Starting the workload: %v", err)
	}
	w := &Workload{Cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(w.Kill)
	return w
}

// Go lets the workload start its load and waits until it reports ready.
func (w *Workload) Go(t testing.TB) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
		t.Fatalf("Starting the workload's load: %v", err)
	}
	line, err := w.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("Workload did not get ready: %q, %v", line, err)
	}
}

// Kill ends the workload and waits for it.
func (w *Workload) Kill() {
	if w.Cmd.ProcessState != nil {
		return
	}
	_ = w.Cmd.Process.Kill()
	_ = w.Cmd.Wait()
}

// buildWorkload builds test/util/workload into bin/ (under the build lock
// BuildBinary uses).
func buildWorkload(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	out := filepath.Join(BinDir(), "waterline-test-workload")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./test/util/workload")
	cmd.Dir = RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Building the test workload: %v\n%s", err, output)
	}
	return out
}
