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
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

const MiB = 1 << 20

// The fixture node of testdata/ (see testdata/generate.sh and README.md).
var (
	uidG = types.UID("6d0a1c62-0c5e-4d1c-9f2e-1a2b3c4d5e01")
	uidB = types.UID("9b4e7f10-2d3c-4e5f-8a9b-0c1d2e3f4a02")
	uidE = types.UID("c3d2e1f0-a9b8-4c7d-8e6f-5a4b3c2d1e03")

	idGSandbox = "a7a371a8bed3fb6f692d3d5a66d15225d932e9f3c5e1d2278db6bdfa1610e5fd"
	idGApp     = "49c94cce41278d95b3fee260adf3b954163b862ec6b39b52fa5e09c334785723"
	idBSandbox = "2e2b375c44327e5c47cffb3cc3e1220e125b18b83cdea8861bfb1472b925f31b"
	idBWeb     = "13ab6d4d692daadd8918b64b09ddc49746a11fcf7f90b47e9c56e71bdf91118c"
	idBSidecar = "bf42fcfdd76dbc4dc7d9817af465837894cb1c2d493eab7c8a5754a8c533db45"
	idESandbox = "dc4f11cd90bdada855ec717678d344c4db62e27f9a227a9fd98bb0dfa97fa8b4"
	idEJob     = "41623225ae3ea7a15a19a09d2a4dbc957e6eafc396c2f0c6fa5e4f03b7d3430c"

	podG = PodRef{UID: uidG, Namespace: "shop", Name: "db-0", QoSClass: corev1.PodQOSGuaranteed, Band: extension.BandProd,
		Containers: []ContainerRef{{Name: "app", ID: idGApp}}}
	podB = PodRef{UID: uidB, Namespace: "shop", Name: "web-7f9c", QoSClass: corev1.PodQOSBurstable, Band: extension.BandMid,
		Containers: []ContainerRef{{Name: "web", ID: idBWeb}, {Name: "sidecar", ID: idBSidecar}}}
	podE = PodRef{UID: uidE, Namespace: "batch", Name: "job-x", QoSClass: corev1.PodQOSBestEffort, Band: extension.BandBatch,
		Containers: []ContainerRef{{Name: "job", ID: idEJob}}}
	// podPending has no cgroup: kubelet has not started it.
	podPending = PodRef{UID: "00000000-0000-0000-0000-00000000dead", Namespace: "batch", Name: "pending", QoSClass: corev1.PodQOSBestEffort, Band: extension.BandBatch}
)

type fixture struct {
	name    string
	version cgroups.Version
	driver  cgroups.Driver
	// ctrDir is the container cgroup directory name for a container ID.
	ctrDir func(id string) string
}

var fixtures = []fixture{
	{"v1-cgroupfs", cgroups.V1, cgroups.DriverCgroupfs, func(id string) string { return id }},
	{"v1-systemd", cgroups.V1, cgroups.DriverSystemd, func(id string) string { return "cri-containerd-" + id + ".scope" }},
	{"v2-cgroupfs", cgroups.V2, cgroups.DriverCgroupfs, func(id string) string { return id }},
	{"v2-systemd", cgroups.V2, cgroups.DriverSystemd, func(id string) string { return "crio-" + id + ".scope" }},
}

// node is a copy of one testdata tree the test may change.
type node struct {
	t      *testing.T
	f      fixture
	dir    string
	layout *cgroups.Layout
	tree   cgroupstest.Tree
	clock  *clocktesting.FakeClock
	c      *Collector
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newNode(t *testing.T, f fixture) *node {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", f.name))); err != nil {
		t.Fatalf("Copying fixture %s: %v", f.name, err)
	}
	layout, err := cgroups.Detect(cgroups.Options{Root: filepath.Join(dir, "cgroup")})
	if err != nil {
		t.Fatalf("Detect: %v", err)
	}
	if layout.Version() != f.version || layout.Driver() != f.driver {
		t.Fatalf("Detect found %s/%s, want %s/%s", layout.Version(), layout.Driver(), f.version, f.driver)
	}
	clk := clocktesting.NewFakeClock(t0)
	// Containers every cycle, so each cycle's sample is complete.
	c, err := New(Config{ProcRoot: filepath.Join(dir, "proc"), ContainerInterval: ptr.To(time.Second)}, layout, clk)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &node{t: t, f: f, dir: dir, layout: layout, tree: cgroupstest.Tree{Layout: layout}, clock: clk, c: c}
}

