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

package colocation

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// NodeProc is a proc directory (stat, meminfo) in which the node is
// kubelet's pods only: busy CPU is the CPU time of the node's kubepods
// cgroup, memory used is its memory. The agent reads node usage from
// /proc/stat and /proc/meminfo, which on a machine shared with other work
// count that work too; pointed here (--proc-root), Waterline acts on the
// node's own load. On a dedicated node the real /proc is the honest
// choice, and the benchmark uses it when asked (COLOBENCH_NODE_USAGE=machine).
type NodeProc struct {
	Dir  string
	cpu  *CPUReader
	node Node
	// memTotal is the machine's, in bytes.
	memTotal uint64
}

// NewNodeProc writes the files once.
func NewNodeProc(dir string, cpu *CPUReader, node Node) (*NodeProc, error) {
	total, err := memTotal("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	p := &NodeProc{Dir: dir, cpu: cpu, node: node, memTotal: total}
	return p, p.Write()
}

func memTotal(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("%s: no MemTotal", path)
}

// meminfo returns MemTotal and MemAvailable of a meminfo file, in bytes.
func meminfo(path string) (total, avail int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	seen := 0
	for sc.Scan() {
		for name, dst := range map[string]*int64{"MemTotal:": &total, "MemAvailable:": &avail} {
			if v, ok := strings.CutPrefix(sc.Text(), name); ok {
				kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("%s: %s: %w", path, name, err)
				}
				*dst = kb << 10
				seen++
			}
		}
	}
	if seen != 2 {
		return 0, 0, fmt.Errorf("%s: no MemTotal and MemAvailable", path)
	}
	return total, avail, sc.Err()
}

// memoryUsage is the kubepods cgroup's memory in bytes (working set
// would subtract inactive file pages; the Batch burners hold anonymous
// memory, so usage is close enough here).
func (p *NodeProc) memoryUsage() uint64 {
	v, err := p.cpu.MemoryUsage(filepath.Join(p.node.CgroupRoot, "kubepods"))
	if err != nil || v < 0 {
		return 0
	}
	return uint64(v)
}

// Write rewrites stat and meminfo in place with fixed-width numbers: the
// agent keeps the files open and rereads them with pread, so a renamed
// file would never be seen and a truncated one could be read empty.
func (p *NodeProc) Write() error {
	nanos, err := p.cpu.Usage(filepath.Join(p.node.CgroupRoot, "kubepods"))
	if err != nil {
		return fmt.Errorf("reading the node's pods' CPU: %w", err)
	}
	busy := nanos / 1e7 // jiffies of 10 ms
	idle := time.Now().UnixNano() / 1e7
	stat := fmt.Sprintf("cpu  %020d 0 0 %020d 0 0 0 0 0 0\ncpu0 %020d 0 0 %020d 0 0 0 0 0 0\n", busy, idle, busy, idle)
	used := min(p.memoryUsage(), p.memTotal)
	avail := (p.memTotal - used) >> 10
	mem := fmt.Sprintf("MemTotal:       %020d kB\nMemFree:        %020d kB\nMemAvailable:   %020d kB\n", p.memTotal>>10, avail, avail)
	for name, content := range map[string]string{"stat": stat, "meminfo": mem} {
		f, err := os.OpenFile(filepath.Join(p.Dir, name), os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteAt([]byte(content), 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Run rewrites the files every interval until ctx ends.
func (p *NodeProc) Run(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := p.Write(); err != nil {
				return err
			}
		}
	}
}
