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
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

// memNode is a fixture node of n pods, each charged 500 MiB with 100 MiB
// of inactive file pages (working set 400 MiB).
type memNode struct {
	t     *testing.T
	tree  cgroupstest.Tree
	clock *clocktesting.FakeClock
	c     *Collector
	pods  []PodRef
}

func newMemNode(t *testing.T, v cgroups.Version, n int, memStatInterval time.Duration) *memNode {
	t.Helper()
	dir := t.TempDir()
	l, err := cgroups.NewLayout(filepath.Join(dir, "cgroup"), v, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	m := &memNode{t: t, tree: cgroupstest.Tree{Layout: l}, clock: clocktesting.NewFakeClock(t0)}
	if err := m.tree.Init(); err != nil {
		t.Fatal(err)
	}
	if err := cgroupstest.Proc(filepath.Join(dir, "proc"), 1000, 9000, 16<<30, 12<<30); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := PodRef{UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)), Namespace: "mem", Name: fmt.Sprintf("pod-%d", i), QoSClass: corev1.PodQOSBurstable}
		if err := m.tree.Cgroup(l.PodCgroup(p.UID, p.QoSClass), cgroupstest.Usage{CPUNanos: 1e9, MemoryUsage: 500 * MiB, InactiveFile: 100 * MiB}); err != nil {
			t.Fatal(err)
		}
		m.pods = append(m.pods, p)
	}
	m.c, err = New(Config{ProcRoot: filepath.Join(dir, "proc"), MemoryStatInterval: memStatInterval}, l, m.clock)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// setMemory sets pod i's charge and inactive file pages, in MiB.
func (m *memNode) setMemory(i int, charge, inactive uint64) {
	m.t.Helper()
	p := m.pods[i]
	if err := m.tree.SetMemory(m.tree.Layout.PodCgroup(p.UID, p.QoSClass), charge*MiB, inactive*MiB); err != nil {
		m.t.Fatal(err)
	}
}

// cycle steps the clock a second and collects; it returns the sample and
// pod i's memory in MiB.
func (m *memNode) cycle(i int) (*Sample, float64) {
	m.t.Helper()
	m.clock.Step(time.Second)
	s, err := m.c.Collect(m.t.Context(), m.pods)
	if err != nil || len(s.Pods) != len(m.pods) {
		m.t.Fatalf("Collect: %d of %d pods, %v", len(s.Pods), len(m.pods), err)
	}
	return s, float64(s.Pods[i].Memory) / MiB
}

// TestMemoryStatSpreadOverInterval: with memory.stat every 10 s, a node of
// 40 pods reads all 40 on the first cycle, then 4 a cycle, each pod once
// every 10 cycles -- a tenth of the kernel's memory.stat work -- while a
// charge that moves is seen the cycle it moves.
func TestMemoryStatSpreadOverInterval(t *testing.T) {
	for _, v := range []cgroups.Version{cgroups.V1, cgroups.V2} {
		t.Run(string(v), func(t *testing.T) {
			m := newMemNode(t, v, 40, 10*time.Second)
			if s, _ := m.cycle(0); s.Stats.MemoryStatReads != 40 {
				t.Fatalf("First cycle read %d memory.stat files, want all 40", s.Stats.MemoryStatReads)
			}
			for c := 1; c <= 30; c++ {
				s, _ := m.cycle(0)
				if s.Stats.MemoryStatReads != 4 {
					t.Errorf("Cycle %d read %d memory.stat files, want 4", c, s.Stats.MemoryStatReads)
				}
				for _, p := range s.Pods {
					if p.Memory != 400*MiB {
						t.Fatalf("Cycle %d: pod %s memory %d MiB, want 400", c, p.Pod.Name, p.Memory/MiB)
					}
				}
			}
			// Anonymous memory grows by 100 MiB: seen at once, exactly.
			m.setMemory(0, 600, 100)
			if s, got := m.cycle(0); got != 500 || s.Stats.MemoryStatReads != 5 {
				t.Errorf("After +100 MiB anonymous: %.0f MiB with %d memory.stat reads, want 500 MiB with 5 (the pod's own on top)", got, s.Stats.MemoryStatReads)
			}
		})
	}
}

// TestMemoryStatStaleness bounds what a pod's memory misses between two
// memory.stat reads, against the truth (charge − inactive file pages now):
//   - page cache filling moves charge and inactive file pages together:
//     beyond MemoryStatRefreshBytes the pod's memory.stat is read at once,
//     so the pod never looks as if its working set grew;
//   - below it, the error is at most what the charge moved;
//   - pages turning active at a constant charge (a file read again) are
//     missed until the pod's next read, at most MemoryStatInterval later.
func TestMemoryStatStaleness(t *testing.T) {
	for _, v := range []cgroups.Version{cgroups.V1, cgroups.V2} {
		t.Run(string(v), func(t *testing.T) {
			m := newMemNode(t, v, 1, 10*time.Second)
			m.cycle(0)

			// +64 MiB of page cache: charge 564, inactive 164.
			m.setMemory(0, 564, 164)
			if _, got := m.cycle(0); got != 400 {
				t.Errorf("After 64 MiB of new page cache: %.0f MiB, want 400 (read memory.stat again)", got)
			}
			// +3 MiB of page cache, under the refresh threshold: reported
			// 403 against 400 true, an error of the 3 MiB the charge moved.
			m.setMemory(0, 567, 167)
			if _, got := m.cycle(0); got != 403 {
				t.Errorf("After 3 MiB of page cache: %.0f MiB, want 403 (charge now − inactive before)", got)
			}
			// The 167 MiB of file pages turn active (read again) at a
			// constant charge: the truth is 567 MiB. The stale reading
			// (inactive 164) says 403 until the next memory.stat, due
			// 10 s after the last one, which was 2 s before this cycle.
			m.setMemory(0, 567, 0)
			var caught int
			for c := 1; c <= 10; c++ {
				_, got := m.cycle(0)
				if got == 567 {
					caught = c
					break
				}
				if got != 403 {
					t.Fatalf("Cycle %d after activation: %.0f MiB, want 403 (stale) or 567 (read)", c, got)
				}
			}
			if caught == 0 || caught > 10 {
				t.Fatalf("Activated file pages never seen within 10 s")
			}
			t.Logf("Pages activated at a constant charge were seen after %d s (bound: 10 s)", caught)
			if caught != 9 {
				t.Errorf("Seen after %d cycles, want 9 (10 s after the read 2 s before the first)", caught)
			}
		})
	}
}

// TestMemoryStatEveryCycle: MemoryStatInterval = Interval is the exact
// working set every cycle, at the cost of every memory.stat every cycle.
func TestMemoryStatEveryCycle(t *testing.T) {
	m := newMemNode(t, cgroups.V1, 5, time.Second)
	m.cycle(0)
	m.setMemory(0, 500, 0)
	if s, got := m.cycle(0); got != 500 || s.Stats.MemoryStatReads != 5 {
		t.Errorf("Inactive pages turned active: %.0f MiB with %d memory.stat reads, want 500 with 5", got, s.Stats.MemoryStatReads)
	}
}