func (n *node) podCgroup(p PodRef) string { return n.layout.PodCgroup(p.UID, p.QoSClass) }

func (n *node) ctrCgroup(p PodRef, id string) string { return n.podCgroup(p) + "/" + n.f.ctrDir(id) }

// setCPU sets a cumulative CPU counter, in seconds.
func (n *node) setCPU(cgroup string, seconds float64) {
	n.t.Helper()
	if err := n.tree.SetCPU(cgroup, uint64(seconds*1e9)); err != nil {
		n.t.Fatalf("SetCPU %s: %v", cgroup, err)
	}
}

// setProc rewrites /proc/stat and /proc/meminfo; busy and idle are jiffies.
func (n *node) setProc(busy, idle uint64) {
	n.t.Helper()
	// 16 GiB total, 12 GiB available, as in the fixture.
	if err := cgroupstest.Proc(filepath.Join(n.dir, "proc"), busy, idle, 16<<30, 12<<30); err != nil {
		n.t.Fatalf("Proc: %v", err)
	}
}

func (n *node) collect(pods ...PodRef) *Sample {
	n.t.Helper()
	s, err := n.c.Collect(n.t.Context(), pods)
	if err != nil {
		n.t.Fatalf("Collect: %v", err)
	}
	return s
}

var cmpSample = []cmp.Option{
	cmpopts.EquateApprox(0, 1e-9),
	cmpopts.IgnoreFields(CycleStats{}, "Duration"),
}

func mem(mib uint64) Usage { return Usage{Memory: mib * MiB, HasMemory: true} }

func cpuMem(cores float64, mib uint64) Usage {
	return Usage{CPU: cores, HasCPU: true, Memory: mib * MiB, HasMemory: true}
}

