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

package e2e

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestRealNodeSweep: a real node whose kubelet and containerd die by
// SIGKILL, as they do with a killed test binary, leaves its runc shims
// and pod processes running, kubelet's and containerd's mounts under its
// directory and its pod cgroups; the next StartRealNode finds it dead (its
// owner lock is free) and removes all of it before it starts its own node.
func TestRealNodeSweep(t *testing.T) {
	testutil.SkipUnlessRealNode(t)
	c := testutil.StartCluster(t, testutil.Options{})
	dead := c.StartRealNode(t, "dead")
	// A pod with a memory-backed emptyDir: kubelet mounts a tmpfs for it
	// under its root directory, as it does for ServiceAccount tokens.
	pod, err := c.Kube.CoreV1().Pods("default").Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "leak", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName: dead.Name, HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "main", Image: testutil.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command:      []string{"/bin/sh", "-c", burnScript(0)},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
			}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod = c.WaitPodRunning(t, "default", pod.Name, 2*time.Minute)
	podCgroup := dead.PodCgroup(pod)

	release := dead.KillUncleanly()
	// Whatever happens below, nothing of the dead node outlives the test.
	t.Cleanup(func() {
		release()
		if err := testutil.SweepRealNodes(t.Logf); err != nil {
			t.Errorf("Sweeping at the end: %v", err)
		}
	})

	// What a killed test binary leaves.
	shims := processesNaming(dead.ContainerdSocket)
	mounts := mountsUnder(t, dead.Dir)
	podProcs := cgroupProcs(podCgroup)
	t.Logf("Left by the dead node: shims %v, %d mounts under %s, processes %v in %s", shims, len(mounts), dead.Dir, podProcs, podCgroup)
	if len(shims) == 0 || len(podProcs) == 0 || len(mounts) == 0 {
		t.Fatalf("killing kubelet and containerd left no shim (%v), pod process (%v) or mount (%v): nothing for the sweep to prove itself on", shims, podProcs, mounts)
	}
	var volume bool
	for _, m := range mounts {
		volume = volume || strings.Contains(m, "kubernetes.io~empty-dir")
	}
	if !volume {
		t.Errorf("no kubelet volume mount among the leftovers: %v", mounts)
	}

	// The owner lock goes as with the test binary's death; from here on
	// any real node's start may sweep the dead one.
	release()
	next := c.StartRealNode(t, "next")

	if left := processesNaming(dead.ContainerdSocket); len(left) > 0 {
		t.Errorf("shims of the dead node survive the next start: %v", left)
	}
	for _, pid := range podProcs {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil && !zombie(pid) {
			t.Errorf("pod process %d of the dead node survives the next start", pid)
		}
	}
	if left := mountsUnder(t, dead.Dir); len(left) > 0 {
		t.Errorf("still mounted under the dead node's directory: %v", left)
	}
	if _, err := os.Stat(dead.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead node's directory %s is still there (%v)", dead.Dir, err)
	}
	for _, h := range []string{"cpu", "memory", "pids", ""} {
		d := filepath.Join(dead.CgroupMount, h, dead.CgroupRoot)
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the dead node's cgroup %s is still there", d)
		}
	}
	if logs, _ := filepath.Glob("/var/log/pods/*_" + string(pod.UID)); len(logs) > 0 {
		t.Errorf("the dead node's pod logs are still there: %v", logs)
	}
	// The new node is the sweeper's own: untouched.
	if _, err := os.Stat(next.Dir); err != nil {
		t.Errorf("the new node's directory: %v", err)
	}
}

// processesNaming are the live processes with arg on their command line.
func processesNaming(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || zombie(pid) {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// mountsUnder lists the mount points under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 4 && (fs[4] == dir || strings.HasPrefix(fs[4], dir+"/")) {
			out = append(out, fs[4])
		}
	}
	return out
}

// cgroupProcs are the processes in cgroup cg and below it, in the cpu
// hierarchy on v1 or the unified one on v2.
func cgroupProcs(cg string) []int {
	var out []int
	for _, root := range []string{filepath.Join("/sys/fs/cgroup/cpu", cg), filepath.Join("/sys/fs/cgroup", cg)} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil //nolint:nilerr // an unreadable cgroup holds no process to list
			}
			if d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
			return nil
		})
		if len(out) > 0 {
			break
		}
	}
	return out
}
