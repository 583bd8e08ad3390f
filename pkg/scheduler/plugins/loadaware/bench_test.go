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

package loadaware

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/waterline-dev/waterline/apis/extension"
)

// podsPerNode is how many pods run on each benchmark node: enough that
// NodeResourcesFit's requested totals and LoadAware's assigned-pod cache
// both hold something real.
const podsPerNode = 10

// benchCluster is n nodes of 16 cores / 64Gi, each running podsPerNode
// 500m / 1Gi pods, with NodeMetrics at 20-50 % cpu, so every node passes
// both plugins' Filter: the steady-state path of a schedulable pod.
func benchCluster(b *testing.B, n int) (*env, []fwk.NodeInfo) {
	b.Helper()
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, node16(name).Obj())
		for j := range podsPerNode {
			pods = append(pods, pod(fmt.Sprintf("%s-p%d", name, j), "500m", "1Gi").Node(name).Obj())
		}
	}
	e := newEnv(b, nil, nodes, nil)
	// Fill LoadAware's cache directly: going through fake informers would
	// only slow the set-up, not change the measured path.
	scheduled := t0.Add(-time.Hour)
	for i, node := range nodes {
		m := metric(node.Name, t0).usage(fmt.Sprintf("%dm", 3200+i%5*1000), "20Gi")
		for j := range podsPerNode {
			p := pods[i*podsPerNode+j]
			m.pod(p.Namespace, p.Name, extension.BandProd, "300m", "700Mi")
			if err := e.pl.cache.assign(p, node.Name, false, scheduled); err != nil {
				b.Fatal(err)
			}
		}
		e.pl.cache.setMetric(node.Name, e.pl.cfg.NewMetric(m.obj()))
	}
	infos := make([]fwk.NodeInfo, 0, n)
	infos = append(infos, newSnapshotInfos(nodes, pods)...)
	return e, infos
}

func newSnapshotInfos(nodes []*corev1.Node, pods []*corev1.Pod) []fwk.NodeInfo {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	infos := make([]fwk.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		ni := framework.NewNodeInfo(byNode[n.Name]...)
		ni.SetNode(n)
		infos = append(infos, ni)
	}
	return infos
}

// BenchmarkFilterScore measures one scheduling cycle of one pending pod
// over every node -- PreFilter, Filter on each node, PreScore, Score on
// each node -- per node, for LoadAware and, on the same NodeInfos in the
// same run, for the in-tree NodeResourcesFit (LeastAllocated, cpu and
// memory) as the baseline. workers=1 runs the nodes in order; workers=16
// runs Filter and Score the way the scheduler does, on 16 goroutines (its
// default parallelism), where state shared between nodes (a lock) costs
// most.
func BenchmarkFilterScore(b *testing.B) {
	incoming := pod("incoming", "1", "2Gi").Obj()
	type cyclePlugin interface {
		fwk.PreFilterPlugin
		fwk.FilterPlugin
		fwk.PreScorePlugin
		fwk.ScorePlugin
	}
	for _, n := range []int{1000, 5000} {
		e, infos := benchCluster(b, n)
		fh, err := frameworkruntime.NewFramework(e.ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		fitPl, err := noderesources.NewFit(e.ctx, &schedconfig.NodeResourcesFitArgs{
			ScoringStrategy: &schedconfig.ScoringStrategy{
				Type:      schedconfig.LeastAllocated,
				Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
			},
		}, fh, feature.Features{})
		if err != nil {
			b.Fatal(err)
		}
		for _, workers := range []int{1, 16} {
			par := parallelize.NewParallelizer(workers)
			for _, pc := range []struct {
				name string
				pl   cyclePlugin
			}{{"LoadAware", e.pl}, {"NodeResourcesFit", fitPl.(*noderesources.Fit)}} {
				b.Run(fmt.Sprintf("plugin=%s/nodes=%d/workers=%d", pc.name, n, workers), func(b *testing.B) {
					cycle := func() {
						state := framework.NewCycleState()
						if _, s := pc.pl.PreFilter(e.ctx, state, incoming, infos); !s.IsSuccess() {
							b.Fatal(s)
						}
						par.Until(e.ctx, len(infos), func(i int) {
							if s := pc.pl.Filter(e.ctx, state, incoming, infos[i]); !s.IsSuccess() {
								b.Errorf("Filter on %s: %v", infos[i].Node().Name, s)
							}
						}, "filter")
						if s := pc.pl.PreScore(e.ctx, state, incoming, infos); !s.IsSuccess() {
							b.Fatal(s)
						}
						par.Until(e.ctx, len(infos), func(i int) {
							if _, s := pc.pl.Score(e.ctx, state, incoming, infos[i]); !s.IsSuccess() {
								b.Errorf("Score on %s: %v", infos[i].Node().Name, s)
							}
						}, "score")
					}
					cycle() // the steady state: excess sums and node annotations cached
					b.ReportAllocs()
					b.ResetTimer()
					cpu0 := cpuTime(b)
					for b.Loop() {
						cycle()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
					b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/node")
				})
			}
		}
	}
}

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNodeExcessRefresh measures what a node costs when its cached
// excess must be summed again (a pod or the NodeMetric changed): the path
// that is not allocation-free, for scale.
func BenchmarkNodeExcessRefresh(b *testing.B) {
	e, infos := benchCluster(b, 1)
	ni := infos[0]
	ns := e.pl.cache.get(ni.Node().Name)
	b.ReportAllocs()
	for b.Loop() {
		ns.mu.Lock()
		ns.changedLocked()
		ns.mu.Unlock()
		if _, err := e.pl.cache.load(ni.Node(), t0.Add(10*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(podsPerNode, "pods/node")
}