func TestCollectFixtureTrees(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			n := newNode(t, f)
			pods := []PodRef{podG, podB, podE, podPending}

			// Cycle 1, one second after New: the node has a rate (New read
			// the baseline), pods do not (first read). busy 155000 → 155150
			// jiffies = 150 jiffies / 100 Hz / 1 s = 1.5 cores.
			n.clock.Step(time.Second)
			n.setProc(155150, 800050)
			got := n.collect(pods...)
			want := &Sample{
				Time: t0.Add(time.Second),
				// 16 GiB − 12 GiB available = 4096 MiB.
				Node: cpuMem(1.5, 4096),
				// No system CPU: three pods have no rate yet. Memory is
				// 4096 − (500 + 1000 + 250) = 2346 MiB.
				System: mem(2346),
				Pods: []PodSample{
					// Working sets: 600−100, 1200−200, 300−50 MiB; containers
					// 1−0 and 599−100; 1−0, 899−150, 300−50; 1−0, 299−50.
					{Pod: podG, Usage: mem(500), Containers: sortByID([]ContainerUsage{
						{ID: idGSandbox, Usage: mem(1)}, {ID: idGApp, Name: "app", Usage: mem(499)}})},
					{Pod: podB, Usage: mem(1000), Containers: sortByID([]ContainerUsage{
						{ID: idBSandbox, Usage: mem(1)}, {ID: idBWeb, Name: "web", Usage: mem(749)}, {ID: idBSidecar, Name: "sidecar", Usage: mem(250)}})},
					{Pod: podE, Usage: mem(250), Containers: sortByID([]ContainerUsage{
						{ID: idESandbox, Usage: mem(1)}, {ID: idEJob, Name: "job", Usage: mem(249)}})},
				},
				ContainersCollected: true,
				// Every pod's memory.stat on its first read.
				Stats: CycleStats{Pods: 4, PodsCollected: 3, PodsMissing: 1, Containers: 7, MemoryStatReads: 3},
			}
			if diff := cmp.Diff(want, got, cmpSample...); diff != "" {
				t.Errorf("Cycle 1 (-want +got):\n%s", diff)
			}

			// Cycle 2, one more second: counters move by known amounts.
			n.clock.Step(time.Second)
			n.setProc(155450, 800100) // +300 jiffies = 3.0 cores
			n.setCPU(n.podCgroup(podG), 100.5)
			n.setCPU(n.ctrCgroup(podG, idGApp), 99.5)
			n.setCPU(n.podCgroup(podB), 201.25)
			n.setCPU(n.ctrCgroup(podB, idBWeb), 151)
			n.setCPU(n.ctrCgroup(podB, idBSidecar), 49.25)
			n.setCPU(n.podCgroup(podE), 50.25)
			n.setCPU(n.ctrCgroup(podE, idEJob), 49.25)
			if err := n.tree.SetMemory(n.podCgroup(podG), 700*MiB, 100*MiB); err != nil {
				t.Fatal(err)
			}
			got = n.collect(pods...)
			want = &Sample{
				Time: t0.Add(2 * time.Second),
				Node: cpuMem(3, 4096),
				// CPU 3 − (0.5 + 1.25 + 0.25) = 1; memory 4096 − (600 +
				// 1000 + 250) = 2246 MiB.
				System: cpuMem(1, 2246),
				Pods: []PodSample{
					{Pod: podG, Usage: cpuMem(0.5, 600), Containers: sortByID([]ContainerUsage{
						{ID: idGSandbox, Usage: cpuMem(0, 1)}, {ID: idGApp, Name: "app", Usage: cpuMem(0.5, 499)}})},
					{Pod: podB, Usage: cpuMem(1.25, 1000), Containers: sortByID([]ContainerUsage{
						{ID: idBSandbox, Usage: cpuMem(0, 1)}, {ID: idBWeb, Name: "web", Usage: cpuMem(1, 749)}, {ID: idBSidecar, Name: "sidecar", Usage: cpuMem(0.25, 250)}})},
					{Pod: podE, Usage: cpuMem(0.25, 250), Containers: sortByID([]ContainerUsage{
						{ID: idESandbox, Usage: cpuMem(0, 1)}, {ID: idEJob, Name: "job", Usage: cpuMem(0.25, 249)}})},
				},
				ContainersCollected: true,
				// Only db-0's memory.stat: its charge moved by 100 MiB.
				Stats: CycleStats{Pods: 4, PodsCollected: 3, PodsMissing: 1, Containers: 7, MemoryStatReads: 1},
			}
			if diff := cmp.Diff(want, got, cmpSample...); diff != "" {
				t.Errorf("Cycle 2 (-want +got):\n%s", diff)
			}
		})
	}
}

