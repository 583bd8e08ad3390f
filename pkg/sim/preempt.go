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
	"math"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/core/preemption"
)

// preemptor is the scheduler's PostFilter: kube-scheduler's default
// preemption (DefaultPreemption for the baselines, BandPreemption for the
// colocated policies), for a pod that fits no node.
//
// Who may be a victim is pkg/core/preemption's decision (VictimVerdict,
// PreemptorVerdict), asked once per victim group and preemptor priority:
// the verdict depends on nothing else of a simulated pod (no pod is a
// static, mirror or DaemonSet pod). The selection is the default
// preemption's, on the simulation's own state rather than corev1 objects
// (preemption.Snapshot.SelectVictims builds its requests from each pod's
// ResourceList, too slow for a thousand nodes every step;
// TestPreemptionAgreesWithCore holds the two together):
//
//   - candidate nodes: those where the pod fails only for resources
//     (NodeResourcesFit); a node LoadAware refuses or a MemoryPressure
//     taint keeps the pod from is UnschedulableAndUnresolvable, and
//     removing pods changes neither. Nodes are examined from a random
//     offset until max(10 % of the nodes, 100) candidates are found, one of
//     them violating no budget (minCandidateNodesPercentage and
//     minCandidateNodesAbsolute at their defaults);
//   - on a node: every eligible pod is removed; then, most important first
//     (priority, then earlier start), pods whose eviction would break a
//     PodDisruptionBudget and then the others are given back while the pod
//     still fits; the rest are the victims;
//   - the node: fewest budget violations, lowest highest-victim priority,
//     smallest sum of priorities, fewest victims, latest start of the most
//     important victims, then the first found.
//
// Services are never victims: nothing outranks Prod in the workloads, and
// a service taken off its node is not modelled. Victims go at once, and
// the pod binds in the same cycle (the simulation's pods start and stop
// instantly).
type preemptor struct {
	// classes are the classes BandPreemption reads; nil for
	// DefaultPreemption, which knows no NonPreemptible class.
	classes preemption.ClassLookup
	// preemptorClasses resolve a preemptor's class (preemptionPolicy Never).
	preemptorClasses preemption.ClassLookup
	rng              *rand.Rand

	// groups intern a victim's (priority, class); reps[g] is a pod of
	// group g, running[g] the job pods of g on nodes.
	groups  map[victimGroup]int32
	reps    []*corev1.Pod
	running []int64
	// verdicts caches VictimVerdict by group and preemptor priority.
	verdicts map[verdictKey]bool

	// Scratch.
	elig      []bool
	potential []*pod
	violates  []bool
	allowed   []int64
	victims   []*pod
}

type victimGroup struct {
	priority int32
	class    string
}

type verdictKey struct {
	group    int32
	priority int32
}

// maxVictimGroups bounds the (priority, class) pairs of a run: one per
// profile and one for pods without a class.
const maxVictimGroups = 64

// preemptCandidate is one node's result.
type preemptCandidate struct {
	node          *node
	pdbViolations int
	topPriority   int32
	prioritySum   int64
	victims       int
	topStart      int64 // Unix ns: the earliest start among the victims of topPriority
}

// better reports whether c beats o by the default preemption's criteria.
func (c *preemptCandidate) better(o *preemptCandidate) bool {
	switch {
	case c.pdbViolations != o.pdbViolations:
		return c.pdbViolations < o.pdbViolations
	case c.topPriority != o.topPriority:
		return c.topPriority < o.topPriority
	case c.prioritySum != o.prioritySum:
		return c.prioritySum < o.prioritySum
	case c.victims != o.victims:
		return c.victims < o.victims
	}
	return c.topStart > o.topStart
}

func newPreemptor(r *run, classes preemption.Classes) *preemptor {
	pe := &preemptor{
		preemptorClasses: classes.Lookup,
		rng:              rand.New(rand.NewPCG(uint64(r.cfg.Seed), policySeed(r.policy.placedAs())^0x70726565)),
		groups:           map[victimGroup]int32{},
		verdicts:         map[verdictKey]bool{},
	}
	if r.policy.colocated() {
		pe.classes = classes.Lookup
	}
	return pe
}

