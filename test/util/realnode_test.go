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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

// startReferencing starts a waiting process whose command line names
// path (a file it creates), as kubelet's and containerd's name their
// node's directory.
func startReferencing(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("tail", "-f", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd
}

func alive(cmd *exec.Cmd) bool {
	return cmd.Process.Signal(syscall.Signal(0)) == nil && !isZombie(cmd.Process.Pid)
}

// TestSweepRealNodes: the sweep removes a node whose owner died (its
// processes killed, what is mounted under it unmounted first, the
// directory gone), and leaves alone a node whose owner lives and a
// directory of the same name pattern without the harness's owner lock.
func TestSweepRealNodes(t *testing.T) {
	base := t.TempDir()
	// Suffixes no real node has: their cgroup roots do not exist.
	suffix := randomSuffix() + "-sweeptest"

	live, liveLock, err := createNodeDir(base, "live-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	defer liveLock.Close()
	liveProc := startReferencing(t, filepath.Join(live, "kubelet"))

	dead, deadLock, err := createNodeDir(base, "dead-"+suffix)
	if err != nil {
		t.Fatal(err)
	}
	deadLock.Close() // the owner died
	deadProc := startReferencing(t, filepath.Join(dead, "containerd.toml"))
	shim := startReferencing(t, filepath.Join(dead, "containerd.sock"))

	foreign := filepath.Join(base, nodeNamePrefix+"foreign-"+suffix)
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	foreignProc := startReferencing(t, filepath.Join(foreign, "x"))

	// A node directory whose owner died while creating it.
	staging := filepath.Join(base, "."+nodeNamePrefix+"staging-"+suffix+stagingSuffix)
	if err := os.Mkdir(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staging, ownerLockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// Mounts under the dead node, one inside the other, as kubelet's
	// volumes sit inside its shared root-dir bind mount.
	mounted := false
	if os.Geteuid() == 0 {
		outer := filepath.Join(dead, "kubelet")
		inner := filepath.Join(outer, "pods", "uid-1", "volumes", "kube-api-access")
		if err := os.MkdirAll(outer, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", outer, "tmpfs", 0, "size=1m"); err != nil {
			t.Logf("Not testing mounts: mounting a tmpfs: %v", err)
		} else {
			mounted = true
			t.Cleanup(func() { _ = unmountUnder(dead) })
			if err := os.MkdirAll(inner, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(inner, "token"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		t.Logf("Not testing mounts: not root")
	}

	var logged []string
	if err := sweepRealNodes(base, func(f string, args ...any) { logged = append(logged, f) }); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if len(logged) != 1 {
		t.Errorf("the sweep reported %d nodes, want the one dead node", len(logged))
	}

	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead node's directory %s is still there (%v)", dead, err)
	}
	for name, p := range map[string]*exec.Cmd{"naming its directory": deadProc, "serving its socket": shim} {
		deadline := time.Now().Add(5 * time.Second)
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p) {
			t.Errorf("the dead node's process %s (pid %d) survived the sweep", name, p.Process.Pid)
		}
	}
	if mounted {
		if m, _ := mountPointsUnder(dead); len(m) > 0 {
			t.Errorf("still mounted under the dead node: %v", m)
		}
	}
	if _, err := os.Stat(staging); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the half-created node directory %s is still there (%v)", staging, err)
	}

	for _, d := range []string{live, foreign, filepath.Join(live, ownerLockFile)} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("the sweep removed %s, which it must not touch: %v", d, err)
		}
	}
	for name, p := range map[string]*exec.Cmd{"live node's": liveProc, "foreign directory's": foreignProc} {
		if !alive(p) {
			t.Errorf("the sweep killed the %s process", name)
		}
	}
	// The live node's lock is still ours.
	if _, ok, err := tryLockNode(live); err != nil || ok {
		t.Errorf("the live node's lock could be taken (%v, %v): the sweep released it", ok, err)
	}
}

// TestNodeProcessesOnlyOwnNames: the process and cgroup listings of a node
// refuse anything but a node's own names, so that a bug upstream can never
// turn them into "every process" or "every cgroup".
func TestNodeProcessesOnlyOwnNames(t *testing.T) {
	for _, tc := range []struct{ dir, cgroupRoot string }{
		{"", ""}, {"/", "/"}, {"/tmp", "/tmp"}, {"/tmp/waterline-node-", "/waterline-node-"},
		{"waterline-node-x", "/waterline-node-x"}, {"/tmp/waterline-node-x", "/"}, {"/tmp/waterline-node-x", "/waterline-node-y"},
	} {
		if got := nodeProcesses(tc.dir, tc.dir+"/containerd.sock", tc.cgroupRoot); got != nil {
			t.Errorf("nodeProcesses(%q, %q) = %d processes, want none: not a node's names", tc.dir, tc.cgroupRoot, len(got))
		}
	}
	for _, cg := range []string{"", "/", "/kubepods", "waterline-node-x"} {
		if got := cgroupTree(cg); got != nil {
			t.Errorf("cgroupTree(%q) = %v, want nothing: not a node's cgroup root", cg, got)
		}
	}
}

// fixtureNode is a RealNode over a fixture cgroup tree of version v, with
// a Burstable pod, the QoS cgroups and kubepods.
func fixtureNode(t *testing.T, v cgroups.Version) (*RealNode, *corev1.Pod, cgroupstest.Tree) {
	t.Helper()
	root := t.TempDir()
	n := &RealNode{CgroupMount: root, CgroupRoot: "/waterline-node-fixture"}
	l, err := cgroups.NewLayout(root, v, cgroups.DriverCgroupfs, n.CgroupRoot)
	if err != nil {
		t.Fatal(err)
	}
	tree := cgroupstest.Tree{Layout: l}
	if err := tree.Init(); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: types.UID("11111111-2222-3333-4444-555555555555")},
		Status:     corev1.PodStatus{QOSClass: corev1.PodQOSBurstable},
	}
	for cg, u := range map[string]cgroupstest.Usage{
		"waterline-node-fixture":                     {},
		l.KubepodsCgroup():                           {CPUNanos: 7_000_000_000, MemoryUsage: 900 << 20, InactiveFile: 100 << 20},
		l.QoSCgroup(corev1.PodQOSBurstable):          {CPUNanos: 5_000_000_000},
		l.QoSCgroup(corev1.PodQOSBestEffort):         {},
		l.PodCgroup(pod.UID, corev1.PodQOSBurstable): {CPUNanos: 3_000_000_000},
	} {
		if err := tree.Cgroup(cg, u); err != nil {
			t.Fatal(err)
		}
	}
	return n, pod, tree
}