func sortByID(cs []ContainerUsage) []ContainerUsage {
	out := append([]ContainerUsage(nil), cs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].ID < out[i].ID {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// podIDs lists the pods of a sample with whether each has a CPU rate.
func podIDs(s *Sample) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Pods {
		out[p.Pod.Name] = p.HasCPU
	}
	return out
}

func TestCollectPodDeletedBetweenListingAndReading(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			n := newNode(t, f)
			n.collect(podG, podB, podE)
			n.clock.Step(time.Second)

			// kubelet removes web-7f9c after its containers were listed.
			n.c.afterList = func(p PodRef) {
				if p.UID == uidB {
					if err := n.tree.Remove(n.podCgroup(podB)); err != nil {
						t.Fatal(err)
					}
				}
			}
			got := n.collect(podG, podB, podE)
			n.c.afterList = nil
			if diff := cmp.Diff(map[string]bool{"db-0": true, "job-x": true}, podIDs(got)); diff != "" {
				t.Errorf("Pods collected (-want +got):\n%s", diff)
			}
			wantStats := CycleStats{Pods: 3, PodsCollected: 2, PodsMissing: 1, Containers: 4}
			if diff := cmp.Diff(wantStats, got.Stats, cmpSample...); diff != "" {
				t.Errorf("Stats (-want +got):\n%s", diff)
			}
			if got.System.HasCPU != true {
				t.Errorf("System CPU missing although every collected pod has a rate")
			}

			// Next cycle the informer still lists it: missing, no error.
			n.clock.Step(time.Second)
			got = n.collect(podG, podB, podE)
			if diff := cmp.Diff(CycleStats{Pods: 3, PodsCollected: 2, PodsMissing: 1, Containers: 4}, got.Stats, cmpSample...); diff != "" {
				t.Errorf("Stats of the next cycle (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCollectPodDeletedBetweenCycles(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			n := newNode(t, f)
			n.collect(podG, podB, podE)
			if err := n.tree.Remove(n.podCgroup(podE)); err != nil {
				t.Fatal(err)
			}
			n.clock.Step(time.Second)
			got := n.collect(podG, podB, podE)
			if diff := cmp.Diff(map[string]bool{"db-0": true, "web-7f9c": true}, podIDs(got)); diff != "" {
				t.Errorf("Pods collected (-want +got):\n%s", diff)
			}
			if got.Stats.PodsMissing != 1 {
				t.Errorf("PodsMissing = %d, want 1", got.Stats.PodsMissing)
			}
			if _, ok := n.c.pods[uidE]; ok {
				t.Errorf("Collector still holds state for the deleted pod")
			}
			// The informer catches up and drops it: nothing left to count.
			n.clock.Step(time.Second)
			got = n.collect(podG, podB)
			if got.Stats.PodsMissing != 0 || len(n.c.pods) != 2 {
				t.Errorf("After the informer dropped the pod: missing %d, states %d; want 0, 2", got.Stats.PodsMissing, len(n.c.pods))
			}
		})
	}
}

func TestCollectHalfWrittenFiles(t *testing.T) {
	// The v1 and v2 file that holds the value being broken.
	cpuFile := map[cgroups.Version]string{cgroups.V1: "cpuacct.usage", cgroups.V2: "cpu.stat"}
	memStatFile := "memory.stat"
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			n := newNode(t, f)
			// memory.stat every cycle: the cut file is read at once.
			n.c.memStatInterval = n.c.interval
			n.collect(podG, podB, podE)
			n.clock.Step(time.Second)
			ctrl := func(c cgroups.Controller, p PodRef) string { return n.layout.Path(c, n.podCgroup(p)) }
			// db-0: CPU counter empty, as while kubelet recreates it.
			if err := os.WriteFile(filepath.Join(ctrl(cgroups.ControllerCPUAcct, podG), cpuFile[f.version]), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			// job-x: memory.stat cut in the middle of a line, before the
			// inactive-file key.
			statPath := filepath.Join(ctrl(cgroups.ControllerMemory, podE), memStatFile)
			b, err := os.ReadFile(statPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(statPath, b[:len(b)/4], 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := n.c.Collect(t.Context(), []PodRef{podG, podB, podE})
			if err != nil {
				t.Fatalf("Collect failed the cycle: %v", err)
			}
			byName := map[string]Usage{}
			for _, p := range got.Pods {
				byName[p.Pod.Name] = p.Usage
			}
			want := map[string]Usage{
				"db-0":     mem(500),        // memory only
				"web-7f9c": cpuMem(0, 1000), // untouched
				"job-x":    {HasCPU: true},  // CPU only (0 cores: counter unchanged)
			}
			if diff := cmp.Diff(want, byName, cmpSample...); diff != "" {
				t.Errorf("Pod usage (-want +got):\n%s", diff)
			}
			if got.Stats.ReadErrors != 2 {
				t.Errorf("ReadErrors = %d, want 2", got.Stats.ReadErrors)
			}
			if got.System.HasCPU || got.System.HasMemory {
				t.Errorf("System usage %+v computed from incomplete pods", got.System)
			}
		})
	}
}

