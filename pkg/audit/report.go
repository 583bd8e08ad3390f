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

// Package audit is `waterline audit preemption`: before preemption is switched
// on (docs/design/preemption.md#safe-rollout runs with it off until every pod
// has a priority), it reports what would surprise the cluster's owners -- pods
// without a priority, PriorityClasses with globalDefault, DaemonSets below the
// DaemonSet class, malformed Waterline annotations -- and dry-runs the
// scheduler's preemption for every pending pod with the same victim rules the
// BandPreemption plugin uses (pkg/core/preemption).
//
// It reads the cluster and never writes to it: no eviction, no patch, no
// Event. Its output is deterministic for a given cluster state.
package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/waterline-dev/waterline/pkg/core/preemption"
)

// DefaultDaemonSetPriorityClass is the band class DaemonSets should use
// (config/priorityclasses).
const DefaultDaemonSetPriorityClass = "waterline-daemonset"

// Objects is the cluster state the audit reads.
type Objects struct {
	Nodes           []corev1.Node
	Pods            []corev1.Pod
	PriorityClasses []schedulingv1.PriorityClass
	DaemonSets      []appsv1.DaemonSet
	PDBs            []policyv1.PodDisruptionBudget
}

// Options tunes the audit.
type Options struct {
	// DaemonSetPriorityClass is the class whose value DaemonSet pods should
	// reach. Default DefaultDaemonSetPriorityClass.
	DaemonSetPriorityClass string
}

// Report is the audit's result. Every list is sorted; the JSON field names
// are a stable interface for scripts.
type Report struct {
	// PodsWithoutPriority are running or pending pods that name no
	// PriorityClass, run at priority 0, or carry the globalDefault class
	// (most likely because they named none).
	PodsWithoutPriority []PodFinding `json:"podsWithoutPriority"`
	// GlobalDefaultClasses are PriorityClasses with globalDefault: true.
	GlobalDefaultClasses []ClassFinding `json:"globalDefaultClasses"`
	// MalformedClasses are PriorityClasses whose Waterline annotations are
	// ignored, and why.
	MalformedClasses []ClassFinding `json:"malformedClasses"`
	// NonPreemptibleClasses are the classes whose running pods preemption
	// spares below their threshold.
	NonPreemptibleClasses []ClassFinding `json:"nonPreemptibleClasses"`
	// DaemonSetsBelowClass are DaemonSets whose pods' priority is below the
	// DaemonSet class's value.
	DaemonSetsBelowClass []DaemonSetFinding `json:"daemonSetsBelowClass"`
	// DryRun is, for each pending pod in scheduling order, what preemption
	// would do if it were switched on now.
	DryRun []PreemptionFinding `json:"dryRun"`
	// Warnings are things that limited the audit.
	Warnings []string `json:"warnings"`
}

// PodFinding is a pod the audit points at.
type PodFinding struct {
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Node              string `json:"node,omitempty"`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	Priority          int32  `json:"priority"`
	Reason            string `json:"reason,omitempty"`
}

// ClassFinding is a PriorityClass the audit points at.
type ClassFinding struct {
	Name  string `json:"name"`
	Value int32  `json:"value"`
	// PreemptibleBy is the threshold of a NonPreemptible class.
	PreemptibleBy int32  `json:"preemptibleBy,omitempty"`
	Reason        string `json:"reason,omitempty"`
}

// DaemonSetFinding is a DaemonSet whose pods preemption could take.
type DaemonSetFinding struct {
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	Priority          int32  `json:"priority"`
	WantClass         string `json:"wantClass"`
	WantPriority      int32  `json:"wantPriority"`
}

// PreemptionFinding is the dry-run decision for one pending pod.
type PreemptionFinding struct {
	Pod           PodFinding         `json:"pod"`
	Outcome       preemption.Outcome `json:"outcome"`
	Node          string             `json:"node,omitempty"`
	Victims       []PodFinding       `json:"victims,omitempty"`
	PDBViolations int                `json:"pdbViolations,omitempty"`
	Message       string             `json:"message,omitempty"`
}

// Build audits objs. It is pure: the same objects give the same report.
func Build(objs *Objects, opts Options) *Report {
	if opts.DaemonSetPriorityClass == "" {
		opts.DaemonSetPriorityClass = DefaultDaemonSetPriorityClass
	}
	r := &Report{
		PodsWithoutPriority:   []PodFinding{},
		GlobalDefaultClasses:  []ClassFinding{},
		MalformedClasses:      []ClassFinding{},
		NonPreemptibleClasses: []ClassFinding{},
		DaemonSetsBelowClass:  []DaemonSetFinding{},
		DryRun:                []PreemptionFinding{},
		Warnings:              []string{},
	}

	classes := make(preemption.Classes, len(objs.PriorityClasses))
	byName := make(map[string]*schedulingv1.PriorityClass, len(objs.PriorityClasses))
	var globalDefault *schedulingv1.PriorityClass
	for i := range objs.PriorityClasses {
		pc := &objs.PriorityClasses[i]
		byName[pc.Name] = pc
		c, err := preemption.ParseClass(pc)
		classes[pc.Name] = c
		if err != nil {
			r.MalformedClasses = append(r.MalformedClasses, ClassFinding{Name: pc.Name, Value: pc.Value, Reason: joinErrors(err)})
		}
		if c.NonPreemptible {
			r.NonPreemptibleClasses = append(r.NonPreemptibleClasses, ClassFinding{Name: pc.Name, Value: pc.Value, PreemptibleBy: c.PreemptibleBy})
		}
		if pc.GlobalDefault {
			r.GlobalDefaultClasses = append(r.GlobalDefaultClasses, ClassFinding{Name: pc.Name, Value: pc.Value,
				Reason: "pods that name no class get this priority silently"})
			if globalDefault == nil || pc.Value > globalDefault.Value {
				// The API server admits pods with the highest globalDefault class.
				globalDefault = pc
			}
		}
	}
	sortClasses(r.GlobalDefaultClasses)
	sortClasses(r.MalformedClasses)
	sortClasses(r.NonPreemptibleClasses)

	r.PodsWithoutPriority = podsWithoutPriority(objs.Pods, globalDefault)
	r.DaemonSetsBelowClass, r.Warnings = daemonSetsBelow(objs.DaemonSets, byName, globalDefault, opts.DaemonSetPriorityClass, r.Warnings)
	r.DryRun = dryRun(objs, classes)
	return r
}