// TestRealNodeCgroupChecks: the checks tests make on a node's cgroups read
// the same on v1 and v2 fixture trees: a pod's quota in millicores, CPU
// time, shares, and the kubepods cgroup under the node's cgroup root.
func TestRealNodeCgroupChecks(t *testing.T) {
	for _, v := range []cgroups.Version{cgroups.V1, cgroups.V2} {
		t.Run(string(v), func(t *testing.T) {
			n, pod, tree := fixtureNode(t, v)
			l, err := n.Layout()
			if err != nil {
				t.Fatal(err)
			}
			if l.Version() != v {
				t.Fatalf("detected %s, want %s", l.Version(), v)
			}
			if kp, _ := n.KubepodsCgroup(); kp != "waterline-node-fixture/kubepods" {
				t.Errorf("KubepodsCgroup = %q, want waterline-node-fixture/kubepods", kp)
			}
			if q, err := n.PodCPUQuotaMilli(pod); err != nil || q != -1 {
				t.Errorf("quota of an unlimited pod = %d, %v; want -1", q, err)
			}
			podCg := tree.Layout.PodCgroup(pod.UID, pod.Status.QOSClass)
			if _, err := tree.Layout.SetCPUQuota(podCg, cgroups.CPUQuota{QuotaMicros: 30000, PeriodMicros: 100000}); err != nil {
				t.Fatal(err)
			}
			if q, err := n.PodCPUQuotaMilli(pod); err != nil || q != 300 {
				t.Errorf("quota after writing 30000/100000 = %d, %v; want 300", q, err)
			}
			if _, err := tree.Layout.SetCPUQuota(podCg, cgroups.CPUQuota{QuotaMicros: 25000, PeriodMicros: 50000}); err != nil {
				t.Fatal(err)
			}
			if q, err := n.PodCPUQuotaMilli(pod); err != nil || q != 500 {
				t.Errorf("quota after writing 25000/50000 = %d, %v; want 500", q, err)
			}
			if ns, err := n.PodCPUNanos(pod); err != nil || ns != 3_000_000_000 {
				t.Errorf("pod CPU time = %d, %v; want 3e9", ns, err)
			}
			be, _ := n.QoSCgroup(corev1.PodQOSBestEffort)
			if _, err := tree.Layout.SetCPUShares(be, 2); err != nil {
				t.Fatal(err)
			}
			if s, err := n.CgroupCPUShares(be); err != nil || s != 2 {
				t.Errorf("besteffort shares = %d, %v; want 2", s, err)
			}
			undo, err := n.SetCPUShares(65536)
			if err != nil {
				t.Fatal(err)
			}
			// v2 keeps a weight: shares read back as the smallest with
			// the same weight.
			if s, err := n.CgroupCPUShares("waterline-node-fixture"); err != nil || cgroups.CPUSharesToWeight(s) != cgroups.CPUSharesToWeight(65536) {
				t.Errorf("the node root's shares after SetCPUShares(65536) = %d, %v", s, err)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			noQoS := *pod
			noQoS.Status.QOSClass = ""
			if _, err := n.PodCPUQuotaMilli(&noQoS); err == nil {
				t.Errorf("a pod without a QoS class in its status: no error, want one (its cgroup is unknown)")
			}
		})
	}
}

// TestNodeProcView: the view's busy CPU follows the machine's /proc/stat
// in ViewMachine and the kubepods cgroup in ViewPods, continuously across
// a switch, and its used memory is the machine's or the pods' working
// set; on v1 and v2 fixture trees.
func TestNodeProcView(t *testing.T) {
	const gib = uint64(1) << 30
	for _, v := range []cgroups.Version{cgroups.V1, cgroups.V2} {
		t.Run(string(v), func(t *testing.T) {
			n, _, tree := fixtureNode(t, v)
			l, err := n.Layout()
			if err != nil {
				t.Fatal(err)
			}
			proc := t.TempDir()
			// Machine: 1000 busy jiffies, 16 GiB of which 4 GiB available.
			if err := cgroupstest.Proc(proc, 1000, 5000, 16*gib, 4*gib); err != nil {
				t.Fatal(err)
			}
			view, err := NewNodeProcView(filepath.Join(t.TempDir(), "view"), proc, l, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			read := func() (busy, used uint64) {
				t.Helper()
				b, err := ProcStatBusyJiffies(filepath.Join(view.Dir, "stat"))
				if err != nil {
					t.Fatal(err)
				}
				pv := &NodeProcView{procRoot: view.Dir}
				total, avail, err := pv.meminfo()
				if err != nil {
					t.Fatal(err)
				}
				return b, total - avail
			}
			busy0, used := read()
			if used != 12*gib {
				t.Errorf("machine view: used memory %d, want 12 GiB", used)
			}
			// The machine works 300 jiffies, the pods 1.5 s.
			kp := l.KubepodsCgroup()
			if err := cgroupstest.Proc(proc, 1300, 5200, 16*gib, 4*gib); err != nil {
				t.Fatal(err)
			}
			if err := tree.SetCPU(kp, 8_500_000_000); err != nil {
				t.Fatal(err)
			}
			if err := view.Update(); err != nil {
				t.Fatal(err)
			}
			busy1, _ := read()
			if busy1-busy0 != 300 {
				t.Errorf("machine view: busy grew by %d jiffies, want the machine's 300", busy1-busy0)
			}

			view.SetMode(ViewPods)
			// The machine works 500 more jiffies, the pods 0.7 s.
			if err := cgroupstest.Proc(proc, 1800, 5300, 16*gib, 4*gib); err != nil {
				t.Fatal(err)
			}
			if err := tree.SetCPU(kp, 9_200_000_000); err != nil {
				t.Fatal(err)
			}
			if err := view.Update(); err != nil {
				t.Fatal(err)
			}
			busy2, used := read()
			if busy2-busy1 != 70 {
				t.Errorf("pods view: busy grew by %d jiffies, want the pods' 70", busy2-busy1)
			}
			if used != 800<<20 {
				t.Errorf("pods view: used memory %d, want the kubepods working set 800 MiB", used)
			}

			view.SetMode(ViewMachine)
			if err := cgroupstest.Proc(proc, 1900, 5400, 16*gib, 4*gib); err != nil {
				t.Fatal(err)
			}
			if err := view.Update(); err != nil {
				t.Fatal(err)
			}
			busy3, _ := read()
			if busy3-busy2 != 100 {
				t.Errorf("back to the machine view: busy grew by %d jiffies, want the machine's 100 since the last update", busy3-busy2)
			}
		})
	}
}
