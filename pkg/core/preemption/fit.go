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
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// requests is a pod's or a node's resources in milli-units (cpu in
// millicores, memory in millibytes), so every resource compares the same
// way. Small: a linear scan beats a map for the handful of resources pods
// name.
type requests []resourceAmount

type resourceAmount struct {
	name  corev1.ResourceName
	milli int64
}

func (r requests) get(name corev1.ResourceName) int64 {
	for _, a := range r {
		if a.name == name {
			return a.milli
		}
	}
	return 0
}

func (r *requests) add(name corev1.ResourceName, milli int64) {
	for i := range *r {
		if (*r)[i].name == name {
			(*r)[i].milli += milli
			return
		}
	}
	*r = append(*r, resourceAmount{name: name, milli: milli})
}

func (r *requests) addAll(o requests, sign int64) {
	for _, a := range o {
		r.add(a.name, sign*a.milli)
	}
}

func (r *requests) maxWith(o requests) {
	for _, a := range o {
		if a.milli > r.get(a.name) {
			r.add(a.name, a.milli-r.get(a.name))
		}
	}
}

// addList adds a ResourceList without building an intermediate one.
func (r *requests) addList(rl corev1.ResourceList) {
	for name, q := range rl {
		r.add(name, milli(q))
	}
}

func fromList(rl corev1.ResourceList) requests {
	out := make(requests, 0, len(rl))
	for name, q := range rl {
		out = append(out, resourceAmount{name: name, milli: milli(q)})
	}
	return out
}

// milli is q in milli-units, saturating: memory past 8Pi is more
// millibytes than an int64 holds, and MilliValue wraps it negative, which
// reads as asking for nothing.
func milli(q resource.Quantity) int64 {
	if q.Sign() > 0 && q.Value() > math.MaxInt64/1000 {
		return math.MaxInt64
	}
	return q.MilliValue()
}

// podRequests is what the pod asks of a node. Simplified from the
// scheduler: spec.resources (pod-level) when set; otherwise the larger of
// Σ containers + Σ sidecars and, for each plain init container, its
// request plus the sidecars started before it; plus overhead. In-place
// resize status is ignored.
func podRequests(pod *corev1.Pod) requests {
	// Room for cpu, memory and pods without growing.
	out := make(requests, 0, 4)
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Requests) > 0 {
		out.addList(pod.Spec.Resources.Requests)
	} else {
		for i := range pod.Spec.Containers {
			out.addList(pod.Spec.Containers[i].Resources.Requests)
		}
		var sidecars, initMax requests
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars.addList(c.Resources.Requests)
				continue
			}
			running := slices.Clone(sidecars)
			running.addList(c.Resources.Requests)
			initMax.maxWith(running)
		}
		out.addAll(sidecars, 1)
		out.maxWith(initMax)
	}
	out.addList(pod.Spec.Overhead)
	out.add(corev1.ResourcePods, 1000)
	return out
}

// insufficient names the first resource (in name order) the node lacks for
// the pod, or "" when it fits. allocatable and used are the node's; a
// resource the node does not offer is insufficient when requested.
func insufficient(allocatable, used, pod requests) corev1.ResourceName {
	var short corev1.ResourceName
	for _, a := range pod {
		if a.milli <= 0 {
			continue
		}
		// a.milli may be saturated: compare with what is free rather than
		// add it to what is used.
		if a.milli > allocatable.get(a.name)-used.get(a.name) && (short == "" || a.name < short) {
			short = a.name
		}
	}
	return short
}

// insufficientMessage words a shortage the way the scheduler does.
func insufficientMessage(name corev1.ResourceName) string {
	if name == corev1.ResourcePods {
		return "Too many pods"
	}
	return "Insufficient " + string(name)
}

// staticFit says why the pod can never run on the node whatever is
// preempted, or "" when it may: node name, unschedulable flag, node
// selector, required node affinity and NoSchedule/NoExecute taints. Pod
// affinity, topology spread, ports and volumes are not modelled.
func staticFit(pod *corev1.Pod, node *corev1.Node) string {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return "node(s) didn't match the requested node name"
	}
	if node.Spec.Unschedulable && !toleratesUnschedulable(pod) {
		return "node(s) were unschedulable"
	}
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return "node(s) didn't match Pod's node affinity/selector"
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if !matchesNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node) {
			return "node(s) didn't match Pod's node affinity/selector"
		}
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Spec.Tolerations, t) {
			return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
		}
	}
	return ""
}

func toleratesUnschedulable(pod *corev1.Pod) bool {
	return tolerates(pod.Spec.Tolerations, &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
}

// tolerates implements the Equal and Exists operators; the alpha numeric
// comparison operators are treated as not tolerating.
func tolerates(tolerations []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tolerations {
		tol := &tolerations[i]
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			return true
		case corev1.TolerationOpEqual, "":
			if tol.Key != "" && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

// matchesNodeSelector: the terms are ORed, the requirements of a term ANDed;
// an empty term matches nothing, as in the scheduler.
func matchesNodeSelector(ns *corev1.NodeSelector, node *corev1.Node) bool {
	for i := range ns.NodeSelectorTerms {
		term := &ns.NodeSelectorTerms[i]
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		ok := true
		for _, r := range term.MatchExpressions {
			v, has := node.Labels[r.Key]
			if !matchesRequirement(r, v, has) {
				ok = false
				break
			}
		}
		for _, r := range term.MatchFields {
			if !ok {
				break
			}
			// metadata.name is the only field the API server accepts here.
			if r.Key != "metadata.name" || !matchesRequirement(r, node.Name, true) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func matchesRequirement(r corev1.NodeSelectorRequirement, v string, has bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}
