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

package resctltest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FakeProc is a proc directory (stat, meminfo) for the collector in which
// the node's CPU is the CPU of a RealNode's subtree: the collector reads
// node CPU from /proc/stat, and the real one counts everything the machine
// runs, so a test that wants "the node" to be its pods points the collector
// here (collector.Config.ProcRoot; the agent's --proc-root).
type FakeProc struct {
	// Dir is the proc directory.
	Dir string
	// MemTotal and MemAvailable are what meminfo says, in bytes.
	MemTotal, MemAvailable uint64

	node *RealNode
	t    testing.TB
}

// NewFakeProc creates the directory with the subtree's CPU so far.
func NewFakeProc(t testing.TB, node *RealNode) *FakeProc {
	t.Helper()
	p := &FakeProc{Dir: t.TempDir(), MemTotal: 4 << 30, MemAvailable: 3 << 30, node: node, t: t}
	p.Update()
	return p
}

// Update rewrites stat with the subtree's CPU time so far as busy jiffies
// (10 ms each) and meminfo with the memory fields.
func (p *FakeProc) Update() {
	p.t.Helper()
	if err := p.write(); err != nil {
		p.t.Fatalf("Updating fake proc: %v", err)
	}
}

// write overwrites the files in place with content of a fixed length
// (zero-padded numbers): the collector keeps /proc/stat open and rereads it
// with pread, as the kernel's file allows, so a file replaced by a rename
// would never be seen again, and a truncated one could be read empty by an
// agent running beside the test.
func (p *FakeProc) write() error {
	nanos, err := p.node.cpuNanos(p.node.Top)
	if err != nil {
		return err
	}
	busy := nanos / 1e7
	// Idle advances with wall time so the file looks like a real one; the
	// collector does not read it.
	idle := uint64(time.Now().UnixNano() / 1e7)
	stat := fmt.Sprintf("cpu  %020d 0 0 %020d 0 0 0 0 0 0\ncpu0 %020d 0 0 %020d 0 0 0 0 0 0\n", busy, idle, busy, idle)
	mem := fmt.Sprintf("MemTotal:       %020d kB\nMemFree:        %020d kB\nMemAvailable:   %020d kB\n", p.MemTotal>>10, p.MemAvailable>>10, p.MemAvailable>>10)
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

// Run updates the files every interval until ctx ends, for an agent
// running as its own process, whose cycles the test does not drive.
func (p *FakeProc) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := p.write(); err != nil {
				p.t.Errorf("Updating fake proc: %v", err)
				return
			}
		}
	}
}
