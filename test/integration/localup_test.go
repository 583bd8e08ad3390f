package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestLocalUp runs `make local-up`'s script as a user would, checks the
// cluster it prints works (nodes Ready, a pod for waterline-scheduler placed
// on a fake node), presses Ctrl-C, and checks that no process it started is
// left behind.
func TestLocalUp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: skipping the local-up end-to-end run")
	}
	testutil.BuildBinary(t, "waterline-scheduler")
	dir := t.TempDir()
	const nodes = 20
	cmd := exec.Command(filepath.Join(testutil.RepoRoot(), "hack", "local-up.sh"))
	cmd.Env = append(os.Environ(),
		"LOCAL_UP_DIR="+dir,
		"NODES="+strconv.Itoa(nodes),
		"ETCD_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"ETCD_PEER_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"APISERVER_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"KCM_PORT="+strconv.Itoa(testutil.FreePort(t)),
		"SCHEDULER_PORT="+strconv.Itoa(testutil.FreePort(t)),
	)
	logPath := filepath.Join(t.TempDir(), "local-up.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, as a terminal would give it; Ctrl-C is SIGINT
	// to that group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("Starting local-up: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Whatever happened, leave nothing running.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range processesUnder(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("local-up output:\n%s", out)
		}
	})

	ready := filepath.Join(dir, "ready")
	testutil.Eventually(t, 3*time.Minute, 500*time.Millisecond, func() (bool, error) {
		select {
		case err := <-exited:
			t.Fatalf("local-up exited before the cluster was ready: %v", err)
		default:
		}
		_, err := os.Stat(ready)
		return err == nil, err
	}, "waiting for local-up to report the cluster ready")

	out, _ := os.ReadFile(logPath)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if !strings.Contains(string(out), "export KUBECONFIG="+kubeconfig) {
		t.Errorf("local-up did not print the kubeconfig to use:\n%s", out)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		full := append([]string{"--kubeconfig", kubeconfig}, args...)
		o, err := exec.Command(filepath.Join(testutil.BinDir(), "kubectl"), full...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return string(o)
	}
	readyNodes := 0
	for line := range strings.Lines(kubectl("get", "nodes", "--no-headers")) {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "Ready" {
			readyNodes++
		}
	}
	if readyNodes != nodes {
		t.Errorf("kubectl get nodes shows %d Ready nodes, want %d", readyNodes, nodes)
	}
	for _, crd := range []string{"nodemetrics.waterline.dev", "nodeqoses.waterline.dev", "colocationpolicies.waterline.dev"} {
		kubectl("get", "crd", crd)
	}

	// waterline-scheduler places a pod that asks for it.
	podYAML := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(podYAML, []byte(`apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  schedulerName: waterline-scheduler
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl("apply", "-f", podYAML)
	testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
		o := kubectl("get", "pod", "hello", "-o", "jsonpath={.spec.nodeName} {.status.phase}")
		f := strings.Fields(o)
		if len(f) == 2 && strings.HasPrefix(f[0], "kwok-node-") && f[1] == "Running" {
			return true, nil
		}
		return false, fmt.Errorf("pod is %q", o)
	}, "waiting for waterline-scheduler to place the pod on a kwok node")

	before := processesUnder(dir)
	if len(before) < 5 {
		t.Errorf("found %d processes of the local cluster, want at least etcd, apiserver, controller-manager, kwok, scheduler", len(before))
	}
	// Ctrl-C.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("Sending SIGINT: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(90 * time.Second):
		t.Fatal("local-up did not exit within 90s of Ctrl-C")
	}
	if left := processesUnder(dir); len(left) > 0 {
		t.Errorf("processes left behind after Ctrl-C: %v", left)
	}
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
