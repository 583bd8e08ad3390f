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

package metriccache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
)

// rssHelperEnv makes the test binary, instead of running tests, build the
// agent's observing half in a fresh process and print its memory: "empty"
// only starts (the baseline), "agent" fills a cache with 200 pods × 30 min
// and then runs collect cycles over a 200-pod fixture tree, appending each
// sample, as the agent's loop would.
const rssHelperEnv = "WATERLINE_METRICCACHE_RSS"

func TestMain(m *testing.M) {
	if mode := os.Getenv(rssHelperEnv); mode != "" {
		if err := runRSSHelper(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runRSSHelper(mode string) error {
	var keep []any
	if mode == "agent" {
		clk := clocktesting.NewFakeClock(t0)
		c, err := New(context.Background(), Config{}, clk)
		if err != nil {
			return err
		}
		for i := range benchSamples {
			s := benchSample(i)
			clk.SetTime(s.Time)
			if err := c.AppendSample(s); err != nil {
				return err
			}
		}
		dir, err := os.MkdirTemp("", "rss-helper")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		l, err := cgroups.NewLayout(filepath.Join(dir, "cgroup"), cgroups.V2, cgroups.DriverSystemd, "/")
		if err != nil {
			return err
		}
		tree := cgroupstest.Tree{Layout: l}
		if err := tree.Init(); err != nil {
			return err
		}
		if err := cgroupstest.Proc(filepath.Join(dir, "proc"), 1000, 9000, 16<<30, 12<<30); err != nil {
			return err
		}
		pods := make([]collector.PodRef, benchPods)
		for p := range pods {
			pods[p] = collector.PodRef{UID: uidOf(p), QoSClass: "Burstable"}
			cg := l.PodCgroup(pods[p].UID, "Burstable")
			if err := tree.Cgroup(cg, cgroupstest.Usage{CPUNanos: 1e9, MemoryUsage: 100 << 20}); err != nil {
				return err
			}
			for j := range 3 {
				if err := tree.Cgroup(fmt.Sprintf("%s/cri-containerd-%062x%02x.scope", cg, p, j), cgroupstest.Usage{CPUNanos: 1e8, MemoryUsage: 30 << 20}); err != nil {
					return err
				}
			}
		}
		col, err := collector.New(collector.Config{ProcRoot: filepath.Join(dir, "proc")}, l, clk)
		if err != nil {
			return err
		}
		defer col.Close()
		for range 60 {
			clk.Step(time.Second)
			s, err := col.Collect(context.Background(), pods)
			if err != nil {
				return err
			}
			if err := c.AppendSample(s); err != nil {
				return err
			}
		}
		keep = append(keep, c, col)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var rss, hwm string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
	}
	fmt.Printf("%s %s %d\n", strings.Fields(rss)[0], strings.Fields(hwm)[0], ms.HeapAlloc)
	runtime.KeepAlive(keep)
	return nil
}

// BenchmarkProcessRSS reports the RSS (now and peak) of a fresh process
// holding a full cache (200 pods × 30 min) after 60 collect cycles over a
// 200-pod fixture tree, against the same binary doing nothing: the
// observing half's share of the agent's ≤ 64 MiB RSS goal.
func BenchmarkProcessRSS(b *testing.B) {
	run := func(mode string) (rssKiB, hwmKiB, heap float64) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), rssHelperEnv+"="+mode)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("RSS helper %s: %v", mode, err)
		}
		if _, err := fmt.Sscan(string(out), &rssKiB, &hwmKiB, &heap); err != nil {
			b.Fatalf("RSS helper %s printed %q: %v", mode, out, err)
		}
		return rssKiB, hwmKiB, heap
	}
	for b.Loop() {
		baseRSS, baseHWM, baseHeap := run("empty")
		rss, hwm, heap := run("agent")
		b.ReportMetric(baseRSS/1024, "baseline-rss-MiB")
		b.ReportMetric(rss/1024, "rss-MiB")
		b.ReportMetric(hwm/1024, "peak-rss-MiB")
		b.ReportMetric((rss-baseRSS)/1024, "rss-growth-MiB")
		b.ReportMetric((heap-baseHeap)/(1<<20), "heap-growth-MiB")
		_ = baseHWM
	}
}
