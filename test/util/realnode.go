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
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/hack/image/imagetar"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// RealNode is a real Kubernetes node on this machine: containerd (its own
// config, root, state and socket) and kubelet registered with the test's
// API server. Pods bound to it run for real, hostNetwork only (there is no
// pod network), in cgroups kubelet makes under CgroupRoot.
type RealNode struct {
	// Name is the node's name.
	Name string
	// Dir holds containerd's and kubelet's state, configs and logs:
	// <TMPDIR>/waterline-node-<suffix>, with the owner lock that tells a
	// later sweep whether the node still lives (see SweepRealNodes).
	Dir string
	// ContainerdSocket is containerd's gRPC socket.
	ContainerdSocket string
	// CgroupRoot is kubelet's --cgroup-root (kubepods lives under it), a
	// private one per node so nothing else on the machine is touched,
	// named as Dir (/waterline-node-<suffix>): pass it to the agent as
	// --kubelet-cgroup-root.
	CgroupRoot string
	// CgroupMount is where the cgroup filesystem is mounted (/sys/fs/cgroup).
	CgroupMount string
	// StartupTime is how long containerd + kubelet took to a Ready node
	// with the images imported.
	StartupTime time.Duration

	c          *Cluster
	containerd *Process
	kubelet    *Process
	cleanOnce  sync.Once
	// lock is the node's owner lock (see SweepRealNodes), held until Stop
	// has cleaned everything.
	lock *os.File
	// layout is the node's cgroup layout, made on first use.
	layoutOnce sync.Once
	layout     *cgroups.Layout
	layoutErr  error
}

// Images imported into every real node, by the references pods use: the
// container runtime adds its default registry to a reference without one,
// on import and on lookup alike, so no registry is named.
const (
	BusyboxImage = imagetar.BusyboxImage
	PauseImage   = imagetar.PauseImage
)

const cgroupMount = "/sys/fs/cgroup"

// RealNodeUnsupported returns why this machine cannot run a real node, or
// "" when it can: it needs root, containerd, ctr, runc and the runc shim on
// PATH, bin/kubelet (make tools), a static busybox for the test images and
// a cgroup v1 cpu hierarchy or cgroup v2.
func RealNodeUnsupported() string {
	if os.Geteuid() != 0 {
		return "a real node needs root (kubelet and containerd manage cgroups and mounts)"
	}
	var missing []string
	for _, b := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s not on PATH (Debian: apt-get install containerd runc; make test-deps does it where root may)", strings.Join(missing, ", "))
	}
	if _, err := toolPath("kubelet"); err != nil {
		return err.Error()
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		return "/bin/busybox (a static busybox for the test images) is missing (Debian: apt-get install busybox-static)"
	}
	if _, err := os.Stat(filepath.Join(cgroupMount, "cpu", "cpu.shares")); err != nil {
		if _, err2 := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err2 != nil {
			return "no cgroup v1 cpu hierarchy nor cgroup v2 at " + cgroupMount
		}
	}
	return ""
}

// SkipUnlessRealNode skips the test, loudly, where RealNodeUnsupported
// says the machine cannot run a real node.
func SkipUnlessRealNode(t testing.TB) {
	t.Helper()
	if why := RealNodeUnsupported(); why != "" {
		t.Skipf("SKIP real-node test: %s", why)
	}
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// cgroupV1Hierarchies are the mounted v1 hierarchies kubelet uses, by the
// directory name under /sys/fs/cgroup; nil on cgroup v2.
func cgroupV1Hierarchies() []string {
	if _, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		return nil
	}
	var out []string
	for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "blkio", "devices", "freezer", "systemd", "unified"} {
		if st, err := os.Stat(filepath.Join(cgroupMount, h)); err == nil && st.IsDir() {
			if _, err := os.Stat(filepath.Join(cgroupMount, h, "cgroup.procs")); err == nil {
				out = append(out, h)
			}
		}
	}
	return out
}

// cgroupDirs are the directories of cgroup cg in every hierarchy.
func cgroupDirs(cg string) []string {
	hs := cgroupV1Hierarchies()
	if hs == nil {
		return []string{filepath.Join(cgroupMount, cg)}
	}
	var out []string
	for _, h := range hs {
		out = append(out, filepath.Join(cgroupMount, h, cg))
	}
	return out
}

