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

package collector

import (
	"bytes"
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
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

const benchPods = 200

var benchQoS = []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort}

// benchTree writes a node with benchPods pods of three containers each
// (sandbox + two) and returns their refs.
func benchTree(b *testing.B, v cgroups.Version, d cgroups.Driver) (*cgroups.Layout, string, []PodRef) {
	b.Helper()
	dir := b.TempDir()
	l, err := cgroups.NewLayout(filepath.Join(dir, "cgroup"), v, d, "/")
	if err != nil {
		b.Fatal(err)
	}
	tree := cgroupstest.Tree{Layout: l}
	if err := tree.Init(); err != nil {
		b.Fatal(err)
	}
	if err := cgroupstest.Proc(filepath.Join(dir, "proc"), 1000, 9000, 16<<30, 12<<30); err != nil {
		b.Fatal(err)
	}
	pods := make([]PodRef, benchPods)
	for i := range pods {
		uid := types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
		p := PodRef{UID: uid, Namespace: "bench", Name: fmt.Sprintf("pod-%d", i), QoSClass: benchQoS[i%3], Band: extension.BandBatch}
		cg := l.PodCgroup(uid, p.QoSClass)
		if err := tree.Cgroup(cg, cgroupstest.Usage{CPUNanos: 1e9, MemoryUsage: 100 << 20, InactiveFile: 10 << 20}); err != nil {
			b.Fatal(err)
		}
		for j := range 3 {
			id := fmt.Sprintf("%062x%02x", i, j)
			name := id
			if d == cgroups.DriverSystemd {
				name = "cri-containerd-" + id + ".scope"
			}
			if err := tree.Cgroup(cg+"/"+name, cgroupstest.Usage{CPUNanos: 1e8, MemoryUsage: 30 << 20, InactiveFile: 3 << 20}); err != nil {
				b.Fatal(err)
			}
			if j > 0 {
				p.Containers = append(p.Containers, ContainerRef{Name: fmt.Sprintf("c%d", j), ID: id})
			}
		}
		pods[i] = p
	}
	return l, filepath.Join(dir, "proc"), pods
}

