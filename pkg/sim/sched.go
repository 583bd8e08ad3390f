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
	"math"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// kube-scheduler's sampling of nodes (pkg/scheduler/schedule_one.go):
// with more than minFeasibleNodesToFind nodes it stops filtering once it
// found max(minFeasibleNodesToFind, n × (50 − n/125) %) feasible ones (the
// percentage at least 5), starting where the previous cycle stopped.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	basePercentageOfNodesToScore     = 50
)

// numFeasibleNodesToFind is kube-scheduler's adaptive
// percentageOfNodesToScore.
func numFeasibleNodesToFind(numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	pct := max(basePercentageOfNodesToScore-numAllNodes/125, minFeasibleNodesPercentageToFind)
	return max(numAllNodes*pct/100, minFeasibleNodesToFind)
}

// scheduler places pods the way a kube-scheduler profile does with the
// plugins the simulation models, and nothing else:
//
//   - queue sort: PrioritySort (priority, then creation);
//   - filter: NodeResourcesFit (pods count and every requested resource,
//     tier resources included, against allocatable minus what the node's
//     pods request), and with LoadAware on, LoadAware's Filter;
//   - score: kube-scheduler's default profile, NodeResourcesFit's
//     LeastAllocated over cpu and memory (weights 1, 1, non-zero
//     requests) + NodeResourcesBalancedAllocation (cpu and memory,
//     weights 1, requests as they are; skipped for a pod requesting
//     neither, as its PreScore does); with LoadAware on, the profile the
//     chart deploys (charts/waterline/templates/scheduler.yaml: the
//     default plugins plus LoadAware at scheduler.loadAwareWeight), which
//     adds laWeight × LoadAware's Score. The other default scores
//     (TaintToleration, NodeAffinity, PodTopologySpread, InterPodAffinity,
//     ImageLocality) are the same on every simulated node: no taints,
//     affinities, spread constraints or images. The integration tests
//     hold both to a real scheduler (test/integration/sim_fidelity_test.go);
//   - pick: the highest score, ties broken uniformly at random (as
//     kube-scheduler's selectHost does, from a seeded generator here).
//
// Its LoadAware state is the plugin's: each node's NodeMetric and the
// pods assigned to it (counted from the moment they are placed, as
// Reserve does), their excess refreshed lazily.
type scheduler struct {
	la        *nodeload.Config // nil: LoadAware off
	laWeight  int64            // LoadAware's score weight
	rng       *rand.Rand
	nextStart int
	feasible  []*node
	// views are the nodes' fitViews side by side, views[i] that of the
	// i-th node pick is given (both callers pass every node, in the order
	// the views were made: TestSchedulerViewsMatchNodes): pick checks
	// NodeResourcesFit there without touching the node objects, most of
	// which do not fit a pod on a busy cluster.
	views []fitView
}

// fits reports whether p passes the filters on n at now.
func (s *scheduler) fits(p *pod, n *node, now time.Time) bool {
	return fitsView(p, n.fit, now) && s.fitsLoad(p, n, now)
}

// fitsView is NodeResourcesFit and the MemoryPressure taint, which read
// only the node's fitView.
func fitsView(p *pod, f *fitView, now time.Time) bool {
	if f.free[resPods] < 1 {
		return false
	}
	if p.bestEffort && now.UnixNano() < f.pressureUntil {
		return false
	}
	for r := range resPods {
		if p.req[r] > 0 && p.req[r] > f.free[r] {
			return false
		}
	}
	return true
}

// fitsLoad is the filters after fitsView: LoadAware's, when it is on.
func (s *scheduler) fitsLoad(p *pod, n *node, now time.Time) bool {
	if s.la != nil {
		if s.la.FilterSummary(&p.load, n.loadSummary(s.la, now), now.UnixNano()).Reason != nodeload.Fit {
			return false
		}
	}
	return true
}

