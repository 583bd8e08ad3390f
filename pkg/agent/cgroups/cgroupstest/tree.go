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

// Package cgroupstest writes cgroup and proc files the way the kernel shows
// them, into plain directories, so tests and benchmarks of the agent can run
// against kubelet-like trees without root. It writes only under the root it
// is given and never touches a real cgroup filesystem.
package cgroupstest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// Usage is what one fixture cgroup reports.
type Usage struct {
	// CPUNanos is the cumulative CPU time (cpuacct.usage; usage_usec × 1000
	// on v2, so keep it a multiple of 1000 there).
	CPUNanos uint64
	// MemoryUsage is memory.usage_in_bytes (v1) or memory.current (v2).
	MemoryUsage uint64
	// InactiveFile is total_inactive_file (v1) or inactive_file (v2).
	InactiveFile uint64
}

// Tree writes fixture cgroups under a layout's root.
type Tree struct {
	Layout *cgroups.Layout
}

// Init creates the root and, on v2, the cgroup.controllers file by which
// the version is detected.
func (t Tree) Init() error {
	if err := os.MkdirAll(t.Layout.Root(), 0o755); err != nil {
		return err
	}
	if t.Layout.Version() == cgroups.V2 {
		return write(filepath.Join(t.Layout.Root(), "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n")
	}
	return nil
}

// Cgroup creates a cgroup in every hierarchy with the files the agent reads
// and writes: usage, and unlimited CPU quota, default shares, no memory
// limit.
func (t Tree) Cgroup(cgroup string, u Usage) error {
	l := t.Layout
	if l.Version() == cgroups.V2 {
		dir := l.Path("", cgroup)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for name, content := range map[string]string{
			"cgroup.procs": "",
			"cpu.max":      "max 100000\n",
			"cpu.weight":   "100\n",
			"memory.max":   "max\n",
		} {
			if err := write(filepath.Join(dir, name), content); err != nil {
				return err
			}
		}
	} else {
		for _, c := range []cgroups.Controller{cgroups.ControllerCPU, cgroups.ControllerCPUAcct, cgroups.ControllerMemory} {
			if err := os.MkdirAll(l.Path(c, cgroup), 0o755); err != nil {
				return err
			}
		}
		cpu := l.Path(cgroups.ControllerCPU, cgroup)
		for name, content := range map[string]string{
			cpu + "/cpu.cfs_quota_us":  "-1\n",
			cpu + "/cpu.cfs_period_us": "100000\n",
			cpu + "/cpu.shares":        "1024\n",
			l.Path(cgroups.ControllerMemory, cgroup) + "/memory.limit_in_bytes": "9223372036854771712\n",
		} {
			if err := write(name, content); err != nil {
				return err
			}
		}
	}
	if err := t.SetCPU(cgroup, u.CPUNanos); err != nil {
		return err
	}
	return t.SetMemory(cgroup, u.MemoryUsage, u.InactiveFile)
}

// SetCPU writes a cgroup's cumulative CPU time.
func (t Tree) SetCPU(cgroup string, nanos uint64) error {
	l := t.Layout
	if l.Version() == cgroups.V2 {
		us := nanos / 1000
		return write(l.Path("", cgroup)+"/cpu.stat", fmt.Sprintf(
			"usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
			us, us*3/4, us-us*3/4))
	}
	return write(l.Path(cgroups.ControllerCPUAcct, cgroup)+"/cpuacct.usage", fmt.Sprintf("%d\n", nanos))
}

// SetMemory writes a cgroup's memory usage and inactive file pages.
func (t Tree) SetMemory(cgroup string, usage, inactiveFile uint64) error {
	l := t.Layout
	if l.Version() == cgroups.V2 {
		dir := l.Path("", cgroup)
		if err := write(dir+"/memory.current", fmt.Sprintf("%d\n", usage)); err != nil {
			return err
		}
		return write(dir+"/memory.stat", fmt.Sprintf(v2MemoryStat, usage-inactiveFile, inactiveFile, inactiveFile))
	}
	dir := l.Path(cgroups.ControllerMemory, cgroup)
	if err := write(dir+"/memory.usage_in_bytes", fmt.Sprintf("%d\n", usage)); err != nil {
		return err
	}
	return write(dir+"/memory.stat", fmt.Sprintf(v1MemoryStat, inactiveFile, usage-inactiveFile, usage-inactiveFile, inactiveFile, inactiveFile))
}

// Remove deletes a cgroup from every hierarchy, as kubelet does when a pod
// goes away.
func (t Tree) Remove(cgroup string) error {
	l := t.Layout
	if l.Version() == cgroups.V2 {
		return os.RemoveAll(l.Path("", cgroup))
	}
	for _, c := range []cgroups.Controller{cgroups.ControllerCPU, cgroups.ControllerCPUAcct, cgroups.ControllerMemory} {
		if err := os.RemoveAll(l.Path(c, cgroup)); err != nil {
			return err
		}
	}
	return nil
}

// Proc writes <dir>/stat with the given busy and idle jiffies on its
// aggregate cpu line (busy split over user, system and softirq) and
// <dir>/meminfo with MemTotal and MemAvailable (bytes, multiples of 1 KiB).
func Proc(dir string, busyJiffies, idleJiffies, memTotal, memAvailable uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	user := busyJiffies * 6 / 10
	softirq := busyJiffies / 10
	system := busyJiffies - user - softirq
	stat := fmt.Sprintf("cpu  %d 0 %d %d 0 0 %d 0 0 0\n"+
		"cpu0 %d 0 %d %d 0 0 %d 0 0 0\n"+
		"cpu1 %d 0 %d %d 0 0 %d 0 0 0\n"+
		"intr 1234567 0 9 0 0 0 0 0 0 0 0\nctxt 987654321\nbtime 1700000000\nprocesses 123456\nprocs_running 3\nprocs_blocked 0\nsoftirq 2345678 0 1 2 3 4 5 6 7 8 9\n",
		user, system, idleJiffies, softirq,
		user/2, system/2, idleJiffies/2, softirq/2,
		user-user/2, system-system/2, idleJiffies-idleJiffies/2, softirq-softirq/2)
	if err := write(filepath.Join(dir, "stat"), stat); err != nil {
		return err
	}
	free := memAvailable / 2
	return write(filepath.Join(dir, "meminfo"), fmt.Sprintf(
		"MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:           45452 kB\nCached:          3359236 kB\nSwapCached:            0 kB\nActive:          1539706 kB\nInactive:        2125680 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n",
		memTotal>>10, free>>10, memAvailable>>10))
}

// write replaces path's content in place: the new bytes over the old from
// offset 0, then the file cut to their length. Unlike os.WriteFile it never
// empties the file first, so a collector reading it at the same moment (a
// test rewriting the fake /proc/stat while the agent starts) sees whole
// lines, and the file keeps its inode for readers that hold it open.
func write(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// v1MemoryStat is a cgroup v1 memory.stat as the kernel prints it; the
// values the agent does not read are plausible constants.
const v1MemoryStat = `cache 14340096
rss 9154560
rss_huge 0
shmem 0
mapped_file 7577600
dirty 0
writeback 0
swap 0
pgpgin 37866
pgpgout 32129
pgfault 39026
pgmajfault 0
inactive_anon 0
active_anon 1531904
inactive_file %d
active_file 4960256
unevictable 0
hierarchical_memory_limit 9223372036854771712
hierarchical_memsw_limit 9223372036854771712
total_cache 3486371840
total_rss %d
total_rss_huge 0
total_shmem 0
total_mapped_file 49500160
total_dirty 0
total_writeback 0
total_swap 0
total_pgpgin 38947898
total_pgpgout 38512978
total_pgfault 42013214
total_pgmajfault 2779
total_inactive_anon 0
total_active_anon %d
total_inactive_file %d
total_active_file %d
total_unevictable 0
`

// v2MemoryStat is a cgroup v2 memory.stat as the kernel prints it.
const v2MemoryStat = `anon %d
file %d
kernel 1048576
kernel_stack 98304
pagetables 262144
sec_pagetables 0
percpu 0
sock 0
vmalloc 0
shmem 0
zswap 0
zswapped 0
file_mapped 0
file_dirty 0
file_writeback 0
swapcached 0
anon_thp 0
file_thp 0
shmem_thp 0
inactive_anon 0
active_anon 0
inactive_file %d
active_file 0
unevictable 0
slab_reclaimable 0
slab_unreclaimable 0
slab 0
workingset_refault_anon 0
workingset_refault_file 0
workingset_activate_anon 0
workingset_activate_file 0
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pgscan 0
pgsteal 0
pgfault 12345
pgmajfault 0
pgrefill 0
pgactivate 0
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
thp_fault_alloc 0
thp_collapse_alloc 0
`
