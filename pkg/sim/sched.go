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
	"math/bits"
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
	// feasible are the indices of the nodes that passed the filters in
	// this pick, in the order filtered.
	feasible []int32
	// index is the nodes' fitViews and, per request, the nodes with room
	// for it: pick checks NodeResourcesFit there without touching the node
	// objects, most of which do not fit a pod on a busy cluster.
	index fitIndex
}

// fitIndex is the nodes' fitViews side by side and, for each request pick
// was asked to place, the set of nodes whose view has room for it (a
// fitSet), kept as the views change: a pick walks the nodes in that set
// instead of checking every node, most of which have no room on a busy
// cluster. Only the MemoryPressure taint, which depends on the time, is
// left to check per node.
type fitIndex struct {
	// views[i] is the fitView of the i-th node pick is given (both
	// callers pass every node, in the order the views were made:
	// TestSchedulerViewsMatchNodes).
	views []fitView
	// sets are the fitSets made so far (a default run's policies have 4
	// to 8 requests, openb's 20 to 24), byReq the same by request.
	sets  []*fitSet
	byReq map[resVec]*fitSet
	// scores are the requestScores kept so far, one set per scoreKey
	// pick was asked to place, byKey the same by key.
	scores []*scoreSet
	byKey  map[scoreKey]*scoreSet
	// rooms are the roomSets made so far (one per request and set of
	// victim groups preemption was asked about), byRoom the same by key.
	rooms  []*roomSet
	byRoom map[roomKey]*roomSet
	// byLoad are the loadSets kept so far (with LoadAware on), one per
	// PodLoad pick was asked to place.
	byLoad map[nodeload.PodLoad]*loadSet
}

// loadSet keeps, for the pods of one nodeload.PodLoad, LoadAware's
// verdict and score on each node: a node's summary is made again only
// when its load changes (a report, a pod placed or gone, excess expiring:
// about 1 M times in a default run at 1 000 nodes), while pick filters
// and scores hundreds of nodes for every pod it places.
//
// Invariant: known[i], made when node i's sumGen was gen and its
// summary's Expired was expired, holds FilterSummary's and ScoreSummary's
// answers for the set's load on that summary; they are the answers at
// every time at which Expired agrees (NodeSummary.Expired), and the
// summary changes only with sumGen. An entry is made in full when either
// check fails, its score left unknown until asked.
type loadSet struct {
	known []loadEntry
}

// loadEntry is one node's answers in a loadSet. An entry never made has
// gen 0, which no summary has: loadSummary makes the node's first one
// (sumFresh starts false) before an entry is read.
type loadEntry struct {
	gen     uint64
	score   int32 // ScoreSummary's, or unknownScore
	fits    bool  // FilterSummary's verdict is Fit
	expired bool
}

// roomKey identifies a roomSet: a request, and the victim groups (bit g
// for group g; preemptor.groupOf interns at most maxVictimGroups) whose
// pods a preemptor may evict.
type roomKey struct {
	req  resVec
	mask uint64
}

// roomSet is the nodes where a pod requesting key.req would have room
// once every pod of the groups in key.mask were gone (roomWithout):
// preemption's candidates before what depends on the time. On a busy
// cluster 2 % of the nodes a preemptor tried had that room (a default
// run at 1 000 nodes: 28 M tried, 0.5 M with room). Node i is bit i%64
// of words[i/64]; node.syncFit updates it after every change of the
// node's requests (its groupReq changes with them) and allocatable.
type roomSet struct {
	key   roomKey
	words []uint64
}

// scoreKey is what requestScore reads of a pod.
type scoreKey struct {
	nonZeroCPU, nonZeroMemory int64
	cpu, memory               int64
}

// keyOf returns p's scoreKey.
func keyOf(p *pod) scoreKey {
	return scoreKey{nonZeroCPU: p.nonZeroCPU, nonZeroMemory: p.nonZeroMemory, cpu: p.req[resCPU], memory: p.req[resMemory]}
}

