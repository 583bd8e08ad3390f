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

// Package resctltest builds what the tests of the agent's acting modules
// (resctl, qos, tierlimits) run against: a node of several pods under the
// host's real cgroup hierarchy, CPU burners with a set rate inside them, a
// fake /proc whose node CPU is the subtree's, pods, and a driver that runs
// agent cycles the way agent.Agent does.
//
// It writes only under cgroups it creates (named <prefix>-<random> at the
// top of each hierarchy) and in test directories, and removes the cgroups
// when the test ends.
package resctltest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
)

// RealRoot is the host's cgroup mount.
const RealRoot = "/sys/fs/cgroup"

// RealNode is a private kubelet cgroup root under the real hierarchy,
// /<prefix>-<random>/kubepods/..., standing in for a node: its pods are
// created there the way kubelet's cgroupfs driver lays them out, so the
// agent's own path code finds them.
type RealNode struct {
	// Layout reads and writes under the private root.
	Layout *cgroups.Layout
	// Top is the private root, relative to each hierarchy root.
	Top string

	t    testing.TB
	dirs []string // every directory created, parents first
}

// NewRealNode creates the private root and its kubepods, burstable and
// besteffort cgroups, gives the root the largest CPU share so that other
// work on the machine cannot starve the test's burners, and removes
// everything when the test ends (processes still inside are moved to the
// hierarchy root first). It skips the test, loudly, when not root or when
// the hierarchy is not writable.
func NewRealNode(t testing.TB, prefix string) *RealNode {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPING real-cgroup test: needs root to create cgroups under %s (euid %d)", RealRoot, os.Geteuid())
	}
	version := cgroups.V1
	if _, err := os.Stat(filepath.Join(RealRoot, "cgroup.controllers")); err == nil {
		version = cgroups.V2
	}
	lockRealTests(t)
	sweepStale(t, prefix)
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatalf("Random suffix: %v", err)
	}
	top := prefix + "-" + hex.EncodeToString(suffix)
	layout, err := cgroups.NewLayout(RealRoot, version, cgroups.DriverCgroupfs, "/"+top)
	if err != nil {
		t.Fatalf("Layout: %v", err)
	}
	n := &RealNode{Layout: layout, Top: top, t: t}
	t.Cleanup(n.cleanup)
	for i, cg := range []string{top, layout.KubepodsCgroup(), layout.QoSCgroup(corev1.PodQOSBurstable), layout.QoSCgroup(corev1.PodQOSBestEffort)} {
		if err := n.mkdir(cg); err != nil {
			if i == 0 && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EPERM) || errors.Is(err, os.ErrNotExist)) {
				t.Skipf("SKIPPING real-cgroup test: cannot create a cgroup under %s: %v", RealRoot, err)
			}
			t.Fatalf("Creating cgroup %s: %v", cg, err)
		}
		if version == cgroups.V2 && i < 3 {
			if i == 0 {
				n.enableV2(RealRoot)
			}
			n.enableV2(layout.Path("", cg))
		}
	}
	if _, err := layout.SetCPUShares(top, cgroups.MaxCPUShares); err != nil {
		t.Fatalf("Raising the CPU share of the test's cgroup: %v", err)
	}
	return n
}

func (n *RealNode) dirsOf(cg string) []string {
	if n.Layout.Version() == cgroups.V2 {
		return []string{n.Layout.Path("", cg)}
	}
	return []string{
		n.Layout.Path(cgroups.ControllerCPU, cg),
		n.Layout.Path(cgroups.ControllerCPUAcct, cg),
		n.Layout.Path(cgroups.ControllerMemory, cg),
	}
}

func (n *RealNode) mkdir(cg string) error {
	for _, dir := range n.dirsOf(cg) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		n.dirs = append(n.dirs, dir)
	}
	return nil
}

func (n *RealNode) enableV2(dir string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0); err != nil {
		n.t.Fatalf("Enabling the cpu and memory controllers in %s: %v", dir, err)
	}
}

// RealPod is a pod's cgroup on a RealNode.
type RealPod struct {
	Pod *corev1.Pod
	// Cgroup is the pod's cgroup, relative to each hierarchy root.
	Cgroup string
	// Containers maps container names to their cgroups.
	Containers map[string]string
}

