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

package cgroupstest

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
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// RealRoot is the host's cgroup mount the real-cgroup tests use.
const RealRoot = "/sys/fs/cgroup"

// RealPod is a pod cgroup created under the host's real cgroup hierarchy,
// inside a private kubelet cgroup root (waterline-test-<random>), so the
// agent's own path code finds it exactly as it would find a kubelet pod.
type RealPod struct {
	// Layout reads and writes under the private root.
	Layout *cgroups.Layout
	// UID and QoS locate the pod.
	UID types.UID
	QoS corev1.PodQOSClass
	// Cgroup is the pod's cgroup, relative to each hierarchy root.
	Cgroup string
	// ContainerID names the one container cgroup created in the pod.
	ContainerID string

	t    testing.TB
	dirs []string // every directory created, parents first
}

// NewRealPod creates waterline-test-<random>/kubepods/<qos>/pod<uid>/<id>
// in the real cpu, cpuacct and memory hierarchies (v1) or the unified one
// (v2, enabling the cpu and memory controllers down the path), and removes
// all of it when the test ends, moving any process still inside back to
// the root first. It skips the test, saying why, when not root or when the
// hierarchy is not writable: those are the environment limits the real
// tests cannot work around.
func NewRealPod(t testing.TB, qos corev1.PodQOSClass) *RealPod {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPING real-cgroup test: needs root to create cgroups under %s (euid %d)", RealRoot, os.Geteuid())
	}
	version := cgroups.V1
	if _, err := os.Stat(filepath.Join(RealRoot, "cgroup.controllers")); err == nil {
		version = cgroups.V2
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatalf("Random suffix: %v", err)
	}
	kubeletRoot := "/waterline-test-" + hex.EncodeToString(suffix)
	layout, err := cgroups.NewLayout(RealRoot, version, cgroups.DriverCgroupfs, kubeletRoot)
	if err != nil {
		t.Fatalf("Layout: %v", err)
	}
	uid := types.UID(fmt.Sprintf("0000%s-aaaa-4bbb-8ccc-0123456789ab", hex.EncodeToString(suffix)))
	p := &RealPod{
		Layout:      layout,
		UID:         uid,
		QoS:         qos,
		Cgroup:      layout.PodCgroup(uid, qos),
		ContainerID: "c0ffee" + hex.EncodeToString(suffix) + strings.Repeat("0", 50),
		t:           t,
	}
	t.Cleanup(p.cleanup)

	// Parents first: waterline-test-x, .../kubepods, [.../qos], .../pod, .../ctr.
	parts := strings.Split(p.Cgroup+"/"+p.ContainerID, "/")
	for i := range parts {
		cg := strings.Join(parts[:i+1], "/")
		for _, dir := range p.dirsOf(cg) {
			if err := os.Mkdir(dir, 0o755); err != nil {
				if i == 0 && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EPERM) || errors.Is(err, os.ErrNotExist)) {
					t.Skipf("SKIPPING real-cgroup test: cannot create a cgroup at %s: %v", dir, err)
				}
				t.Fatalf("Creating cgroup %s: %v", dir, err)
			}
			p.dirs = append(p.dirs, dir)
		}
		if version == cgroups.V2 && i < len(parts)-1 {
			// v2 hands controllers down one level at a time; the root
			// first, then each cgroup that has children.
			if i == 0 {
				p.enableV2Controllers(RealRoot)
			}
			p.enableV2Controllers(layout.Path("", cg))
		}
	}
	return p
}

func (p *RealPod) dirsOf(cgroup string) []string {
	if p.Layout.Version() == cgroups.V2 {
		return []string{p.Layout.Path("", cgroup)}
	}
	var out []string
	for _, c := range []cgroups.Controller{cgroups.ControllerCPU, cgroups.ControllerCPUAcct, cgroups.ControllerMemory} {
		out = append(out, p.Layout.Path(c, cgroup))
	}
	return out
}

func (p *RealPod) enableV2Controllers(dir string) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0); err != nil {
		p.t.Fatalf("Enabling cpu and memory controllers in %s: %v", dir, err)
	}
}

// ContainerCgroup is the container's cgroup, relative to each hierarchy
// root.
func (p *RealPod) ContainerCgroup() string { return p.Cgroup + "/" + p.ContainerID }

// TopCgroup is the private kubelet cgroup root, relative to each hierarchy
// root.
func (p *RealPod) TopCgroup() string { return strings.SplitN(p.Cgroup, "/", 2)[0] }

// AddProcess moves a process into the container cgroup in every hierarchy.
func (p *RealPod) AddProcess(pid int) {
	p.t.Helper()
	for _, dir := range p.dirsOf(p.ContainerCgroup()) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			p.t.Fatalf("Moving pid %d into %s: %v", pid, dir, err)
		}
	}
}

// cleanup moves every process left in the subtree to the hierarchy root and
// removes the directories, children first. rmdir of a cgroup can fail with
// EBUSY for a moment after its last process exited, so it retries briefly.
func (p *RealPod) cleanup() {
	for i := len(p.dirs) - 1; i >= 0; i-- {
		dir := p.dirs[i]
		root := RealRoot
		if p.Layout.Version() == cgroups.V1 {
			root = filepath.Join(RealRoot, strings.SplitN(strings.TrimPrefix(dir, RealRoot+"/"), "/", 2)[0])
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(pid), 0); err != nil {
					p.t.Errorf("Cleanup: moving pid %s out of %s: %v", pid, dir, err)
				}
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