// scoreSet keeps, for the pods of one scoreKey, each node's requestScore:
// a node's score changes only when a pod comes or goes, while pick scores
// the hundreds of feasible nodes of every pod it places (about 100 M
// scores against 1 M changes in a default run at 1 000 nodes).
//
// Invariant: known[i] is the requestScore of a pod of key on node i, or
// unknownScore. Every change of what requestScore reads of a node goes
// through node.syncFit (place and remove change the node's requests; the
// cpu and memory allocatable never change), whose fitIndex.synced forgets
// the node's score in every set.
type scoreSet struct {
	key   scoreKey
	known []int32
}

// unknownScore marks a score a scoreSet does not know; scores are never
// negative.
const unknownScore = -1

// fitSet is the nodes whose fitView passes fitsRes for req: node i is bit
// i%64 of words[i/64].
type fitSet struct {
	req   resVec
	words []uint64
}

// newFitIndex returns the index of n nodes, their views zero.
func newFitIndex(n int) fitIndex {
	return fitIndex{views: make([]fitView, n), byReq: map[resVec]*fitSet{}, byKey: map[scoreKey]*scoreSet{}, byRoom: map[roomKey]*roomSet{}, byLoad: map[nodeload.PodLoad]*loadSet{}}
}

// loadsOf returns the loadSet of p's PodLoad, every entry unmade the
// first time.
func (x *fitIndex) loadsOf(p *pod) *loadSet {
	if ls := x.byLoad[p.load]; ls != nil {
		return ls
	}
	ls := &loadSet{known: make([]loadEntry, len(x.views))}
	x.byLoad[p.load] = ls
	return ls
}

// entry returns the entry of nodes[i] at now for a pod p of the set's
// load, made again when the node's summary or its Expired changed.
func (ls *loadSet) entry(la *nodeload.Config, p *pod, nodes []*node, i int32, now time.Time) *loadEntry {
	n := nodes[i]
	sum := n.loadSummary(la, now)
	ns := now.UnixNano()
	expired := sum.Expired(ns)
	e := &ls.known[i]
	if e.gen != n.sumGen || e.expired != expired {
		*e = loadEntry{
			gen:     n.sumGen,
			score:   unknownScore,
			fits:    la.FilterSummary(&p.load, sum, ns).Reason == nodeload.Fit,
			expired: expired,
		}
	}
	return e
}

// fits is fitsLoad of a pod p of the set's load on nodes[i] at now.
func (ls *loadSet) fits(la *nodeload.Config, p *pod, nodes []*node, i int32, now time.Time) bool {
	return ls.entry(la, p, nodes, i, now).fits
}

// score is LoadAware's score (unweighted) of a pod p of the set's load on
// nodes[i] at now.
func (ls *loadSet) score(la *nodeload.Config, p *pod, nodes []*node, i int32, now time.Time) int64 {
	e := ls.entry(la, p, nodes, i, now)
	if e.score == unknownScore {
		e.score = int32(la.ScoreSummary(&p.load, &nodes[i].sum, now.UnixNano()))
	}
	return int64(e.score)
}

// setOf returns the fitSet of req, made from the views the first time.
func (x *fitIndex) setOf(req *resVec) *fitSet {
	if fs := x.byReq[*req]; fs != nil {
		return fs
	}
	fs := &fitSet{req: *req, words: make([]uint64, (len(x.views)+63)/64)}
	for i := range x.views {
		fs.update(i, &x.views[i])
	}
	x.sets = append(x.sets, fs)
	x.byReq[*req] = fs
	return fs
}

// scoresOf returns the scoreSet of p's scoreKey, every score unknown the
// first time.
func (x *fitIndex) scoresOf(p *pod) *scoreSet {
	key := keyOf(p)
	if ss := x.byKey[key]; ss != nil {
		return ss
	}
	ss := &scoreSet{key: key, known: make([]int32, len(x.views))}
	for i := range ss.known {
		ss.known[i] = unknownScore
	}
	x.scores = append(x.scores, ss)
	x.byKey[key] = ss
	return ss
}

