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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// ProcViewMode says whose usage a NodeProcView shows as the node's.
type ProcViewMode int32

const (
	// ViewMachine shows the machine's busy CPU time and used memory, as
	// /proc does: the real node's usage is everything on the machine, the
	// tests' and anyone else's.
	ViewMachine ProcViewMode = iota
	// ViewPods shows only what the node's pods use: busy CPU is the CPU
	// time of the kubepods cgroup, used memory its working set. Other work
	// on a shared machine is then not the node's load.
	ViewPods
)

func (m ProcViewMode) String() string {
	if m == ViewPods {
		return "pods"
	}
	return "machine"
}

// NodeProcView is a proc directory (stat and meminfo) to give the agent as
// its proc root (the chart's agent.hostProcRoot) so that a test decides
// what the node's usage is: the machine's or only its pods'. The counters
// are cumulative and continuous across mode switches: each update adds
// what the selected source used since the previous update, so the agent's
// rate over a switch is never negative or a jump.
//
// The files are rewritten in place, with fixed-width numbers, every
// interval: the agent keeps them open and rereads them with pread, so a
// renamed file would never be seen.
type NodeProcView struct {
	// Dir holds stat and meminfo.
	Dir string

	mode     atomic.Int32
	interval time.Duration
	layout   *cgroups.Layout
	kubepods *cgroups.UsageFiles
	reader   *cgroups.Reader
	procRoot string

	mu sync.Mutex
	// busyNanos is the CPU time shown as busy, cumulative.
	busyNanos uint64
	// last source readings, in nanoseconds of CPU time.
	lastMachine, lastPods uint64
	started               time.Time
	memTotal              uint64
	cpus                  int
}

// StartProcView writes a NodeProcView of the node into Dir/proc-view and
// keeps it current every interval (20 ms is fine-grained enough for an
// agent sampling every second) until the test ends. It starts in
// ViewMachine.
func (n *RealNode) StartProcView(t testing.TB, interval time.Duration) *NodeProcView {
	t.Helper()
	l, err := n.Layout()
	if err != nil {
		t.Fatalf("The real node's cgroup layout: %v", err)
	}
	v, err := NewNodeProcView(filepath.Join(n.Dir, "proc-view"), "/proc", l, interval)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("The node's proc view: %v", err)
		}
	})
	return v
}

// NewNodeProcView writes the view's files once into dir, reading the
// machine from procRoot (/proc) and the pods from the kubepods cgroup of
// layout.
func NewNodeProcView(dir, procRoot string, layout *cgroups.Layout, interval time.Duration) (*NodeProcView, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	v := &NodeProcView{
		Dir: dir, interval: interval, layout: layout, procRoot: procRoot,
		kubepods: layout.UsageFiles(layout.KubepodsCgroup()),
		reader:   cgroups.NewReader(),
		started:  time.Now(),
	}
	total, _, err := v.meminfo()
	if err != nil {
		return nil, err
	}
	v.memTotal = total
	if v.cpus, err = onlineCPUs(procRoot); err != nil {
		return nil, err
	}
	if v.lastMachine, err = v.machineBusyNanos(); err != nil {
		return nil, err
	}
	// The pods' cgroup may not exist before kubelet made it: count from 0.
	v.lastPods, _ = v.reader.CPUUsage(v.kubepods)
	return v, v.Update()
}

// SetMode switches whose usage the view shows from the next update on.
func (v *NodeProcView) SetMode(m ProcViewMode) { v.mode.Store(int32(m)) }

// Mode is what the view shows.
func (v *NodeProcView) Mode() ProcViewMode { return ProcViewMode(v.mode.Load()) }

// Run updates the files every interval until ctx ends.
func (v *NodeProcView) Run(ctx context.Context) error {
	defer v.kubepods.Close()
	tick := time.NewTicker(v.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := v.Update(); err != nil {
				return err
			}
		}
	}
}