// joinErrors puts the errors of a joined error on one line.
func joinErrors(err error) string {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err.Error()
	}
	msgs := make([]string, 0, len(j.Unwrap()))
	for _, e := range j.Unwrap() {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}

func sortClasses(cs []ClassFinding) {
	slices.SortFunc(cs, func(a, b ClassFinding) int { return cmp.Compare(a.Name, b.Name) })
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func podFinding(p *corev1.Pod, reason string) PodFinding {
	return PodFinding{
		Namespace:         p.Namespace,
		Name:              p.Name,
		Node:              p.Spec.NodeName,
		PriorityClassName: p.Spec.PriorityClassName,
		Priority:          preemption.PodPriority(p),
		Reason:            reason,
	}
}

func podsWithoutPriority(pods []corev1.Pod, globalDefault *schedulingv1.PriorityClass) []PodFinding {
	out := []PodFinding{}
	for i := range pods {
		p := &pods[i]
		if isTerminal(p) {
			continue
		}
		var reason string
		switch {
		case p.Spec.PriorityClassName == "":
			reason = "no priorityClassName"
		case preemption.PodPriority(p) == 0:
			reason = "priority 0"
		case globalDefault != nil && p.Spec.PriorityClassName == globalDefault.Name:
			reason = fmt.Sprintf("globalDefault class %s, probably not chosen", globalDefault.Name)
		default:
			continue
		}
		out = append(out, podFinding(p, reason))
	}
	slices.SortFunc(out, comparePodFindings)
	return out
}

func comparePodFindings(a, b PodFinding) int {
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// daemonSetsBelow compares each DaemonSet's pod template priority -- its
// class's value, the globalDefault value when it names none, else 0 --
// with the DaemonSet class's value.
func daemonSetsBelow(dss []appsv1.DaemonSet, classes map[string]*schedulingv1.PriorityClass, globalDefault *schedulingv1.PriorityClass,
	dsClass string, warnings []string) ([]DaemonSetFinding, []string) {
	out := []DaemonSetFinding{}
	want, ok := classes[dsClass]
	if !ok {
		return out, append(warnings, fmt.Sprintf("PriorityClass %q not found: DaemonSets were not checked (apply config/priorityclasses or pass --daemonset-priority-class)", dsClass))
	}
	for i := range dss {
		ds := &dss[i]
		spec := &ds.Spec.Template.Spec
		var prio int32
		name := spec.PriorityClassName
		switch {
		case spec.Priority != nil:
			prio = *spec.Priority
		case name != "":
			pc, found := classes[name]
			if !found {
				warnings = append(warnings, fmt.Sprintf("DaemonSet %s/%s names PriorityClass %q, which does not exist: its pods cannot be created", ds.Namespace, ds.Name, name))
				continue
			}
			prio = pc.Value
		case globalDefault != nil:
			prio = globalDefault.Value
		}
		if prio >= want.Value {
			continue
		}
		out = append(out, DaemonSetFinding{Namespace: ds.Namespace, Name: ds.Name, PriorityClassName: name, Priority: prio,
			WantClass: want.Name, WantPriority: want.Value})
	}
	slices.SortFunc(out, func(a, b DaemonSetFinding) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	slices.Sort(warnings)
	return out, warnings
}

// dryRun runs the core's DryRun on the bound pods and the pending ones.
// Pending means: not bound, not terminal, not being deleted, not gated.
func dryRun(objs *Objects, classes preemption.Classes) []PreemptionFinding {
	nodes := make([]preemption.NodePods, 0, len(objs.Nodes))
	index := make(map[string]int, len(objs.Nodes))
	for i := range objs.Nodes {
		index[objs.Nodes[i].Name] = len(nodes)
		nodes = append(nodes, preemption.NodePods{Node: &objs.Nodes[i]})
	}
	var pending []*corev1.Pod
	for i := range objs.Pods {
		p := &objs.Pods[i]
		if isTerminal(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			// Gated pods are not scheduled, so they preempt nobody yet.
			if p.DeletionTimestamp == nil && len(p.Spec.SchedulingGates) == 0 {
				pending = append(pending, p)
			}
			continue
		}
		if j, ok := index[p.Spec.NodeName]; ok {
			nodes[j].Pods = append(nodes[j].Pods, p)
		}
	}
	pdbs := make([]*policyv1.PodDisruptionBudget, len(objs.PDBs))
	for i := range objs.PDBs {
		pdbs[i] = &objs.PDBs[i]
	}
	s := &preemption.Snapshot{Nodes: nodes, PDBs: pdbs, Classes: classes.Lookup}
	results := s.DryRun(pending)
	out := make([]PreemptionFinding, 0, len(results))
	for _, res := range results {
		f := PreemptionFinding{
			Pod:           podFinding(res.Pod, ""),
			Outcome:       res.Outcome,
			Node:          res.Node,
			PDBViolations: res.PDBViolations,
			Message:       res.Message,
		}
		for _, v := range res.Victims {
			f.Victims = append(f.Victims, podFinding(v, ""))
		}
		out = append(out, f)
	}
	return out
}
