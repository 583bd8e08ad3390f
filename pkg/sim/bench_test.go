package sim

import (
	"fmt"
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