// cpuTime is the CPU (user + system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCollect runs one collect cycle over 200 pods (three containers
// each) on a fixture tree. cpu-ms/cycle is user + system CPU of the process
// per cycle, the figure the ≤ 2 ms goal is about; the naive sub-benchmark is
// the baseline: the same files read with os.ReadFile/os.ReadDir and parsed
// with strings, as a first implementation would.
func BenchmarkCollect(b *testing.B) {
	for _, tc := range []struct {
		v cgroups.Version
		d cgroups.Driver
		// containers is how often containers are read; the naive
		// baseline reads them every cycle or never.
		containers time.Duration
	}{
		{cgroups.V1, cgroups.DriverCgroupfs, time.Second},
		{cgroups.V1, cgroups.DriverCgroupfs, 30 * time.Second},
		{cgroups.V1, cgroups.DriverCgroupfs, 0},
		{cgroups.V2, cgroups.DriverSystemd, time.Second},
		{cgroups.V2, cgroups.DriverSystemd, 30 * time.Second},
		{cgroups.V2, cgroups.DriverSystemd, 0},
	} {
		name := fmt.Sprintf("%s-%s/containers=%v", tc.v, tc.d, tc.containers)
		b.Run(name, func(b *testing.B) {
			l, proc, pods := benchTree(b, tc.v, tc.d)
			clk := clocktesting.NewFakeClock(t0)
			c, err := New(Config{ProcRoot: proc, ContainerInterval: ptr.To(tc.containers)}, l, clk)
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if _, err := c.Collect(ctx, pods); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime()
			for b.Loop() {
				clk.Step(time.Second)
				s, err := c.Collect(ctx, pods)
				if err != nil || len(s.Pods) != benchPods {
					b.Fatalf("Collected %d pods, err %v", len(s.Pods), err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/cycle")
		})
		if tc.containers == 30*time.Second {
			continue
		}
		b.Run(name+"/naive", func(b *testing.B) {
			l, proc, pods := benchTree(b, tc.v, tc.d)
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime()
			for b.Loop() {
				if n := naiveCollect(b, l, proc, pods, tc.containers > 0); n != benchPods {
					b.Fatalf("Naive read %d pods", n)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/cycle")
		})
	}
}

// naiveCollect reads what Collect reads, the straightforward way.
func naiveCollect(b *testing.B, l *cgroups.Layout, proc string, pods []PodRef, containers bool) int {
	readUint := func(p string) uint64 {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	readKey := func(p, key string) uint64 {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				n, _ := strconv.ParseUint(v, 10, 64)
				return n
			}
		}
		b.Fatalf("No %s in %s", key, p)
		return 0
	}
	read := func(cg string) {
		if l.Version() == cgroups.V2 {
			dir := l.Path("", cg)
			_ = readKey(dir+"/cpu.stat", "usage_usec")
			_ = readUint(dir+"/memory.current") - readKey(dir+"/memory.stat", "inactive_file")
			return
		}
		_ = readUint(l.Path(cgroups.ControllerCPUAcct, cg) + "/cpuacct.usage")
		m := l.Path(cgroups.ControllerMemory, cg)
		_ = readUint(m+"/memory.usage_in_bytes") - readKey(m+"/memory.stat", "total_inactive_file")
	}
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil || !bytes.HasPrefix(stat, []byte("cpu ")) {
		b.Fatal(err)
	}
	if _, err := os.ReadFile(proc + "/meminfo"); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range pods {
		cg := l.PodCgroup(p.UID, p.QoSClass)
		read(cg)
		if containers {
			entries, err := os.ReadDir(l.Path(cgroups.ControllerCPUAcct, cg))
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range entries {
				if e.IsDir() {
					read(cg + "/" + e.Name())
				}
			}
		}
		n++
	}
	return n
}

// BenchmarkCollectRealCgroupfs is BenchmarkCollect on the kernel's cgroup
// filesystem instead of ext4 fixture files: 200 empty pod cgroups (three
// containers each) under a private kubelet root. It needs root; the kernel
// generates every file on read, which a fixture tree cannot show.
func BenchmarkCollectRealCgroupfs(b *testing.B) {
	pod := cgroupstest.NewRealPod(b, corev1.PodQOSBurstable)
	l := pod.Layout
	top := pod.TopCgroup()
	var created []string
	b.Cleanup(func() {
		for i := len(created) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(created[i])
		}
	})
	mkdir := func(cg string) {
		dirs := []string{l.Path("", cg)}
		if l.Version() == cgroups.V1 {
			dirs = []string{l.Path(cgroups.ControllerCPU, cg), l.Path(cgroups.ControllerCPUAcct, cg), l.Path(cgroups.ControllerMemory, cg)}
		}
		for _, d := range dirs {
			if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
				b.Fatal(err)
			}
			created = append(created, d)
		}
	}
	real, err := cgroups.NewLayout(cgroupstest.RealRoot, l.Version(), cgroups.DriverCgroupfs, "/"+top)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []corev1.PodQOSClass{corev1.PodQOSBestEffort} {
		mkdir(real.QoSCgroup(q))
	}
	pods := make([]PodRef, benchPods)
	for i := range pods {
		uid := types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
		// Guaranteed pods sit in kubepods, burstable ones next to the
		// helper's pod; besteffort was created above.
		p := PodRef{UID: uid, Namespace: "bench", Name: fmt.Sprintf("pod-%d", i), QoSClass: benchQoS[i%3]}
		cg := real.PodCgroup(uid, p.QoSClass)
		mkdir(cg)
		for j := range 3 {
			mkdir(fmt.Sprintf("%s/%062x%02x", cg, i, j))
		}
		pods[i] = p
	}
	for _, tc := range []struct {
		name                      string
		containers, memStatPeriod time.Duration
	}{
		// The defaults until issue 18: containers every 30 s, every
		// pod's memory.stat every cycle.
		{"before", 30 * time.Second, time.Second},
		{"memstat=1s", 0, time.Second},
		// The defaults: no containers, memory.stat every 10 s.
		{"defaults", DefaultContainerInterval, DefaultMemoryStatInterval},
		{"containers=1s", time.Second, DefaultMemoryStatInterval},
	} {
		b.Run(fmt.Sprintf("%s/%s", l.Version(), tc.name), func(b *testing.B) {
			clk := clocktesting.NewFakeClock(time.Now())
			c, err := New(Config{ContainerInterval: ptr.To(tc.containers), MemoryStatInterval: tc.memStatPeriod}, real, clk)
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if _, err := c.Collect(ctx, pods); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime()
			for b.Loop() {
				clk.Step(time.Second)
				s, err := c.Collect(ctx, pods)
				if err != nil || len(s.Pods) != benchPods {
					b.Fatalf("Collected %d pods, err %v", len(s.Pods), err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/cycle")
		})
	}
}