// score ranks n for p: the weighted sum of the profile's scores (each 0
// to 100).
func (s *scheduler) score(p *pod, n *node, now time.Time) int64 {
	cpu := leastRequested(n.nonZeroCPU+p.nonZeroCPU, n.alloc[resCPU])
	mem := leastRequested(n.nonZeroMemory+p.nonZeroMemory, n.alloc[resMemory])
	total := (cpu + mem) / 2
	if p.req[resCPU] != 0 || p.req[resMemory] != 0 {
		total += balancedAllocation(&p.req, &n.req, &n.alloc, n.balanceWithout)
	}
	if s.la != nil {
		total += s.laWeight * s.la.ScoreSummary(&p.load, n.loadSummary(s.la, now), now.UnixNano())
	}
	return total
}

// balancedAllocation is NodeResourcesBalancedAllocation's score of a node
// for a pod (kube-scheduler 1.36, cpu and memory, requests as they are):
// how much placing the pod improves the balance of the two fractions
// requested, from 50 (worse) through 75 (unchanged) to 100 (better).
// withoutPod is the node's balanceOf, which the node keeps (it changes
// only when a pod comes or goes).
func balancedAllocation(pod, node, alloc *resVec, withoutPod int64) int64 {
	var with [2]int64
	for i, r := range [2]int{resCPU, resMemory} {
		with[i] = node[r] + pod[r]
	}
	allocatable := [2]int64{alloc[resCPU], alloc[resMemory]}
	withPod := balancedResourceScore(&with, &allocatable)
	const maxScore = 100
	return maxScore/2 + (maxScore/2+withPod-withoutPod)/2
}

// balanceOf is balancedResourceScore of what a node's pods request.
func balanceOf(node, alloc *resVec) int64 {
	return balancedResourceScore(&[2]int64{node[resCPU], node[resMemory]}, &[2]int64{alloc[resCPU], alloc[resMemory]})
}

// balancedResourceScore is (1 − the standard deviation of the requested
// fractions) × 100, in kube-scheduler's floating point.
func balancedResourceScore(requested, allocatable *[2]int64) int64 {
	var fractions [2]float64
	k := 0
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		fractions[k] = min(float64(requested[i])/float64(allocatable[i]), 1)
		k++
	}
	std := 0.0
	if k == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	return int64((1 - std) * float64(100))
}

// leastRequested is NodeResourcesFit's LeastAllocated score of one
// resource: (capacity − requested) × 100 / capacity, 0 when the requests
// exceed the capacity or there is none.
func leastRequested(requested, capacity int64) int64 {
	if capacity <= 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * 100 / capacity
}

// pick returns the node p goes to, or nil when no node fits.
func (s *scheduler) pick(p *pod, nodes []*node, now time.Time) *node {
	n := len(nodes)
	if n == 0 {
		return nil
	}
	want := numFeasibleNodesToFind(n)
	s.feasible = s.feasible[:0]
	processed := 0
	// j is (nextStart + i) mod n, kept without a division per node.
	j := s.nextStart % n
	for i := 0; i < n && len(s.feasible) < want; i++ {
		processed++
		if fitsView(p, &s.views[j], now) && s.fitsLoad(p, nodes[j], now) {
			s.feasible = append(s.feasible, nodes[j])
		}
		if j++; j == n {
			j = 0
		}
	}
	s.nextStart = (s.nextStart + processed) % n
	switch len(s.feasible) {
	case 0:
		return nil
	case 1:
		return s.feasible[0]
	}
	var best *node
	bestScore, ties := int64(-1), 0
	for _, nd := range s.feasible {
		sc := s.score(p, nd, now)
		switch {
		case sc > bestScore:
			best, bestScore, ties = nd, sc, 1
		case sc == bestScore:
			// Reservoir sampling: each tied node wins with equal chance.
			ties++
			if s.rng.IntN(ties) == 0 {
				best = nd
			}
		}
	}
	return best
}

func resourceMilli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

func resourceBytes(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.BinarySI) }
