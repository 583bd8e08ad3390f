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

package preemption

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// NodePods is a node and the pods bound to it.
type NodePods struct {
	Node *corev1.Node
	Pods []*corev1.Pod
}

// Snapshot is the cluster state a preemption decision is made on.
type Snapshot struct {
	// Nodes and the pods bound to them. Pods in a terminal phase are
	// ignored.
	Nodes []NodePods
	// PDBs are every PodDisruptionBudget of the cluster.
	PDBs []*policyv1.PodDisruptionBudget
	// Classes resolves PriorityClass names; nil means no class is
	// NonPreemptible or Never.
	Classes ClassLookup
}

// Outcome is what preemption would do for one pending pod.
type Outcome string

// Outcomes.
const (
	// Fits: the pod fits on a node without preempting anyone.
	Fits Outcome = "Fits"
	// Preempts: the pod fits on Node once Victims are gone.
	Preempts Outcome = "Preempts"
	// NotEligible: the pod may not preempt (preemptionPolicy Never).
	NotEligible Outcome = "NotEligible"
	// Unschedulable: no node fits the pod even after preempting every pod
	// it may preempt.
	Unschedulable Outcome = "Unschedulable"
)

// Result is the preemption decision for one pending pod.
type Result struct {
	// Pod is the pending pod.
	Pod *corev1.Pod
	// Outcome is what would happen.
	Outcome Outcome
	// Node is where the pod would run (Fits, Preempts).
	Node string
	// Victims are the pods preempted, most important first (Preempts).
	Victims []*corev1.Pod
	// PDBViolations counts victims whose eviction would break a
	// PodDisruptionBudget.
	PDBViolations int
	// Message explains NotEligible and Unschedulable: per-reason node
	// counts, as the scheduler words them.
	Message string
}

// SelectVictims decides, in a simplified model of the scheduler's default
// preemption, where the pending pod would run and whom it would preempt. It
// does not change the snapshot.
//
// Like the default preemption it: only considers pods VictimVerdict allows;
// on each node removes all of them, checks the pod fits, then gives back
// ("reprieves") as many as still leave room, most important first and
// PDB-violating pods before the others, so that PDB-violating pods are
// victims last; then picks the node with the fewest PDB violations, then
// the lowest highest-victim priority, the smallest sum of priorities, the
// fewest victims, the latest start of the most important victims.
//
// It simplifies: a pod fits a node when its requests fit allocatable (see
// podRequests) and node name, unschedulable, node selector, required node
// affinity and taints allow it -- no pod (anti-)affinity, topology spread,
// ports, volumes, DRA or extenders; nominated pods are ignored; every node
// is examined (not a sample); a pod that fits without preemption goes to the
// first fitting node by name, not the best-scored one; final ties go to the
// first node by name, not a random one; a pod without a start time counts
// as the newest.
func (s *Snapshot) SelectVictims(pod *corev1.Pod) Result {
	ev := newEvaluation(s)
	return ev.selectVictims(pod)
}

// DryRun decides preemption for every pending pod as if preemption were
// switched on now: pods go in scheduling-queue order (priority descending,
// then creation time, then namespace/name) and each decision changes the
// state the next one sees -- a pod that fits or preempts takes its place and
// its victims leave. Results come in that order. The snapshot is not changed.
func (s *Snapshot) DryRun(pending []*corev1.Pod) []Result {
	ev := newEvaluation(s)
	queue := slices.Clone(pending)
	slices.SortStableFunc(queue, queueOrder)
	results := make([]Result, 0, len(queue))
	for _, pod := range queue {
		r := ev.selectVictims(pod)
		switch r.Outcome {
		case Fits, Preempts:
			ev.apply(r)
		}
		results = append(results, r)
	}
	return results
}

