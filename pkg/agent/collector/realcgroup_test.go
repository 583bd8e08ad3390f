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
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

// helperEnv makes the test binary act as a workload instead of running
// tests: "burn" spins one core, "alloc:<bytes>" allocates and touches
// memory, "pagecache:<file>" writes and reads a file on command ("write
// <MiB>", "read": read it twice, which makes its cached pages active),
// answering "done" to each. Each waits for a line on stdin before starting,
// so the test can move it into its cgroup first, and writes "ready" when
// its load is on.
const helperEnv = "WATERLINE_COLLECTOR_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	runtime.GOMAXPROCS(1)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 2
	}
	switch {
	case mode == "burn":
		fmt.Println("ready")
		x := uint64(1)
		for {
			x = x*6364136223846793005 + 1442695040888963407
			if x == 0 {
				fmt.Println(x)
			}
		}
	case len(mode) > 6 && mode[:6] == "alloc:":
		n, err := strconv.Atoi(mode[6:])
		if err != nil {
			return 2
		}
		// mmap, not the Go heap: exactly n bytes, no GC overhead to guess.
		mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return 2
		}
		for i := 0; i < n; i += os.Getpagesize() {
			mem[i] = 1
		}
		fmt.Println("ready")
		select {}
	case len(mode) > 10 && mode[:10] == "pagecache:":
		return pageCacheHelper(mode[10:])
	}
	return 2
}

func pageCacheHelper(path string) int {
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var mib int
		switch cmd := in.Text(); {
		case cmd == "read":
			for range 2 {
				f, err := os.Open(path)
				if err != nil {
					return 2
				}
				_, err = io.Copy(io.Discard, f)
				f.Close()
				if err != nil {
					return 2
				}
			}
		case func() bool { _, err := fmt.Sscanf(cmd, "write %d", &mib); return err == nil }():
			// A MiB at a time: the file's pages, not the buffer's,
			// are what the test watches.
			f, err := os.Create(path)
			if err != nil {
				return 2
			}
			buf := make([]byte, 1<<20)
			for i := range mib {
				for j := range buf {
					buf[j] = byte(i + j*7)
				}
				if _, err := f.Write(buf); err != nil {
					return 2
				}
			}
			if err := f.Close(); err != nil {
				return 2
			}
		default:
			return 2
		}
		fmt.Println("done")
	}
	return 0
}

// helper is a workload process started by startHelper.
type helper struct {
	t      *testing.T
	stdin  io.Writer
	stdout *bufio.Reader
}

// do sends a command and waits for its "done".
func (h *helper) do(cmd string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, cmd+"\n"); err != nil {
		h.t.Fatal(err)
	}
	if line, err := h.stdout.ReadString('\n'); err != nil || line != "done\n" {
		h.t.Fatalf("Helper did not do %q: %q, %v", cmd, line, err)
	}
}

// startHelper starts the test binary as a workload, moves it into the pod's
// container cgroup, lets it start and waits until it reports ready.
func startHelper(t *testing.T, pod *cgroupstest.RealPod, mode string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("Starting %s helper: %v", mode, err)
	}
	// Registered after the pod's cleanup, so it runs first: the process is
	// gone before the cgroups are removed.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pod.AddProcess(cmd.Process.Pid)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("Helper %s did not get ready: %q, %v", mode, line, err)
	}
	return &helper{t: t, stdin: stdin, stdout: out}
}

