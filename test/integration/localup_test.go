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
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// localUp is a running hack/local-up.sh.
type localUp struct {
	dir, kubeconfig, logPath string
	cmd                      *exec.Cmd
	// done is closed when the script has exited, with err its exit.
	done chan struct{}
	err  error
}

// startLocalUp runs hack/local-up.sh as a user would, in its own process
// group (as a terminal gives it), with free ports and the given extra
// environment, and waits until it reports the cluster ready. Whatever
// happens, the test leaves nothing running.
func startLocalUp(t *testing.T, nodes int, env ...string) *localUp {
	t.Helper()
	testutil.BuildBinary(t, "waterline-scheduler")
	l := &localUp{dir: t.TempDir(), done: make(chan struct{})}
	l.kubeconfig = filepath.Join(l.dir, "kubeconfig")
	l.cmd = exec.Command(filepath.Join(testutil.RepoRoot(), "hack", "local-up.sh"))
	l.cmd.Env = append(os.Environ(),
		"LOCAL_UP_DIR="+l.dir,
		"NODES="+strconv.Itoa(nodes),
		"ETCD_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"ETCD_PEER_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"APISERVER_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"KCM_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"SCHEDULER_PORT="+strconv.Itoa(testutil.FreePort(t)),
	)
	// local-up derives the rest from APISERVER_PORT by fixed offsets, and
	// the agent's are fixed: beside other tests' servers and clients, such
	// a port can be taken, and the process that needs it never comes up.
	for _, name := range []string{"WEBHOOK_PORT", "MANAGER_PROBE_PORT", "MANAGER_METRICS_PORT",
		"KUBELET_PORT", "KUBELET_HEALTHZ_PORT", "AGENT_HEALTH_PORT", "AGENT_METRICS_PORT"} {
		l.cmd.Env = append(l.cmd.Env, name+"="+strconv.Itoa(testutil.FreePort(t)))
	}
	l.cmd.Env = append(l.cmd.Env, env...)
	l.logPath = filepath.Join(t.TempDir(), "local-up.log")
	logFile, err := os.Create(l.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	l.cmd.Stdout, l.cmd.Stderr = logFile, logFile
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("Starting local-up: %v", err)
	}
	go func() { l.err = l.cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		// A test that ends early stops the cluster as Ctrl-C does: the
		// script's trap stops the real node's containers, unmounts their
		// volumes and removes their cgroups, which SIGKILL would leave
		// (the pause processes are no process of this directory's).
		select {
		case <-l.done:
		default:
			_ = syscall.Kill(l.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-l.done:
			case <-time.After(2 * time.Minute):
			}
		}
		_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range processesUnder(l.dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			out, _ := os.ReadFile(l.logPath)
			t.Logf("local-up output:\n%s", out)
		}
	})
	ready := filepath.Join(l.dir, "ready")
	testutil.Eventually(t, 3*time.Minute, 500*time.Millisecond, func() (bool, error) {
		select {
		case <-l.done:
			t.Fatalf("local-up exited before the cluster was ready: %v", l.err)
		default:
		}
		_, err := os.Stat(ready)
		return err == nil, err
	}, "waiting for local-up to report the cluster ready")
	return l
}

// kubectl runs bin/kubectl against the local cluster.
func (l *localUp) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	full := append([]string{"--kubeconfig", l.kubeconfig}, args...)
	o, err := exec.Command(filepath.Join(testutil.BinDir(), "kubectl"), full...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, o)
	}
	return string(o)
}

// apply applies a manifest given inline.
func (l *localUp) apply(t *testing.T, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	l.kubectl(t, "apply", "-f", f)
}