func TestCollectCounterReset(t *testing.T) {
	n := newNode(t, fixtures[0])
	n.collect(podB)
	// The pod's cgroup was recreated: its counter starts again from 2 s.
	n.clock.Step(time.Second)
	n.setCPU(n.podCgroup(podB), 2)
	got := n.collect(podB)
	if got.Pods[0].HasCPU || got.Stats.CounterResets != 1 {
		t.Errorf("After reset: HasCPU %v, resets %d; want no rate and 1 reset", got.Pods[0].HasCPU, got.Stats.CounterResets)
	}
	// The new value is the baseline: +0.75 s in 1.5 s = 0.5 cores.
	n.clock.Step(1500 * time.Millisecond)
	n.setCPU(n.podCgroup(podB), 2.75)
	got = n.collect(podB)
	if diff := cmp.Diff(Usage{CPU: 0.5, HasCPU: true, Memory: 1000 * MiB, HasMemory: true}, got.Pods[0].Usage, cmpSample...); diff != "" {
		t.Errorf("Rate after reset (-want +got):\n%s", diff)
	}

	// /proc/stat going backwards (a CPU unplugged) is a reset too.
	n.clock.Step(time.Second)
	n.setProc(1000, 5000)
	got = n.collect(podB)
	if got.Node.HasCPU || got.Stats.CounterResets != 1 {
		t.Errorf("After /proc/stat reset: node HasCPU %v, resets %d; want no rate and 1 reset", got.Node.HasCPU, got.Stats.CounterResets)
	}
}

