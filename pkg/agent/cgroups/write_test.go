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

package cgroups_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

const podUID = "9b4e7f10-2d3c-4e5f-8a9b-0c1d2e3f4a02"

// fixturePod writes one burstable pod cgroup in a fresh tree.
func fixturePod(t *testing.T, v cgroups.Version, d cgroups.Driver) (*cgroups.Layout, string) {
	t.Helper()
	l, err := cgroups.NewLayout(t.TempDir(), v, d, "/")
	if err != nil {
		t.Fatal(err)
	}
	tree := cgroupstest.Tree{Layout: l}
	if err := tree.Init(); err != nil {
		t.Fatal(err)
	}
	cg := l.PodCgroup(podUID, corev1.PodQOSBurstable)
	if err := tree.Cgroup(cg, cgroupstest.Usage{}); err != nil {
		t.Fatal(err)
	}
	return l, cg
}

// files reads the named files of a cgroup's controller directory.
func files(t *testing.T, l *cgroups.Layout, c cgroups.Controller, cg string, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(l.Path(c, cg), n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

func TestSetCPUQuota(t *testing.T) {
	tests := []struct {
		version   cgroups.Version
		quota     cgroups.CPUQuota
		files     []string
		wantFiles []string // after Set; Undo must bring back the fixture's
		before    []string
	}{
		{cgroups.V1, cgroups.CPUQuota{QuotaMicros: 50000, PeriodMicros: 100000},
			[]string{"cpu.cfs_quota_us", "cpu.cfs_period_us"}, []string{"50000", "100000"}, []string{"-1", "100000"}},
		{cgroups.V1, cgroups.CPUQuota{QuotaMicros: 20000, PeriodMicros: 50000},
			[]string{"cpu.cfs_quota_us", "cpu.cfs_period_us"}, []string{"20000", "50000"}, []string{"-1", "100000"}},
		{cgroups.V2, cgroups.CPUQuota{QuotaMicros: 50000, PeriodMicros: 100000},
			[]string{"cpu.max"}, []string{"50000 100000"}, []string{"max 100000"}},
		{cgroups.V2, cgroups.CPUQuota{QuotaMicros: cgroups.Unlimited, PeriodMicros: 100000},
			[]string{"cpu.max"}, []string{"max 100000"}, []string{"max 100000"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.version)+"/"+strings.Join(tc.wantFiles, ","), func(t *testing.T) {
			l, cg := fixturePod(t, tc.version, cgroups.DriverSystemd)
			undo, err := l.SetCPUQuota(cg, tc.quota)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantFiles, files(t, l, cgroups.ControllerCPU, cg, tc.files...)); diff != "" {
				t.Errorf("Files after Set (-want +got):\n%s", diff)
			}
			got, err := l.ReadCPUQuota(cg)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.quota {
				t.Errorf("ReadCPUQuota = %+v, want %+v", got, tc.quota)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.before, files(t, l, cgroups.ControllerCPU, cg, tc.files...)); diff != "" {
				t.Errorf("Files after Undo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetCPUQuotaRejectsBadValues(t *testing.T) {
	l, cg := fixturePod(t, cgroups.V2, cgroups.DriverSystemd)
	for _, q := range []cgroups.CPUQuota{
		{QuotaMicros: 500, PeriodMicros: 100000},    // below 1 ms
		{QuotaMicros: 50000, PeriodMicros: 999},     // period too short
		{QuotaMicros: 50000, PeriodMicros: 2000000}, // period too long
		{QuotaMicros: -5, PeriodMicros: 100000},     // negative but not -1
	} {
		if _, err := l.SetCPUQuota(cg, q); err == nil {
			t.Errorf("SetCPUQuota(%+v) succeeded, want an error", q)
		}
	}
	if diff := cmp.Diff([]string{"max 100000"}, files(t, l, cgroups.ControllerCPU, cg, "cpu.max")); diff != "" {
		t.Errorf("A refused Set changed cpu.max (-want +got):\n%s", diff)
	}
}

func TestSetCPUQuotaFailedWriteChangesNothing(t *testing.T) {
	l, cg := fixturePod(t, cgroups.V1, cgroups.DriverCgroupfs)
	// The quota file is read-only: the period is written first and must be
	// put back when the quota write fails.
	quota := filepath.Join(l.Path(cgroups.ControllerCPU, cg), "cpu.cfs_quota_us")
	if err := os.Chmod(quota, 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root ignores file modes; a directory in the file's place fails
		// the open for everyone.
		if err := os.Remove(quota); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(quota, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.SetCPUQuota(cg, cgroups.CPUQuota{QuotaMicros: 20000, PeriodMicros: 50000}); err == nil {
		t.Fatal("SetCPUQuota succeeded with an unwritable quota file")
	}
	if diff := cmp.Diff([]string{"100000"}, files(t, l, cgroups.ControllerCPU, cg, "cpu.cfs_period_us")); diff != "" {
		t.Errorf("Period after the failed Set (-want +got):\n%s", diff)
	}
}

func TestSetOnVanishedCgroup(t *testing.T) {
	l, cg := fixturePod(t, cgroups.V2, cgroups.DriverCgroupfs)
	if err := (cgroupstest.Tree{Layout: l}).Remove(cg); err != nil {
		t.Fatal(err)
	}
	_, err := l.SetCPUQuota(cg, cgroups.CPUQuota{QuotaMicros: 50000, PeriodMicros: 100000})
	if !cgroups.IsGone(err) {
		t.Errorf("SetCPUQuota on a removed cgroup: %v, want a gone error", err)
	}
	if _, statErr := os.Stat(l.Path("", cg)); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("SetCPUQuota recreated the removed cgroup directory")
	}
}

func TestSetCPUShares(t *testing.T) {
	tests := []struct {
		version  cgroups.Version
		shares   uint64
		file     string
		wantFile string
		before   string
	}{
		{cgroups.V1, 512, "cpu.shares", "512", "1024"},
		// kubelet's conversion: 1 + ⌊510 × 9999 / 262142⌋ = 1 + 19.
		{cgroups.V2, 512, "cpu.weight", "20", "100"},
		{cgroups.V2, 2, "cpu.weight", "1", "100"},
	}
	for _, tc := range tests {
		t.Run(string(tc.version)+"/"+tc.wantFile, func(t *testing.T) {
			l, cg := fixturePod(t, tc.version, cgroups.DriverCgroupfs)
			undo, err := l.SetCPUShares(cg, tc.shares)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantFile}, files(t, l, cgroups.ControllerCPU, cg, tc.file)); diff != "" {
				t.Errorf("After Set (-want +got):\n%s", diff)
			}
			got, err := l.ReadCPUShares(cg)
			if err != nil {
				t.Fatal(err)
			}
			if cgroups.CPUSharesToWeight(got) != cgroups.CPUSharesToWeight(tc.shares) {
				t.Errorf("ReadCPUShares = %d, whose weight differs from that of %d", got, tc.shares)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.before}, files(t, l, cgroups.ControllerCPU, cg, tc.file)); diff != "" {
				t.Errorf("After Undo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetMemoryLimit(t *testing.T) {
	tests := []struct {
		version  cgroups.Version
		limit    int64
		file     string
		wantFile string
		before   string
	}{
		{cgroups.V1, 1 << 30, "memory.limit_in_bytes", "1073741824", "9223372036854771712"},
		{cgroups.V2, 1 << 30, "memory.max", "1073741824", "max"},
		{cgroups.V2, cgroups.Unlimited, "memory.max", "max", "max"},
	}
	for _, tc := range tests {
		t.Run(string(tc.version)+"/"+tc.wantFile, func(t *testing.T) {
			l, cg := fixturePod(t, tc.version, cgroups.DriverCgroupfs)
			before, err := l.ReadMemoryLimit(cg)
			if err != nil || before != cgroups.Unlimited {
				t.Fatalf("ReadMemoryLimit of the fixture = %d, %v; want unlimited", before, err)
			}
			undo, err := l.SetMemoryLimit(cg, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantFile}, files(t, l, cgroups.ControllerMemory, cg, tc.file)); diff != "" {
				t.Errorf("After Set (-want +got):\n%s", diff)
			}
			if got, err := l.ReadMemoryLimit(cg); err != nil || got != tc.limit {
				t.Errorf("ReadMemoryLimit = %d, %v; want %d", got, err, tc.limit)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.before}, files(t, l, cgroups.ControllerMemory, cg, tc.file)); diff != "" {
				t.Errorf("After Undo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCPUSharesToWeight(t *testing.T) {
	tests := []struct{ shares, weight uint64 }{
		{0, 0},          // unset stays unset
		{2, 1},          // minimum
		{1024, 39},      // kubelet's getCPUWeight: 1 + ⌊1022 × 9999 / 262142⌋ = 1 + 38
		{262144, 10000}, // maximum
		{1 << 20, 10000},
	}
	for _, tc := range tests {
		if got := cgroups.CPUSharesToWeight(tc.shares); got != tc.weight {
			t.Errorf("CPUSharesToWeight(%d) = %d, want %d", tc.shares, got, tc.weight)
		}
	}
}

func TestCPUWeightToSharesRoundTrips(t *testing.T) {
	seen := map[uint64]bool{}
	for s := cgroups.MinCPUShares; s <= cgroups.MaxCPUShares; s += 7 {
		w := cgroups.CPUSharesToWeight(s)
		if seen[w] {
			continue
		}
		seen[w] = true
		back := cgroups.CPUWeightToShares(w)
		if cgroups.CPUSharesToWeight(back) != w || (back > cgroups.MinCPUShares && cgroups.CPUSharesToWeight(back-1) == w) {
			t.Errorf("CPUWeightToShares(%d) = %d: not the smallest shares with that weight", w, back)
		}
	}
}

// TestRealCgroupWrites writes through the helpers into a real cgroup and
// reads the kernel's view back, then undoes.
func TestRealCgroupWrites(t *testing.T) {
	pod := cgroupstest.NewRealPod(t, corev1.PodQOSBurstable)
	l, cg := pod.Layout, pod.Cgroup

	origQuota, err := l.ReadCPUQuota(cg)
	if err != nil {
		t.Fatal(err)
	}
	origShares, err := l.ReadCPUShares(cg)
	if err != nil {
		t.Fatal(err)
	}
	origLimit, err := l.ReadMemoryLimit(cg)
	if err != nil {
		t.Fatal(err)
	}

	want := cgroups.CPUQuota{QuotaMicros: 30000, PeriodMicros: 50000}
	undoQuota, err := l.SetCPUQuota(cg, want)
	if err != nil {
		t.Fatal(err)
	}
	undoShares, err := l.SetCPUShares(cg, 512)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel keeps limits page-aligned: ask for a multiple of 4 KiB.
	undoLimit, err := l.SetMemoryLimit(cg, 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	gotQuota, _ := l.ReadCPUQuota(cg)
	gotShares, _ := l.ReadCPUShares(cg)
	gotLimit, _ := l.ReadMemoryLimit(cg)
	// On v2 the kernel holds the weight, so compare what it maps to.
	gotWeight := cgroups.CPUSharesToWeight(gotShares)
	if diff := cmp.Diff([]any{want, uint64(20), int64(256 << 20)}, []any{gotQuota, gotWeight, gotLimit}); diff != "" {
		t.Errorf("Kernel view after Set, shares as weight (-want +got):\n%s", diff)
	}

	for _, undo := range []cgroups.Undo{undoLimit, undoShares, undoQuota} {
		if err := undo(); err != nil {
			t.Fatal(err)
		}
	}
	gotQuota, _ = l.ReadCPUQuota(cg)
	gotShares, _ = l.ReadCPUShares(cg)
	gotLimit, _ = l.ReadMemoryLimit(cg)
	if diff := cmp.Diff([]any{origQuota, origShares, origLimit}, []any{gotQuota, gotShares, gotLimit}); diff != "" {
		t.Errorf("Kernel view after Undo (-want +got):\n%s", diff)
	}

	// v1 refuses a parent quota below a child's: the rule SetCPUQuota's
	// doc warns the executor about.
	if l.Version() == cgroups.V1 {
		child := pod.ContainerCgroup()
		if _, err := l.SetCPUQuota(child, cgroups.CPUQuota{QuotaMicros: 80000, PeriodMicros: 100000}); err != nil {
			t.Fatal(err)
		}
		_, err := l.SetCPUQuota(cg, cgroups.CPUQuota{QuotaMicros: 40000, PeriodMicros: 100000})
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("v1 parent quota below its child's: %v, want EINVAL", err)
		}
	}
}

// TestRealCgroupRemovedWhileOpen checks the kernel semantics File relies
// on: a file kept open in a cgroup that is then removed reads as gone.
func TestRealCgroupRemovedWhileOpen(t *testing.T) {
	pod := cgroupstest.NewRealPod(t, corev1.PodQOSBestEffort)
	l := pod.Layout
	files := l.UsageFiles(pod.ContainerCgroup())
	defer files.Close()
	r := cgroups.NewReader()
	if _, err := r.CPUUsage(files); err != nil {
		t.Fatalf("Reading a live cgroup: %v", err)
	}
	if _, err := r.MemoryWorkingSet(files); err != nil {
		t.Fatalf("Reading a live cgroup: %v", err)
	}
	dirs := []string{l.Path("", pod.ContainerCgroup())}
	if l.Version() == cgroups.V1 {
		dirs = []string{l.Path(cgroups.ControllerCPU, pod.ContainerCgroup()), l.Path(cgroups.ControllerCPUAcct, pod.ContainerCgroup()), l.Path(cgroups.ControllerMemory, pod.ContainerCgroup())}
	}
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.CPUUsage(files); !cgroups.IsGone(err) {
		t.Errorf("CPU of a removed cgroup through an open file: %v, want a gone error", err)
	}
	if _, err := r.MemoryWorkingSet(files); !cgroups.IsGone(err) {
		t.Errorf("Memory of a removed cgroup through an open file: %v, want a gone error", err)
	}
}

func TestContainerCgroups(t *testing.T) {
	for _, d := range []cgroups.Driver{cgroups.DriverCgroupfs, cgroups.DriverSystemd} {
		t.Run(string(d), func(t *testing.T) {
			l, cg := fixturePod(t, cgroups.V1, d)
			tree := cgroupstest.Tree{Layout: l}
			name := func(id string) string {
				if d == cgroups.DriverSystemd {
					return "cri-containerd-" + id + ".scope"
				}
				return id
			}
			for _, id := range []string{"bbb", "aaa"} {
				if err := tree.Cgroup(cg+"/"+name(id), cgroupstest.Usage{}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := l.ContainerCgroups(cg)
			if err != nil {
				t.Fatal(err)
			}
			want := []cgroups.ContainerCgroup{{ID: "aaa", Cgroup: cg + "/" + name("aaa")}, {ID: "bbb", Cgroup: cg + "/" + name("bbb")}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ContainerCgroups (-want +got):\n%s", diff)
			}
		})
	}
}