// roomSetOf returns the roomSet of req and mask, made from nodes (every
// node, nodes[i].idx == i) the first time.
func (x *fitIndex) roomSetOf(req *resVec, mask uint64, nodes []*node) *roomSet {
	key := roomKey{req: *req, mask: mask}
	if rs := x.byRoom[key]; rs != nil {
		return rs
	}
	rs := &roomSet{key: key, words: make([]uint64, (len(x.views)+63)/64)}
	for _, n := range nodes {
		rs.update(n)
	}
	x.rooms = append(x.rooms, rs)
	x.byRoom[key] = rs
	return rs
}

// update sets or clears n in the set.
func (rs *roomSet) update(n *node) {
	free := roomWithout(n, rs.key.mask)
	if fitsFree(&rs.key.req, &free) {
		rs.words[n.idx>>6] |= 1 << (n.idx & 63)
	} else {
		rs.words[n.idx>>6] &^= 1 << (n.idx & 63)
	}
}

// synced updates node n in every fitSet and roomSet after its view
// changed (node.syncFit), and forgets its requestScores: each change
// costs a check per set, against the hundreds of nodes a pick would
// otherwise check.
func (x *fitIndex) synced(n *node) {
	i := n.idx
	for _, fs := range x.sets {
		fs.update(i, &x.views[i])
	}
	for _, ss := range x.scores {
		ss.known[i] = unknownScore
	}
	for _, rs := range x.rooms {
		rs.update(n)
	}
}

// nextBit returns the first i in [lo, hi) whose bit is set in words (bit
// i%64 of words[i/64]), or hi when there is none.
func nextBit(words []uint64, lo, hi int) int {
	for w := lo >> 6; w<<6 < hi; w++ {
		word := words[w]
		if w == lo>>6 {
			word &= ^uint64(0) << (lo & 63)
		}
		if word != 0 {
			return min(w<<6|bits.TrailingZeros64(word), hi)
		}
	}
	return hi
}

// of returns the requestScore on nodes[i] of a pod p of the set's key.
func (ss *scoreSet) of(p *pod, nodes []*node, i int32) int64 {
	if sc := ss.known[i]; sc != unknownScore {
		return int64(sc)
	}
	sc := requestScore(p, nodes[i])
	ss.known[i] = int32(sc)
	return sc
}

// update sets or clears node i, whose view is f.
func (fs *fitSet) update(i int, f *fitView) {
	if fitsRes(&fs.req, f) {
		fs.words[i>>6] |= 1 << (i & 63)
	} else {
		fs.words[i>>6] &^= 1 << (i & 63)
	}
}

// fits reports whether p passes the filters on n at now.
func (s *scheduler) fits(p *pod, n *node, now time.Time) bool {
	return fitsView(p, n.fit, now) && s.fitsLoad(p, n, now)
}

// fitsView is NodeResourcesFit and the MemoryPressure taint, which read
// only the node's fitView.
func fitsView(p *pod, f *fitView, now time.Time) bool {
	return fitsRes(&p.req, f) && !underPressure(p, f, now)
}

// fitsRes is NodeResourcesFit: a pod slot free, and each resource
// requested no more than is free. It does not depend on the time, so
// that fitSets keep it.
func fitsRes(req *resVec, f *fitView) bool {
	if f.free[resPods] < 1 {
		return false
	}
	for r := range resPods {
		if req[r] > 0 && req[r] > f.free[r] {
			return false
		}
	}
	return true
}

// underPressure says the MemoryPressure taint keeps p off the node of f at
// now: p is BestEffort, and the node's pressure has not passed.
func underPressure(p *pod, f *fitView, now time.Time) bool {
	return p.bestEffort && now.UnixNano() < f.pressureUntil
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
	return requestScore(p, n) + s.loadScore(p, n, now)
}