func TestCounterRate(t *testing.T) {
	tests := []struct {
		name      string
		prev      counter
		value     uint64
		at        time.Time
		wantCores float64
		wantOK    bool
		wantReset bool
		wantNext  counter
	}{{
		name:     "first reading is a baseline, not zero",
		value:    5e9,
		at:       t0,
		wantNext: counter{value: 5e9, at: t0, ok: true},
	}, {
		// 1.5e9 ns over 2 s = 0.75 cores.
		name: "rate over elapsed time", prev: counter{value: 5e9, at: t0, ok: true},
		value: 6.5e9, at: t0.Add(2 * time.Second), wantCores: 0.75, wantOK: true,
		wantNext: counter{value: 6.5e9, at: t0.Add(2 * time.Second), ok: true},
	}, {
		name: "counter went backwards", prev: counter{value: 5e9, at: t0, ok: true},
		value: 1e9, at: t0.Add(time.Second), wantReset: true,
		wantNext: counter{value: 1e9, at: t0.Add(time.Second), ok: true},
	}, {
		name: "time did not move keeps the older baseline", prev: counter{value: 5e9, at: t0, ok: true},
		value: 6e9, at: t0,
		wantNext: counter{value: 5e9, at: t0, ok: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.prev
			cores, ok, reset := c.rate(tc.value, tc.at, 1e9)
			if diff := cmp.Diff([]any{tc.wantCores, tc.wantOK, tc.wantReset}, []any{cores, ok, reset}); diff != "" {
				t.Errorf("rate (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNext, c, cmp.AllowUnexported(counter{})); diff != "" {
				t.Errorf("next baseline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCollectPodWithoutQoSClass(t *testing.T) {
	n := newNode(t, fixtures[3])
	noQoS := podB
	noQoS.QoSClass = ""
	got := n.collect(noQoS)
	if len(got.Pods) != 1 || got.Pods[0].Memory != 1000*MiB {
		t.Errorf("Pod without QoS class: got %+v, want web-7f9c found under burstable with 1000 MiB", got.Pods)
	}
}

func TestCollectWithoutContainers(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/v2-systemd")); err != nil {
		t.Fatal(err)
	}
	layout, err := cgroups.Detect(cgroups.Options{Root: filepath.Join(dir, "cgroup")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{ProcRoot: filepath.Join(dir, "proc"), ContainerInterval: ptr.To(time.Duration(0))}, layout, clocktesting.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Collect(t.Context(), []PodRef{podG, podB})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 2 || s.Pods[0].Containers != nil || s.Stats.Containers != 0 {
		t.Errorf("Got %d pods, containers %v, stats %d; want 2 pods and no containers", len(s.Pods), s.Pods[0].Containers, s.Stats.Containers)
	}
}

func TestCollectContainerInterval(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/v1-cgroupfs")); err != nil {
		t.Fatal(err)
	}
	layout, err := cgroups.Detect(cgroups.Options{Root: filepath.Join(dir, "cgroup")})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	// A cycle a second, containers every 10 s.
	c, err := New(Config{ProcRoot: filepath.Join(dir, "proc"), ContainerInterval: ptr.To(10 * time.Second)}, layout, clk)
	if err != nil {
		t.Fatal(err)
	}
	tree := cgroupstest.Tree{Layout: layout}
	job := layout.PodCgroup(uidE, corev1.PodQOSBestEffort) + "/" + idEJob
	var got []int // cycles that read containers
	for cycle := 0; cycle <= 20; cycle++ {
		// The job container uses 0.5 s of CPU every second.
		if err := tree.SetCPU(job, uint64(49e9+float64(cycle)*0.5e9)); err != nil {
			t.Fatal(err)
		}
		s, err := c.Collect(t.Context(), []PodRef{podE})
		if err != nil {
			t.Fatal(err)
		}
		if s.ContainersCollected {
			got = append(got, cycle)
			if cycle > 0 {
				// Rate over the 10 s since the previous container read.
				if u := containerNamed(s.Pods[0], "job"); !u.HasCPU || u.CPU != 0.5 {
					t.Errorf("Cycle %d: job container %+v, want 0.5 cores", cycle, u)
				}
			}
		} else if s.Pods[0].Containers != nil {
			t.Errorf("Cycle %d did not read containers but reports %d", cycle, len(s.Pods[0].Containers))
		}
		clk.Step(time.Second)
	}
	if diff := cmp.Diff([]int{0, 10, 20}, got); diff != "" {
		t.Errorf("Cycles reading containers (-want +got):\n%s", diff)
	}
}

func containerNamed(p PodSample, name string) Usage {
	for _, c := range p.Containers {
		if c.Name == name {
			return c.Usage
		}
	}
	return Usage{}
}

func TestCollectContextCancelled(t *testing.T) {
	n := newNode(t, fixtures[0])
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := n.c.Collect(ctx, []PodRef{podG}); !errors.Is(err, context.Canceled) {
		t.Errorf("Collect with a cancelled context: err %v, want context.Canceled", err)
	}
}

func TestNewFailsOnBadProcRoot(t *testing.T) {
	layout, err := cgroups.NewLayout(t.TempDir(), cgroups.V2, cgroups.DriverSystemd, "/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{ProcRoot: t.TempDir()}, layout, clocktesting.NewFakeClock(t0))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("New with an empty proc root: err %v, want a not-exist error", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want field.ErrorList
	}{{
		name: "defaults are valid",
		cfg:  Config{},
	}, {
		name: "every field wrong at once",
		cfg:  Config{ProcRoot: "proc", Interval: 10 * time.Millisecond, ContainerInterval: ptr.To(time.Hour)},
		want: field.ErrorList{
			field.Invalid(field.NewPath("c", "procRoot"), "proc", "must be an absolute path"),
			field.Invalid(field.NewPath("c", "interval"), "10ms", "must be between 100ms and 1m"),
			field.Invalid(field.NewPath("c", "containerInterval"), "1h0m0s", "must be 0 (off) or between interval and 10m"),
		},
	}, {
		name: "containers more often than pods",
		cfg:  Config{Interval: 2 * time.Second, ContainerInterval: ptr.To(time.Second)},
		want: field.ErrorList{field.Invalid(field.NewPath("c", "containerInterval"), "1s", "must be 0 (off) or between interval and 10m")},
	}, {
		name: "containers off",
		cfg:  Config{ContainerInterval: ptr.To(time.Duration(0))},
	}, {
		name: "interval above a minute",
		cfg:  Config{Interval: 2 * time.Minute},
		want: field.ErrorList{field.Invalid(field.NewPath("c", "interval"), "2m0s", "must be between 100ms and 1m")},
	}, {
		name: "memory.stat more often than pods",
		cfg:  Config{Interval: 2 * time.Second, MemoryStatInterval: time.Second},
		want: field.ErrorList{field.Invalid(field.NewPath("c", "memoryStatInterval"), "1s", "must be between interval and 1m")},
	}, {
		name: "memory.stat every cycle",
		cfg:  Config{Interval: 2 * time.Second, MemoryStatInterval: 2 * time.Second},
	}, {
		name: "memory.stat less often than a minute",
		cfg:  Config{MemoryStatInterval: 61 * time.Second},
		want: field.ErrorList{field.Invalid(field.NewPath("c", "memoryStatInterval"), "1m1s", "must be between interval and 1m")},
	}, {
		name: "defaults follow a long interval",
		cfg:  Config{Interval: 30 * time.Second},
	}, {
		// The memory.stat interval (10 s, as the agent's flag sets it) is
		// not also refused for being shorter than a refused interval.
		name: "a refused interval is one error",
		cfg:  Config{Interval: 10000 * time.Hour, MemoryStatInterval: 10 * time.Second},
		want: field.ErrorList{field.Invalid(field.NewPath("c", "interval"), "10000h0m0s", "must be between 100ms and 1m")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SetDefaults()
			if diff := cmp.Diff(tc.want, cfg.Validate(field.NewPath("c"))); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigDefaultsOnlyFillUnset(t *testing.T) {
	cfg := Config{ProcRoot: "/host/proc", Interval: 5 * time.Second, ContainerInterval: ptr.To(time.Duration(0)), MemoryStatInterval: 20 * time.Second}
	cfg.SetDefaults()
	want := Config{ProcRoot: "/host/proc", Interval: 5 * time.Second, ContainerInterval: ptr.To(time.Duration(0)), MemoryStatInterval: 20 * time.Second}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("SetDefaults changed set fields (-want +got):\n%s", diff)
	}
}

func TestPodRefOf(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uidB, Namespace: "shop", Name: "web-7f9c", Labels: map[string]string{extension.LabelBand: "batch"}},
		Status: corev1.PodStatus{
			QOSClass:              corev1.PodQOSBurstable,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", ContainerID: "containerd://" + idBSandbox}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", ContainerID: "containerd://" + idBWeb},
				{Name: "waiting"}, // not started: no ID
				{Name: "sidecar", ContainerID: "cri-o://" + idBSidecar},
			},
		},
	}
	want := PodRef{UID: uidB, Namespace: "shop", Name: "web-7f9c", QoSClass: corev1.PodQOSBurstable, Band: extension.BandBatch,
		Containers: []ContainerRef{{"init", idBSandbox}, {"web", idBWeb}, {"sidecar", idBSidecar}}}
	if diff := cmp.Diff(want, PodRefOf(pod)); diff != "" {
		t.Errorf("PodRefOf (-want +got):\n%s", diff)
	}
}

func TestFixtureTreesAreComplete(t *testing.T) {
	// Guards the fixtures themselves: every tree has the three pods with
	// their containers, so a broken generate.sh cannot make the tests
	// above vacuous.
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			n := newNode(t, f)
			for _, p := range []PodRef{podG, podB, podE} {
				entries, err := os.ReadDir(n.layout.Path(cgroups.ControllerCPUAcct, n.podCgroup(p)))
				if err != nil {
					t.Fatalf("Pod %s: %v", p.Name, err)
				}
				var ids []string
				for _, e := range entries {
					if id, ok := n.layout.ContainerID(e.Name()); ok && e.IsDir() {
						ids = append(ids, id)
					}
				}
				if len(ids) != len(p.Containers)+1 {
					t.Errorf("Pod %s has containers %s, want its %d plus the sandbox", p.Name, strings.Join(ids, ","), len(p.Containers))
				}
			}
		})
	}
}