func queueOrder(a, b *corev1.Pod) int {
	if c := cmp.Compare(PodPriority(b), PodPriority(a)); c != 0 {
		return c
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return compareNames(a, b)
}

func compareNames(a, b *corev1.Pod) int {
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// moreImportant orders pods most important first: higher priority, then
// earlier start (a pod not started yet is the newest), then name for a
// stable order.
func moreImportant(a, b *corev1.Pod) int {
	if c := cmp.Compare(PodPriority(b), PodPriority(a)); c != 0 {
		return c
	}
	as, bs := a.Status.StartTime, b.Status.StartTime
	switch {
	case as != nil && bs != nil:
		if c := as.Compare(bs.Time); c != 0 {
			return c
		}
	case as != nil:
		return -1
	case bs != nil:
		return 1
	}
	return compareNames(a, b)
}

// evaluation is a mutable working copy of a snapshot.
type evaluation struct {
	classes ClassLookup
	pdbs    []*policyv1.PodDisruptionBudget
	nodes   []*nodeState
}

type nodeState struct {
	node        *corev1.Node
	pods        []podState
	allocatable requests
	used        requests
}

// podState keeps a pod's requests, worked out once per evaluation.
type podState struct {
	pod *corev1.Pod
	req requests
}

func newEvaluation(s *Snapshot) *evaluation {
	ev := &evaluation{classes: s.Classes, pdbs: s.PDBs, nodes: make([]*nodeState, 0, len(s.Nodes))}
	for _, np := range s.Nodes {
		ns := &nodeState{node: np.Node, allocatable: fromList(np.Node.Status.Allocatable)}
		for _, p := range np.Pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			req := podRequests(p)
			ns.pods = append(ns.pods, podState{pod: p, req: req})
			ns.used.addAll(req, 1)
		}
		ev.nodes = append(ev.nodes, ns)
	}
	slices.SortFunc(ev.nodes, func(a, b *nodeState) int { return cmp.Compare(a.node.Name, b.node.Name) })
	return ev
}

func (ev *evaluation) apply(r Result) {
	i := slices.IndexFunc(ev.nodes, func(n *nodeState) bool { return n.node.Name == r.Node })
	if i < 0 {
		return
	}
	ns := ev.nodes[i]
	for _, v := range r.Victims {
		ns.pods = slices.DeleteFunc(ns.pods, func(p podState) bool {
			if p.pod != v {
				return false
			}
			ns.used.addAll(p.req, -1)
			return true
		})
	}
	placed := r.Pod.DeepCopy()
	placed.Spec.NodeName = ns.node.Name
	req := podRequests(placed)
	ns.pods = append(ns.pods, podState{pod: placed, req: req})
	ns.used.addAll(req, 1)
}

type nodeCandidate struct {
	node          string
	victims       []*corev1.Pod
	pdbViolations int
}

func (ev *evaluation) selectVictims(pod *corev1.Pod) Result {
	req := podRequests(pod)
	for _, ns := range ev.nodes {
		if staticFit(pod, ns.node) == "" && insufficient(ns.allocatable, ns.used, req) == "" {
			return Result{Pod: pod, Outcome: Fits, Node: ns.node.Name}
		}
	}
	if ok, msg := PreemptorVerdict(pod, ev.classes); !ok {
		return Result{Pod: pod, Outcome: NotEligible, Message: msg}
	}

	reasons := map[string]int{}
	var candidates []nodeCandidate
	for _, ns := range ev.nodes {
		c, why := ev.victimsOnNode(pod, req, ns)
		if len(why) > 0 {
			for _, w := range why {
				reasons[w]++
			}
			continue
		}
		candidates = append(candidates, c)
	}
	if len(candidates) == 0 {
		return Result{Pod: pod, Outcome: Unschedulable, Message: histogram(len(ev.nodes), reasons)}
	}
	best := slices.MinFunc(candidates, compareCandidates)
	return Result{Pod: pod, Outcome: Preempts, Node: best.node, Victims: best.victims, PDBViolations: best.pdbViolations}
}

// victimsOnNode returns the minimal victims on one node, or the reasons the
// node cannot take the pod.
func (ev *evaluation) victimsOnNode(pod *corev1.Pod, req requests, ns *nodeState) (nodeCandidate, []string) {
	if why := staticFit(pod, ns.node); why != "" {
		return nodeCandidate{}, []string{why}
	}
	potential := make([]podState, 0, len(ns.pods))
	var spared []Verdict
	used := slices.Clone(ns.used)
	for _, p := range ns.pods {
		v := VictimVerdict(p.pod, pod, ev.classes)
		if v.Eligible() {
			potential = append(potential, p)
			used.addAll(p.req, -1)
			continue
		}
		// The victim's own priority is not part of the explanation.
		v.VictimPriority = 0
		if v.Reason != NotLowerPriority && !slices.Contains(spared, v) {
			spared = append(spared, v)
		}
	}
	why := func(first string) []string {
		out := make([]string, 0, 1+len(spared))
		out = append(out, first)
		for _, v := range spared {
			out = append(out, v.String())
		}
		return out
	}
	if len(potential) == 0 {
		return nodeCandidate{}, why("No preemption victims found for incoming pod")
	}
	if short := insufficient(ns.allocatable, used, req); short != "" {
		return nodeCandidate{}, why(insufficientMessage(short))
	}

	slices.SortStableFunc(potential, func(a, b podState) int { return moreImportant(a.pod, b.pod) })
	violating, nonViolating := splitByPDB(potential, ev.pdbs)
	c := nodeCandidate{node: ns.node.Name}
	// A pod is given back when the preemptor still fits beside it; like the
	// scheduler's resource filter, only what the preemptor asks for counts.
	reprieve := func(p podState) bool {
		used.addAll(p.req, 1)
		if insufficient(ns.allocatable, used, req) == "" {
			return true
		}
		used.addAll(p.req, -1)
		c.victims = append(c.victims, p.pod)
		return false
	}
	for _, p := range violating {
		if !reprieve(p) {
			c.pdbViolations++
		}
	}
	for _, p := range nonViolating {
		reprieve(p)
	}
	slices.SortStableFunc(c.victims, moreImportant)
	return c, nil
}

// splitByPDB keeps the order of pods. A pod violates when one of its PDBs
// (same namespace, selector matching its labels, pod not already counted as
// disrupted) would go below zero disruptions allowed, counting the pods
// before it in the list.
func splitByPDB(pods []podState, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []podState) {
	if len(pdbs) == 0 {
		return nil, pods
	}
	allowed := make([]int32, len(pdbs))
	selectors := make([]labels.Selector, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
		if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil {
			selectors[i] = s
		}
	}
	for _, ps := range pods {
		p := ps.pod
		violates := false
		for i, pdb := range pdbs {
			sel := selectors[i]
			// A PDB with an invalid or empty selector matches nothing.
			if sel == nil || sel.Empty() || pdb.Namespace != p.Namespace || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if _, done := pdb.Status.DisruptedPods[p.Name]; done {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				violates = true
			}
		}
		if violates {
			violating = append(violating, ps)
		} else {
			nonViolating = append(nonViolating, ps)
		}
	}
	return violating, nonViolating
}

// compareCandidates orders the better node first, by the default
// preemption's criteria.
func compareCandidates(a, b nodeCandidate) int {
	if c := cmp.Compare(a.pdbViolations, b.pdbViolations); c != 0 {
		return c
	}
	if c := cmp.Compare(PodPriority(a.victims[0]), PodPriority(b.victims[0])); c != 0 {
		return c
	}
	if c := cmp.Compare(prioritySum(a.victims), prioritySum(b.victims)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.victims), len(b.victims)); c != 0 {
		return c
	}
	// The later the most important victims started, the less work is lost.
	if c := compareStart(earliestTopStart(b.victims), earliestTopStart(a.victims)); c != 0 {
		return c
	}
	return cmp.Compare(a.node, b.node)
}

// prioritySum shifts every priority to be non-negative, so two pods of a
// negative priority never weigh less than one.
func prioritySum(pods []*corev1.Pod) int64 {
	var sum int64
	for _, p := range pods {
		sum += int64(PodPriority(p)) + math.MaxInt32 + 1
	}
	return sum
}

// earliestTopStart is the earliest start among the victims of the highest
// priority; nil means not started, the newest.
func earliestTopStart(victims []*corev1.Pod) *metav1.Time {
	top := PodPriority(victims[0])
	var earliest *metav1.Time
	for _, p := range victims {
		if PodPriority(p) != top {
			continue
		}
		if s := p.Status.StartTime; s != nil && (earliest == nil || s.Before(earliest)) {
			earliest = s
		}
	}
	return earliest
}

// compareStart orders start times, nil (not started) last.
func compareStart(a, b *metav1.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(b.Time)
}

// histogram words per-reason node counts as the scheduler does:
// "0/3 nodes are available: 1 Insufficient cpu, 2 Too many pods."
func histogram(numNodes int, reasons map[string]int) string {
	parts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	slices.Sort(parts)
	if numNodes == 0 {
		return "0/0 nodes are available: no nodes."
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", numNodes, strings.Join(parts, ", "))
}
