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
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waterline-dev/waterline/pkg/core/loadaware"
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
//   - score: with LoadAware on, LoadAware's Score alone; otherwise
//     NodeResourcesFit's LeastAllocated over cpu and memory (weights 1, 1,
//     non-zero requests);
//   - pick: the highest score, ties broken uniformly at random (as
//     kube-scheduler's selectHost does, from a seeded generator here).
//
// Its LoadAware state is the plugin's: each node's NodeMetric and the
// pods assigned to it (counted from the moment they are placed, as
// Reserve does), their excess refreshed lazily.
type scheduler struct {
	la        *loadaware.Config // nil: LoadAware off
	rng       *rand.Rand
	nextStart int
	feasible  []*node
}

// fits reports whether p passes the filters on n at now.
func (s *scheduler) fits(p *pod, n *node, now time.Time) bool {
	// NodeResourcesFit and the MemoryPressure taint read the node's
	// fitView, which the nodes keep side by side.
	f := n.fit
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
	if s.la != nil {
		n.refreshExcess(now)
		if s.la.Filter(&p.load, &n.load, now).Reason != loadaware.Fit {
			return false
		}
	}
	return true
}

// score ranks n for p, 0 to 100.
func (s *scheduler) score(p *pod, n *node, now time.Time) int64 {
	if s.la != nil {
		n.refreshExcess(now)
		return s.la.Score(&p.load, &n.load, now)
	}
	cpu := leastRequested(n.nonZeroCPU+p.nonZeroCPU, n.alloc[resCPU])
	mem := leastRequested(n.nonZeroMemory+p.nonZeroMemory, n.alloc[resMemory])
	return (cpu + mem) / 2
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
	for i := 0; i < n && len(s.feasible) < want; i++ {
		nd := nodes[(s.nextStart+i)%n]
		processed++
		if s.fits(p, nd, now) {
			s.feasible = append(s.feasible, nd)
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