// StartRealNode starts containerd and kubelet for a node named after
// prefix, imports the busybox, pause, agent, manager and CLI images, and returns once the
// node is Ready. The test's cleanup stops everything (see Stop). The
// cluster must allow pods with a ServiceAccount token only if the test
// needs one.
//
// Before it starts, it sweeps what real nodes of dead test runs left on
// the machine (SweepRealNodes): a test binary killed with SIGKILL cannot
// stop its node.
func (c *Cluster) StartRealNode(t testing.TB, prefix string) *RealNode {
	t.Helper()
	SkipUnlessRealNode(t)
	start := time.Now()
	if err := SweepRealNodes(t.Logf); err != nil {
		t.Errorf("Sweeping what earlier real nodes left: %v", err)
	}
	suffix := randomSuffix()
	dir, lock, err := createNodeDir(nodeBaseDir(), suffix)
	if err != nil {
		t.Fatalf("Creating the real node's directory: %v", err)
	}
	n := &RealNode{
		Name:             prefix + "-" + suffix,
		Dir:              dir,
		ContainerdSocket: filepath.Join(dir, "containerd.sock"),
		CgroupRoot:       nodeCgroupRoot(dir),
		CgroupMount:      cgroupMount,
		c:                c,
		lock:             lock,
	}
	t.Cleanup(func() { n.Stop(t) })

	// Images first: building the agent is the slow part, and it needs no
	// running node.
	ctx := context.Background()
	images, err := imagetar.BuildSet(ctx, imagetar.SetOptions{
		RepoRoot: RepoRoot(), OutDir: filepath.Join(BinDir(), "images"), Binaries: []string{"waterline", "waterline-agent", "waterline-manager"},
	})
	if err != nil {
		t.Fatalf("Building the node's images: %v", err)
	}

	if err := n.makeCgroupRoot(); err != nil {
		t.Fatalf("Creating kubelet's cgroup root %s: %v", n.CgroupRoot, err)
	}
	n.startContainerd(t)
	for _, img := range images {
		if err := imagetar.Import(ctx, n.ContainerdSocket, "k8s.io", img.Tarball); err != nil {
			t.Fatal(err)
		}
	}
	n.startKubelet(t)
	Eventually(t, 2*time.Minute, 500*time.Millisecond, func() (bool, error) {
		if exited, err := n.kubelet.Exited(); exited {
			t.Fatalf("kubelet exited: %v", err)
		}
		node, err := c.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return NodeReady(node), nil
	}, "waiting for the real node %s to be Ready", n.Name)
	n.StartupTime = time.Since(start)
	t.Logf("Real node %s Ready in %v (containerd + kubelet, images imported; state in %s)", n.Name, n.StartupTime.Round(100*time.Millisecond), dir)
	return n
}

func (n *RealNode) makeCgroupRoot() error {
	for _, d := range cgroupDirs(n.CgroupRoot) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		// A new v1 cpuset has no CPUs or memory nodes: copy the parent's.
		if filepath.Base(filepath.Dir(d)) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), v, 0); err != nil {
					return fmt.Errorf("%s/%s: %w", d, f, err)
				}
			}
		}
	}
	return nil
}

func (n *RealNode) startContainerd(t testing.TB) {
	t.Helper()
	for _, d := range []string{"root", "state", "cni"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Without a CNI config containerd reports the network not ready and
	// kubelet keeps the node NotReady. There is no pod network here: a
	// loopback-only config makes the node Ready, and pods run with
	// hostNetwork (CNI is never called for them).
	if err := os.WriteFile(filepath.Join(n.Dir, "cni", "10-loopback.conflist"),
		[]byte(`{"cniVersion": "0.4.0", "name": "waterline-no-pod-network", "plugins": [{"type": "loopback"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = %q
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  # This VM does not let a process lower its oom_score_adj: without this
  # every sandbox fails in runc ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  sandbox_image = %q
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
`, filepath.Join(n.Dir, "root"), filepath.Join(n.Dir, "state"), n.ContainerdSocket,
		n.ContainerdSocket+".ttrpc", filepath.Join(n.Dir, "debug.sock"), PauseImage, filepath.Join(n.Dir, "cni"))
	path := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, _ := exec.LookPath("containerd")
	n.containerd = startProcessIn(t, n.Dir, "containerd", bin, "--config", path)
	Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		if exited, err := n.containerd.Exited(); exited {
			t.Fatalf("containerd exited: %v", err)
		}
		out, err := n.ctr("version")
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, out)
		}
		return true, nil
	}, "waiting for containerd at %s", n.ContainerdSocket)
}

