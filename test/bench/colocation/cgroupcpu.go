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

// Package colocation runs the colocation benchmark on a real node: a
// latency-sensitive Prod pod under open-loop load from outside the pods,
// beside Batch burner pods, under plain Kubernetes and under Waterline,
// and writes the results (see package report). `make bench-colocation`
// runs the full benchmark; a short smoke run of it is part of `make test`.
package colocation

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUReader reads cumulative CPU time of cgroups, in nanoseconds, on
// cgroup v1 (cpuacct.usage) or v2 (cpu.stat usage_usec).
type CPUReader struct {
	// Mount is the cgroup mount (/sys/fs/cgroup).
	Mount string
	v2    bool
}

// NewCPUReader finds the cgroup version at mount.
func NewCPUReader(mount string) (*CPUReader, error) {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
		return &CPUReader{Mount: mount, v2: true}, nil
	}
	if _, err := os.Stat(filepath.Join(mount, "cpuacct", "cpuacct.usage")); err == nil {
		return &CPUReader{Mount: mount}, nil
	}
	return nil, fmt.Errorf("no cgroup v2 nor a v1 cpuacct hierarchy at %s", mount)
}

// Usage returns the cumulative CPU time of cgroup cg (relative to the
// hierarchy root, e.g. /waterline-node-x/kubepods/besteffort).
func (r *CPUReader) Usage(cg string) (int64, error) {
	if !r.v2 {
		b, err := os.ReadFile(filepath.Join(r.Mount, "cpuacct", cg, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	f, err := os.Open(filepath.Join(r.Mount, cg, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return us * 1000, err
		}
	}
	return 0, fmt.Errorf("no usage_usec in %s/cpu.stat", cg)
}

// MemoryUsage returns the memory of cgroup cg in bytes (v1
// memory.usage_in_bytes, v2 memory.current): page cache included, which
// the burners barely have.
func (r *CPUReader) MemoryUsage(cg string) (int64, error) {
	path := filepath.Join(r.Mount, cg, "memory.current")
	if !r.v2 {
		path = filepath.Join(r.Mount, "memory", cg, "memory.usage_in_bytes")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// MachineBusy returns the machine's busy and total CPU time from
// /proc/stat, in clock ticks: the work of everything on the machine,
// the benchmark's and anyone else's.
func MachineBusy(procStat string) (busy, total int64, err error) {
	f, err := os.Open(procStat)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 || fs[0] != "cpu" {
			continue
		}
		for i, v := range fs[1:] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %w", procStat, err)
			}
			if i >= 8 { // guest time is already in user
				break
			}
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, total, nil
	}
	return 0, 0, fmt.Errorf("%s: no cpu line", procStat)
}