// TestLocalUp runs `make local-up`'s script as a user would, checks the
// cluster it prints works (nodes Ready, a pod for waterline-scheduler placed
// on a fake node), presses Ctrl-C, and checks that no process it started is
// left behind.
func TestLocalUp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: skipping the local-up end-to-end run")
	}
	const nodes = 20
	l := startLocalUp(t, nodes)

	out, _ := os.ReadFile(l.logPath)
	if !strings.Contains(string(out), "export KUBECONFIG="+l.kubeconfig) {
		t.Errorf("local-up did not print the kubeconfig to use:\n%s", out)
	}
	readyNodes := 0
	for line := range strings.Lines(l.kubectl(t, "get", "nodes", "--no-headers")) {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "Ready" {
			readyNodes++
		}
	}
	want := nodes
	if strings.Contains(string(out), "and the real node real-node") {
		want++ // where the machine allows, local-up adds one real node
	}
	if readyNodes != want {
		t.Errorf("kubectl get nodes shows %d Ready nodes, want %d", readyNodes, want)
	}
	for _, crd := range []string{"nodemetrics.waterline.dev", "nodeqoses.waterline.dev", "colocationpolicies.waterline.dev"} {
		l.kubectl(t, "get", "crd", crd)
	}

	// waterline-scheduler places a pod that asks for it.
	l.apply(t, `apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  schedulerName: waterline-scheduler
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
`)
	testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
		o := l.kubectl(t, "get", "pod", "hello", "-o", "jsonpath={.spec.nodeName} {.status.phase}")
		f := strings.Fields(o)
		if len(f) == 2 && strings.HasPrefix(f[0], "kwok-node-") && f[1] == "Running" {
			return true, nil
		}
		return false, fmt.Errorf("pod is %q", o)
	}, "waiting for waterline-scheduler to place the pod on a kwok node")

	// The README's walkthrough, as a user pastes it.
	realNode := want > nodes
	l.walkThroughREADME(t, realNode)

	// waterline check finds the local cluster working: the manager and
	// the agent (pods on the real node, or a process and none without
	// one), the kwok nodes' simulated agents and the real node's agent
	// reporting, the webhooks (by URL here).
	check, err := exec.Command(testutil.BuildBinary(t, "waterline"), "check", "--kubeconfig", l.kubeconfig, "--manager-lease=").CombinedOutput()
	if err != nil {
		t.Errorf("waterline check against the local cluster: %v\n%s", err, check)
	} else {
		t.Logf("waterline check:\n%s", check)
	}

	before := processesUnder(l.dir)
	if len(before) < 5 {
		t.Errorf("found %d processes of the local cluster, want at least etcd, apiserver, controller-manager, kwok, scheduler", len(before))
	}
	// Ctrl-C.
	if err := syscall.Kill(-l.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("Sending SIGINT: %v", err)
	}
	select {
	case <-l.done:
		err := l.err
		// The script's trap stops the cluster and exits 130, as bash does
		// on SIGINT; the cluster's processes, in sessions of their own, did
		// not take the signal, so none "exited" on its own before that.
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Errorf("local-up exited after Ctrl-C with %v, want exit status 130", err)
		}
		out, _ := os.ReadFile(l.logPath)
		tail := string(out)
		if i := strings.LastIndex(tail, "Press Ctrl-C"); i >= 0 {
			tail = tail[i:]
		}
		if strings.Contains(tail, "exited; see") || !strings.Contains(tail, "Stopped") {
			t.Errorf("local-up's output after Ctrl-C, want only that it stopped:\n%s", tail)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("local-up did not exit within 90s of Ctrl-C")
	}
	if left := processesUnder(l.dir); len(left) > 0 {
		t.Errorf("processes left behind after Ctrl-C: %v", left)
	}
}