func (n *RealNode) startKubelet(t testing.TB) {
	t.Helper()
	kubeletDir := filepath.Join(n.Dir, "kubelet")
	for _, d := range []string{kubeletDir, filepath.Join(n.Dir, "kubelet-certs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %q
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://%s
# Test only: nothing but this machine reaches the kubelet, on loopback.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
failSwapOn: false
resolvConf: ""
syncFrequency: 10s
nodeStatusUpdateFrequency: 5s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Other work on a shared machine must not make kubelet evict test pods:
# eviction is the agent's business here.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
serializeImagePulls: false
`, n.CgroupRoot, n.ContainerdSocket, FreePort(t), FreePort(t))
	path := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, _ := toolPath("kubelet")
	n.kubelet = startProcessIn(t, n.Dir, "kubelet", bin,
		"--kubeconfig", n.c.Kubeconfig,
		"--config", path,
		"--root-dir", kubeletDir,
		"--cert-dir", filepath.Join(n.Dir, "kubelet-certs"),
		"--hostname-override", n.Name,
		"--node-labels", "waterline.dev/real-node=true",
		"--v", "2")
}

// startProcessIn is StartProcess logging into dir (kept until Stop) and
// stopped by Stop rather than by the test's cleanup, which runs later.
func startProcessIn(t testing.TB, dir, name, path string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("Starting %s (%s): %v", name, path, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p
}

func (n *RealNode) ctr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.ContainerdSocket, "-n", "k8s.io"}, args...)...).CombinedOutput()
	return string(out), err
}

// PodCgroup is the cgroup kubelet made for pod (relative to a hierarchy
// root, e.g. /waterline-node-x/kubepods/burstable/pod<uid>).
func (n *RealNode) PodCgroup(pod *corev1.Pod) string {
	uid := string(pod.UID)
	switch pod.Status.QOSClass {
	case corev1.PodQOSGuaranteed:
		return filepath.Join(n.CgroupRoot, "kubepods", "pod"+uid)
	case corev1.PodQOSBestEffort:
		return filepath.Join(n.CgroupRoot, "kubepods", "besteffort", "pod"+uid)
	default:
		return filepath.Join(n.CgroupRoot, "kubepods", "burstable", "pod"+uid)
	}
}

// ReadCgroup reads file (e.g. cpu.cfs_quota_us) of cgroup cg in the v1
// hierarchy controller ("" on cgroup v2), trimmed.
func (n *RealNode) ReadCgroup(controller, cg, file string) (string, error) {
	p := filepath.Join(n.CgroupMount, controller, cg, file)
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadCgroupInt is ReadCgroup parsed as an integer.
func (n *RealNode) ReadCgroupInt(controller, cg, file string) (int64, error) {
	s, err := n.ReadCgroup(controller, cg, file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// Stop ends everything the node started, whatever state it is in: kubelet
// (so it restarts nothing), every container and sandbox through
// containerd, containerd, then every process still of the node (shims,
// which outlive containerd, and pod processes whose shim is gone), the
// mounts under Dir, the cgroups under CgroupRoot, and the pod logs kubelet
// wrote to /var/log/pods. It reports what it could not clean as test
// errors and then keeps Dir, so that the next SweepRealNodes tries again.
// Safe to call twice.
func (n *RealNode) Stop(t testing.TB) {
	n.cleanOnce.Do(func() {
		defer func() {
			if n.lock != nil {
				_ = n.lock.Close()
			}
		}()
		if t.Failed() {
			for _, p := range []*Process{n.kubelet, n.containerd} {
				if p != nil {
					dumpLog(t, p.Name, p.LogPath)
				}
			}
		}
		uids := n.podUIDs()
		if n.kubelet != nil {
			n.kubelet.Stop()
		}
		if n.containerd != nil {
			if exited, _ := n.containerd.Exited(); !exited {
				n.killContainers(t)
			}
			n.containerd.Stop()
		}
		if killed, err := killNodeProcesses(n.Dir, n.ContainerdSocket, n.CgroupRoot); err != nil {
			t.Errorf("Cleanup of real node %s: %v", n.Name, err)
		} else if killed > 0 {
			t.Logf("Cleanup of real node %s: killed %d processes containerd left (shims, pod processes)", n.Name, killed)
		}
		clean := true
		if err := unmountUnder(n.Dir); err != nil {
			t.Errorf("Cleanup of real node %s: %v", n.Name, err)
			clean = false
		}
		if err := removeCgroupTree(n.CgroupRoot); err != nil {
			t.Errorf("Cleanup of real node %s: %v", n.Name, err)
			clean = false
		}
		removePodLogs(append(uids, podUIDsIn(n.Dir)...))
		if t.Failed() && os.Getenv("WATERLINE_KEEP_NODE_DIR") != "" {
			t.Logf("Keeping the real node's directory %s (WATERLINE_KEEP_NODE_DIR); the next real node's start removes it", n.Dir)
			return
		}
		if !clean {
			t.Logf("Keeping the real node's directory %s: the next real node's start sweeps it again", n.Dir)
			return
		}
		if err := os.RemoveAll(n.Dir); err != nil {
			t.Errorf("Cleanup of real node %s: removing %s: %v", n.Name, n.Dir, err)
		}
	})
}

// KillUncleanly SIGKILLs kubelet and containerd at once, as the death of a
// test binary does (their Pdeathsig), and leaves everything they started
// as that death leaves it: the shims and the pods' processes running, the
// mounts under Dir, the cgroups under CgroupRoot. Stop then does nothing.
// The owner lock is kept until release is called, which drops it as the
// dying process would: from then on the next StartRealNode (or
// SweepRealNodes), in this test binary or another, finds the node dead and
// sweeps it. For testing the sweep.
func (n *RealNode) KillUncleanly() (release func()) {
	n.cleanOnce.Do(func() {
		for _, p := range []*Process{n.kubelet, n.containerd} {
			if p != nil {
				p.Kill()
			}
		}
	})
	return func() {
		if n.lock != nil {
			_ = n.lock.Close()
		}
	}
}

// podUIDs are the UIDs of the pods the API server has on the node, for
// removing their logs; best effort, the API server may be gone.
func (n *RealNode) podUIDs() []string {
	if n.c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pods, err := n.c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, string(p.UID))
	}
	return out
}

// killContainers kills and deletes every task and container in
// containerd's k8s.io namespace (pod containers and sandboxes).
func (n *RealNode) killContainers(t testing.TB) {
	out, err := n.ctr("tasks", "ls", "-q")
	if err != nil {
		t.Logf("Cleanup: listing containerd tasks: %v: %s", err, out)
	}
	tasks := strings.Fields(out)
	for _, id := range tasks {
		_, _ = n.ctr("tasks", "kill", "-a", "-s", "SIGKILL", id)
	}
	for _, id := range tasks {
		for range 50 {
			if o, err := n.ctr("tasks", "delete", "-f", id); err == nil || strings.Contains(o, "not found") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	out, _ = n.ctr("containers", "ls", "-q")
	for _, id := range strings.Fields(out) {
		_, _ = n.ctr("containers", "delete", id)
	}
}

// removePodLogs removes what kubelet wrote to /var/log/pods and
// /var/log/containers for the pods with these UIDs (kubelet puts them
// there whatever its root dir).
func removePodLogs(uids []string) {
	for _, uid := range uids {
		matches, _ := filepath.Glob("/var/log/pods/*_" + uid)
		for _, m := range matches {
			_ = os.RemoveAll(m)
		}
	}
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if _, err := os.Stat(l); errors.Is(err, os.ErrNotExist) {
			_ = os.Remove(l) // a link into a removed pod log directory
		}
	}
}

// DeletePodsAndWait deletes the pods of namespace on the node at once
// (grace period 0) and waits until kubelet has stopped their containers.
func (n *RealNode) DeletePodsAndWait(t testing.TB, namespace string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	pods, err := n.c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		err := n.c.Kube.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	Eventually(t, timeout, 500*time.Millisecond, func() (bool, error) {
		for _, p := range pods.Items {
			for _, d := range cgroupDirs(n.PodCgroup(&p)) {
				if _, err := os.Stat(d); err == nil {
					return false, fmt.Errorf("cgroup %s still there", d)
				}
			}
		}
		return true, nil
	}, "waiting for kubelet to stop the pods of %s", namespace)
}