// groupOf interns obj's victim group.
func (pe *preemptor) groupOf(obj *corev1.Pod) (int32, error) {
	k := victimGroup{preemption.PodPriority(obj), obj.Spec.PriorityClassName}
	if g, ok := pe.groups[k]; ok {
		return g, nil
	}
	if len(pe.reps) == maxVictimGroups {
		return 0, fmt.Errorf("more than %d (priority, PriorityClass) pairs", maxVictimGroups)
	}
	g := int32(len(pe.reps))
	pe.groups[k] = g
	pe.reps = append(pe.reps, obj)
	pe.running = append(pe.running, 0)
	pe.elig = append(pe.elig, false)
	return g, nil
}

// eligible is VictimVerdict for a pod of group g and a preemptor.
func (pe *preemptor) eligible(g int32, preemptorObj *corev1.Pod) bool {
	k := verdictKey{g, preemption.PodPriority(preemptorObj)}
	v, ok := pe.verdicts[k]
	if !ok {
		v = preemption.VictimVerdict(pe.reps[g], preemptorObj, pe.classes).Eligible()
		pe.verdicts[k] = v
	}
	return v
}

// preempt makes room for p, which fits no node: it evicts the victims and
// returns the node p now fits on, or nil when preemption cannot help.
// (A signature that failed is not tried again in the cycle: its priority
// is part of it, and a pod of the same priority finds the same victims.)
func (r *run) preempt(p *pod) *node {
	pe := r.preemptor
	if pe == nil {
		return nil
	}
	best, ok := r.selectPreemption(p)
	if !ok {
		return nil
	}
	victims := r.victimsOn(p, best.node, true)
	for _, v := range victims {
		r.evict(v, removedByPreemption)
	}
	clear(pe.victims)
	return best.node
}

// selectPreemption finds the node preemption would make room for p on.
func (r *run) selectPreemption(p *pod) (preemptCandidate, bool) {
	pe := r.preemptor
	obj := p.obj
	if obj == nil {
		obj = p.tmpl.obj
	}
	if ok, _ := preemption.PreemptorVerdict(obj, pe.preemptorClasses); !ok {
		return preemptCandidate{}, false
	}
	anyone := false
	var mask uint64 // the groups p may preempt
	for g := range pe.reps {
		pe.elig[g] = pe.eligible(int32(g), obj)
		anyone = anyone || pe.elig[g] && pe.running[g] > 0
		if pe.elig[g] {
			mask |= 1 << g
		}
	}
	if !anyone {
		return preemptCandidate{}, false
	}
	return r.selectFrom(p, mask, pe.rng.IntN(len(r.nodes)))
}

// selectFrom is selectPreemption's search for p, which may preempt the
// pods of the victim groups in mask, from node offset round the cluster.
func (r *run) selectFrom(p *pod, mask uint64, offset int) (preemptCandidate, bool) {
	n := len(r.nodes)
	search := candidateSearch{want: min(n, max(n*10/100, 100))}
	// The nodes of p's roomSet only: on the others p has no room even
	// with every pod it may preempt gone.
	words := r.sched.index.roomSetOf(&p.req, mask, r.nodes).words
	for _, span := range [2][2]int{{offset, n}, {0, offset}} {
		for i := nextBit(words, span[0], span[1]); i < span[1]; i = nextBit(words, i+1, span[1]) {
			if search.try(r, p, r.nodes[i]) {
				return search.best, true
			}
		}
	}
	return search.best, search.found > 0
}

// candidateSearch is the choice among the nodes a preemption search
// tries, in its order: the best candidate so far, and when to stop --
// after want candidates, once one of them violates no PDB.
type candidateSearch struct {
	best                preemptCandidate
	want                int
	found, nonViolating int
}

// try considers p's victims on nd (which p has room on with them gone)
// and reports whether the search is done.
func (s *candidateSearch) try(r *run, p *pod, nd *node) bool {
	if !r.unblocked(p, nd) {
		return false
	}
	r.victimsOn(p, nd, false)
	c := r.lastCandidate
	if c.victims == 0 {
		return false
	}
	c.node = nd
	if s.found == 0 || c.better(&s.best) {
		s.best = c
	}
	s.found++
	if c.pdbViolations == 0 {
		s.nonViolating++
	}
	return s.nonViolating > 0 && s.found >= s.want
}