// AddPod creates the pod's cgroup under its QoS class and one cgroup per
// container, named by the container IDs of the pod's status (which it
// fills in, containerd-style, when missing), and writes what kubelet and
// the runtime would: the pod's quota, shares and memory limit
// (resctl.KubeletLimits) and each container's quota from its CPU limit.
func (n *RealNode) AddPod(pod *corev1.Pod) *RealPod {
	n.t.Helper()
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = resctl.PodQOSClass(pod)
	}
	rp := &RealPod{Pod: pod, Cgroup: n.Layout.PodCgroup(pod.UID, pod.Status.QOSClass), Containers: map[string]string{}}
	if err := n.mkdir(rp.Cgroup); err != nil {
		n.t.Fatalf("Creating pod cgroup %s: %v", rp.Cgroup, err)
	}
	kl := resctl.KubeletLimits(pod)
	period := cgroups.DefaultCPUPeriodMicros
	if kl.CPUQuotaMilli != resctl.Unlimited {
		if _, err := n.Layout.SetCPUQuota(rp.Cgroup, cgroups.CPUQuota{QuotaMicros: kl.CPUQuotaMilli * int64(period) / 1000, PeriodMicros: period}); err != nil {
			n.t.Fatalf("Writing kubelet's pod quota: %v", err)
		}
	}
	if _, err := n.Layout.SetCPUShares(rp.Cgroup, kl.CPUShares); err != nil {
		n.t.Fatalf("Writing kubelet's pod shares: %v", err)
	}
	if kl.MemoryBytes != resctl.Unlimited {
		if _, err := n.Layout.SetMemoryLimit(rp.Cgroup, kl.MemoryBytes); err != nil {
			n.t.Fatalf("Writing kubelet's pod memory limit: %v", err)
		}
	}
	if n.Layout.Version() == cgroups.V2 {
		n.enableV2(n.Layout.Path("", rp.Cgroup))
	}
	ids := map[string]string{}
	for _, s := range pod.Status.ContainerStatuses {
		id := s.ContainerID
		if _, after, ok := strings.Cut(id, "://"); ok {
			id = after
		}
		ids[s.Name] = id
	}
	for i, c := range pod.Spec.Containers {
		id := ids[c.Name]
		if id == "" {
			id = strings.ReplaceAll(string(pod.UID), "-", "") + strconv.Itoa(i)
			id += strings.Repeat("0", 64-len(id))
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, ContainerID: "containerd://" + id})
		}
		cg := rp.Cgroup + "/" + id
		if err := n.mkdir(cg); err != nil {
			n.t.Fatalf("Creating container cgroup %s: %v", cg, err)
		}
		rp.Containers[c.Name] = cg
		if q, _ := resctl.KubeletContainerQuotaMilli(pod, c.Name); q != resctl.Unlimited {
			if _, err := n.Layout.SetCPUQuota(cg, cgroups.CPUQuota{QuotaMicros: q * int64(period) / 1000, PeriodMicros: period}); err != nil {
				n.t.Fatalf("Writing the container quota the runtime would: %v", err)
			}
		}
	}
	return rp
}

// AddProcess moves a process into a cgroup in every hierarchy.
func (n *RealNode) AddProcess(cg string, pid int) {
	n.t.Helper()
	for _, dir := range n.dirsOf(cg) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			n.t.Fatalf("Moving pid %d into %s: %v", pid, dir, err)
		}
	}
}

// CPUNanos returns the cumulative CPU time of a cgroup (the node's when cg
// is Top).
func (n *RealNode) CPUNanos(cg string) uint64 {
	n.t.Helper()
	v, err := n.cpuNanos(cg)
	if err != nil {
		n.t.Fatal(err)
	}
	return v
}

func (n *RealNode) cpuNanos(cg string) (uint64, error) {
	files := n.Layout.UsageFiles(cg)
	defer files.Close()
	v, err := cgroups.NewReader().CPUUsage(files)
	if err != nil {
		return 0, fmt.Errorf("reading CPU usage of %s: %w", cg, err)
	}
	return v, nil
}

// Quota returns the CPU quota of a cgroup in millicores, or
// resctl.Unlimited.
func (n *RealNode) Quota(cg string) int64 {
	n.t.Helper()
	q, err := n.Layout.ReadCPUQuota(cg)
	if err != nil {
		n.t.Fatalf("Reading CPU quota of %s: %v", cg, err)
	}
	if q.QuotaMicros == cgroups.Unlimited {
		return resctl.Unlimited
	}
	return q.QuotaMicros * 1000 / int64(q.PeriodMicros)
}

// cleanup moves every process left in the subtree to the hierarchy root and
// removes the directories, children first. rmdir of a cgroup can fail with
// EBUSY for a moment after its last process exited, so it retries briefly.
func (n *RealNode) cleanup() {
	for i := len(n.dirs) - 1; i >= 0; i-- {
		dir := n.dirs[i]
		root := RealRoot
		if n.Layout.Version() == cgroups.V1 {
			root = filepath.Join(RealRoot, strings.SplitN(strings.TrimPrefix(dir, RealRoot+"/"), "/", 2)[0])
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(pid), 0); err != nil {
					n.t.Errorf("Cleanup: moving pid %s out of %s: %v", pid, dir, err)
				}
			}
		}
		var err error
		for range 100 {
			if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			n.t.Errorf("Cleanup: removing cgroup %s: %v (remove it by hand)", dir, err)
		}
	}
}

// sweepStale removes the cgroups of prefix that a killed test binary left
// (its cleanup never ran): under the lock no other test holds one. A tree
// with a process still in it is left, and named.
func sweepStale(t testing.TB, prefix string) {
	t.Helper()
	tops, _ := filepath.Glob(filepath.Join(RealRoot, prefix+"-*"))
	v1, _ := filepath.Glob(filepath.Join(RealRoot, "*", prefix+"-*"))
	for _, top := range append(tops, v1...) {
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if b, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				t.Logf("A cgroup an earlier test left, %s, still holds processes %s: not removed", dirs[i], strings.Fields(string(b)))
				break
			}
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				t.Logf("Removing the cgroup an earlier test left, %s: %v", dirs[i], err)
				break
			}
		}
	}
}

// realTestLock serialises the real-cgroup tests of every package that uses
// this package, and the real node's CPU-measuring scenarios (test/e2e),
// across test binaries (go test runs packages in parallel): their burners
// measure CPU on a small shared machine, each in a cgroup weighted to
// outweigh other work, and two such sets of burners at once would starve
// each other.
const realTestLock = "/tmp/waterline-resctltest-real.lock"

// LockMachineCPU holds, until the test ends, the lock every real-cgroup
// test of this package takes: for a test elsewhere that measures CPU on
// the machine's cgroups (the real node's scenarios), so that no burner of
// another test binary runs meanwhile.
func LockMachineCPU(t testing.TB) { lockRealTests(t) }

func lockRealTests(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(realTestLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("Opening %s: %v", realTestLock, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("Locking %s: %v", realTestLock, err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	})
}