// Update adds what the selected source used since the last update and
// rewrites the files.
func (v *NodeProcView) Update() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	machine, err := v.machineBusyNanos()
	if err != nil {
		return err
	}
	pods, podsErr := v.reader.CPUUsage(v.kubepods)
	if podsErr != nil {
		pods = v.lastPods // not made yet, or read while kubelet writes
	}
	mode := v.Mode()
	switch mode {
	case ViewPods:
		if pods > v.lastPods {
			v.busyNanos += pods - v.lastPods
		}
	default:
		if machine > v.lastMachine {
			v.busyNanos += machine - v.lastMachine
		}
	}
	v.lastMachine, v.lastPods = machine, pods

	var used uint64
	if mode == ViewPods {
		used, _ = v.reader.MemoryWorkingSet(v.kubepods)
	} else {
		total, avail, err := v.meminfo()
		if err != nil {
			return err
		}
		used = total - min(avail, total)
	}
	used = min(used, v.memTotal)

	busy := v.busyNanos / 1e7 // jiffies of 10 ms (USER_HZ 100)
	wall := uint64(time.Since(v.started).Nanoseconds()) / 1e7 * uint64(v.cpus)
	idle := wall - min(busy, wall)
	stat := fmt.Sprintf("cpu  %020d 0 0 %020d 0 0 0 0 0 0\n", busy, idle)
	avail := (v.memTotal - used) >> 10
	mem := fmt.Sprintf("MemTotal:       %020d kB\nMemFree:        %020d kB\nMemAvailable:   %020d kB\n", v.memTotal>>10, avail, avail)
	for name, content := range map[string]string{"stat": stat, "meminfo": mem} {
		if err := writeInPlace(filepath.Join(v.Dir, name), content); err != nil {
			return err
		}
	}
	return nil
}

// writeInPlace overwrites the start of path with content in one write.
func writeInPlace(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(content), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// machineBusyNanos is the machine's busy CPU time from the aggregate cpu
// line of <procRoot>/stat, counted as the agent counts it (user, nice,
// system, irq, softirq, steal), in nanoseconds.
func (v *NodeProcView) machineBusyNanos() (uint64, error) {
	busy, err := ProcStatBusyJiffies(filepath.Join(v.procRoot, "stat"))
	return busy * 1e7, err
}

// ProcStatBusyJiffies reads the busy jiffies of a proc stat file's
// aggregate cpu line: user + nice + system + irq + softirq + steal.
func ProcStatBusyJiffies(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	fs := bytes.Fields(line)
	if len(fs) < 9 || string(fs[0]) != "cpu" {
		return 0, fmt.Errorf("%s: first line %q is not the aggregate cpu line", path, line)
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseUint(string(fs[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		busy += n
	}
	return busy, nil
}

// meminfo reads MemTotal and MemAvailable of <procRoot>/meminfo in bytes.
func (v *NodeProcView) meminfo() (total, avail uint64, err error) {
	path := filepath.Join(v.procRoot, "meminfo")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	var haveTotal, haveAvail bool
	for line := range bytes.Lines(b) {
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		fs := bytes.Fields(val)
		if len(fs) == 0 {
			continue
		}
		n, err := strconv.ParseUint(string(fs[0]), 10, 64)
		if err != nil {
			continue
		}
		switch string(key) {
		case "MemTotal":
			total, haveTotal = n<<10, true
		case "MemAvailable":
			avail, haveAvail = n<<10, true
		}
	}
	if !haveTotal || !haveAvail {
		return 0, 0, fmt.Errorf("%s: no MemTotal and MemAvailable", path)
	}
	return total, avail, nil
}

// onlineCPUs counts the per-CPU lines of <procRoot>/stat.
func onlineCPUs(procRoot string) (int, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range bytes.Lines(b) {
		if len(line) > 3 && bytes.HasPrefix(line, []byte("cpu")) && line[3] >= '0' && line[3] <= '9' {
			n++
		}
	}
	return max(n, 1), nil
}