// walkThroughREADME runs the shell blocks of README.md's "Watch
// colocation in `make local-up`", in order, each as a user pastes it into a
// terminal at the repository root (KUBECONFIG exported, bin/ on the PATH;
// `go run ./cmd/waterline` is the built binary), and checks what the text
// says they show: the Batch burner runs on the real node as a Batch pod of
// waterline-scheduler (or waits while the busy node forbids Batch pods),
// the fake Batch pod lands on a kwok node asking for
// batch-cpu, and every kwok node running the Prod Deployment's pods sells
// Mid CPU a few minutes later. Without a real node the commands that name
// it, and those about the burner it would run, are left out.
func (l *localUp) walkThroughREADME(t *testing.T, realNode bool) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Watch colocation in `make local-up`\n")
	if !ok {
		t.Fatal("README.md has no section \"Watch colocation in `make local-up`\"")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	if end := strings.Index(section, "\n### "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```sh\n")
		if !ok {
			break
		}
		block, after, ok := strings.Cut(rest, "\n```")
		if !ok {
			t.Fatal("README.md: a shell block of the walkthrough is not closed")
		}
		blocks, section = append(blocks, block), after
	}
	if len(blocks) != 3 {
		t.Fatalf("README.md's walkthrough has %d shell blocks, want the three this test checks (first commands, kwok Batch pod, Prod Deployment)", len(blocks))
	}
	waterline := testutil.BuildBinary(t, "waterline")
	run := func(block string) {
		t.Helper()
		script := strings.ReplaceAll(block, "_output/local-up/kubeconfig", l.kubeconfig)
		script = strings.ReplaceAll(script, "go run ./cmd/waterline", waterline)
		if !realNode {
			var kept []string
			for _, command := range strings.SplitAfter(strings.ReplaceAll(script, "\\\n", "\x00"), "\n") {
				if !strings.Contains(command, "real-node") && !strings.Contains(command, "pod burn") {
					kept = append(kept, command)
				}
			}
			script = strings.ReplaceAll(strings.Join(kept, ""), "\x00", "\\\n")
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = testutil.RepoRoot()
		cmd.Env = append(os.Environ(), "KUBECONFIG="+l.kubeconfig, "PATH="+testutil.BinDir()+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README.md's walkthrough block failed: %v\n--- block:\n%s\n--- output:\n%s", err, script, out)
		}
		t.Logf("README.md's walkthrough block:\n%s\n--- output:\n%s", script, out)
	}

	run(blocks[0])
	if realNode {
		// The burner is a Batch pod of waterline-scheduler. It runs (the
		// busybox image's command is replaced by kubectl run's arguments),
		// or, as the README says of a busy machine (the real node's usage
		// is the whole machine's, other tests included), stays Pending
		// because the node forbids Batch pods.
		const forbidden = "forbid scheduling of batch and free pods"
		var since time.Time
		testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
			o := l.kubectl(t, "-n", "jobs", "get", "pod", "burn", "-o",
				"jsonpath={.spec.priorityClassName} {.spec.schedulerName} {.status.phase} {.status.containerStatuses[0].restartCount}")
			if strings.HasPrefix(o, "waterline-batch waterline-scheduler Pending") {
				why := l.kubectl(t, "-n", "jobs", "get", "pod", "burn", "-o", `jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}`)
				if strings.Contains(why, forbidden) {
					t.Logf("The README's burner is Pending on a busy machine, as the README says: %s", why)
					return true, nil
				}
			}
			if o != "waterline-batch waterline-scheduler Running 0" {
				since = time.Time{}
				return false, fmt.Errorf("the README's burner: class, scheduler, phase, restarts %q", o)
			}
			if since.IsZero() {
				since = time.Now()
			}
			return time.Since(since) > 5*time.Second, fmt.Errorf("running for %v", time.Since(since))
		}, "waiting for the README's burner to run for 5 s, or to wait for a node that does not forbid Batch pods")
		// It burns a core: not beside the other tests' measurements.
		l.kubectl(t, "-n", "jobs", "delete", "pod", "burn", "--grace-period=1")
	}

	run(blocks[1])
	testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
		o := l.kubectl(t, "-n", "jobs", "get", "pod", "fake", "-o",
			`jsonpath={.spec.nodeName} {.status.phase} {.spec.containers[0].resources.requests.waterline\.dev/batch-cpu}`)
		f := strings.Fields(o)
		if len(f) == 3 && strings.HasPrefix(f[0], "kwok-node-") && f[1] == "Running" {
			if q, err := resource.ParseQuantity(f[2]); err == nil && q.Value() == 2000 {
				return true, nil
			}
		}
		return false, fmt.Errorf("the README's kwok Batch pod: node, phase, batch-cpu %q", o)
	}, "waiting for the README's Batch pod to run on a kwok node asking for 2000 batch-cpu")

	run(blocks[2])
	start := time.Now()
	testutil.Eventually(t, 8*time.Minute, 5*time.Second, func() (bool, error) {
		pods := l.kubectl(t, "get", "pods", "-l", "app=web", "--field-selector", "status.phase=Running", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}")
		mid := map[string]string{}
		for line := range strings.Lines(l.kubectl(t, "get", "nodes", "-l", "type=kwok", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.allocatable.waterline\.dev/mid-cpu}{"\n"}{end}`)) {
			if f := strings.Fields(line); len(f) == 2 {
				mid[f[0]] = f[1]
			}
		}
		var without []string
		nodesWithWeb := map[string]bool{}
		for node := range strings.Lines(pods) {
			node = strings.TrimSpace(node)
			if node == "" || nodesWithWeb[node] {
				continue
			}
			nodesWithWeb[node] = true
			if q, err := resource.ParseQuantity(mid[node]); err != nil || q.Sign() <= 0 {
				without = append(without, node+"="+mid[node])
			}
		}
		if len(nodesWithWeb) == 0 {
			return false, errors.New("no web pod is running")
		}
		return len(without) == 0, fmt.Errorf("%d of %d kwok nodes running web pods sell no Mid CPU: %v", len(without), len(nodesWithWeb), without)
	}, "waiting for every kwok node running the README's Prod Deployment to sell Mid CPU")
	t.Logf("Every kwok node running the README's Prod pods sold Mid CPU %v after the Deployment was applied", time.Since(start).Round(time.Second))
}

// TestAuditAgainstLocalUp runs `waterline audit preemption` against a
// local-up cluster started with preemption disabled, as the rollout in
// config/priorityclasses/README.md does, with a prepared mix of pods: a
// node filled by two Batch pods, the others by Prod pods, and a pending
// Prod pod that fits only by evicting both Batch pods. The audit must name
// exactly those two as its victims.
func TestAuditAgainstLocalUp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: skipping the local-up end-to-end run")
	}
	waterline := testutil.BuildBinary(t, "waterline")
	// The audit needs the control plane and scheduler only: no real node
	// (TestLocalUp runs local-up with one where the machine allows).
	l := startLocalUp(t, 3, "PREEMPTION=disabled", "NODE_CPU=4", "NODE_MEMORY=16Gi", "REAL_NODE=no")
	l.kubectl(t, "apply", "-f", filepath.Join(testutil.RepoRoot(), "config", "priorityclasses", "priorityclasses.yaml"))

	pod := func(name, class, node, cpu string) string {
		nodeName := ""
		if node != "" {
			nodeName = "\n  nodeName: " + node
		}
		return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  schedulerName: waterline-scheduler
  priorityClassName: %s%s
  containers: [{name: c, image: busybox, resources: {requests: {cpu: %q, memory: 1Gi}}}]
`, name, class, nodeName, cpu)
	}
	// kwok-node-0: two Batch pods, 2 + 2 = 4 CPU, full. kwok-node-1 and -2:
	// one Prod pod of 4 CPU each, full. The Prod pod asking 3 CPU fits
	// nowhere; on kwok-node-0 it needs 3 of 4 CPU, so one Batch pod (2)
	// is not enough: both go.
	l.apply(t, pod("batch-a", "waterline-batch", "kwok-node-0", "2")+
		pod("batch-b", "waterline-batch", "kwok-node-0", "2")+
		pod("prod-1", "waterline-prod", "kwok-node-1", "4")+
		pod("prod-2", "waterline-prod", "kwok-node-2", "4"))
	for _, name := range []string{"batch-a", "batch-b", "prod-1", "prod-2"} {
		testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
			phase := l.kubectl(t, "get", "pod", name, "-o", "jsonpath={.status.phase}")
			return phase == "Running", fmt.Errorf("phase %q", phase)
		}, "waiting for %s to run", name)
	}
	l.apply(t, pod("prod-pending", "waterline-prod", "", "3"))
	testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
		o := l.kubectl(t, "get", "pod", "prod-pending", "-o", `jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}`)
		return o == "Unschedulable", fmt.Errorf("PodScheduled reason %q", o)
	}, "waiting for prod-pending to be found unschedulable")

	out, err := exec.Command(waterline, "audit", "preemption", "--kubeconfig", l.kubeconfig, "-o", "json").Output()
	if err != nil {
		t.Fatalf("waterline audit preemption: %v\n%s", err, out)
	}
	var report struct {
		DryRun []struct {
			Pod     struct{ Namespace, Name string }
			Outcome string
			Node    string
			Victims []struct{ Namespace, Name string }
		} `json:"dryRun"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("audit JSON: %v\n%s", err, out)
	}
	type finding struct {
		Pod, Outcome, Node string
		Victims            []string
	}
	var got []finding
	for _, d := range report.DryRun {
		f := finding{Pod: d.Pod.Namespace + "/" + d.Pod.Name, Outcome: d.Outcome, Node: d.Node}
		for _, v := range d.Victims {
			f.Victims = append(f.Victims, v.Namespace+"/"+v.Name)
		}
		got = append(got, f)
	}
	// Victims come most important first: same priority here, so the one
	// that started first, then by name (pkg/core/preemption). kwok may start
	// batch-b a second before batch-a; the order follows what it did.
	victims := []string{"default/batch-a", "default/batch-b"}
	startA := l.kubectl(t, "get", "pod", "batch-a", "-o", "jsonpath={.status.startTime}")
	startB := l.kubectl(t, "get", "pod", "batch-b", "-o", "jsonpath={.status.startTime}")
	if ta, tb := mustTime(t, startA), mustTime(t, startB); tb.Before(ta) {
		victims = []string{"default/batch-b", "default/batch-a"}
	}
	want := []finding{{Pod: "default/prod-pending", Outcome: "Preempts", Node: "kwok-node-0", Victims: victims}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit dry run (-want +got):\n%s\nfull report:\n%s", diff, out)
	}
	// The audit only reads: with preemption disabled nothing was evicted.
	for _, name := range []string{"batch-a", "batch-b"} {
		if phase := l.kubectl(t, "get", "pod", name, "-o", "jsonpath={.status.phase}"); phase != "Running" {
			t.Errorf("%s is %q after the audit, want Running", name, phase)
		}
	}

	// Without a real node local-up runs the manager as a process and gives
	// it the chart's webhook configurations by URL (TestLocalUp checks the
	// real node's way where the machine has one): waterline check finds
	// the installation working, and the API server reaches the process's
	// webhook server through the probe's configuration.
	check, err := exec.Command(waterline, "check", "--kubeconfig", l.kubeconfig, "--manager-lease=").CombinedOutput()
	if err != nil {
		t.Errorf("waterline check against local-up without a real node: %v\n%s", err, check)
	} else {
		t.Logf("waterline check:\n%s", check)
	}
	if !strings.Contains(string(check), "the API server reached the manager's webhook server") {
		t.Errorf("waterline check against local-up without a real node did not reach the manager's webhook server:\n%s", check)
	}
}

// mustTime parses an RFC 3339 time kubectl printed.
func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parsing start time %q: %v", s, err)
	}
	return v
}

// processesUnder returns the pids of processes whose command line mentions
// dir (every process local-up starts is given paths inside its directory).
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), dir) && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func isZombie(pid int) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "State:"); ok {
			return strings.Contains(v, "Z")
		}
	}
	return false
}