// requestScore is the part of p's score on n that reads only what p
// requests (its scoreKey) and what n offers and its pods request:
// LeastAllocated, and BalancedAllocation for a pod requesting cpu or
// memory.
func requestScore(p *pod, n *node) int64 {
	cpu := leastRequested(n.nonZeroCPU+p.nonZeroCPU, n.alloc[resCPU])
	mem := leastRequested(n.nonZeroMemory+p.nonZeroMemory, n.alloc[resMemory])
	total := (cpu + mem) / 2
	if p.req[resCPU] != 0 || p.req[resMemory] != 0 {
		total += balancedAllocation(&p.req, &n.req, &n.alloc, n.balanceWithout)
	}
	return total
}

// loadScore is the part of p's score on n at now that reads the load:
// LoadAware's, at its weight, when it is on.
func (s *scheduler) loadScore(p *pod, n *node, now time.Time) int64 {
	if s.la == nil {
		return 0
	}
	return s.laWeight * s.la.ScoreSummary(&p.load, n.loadSummary(s.la, now), now.UnixNano())
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
//
// It samples as kube-scheduler does: from nextStart round the nodes, the
// first numFeasibleNodesToFind that pass the filters; the next cycle
// starts after the last node filtered (where it started when fewer
// passed). Only the nodes of p's fitSet can pass, so it filters those
// and counts the others as filtered.
func (s *scheduler) pick(p *pod, nodes []*node, now time.Time) *node {
	n := len(nodes)
	if n == 0 {
		return nil
	}
	want := numFeasibleNodesToFind(n)
	s.feasible = s.feasible[:0]
	words := s.index.setOf(&p.req).words
	var loads *loadSet
	if s.la != nil {
		loads = s.index.loadsOf(p)
	}
	start := s.nextStart % n
	processed := n
	if j := s.collect(p, nodes, words, loads, start, n, want, now); j >= 0 {
		processed = j - start + 1
	} else if j := s.collect(p, nodes, words, loads, 0, start, want, now); j >= 0 {
		processed = n - start + j + 1
	}
	s.nextStart = (s.nextStart + processed) % n
	return s.best(p, nodes, loads, now)
}

// best returns the feasible node (s.feasible, of nodes) that scores
// highest for p, ties broken at random as kube-scheduler's selectHost
// does; nil when none is feasible. loads is the loadSet of p's load, nil
// with LoadAware off.
func (s *scheduler) best(p *pod, nodes []*node, loads *loadSet, now time.Time) *node {
	switch len(s.feasible) {
	case 0:
		return nil
	case 1:
		return nodes[s.feasible[0]]
	}
	best := int32(-1)
	bestScore, ties := int64(-1), 0
	scores := s.index.scoresOf(p)
	for _, i := range s.feasible {
		sc := scores.of(p, nodes, i)
		if loads != nil {
			sc += s.laWeight * loads.score(s.la, p, nodes, i, now)
		}
		switch {
		case sc > bestScore:
			best, bestScore, ties = i, sc, 1
		case sc == bestScore:
			// Reservoir sampling: each tied node wins with equal chance.
			ties++
			if s.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best]
}

// collect appends to s.feasible, in node order, the nodes of [lo, hi)
// in words (p's fitSet) that pass the filters at now, until it holds
// want; loads is the loadSet of p's load, nil with LoadAware off. It
// returns the index of the node that made it want, or -1 when the range
// ran out first.
func (s *scheduler) collect(p *pod, nodes []*node, words []uint64, loads *loadSet, lo, hi, want int, now time.Time) int {
	for w := lo >> 6; w<<6 < hi; w++ {
		word := words[w]
		if w == lo>>6 {
			word &= ^uint64(0) << (lo & 63)
		}
		if (w+1)<<6 > hi {
			word &= 1<<(hi&63) - 1
		}
		for ; word != 0; word &= word - 1 {
			j := w<<6 | bits.TrailingZeros64(word)
			if underPressure(p, &s.index.views[j], now) || loads != nil && !loads.fits(s.la, p, nodes, int32(j), now) {
				continue
			}
			if s.feasible = append(s.feasible, int32(j)); len(s.feasible) == want {
				return j
			}
		}
	}
	return -1
}

func resourceMilli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

func resourceBytes(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.BinarySI) }