func realCollector(t *testing.T, pod *cgroupstest.RealPod) (*Collector, PodRef) {
	t.Helper()
	c, err := New(Config{ContainerInterval: ptr.To(time.Second)}, pod.Layout, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	return c, PodRef{UID: pod.UID, Namespace: "test", Name: "real", QoSClass: pod.QoS, Band: extension.BandBatch,
		Containers: []ContainerRef{{Name: "work", ID: pod.ContainerID}}}
}

func TestRealCgroupCPUBurnerCappedAtHalfCore(t *testing.T) {
	pod := cgroupstest.NewRealPod(t, corev1.PodQOSBestEffort)
	// Other work on this shared machine must not starve the burner below
	// its cap: the test's top cgroup gets the largest share.
	if _, err := pod.Layout.SetCPUShares(pod.TopCgroup(), cgroups.MaxCPUShares); err != nil {
		t.Fatalf("Raising shares of the test cgroup: %v", err)
	}
	// The collector's own write helper caps the pod: 50 ms every 100 ms.
	if _, err := pod.Layout.SetCPUQuota(pod.Cgroup, cgroups.CPUQuota{QuotaMicros: 50000, PeriodMicros: 100000}); err != nil {
		t.Fatalf("Capping the pod at 0.5 CPU: %v", err)
	}
	startHelper(t, pod, "burn")
	c, ref := realCollector(t, pod)

	if _, err := c.Collect(t.Context(), []PodRef{ref}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	s, err := c.Collect(t.Context(), []PodRef{ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 1 || !s.Pods[0].HasCPU {
		t.Fatalf("No CPU rate for the burner pod: %+v", s)
	}
	got := s.Pods[0].CPU
	t.Logf("Burner capped at 0.5 CPU measured at %.3f CPU (node %.3f)", got, s.Node.CPU)
	if math.Abs(got-0.5) > 0.05 {
		t.Errorf("Burner pod CPU = %.3f, want 0.5 ± 0.05", got)
	}
	if len(s.Pods[0].Containers) != 1 || math.Abs(s.Pods[0].Containers[0].CPU-0.5) > 0.05 || s.Pods[0].Containers[0].Name != "work" {
		t.Errorf("Burner container = %+v, want one container \"work\" at 0.5 ± 0.05", s.Pods[0].Containers)
	}
	if s.Node.CPU < got-0.05 {
		t.Errorf("Node CPU %.3f below the burner's %.3f", s.Node.CPU, got)
	}
}

func TestRealCgroupMemoryOf200MiB(t *testing.T) {
	const size = 200 << 20
	pod := cgroupstest.NewRealPod(t, corev1.PodQOSBestEffort)
	startHelper(t, pod, "alloc:"+strconv.Itoa(size))
	c, ref := realCollector(t, pod)
	s, err := c.Collect(t.Context(), []PodRef{ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pods) != 1 || !s.Pods[0].HasMemory {
		t.Fatalf("No memory for the allocating pod: %+v", s)
	}
	got := float64(s.Pods[0].Memory)
	t.Logf("Process touching 200 MiB measured at %.1f MiB (%+.2f %%)", got/(1<<20), 100*(got-size)/size)
	if math.Abs(got-size)/size > 0.05 {
		t.Errorf("Pod memory = %.1f MiB, want 200 MiB ± 5 %%", got/(1<<20))
	}
}

// TestRealCgroupPodDeletedBetweenListingAndReading removes a real pod
// cgroup while the collector holds its files open, between listing its
// containers and reading them: the kernel then answers ENODEV, which must
// count the pod as missing, not fail the cycle.
func TestRealCgroupPodDeletedBetweenListingAndReading(t *testing.T) {
	pod := cgroupstest.NewRealPod(t, corev1.PodQOSBurstable)
	c, ref := realCollector(t, pod)
	defer c.Close()
	if s, err := c.Collect(t.Context(), []PodRef{ref}); err != nil || len(s.Pods) != 1 {
		t.Fatalf("First cycle: %d pods, %v; want the pod", len(s.Pods), err)
	}
	c.afterList = func(PodRef) {
		// Children first, as kubelet removes them.
		for _, cg := range []string{pod.ContainerCgroup(), pod.Cgroup} {
			dirs := []string{pod.Layout.Path("", cg)}
			if pod.Layout.Version() == cgroups.V1 {
				dirs = []string{pod.Layout.Path(cgroups.ControllerCPU, cg), pod.Layout.Path(cgroups.ControllerCPUAcct, cg), pod.Layout.Path(cgroups.ControllerMemory, cg)}
			}
			for _, d := range dirs {
				if err := syscall.Rmdir(d); err != nil {
					t.Errorf("Removing %s: %v", d, err)
				}
			}
		}
	}
	time.Sleep(time.Second)
	s, err := c.Collect(t.Context(), []PodRef{ref})
	if err != nil {
		t.Fatalf("Cycle failed: %v", err)
	}
	if len(s.Pods) != 0 || s.Stats.PodsMissing != 1 || s.Stats.ReadErrors != 0 {
		t.Errorf("After deletion mid-cycle: %d pods, missing %d, read errors %d; want 0, 1, 0", len(s.Pods), s.Stats.PodsMissing, s.Stats.ReadErrors)
	}
	if !s.Node.HasCPU || !s.Node.HasMemory {
		t.Errorf("Node usage lost in the cycle a pod vanished: %+v", s.Node)
	}
}

// TestRealCgroupWorkingSetFollowsPageCache checks, on the kernel's own
// accounting, what a pod's memory means when memory.stat is read every
// 10 s (the default) and the charge every cycle. The truth each cycle is
// the test's own full read (charge − inactive file pages) right after.
//   - A process writes 64 MiB of file: charge and inactive file pages both
//     grow by 64 MiB. The collector reads memory.stat again at once (the
//     charge moved beyond MemoryStatRefreshBytes): memory is within 4 MiB
//     of the truth, without the file, instead of 64 MiB more.
//   - It reads the file twice: the kernel moves the pages to the active
//     list at a constant charge, so the working set grows by 64 MiB
//     without a charge change. The collector misses that until the pod's
//     next memory.stat read, at most 10 s later, and then agrees.
func TestRealCgroupWorkingSetFollowsPageCache(t *testing.T) {
	const fileMiB = 64
	pod := cgroupstest.NewRealPod(t, corev1.PodQOSBurstable)
	h := startHelper(t, pod, "pagecache:"+filepath.Join(t.TempDir(), "data"))
	clk := clocktesting.NewFakeClock(time.Now())
	c, err := New(Config{}, pod.Layout, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ref := PodRef{UID: pod.UID, Namespace: "test", Name: "real", QoSClass: pod.QoS}
	truth := pod.Layout.UsageFiles(pod.Cgroup)
	defer truth.Close()
	r := cgroups.NewReader()
	// cycle returns the collector's memory of the pod, the truth right
	// after, and the cycle's memory.stat reads, in MiB.
	cycle := func() (got, want float64, reads int) {
		t.Helper()
		clk.Step(time.Second)
		s, err := c.Collect(t.Context(), []PodRef{ref})
		if err != nil || len(s.Pods) != 1 || !s.Pods[0].HasMemory {
			t.Fatalf("Collect: %+v, %v", s, err)
		}
		ws, err := r.MemoryWorkingSet(truth)
		if err != nil {
			t.Fatal(err)
		}
		return float64(s.Pods[0].Memory) / MiB, float64(ws) / MiB, s.Stats.MemoryStatReads
	}
	before, _, _ := cycle()
	cycle()

	h.do(fmt.Sprintf("write %d", fileMiB))
	got, want, reads := cycle()
	t.Logf("After writing %d MiB of file: reported %.1f MiB, true %.1f MiB, before %.1f MiB, memory.stat reads %d", fileMiB, got, want, before, reads)
	if reads != 1 || math.Abs(got-want) > 4 || got > before+fileMiB/2 {
		t.Errorf("After writing %d MiB of file: %.1f MiB (%d memory.stat reads), want the truth %.1f ± 4, not the file on top of %.1f",
			fileMiB, got, reads, want, before)
	}

	before = got
	h.do("read")
	seen := 0
	for n := 1; n <= 11; n++ {
		got, want, _ := cycle()
		t.Logf("%d s after the file pages turned active: reported %.1f MiB, true %.1f MiB", n, got, want)
		if want < before+fileMiB-4 {
			t.Fatalf("The kernel did not activate the re-read pages (true working set %.1f MiB): nothing to measure", want)
		}
		if math.Abs(got-want) <= 4 {
			seen = n
			break
		}
		if got < before-4 || got > want+4 {
			t.Errorf("%d s after: %.1f MiB, outside [before %.1f, truth %.1f]", n, got, before, want)
		}
	}
	if seen == 0 || seen > 10 {
		t.Errorf("Active file pages not in the pod's memory within 10 s (seen after %d s)", seen)
	}
}
