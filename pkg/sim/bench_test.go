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

package sim

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// BenchmarkRun simulates the default synthetic workload for 24 hours at
// 10 s steps, each policy alone and all three together (in parallel, at
// most GOMAXPROCS at a time). k8s-default -- the scheduler's fit and the
// nodes' usage, no agents -- is the baseline the colocated policies are
// measured against. Run it with -benchtime 1x: one iteration of the
// 1000-node case is tens of seconds.
func BenchmarkRun(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		w, err := workload.Synthetic(workload.SyntheticParams{Seed: 1, Nodes: nodes, Duration: 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		steps := float64(w.Duration / (10 * time.Second))
		for _, policies := range [][]Policy{{PolicyK8sDefault}, {PolicyWaterline}, {PolicyEvictAll}, Policies} {
			name := fmt.Sprintf("nodes=%d/%s", nodes, policies[0])
			if len(policies) > 1 {
				name = fmt.Sprintf("nodes=%d/all", nodes)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var res *Result
				for b.Loop() {
					res, err = Run(b.Context(), Config{Policies: policies, Seed: 1}, w)
					if err != nil {
						b.Fatal(err)
					}
				}
				nodeSteps := float64(nodes) * steps * float64(len(policies))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodeSteps, "ns/node-step")
				b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/run")
				b.ReportMetric(res.Policies[0].Summary.MeanCPUPercent, "mean-cpu-%")
			})
		}
	}
}

// BenchmarkScale is the scale goal: the default synthetic workload for 24
// hours at 10 s steps under the default policies (both baselines and
// waterline), at 100, 300, 1000 and 3000 nodes, with the policies run at
// most GOMAXPROCS at a time (nodes=N, the default) and one at a time
// (nodes=N,parallel=1: one cluster in memory). It reports the process's
// CPU seconds per run (user + system, every goroutine) and its peak
// resident memory; run one case per process (-bench
// 'BenchmarkScale/nodes=1000$') for the peak to be that case's.
func BenchmarkScale(b *testing.B) {
	for _, nodes := range []int{100, 300, 1000, 3000} {
		for _, parallel := range []int{0, 1} {
			name := fmt.Sprintf("nodes=%d", nodes)
			if parallel > 0 {
				name += fmt.Sprintf(",parallel=%d", parallel)
			}
			b.Run(name, func(b *testing.B) {
				w, err := workload.Synthetic(workload.SyntheticParams{Seed: 1, Nodes: nodes, Duration: 24 * time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu0 := cpuSeconds()
				for b.Loop() {
					if _, err := Run(b.Context(), Config{Seed: 1, Parallel: parallel}, w); err != nil {
						b.Fatal(err)
					}
				}
				cpu := (cpuSeconds() - cpu0) / float64(b.N)
				b.ReportMetric(cpu, "cpu-s/run")
				b.ReportMetric(cpu*1e6/float64(nodes), "cpu-µs/node-day")
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
				b.ReportMetric(float64(maxRSS())/(1<<20), "peak-RSS-MiB")
			})
		}
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// maxRSS is the process's peak resident set, in bytes (Linux reports KiB).
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