// roomWithout is what n would have free with every pod of the victim
// groups in mask gone.
func roomWithout(n *node, mask uint64) resVec {
	free := n.fit.free
	for g := range n.groupReq {
		if mask>>g&1 != 0 {
			free.add(&n.groupReq[g])
		}
	}
	return free
}

// unblocked reports whether nothing preemption cannot change keeps p off
// n: the MemoryPressure taint, LoadAware's filter.
func (r *run) unblocked(p *pod, n *node) bool {
	if p.bestEffort && r.now.UnixNano() < n.fit.pressureUntil {
		return false
	}
	if r.la != nil {
		if r.la.FilterSummary(&p.load, n.loadSummary(r.la, r.now), r.now.UnixNano()).Reason != nodeload.Fit {
			return false
		}
	}
	return true
}

// fitsFree is NodeResourcesFit of a pod requesting req with free left on
// the node.
func fitsFree(req, free *resVec) bool {
	if free[resPods] < 1 {
		return false
	}
	for res := range resPods {
		if req[res] > 0 && req[res] > free[res] {
			return false
		}
	}
	return true
}

// victimsOn selects the victims on n as the default preemption's
// SelectVictimsOnNode does and records the node's figures in
// r.lastCandidate; with collect it also returns the victims (in
// pe.victims).
func (r *run) victimsOn(p *pod, n *node, collect bool) []*pod {
	pe := r.preemptor
	pot := pe.potential[:0]
	free := n.fit.free
	for _, q := range n.pods {
		if q.job >= 0 && pe.elig[q.vgroup] {
			pot = append(pot, q)
			free.add(&q.req)
		}
	}
	pe.potential = pot
	r.lastCandidate = preemptCandidate{}
	if len(pot) == 0 || !fitsFree(&p.req, &free) {
		return nil
	}
	sortByImportance(pot)
	// Which evictions would break a budget, counting those before them.
	pe.violates = pe.violates[:0]
	pe.allowed = pe.allowed[:0]
	for i := range r.budgets {
		pe.allowed = append(pe.allowed, r.budgets[i].allowed())
	}
	for _, q := range pot {
		v := false
		if b := r.budgetOf[q.st().kind]; b != noBudget {
			if r.budgets[b].spec.Per == BudgetPerPod {
				v = r.budgets[b].perPodAllowed < 1
			} else {
				pe.allowed[b]--
				v = pe.allowed[b] < 0
			}
		}
		pe.violates = append(pe.violates, v)
	}
	c := &r.lastCandidate
	c.topPriority = math.MinInt32
	victims := pe.victims[:0]
	// Budget-breaking pods are given back first, so they are victims last.
	for _, violating := range [2]bool{true, false} {
		for i, q := range pot {
			if pe.violates[i] != violating {
				continue
			}
			free.sub(&q.req)
			if fitsFree(&p.req, &free) {
				continue
			}
			free.add(&q.req)
			c.victims++
			if violating {
				c.pdbViolations++
			}
			c.prioritySum += int64(q.priority) + math.MaxInt32 + 1
			start := q.started
			switch {
			case q.priority > c.topPriority:
				c.topPriority, c.topStart = q.priority, start
			case q.priority == c.topPriority && start < c.topStart:
				c.topStart = start
			}
			if collect {
				victims = append(victims, q)
			}
		}
	}
	pe.victims = victims
	return victims
}

// sortByImportance orders pods most important first: higher priority,
// then earlier start, then earlier creation. Insertion sort: a node holds
// a few dozen pods, and it does not allocate.
func sortByImportance(pods []*pod) {
	for i := 1; i < len(pods); i++ {
		for j := i; j > 0 && moreImportant(pods[j], pods[j-1]); j-- {
			pods[j], pods[j-1] = pods[j-1], pods[j]
		}
	}
}

func moreImportant(a, b *pod) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	as, bs := a.started, b.started
	if as != bs {
		return as < bs
	}
	return a.seq < b.seq
}
