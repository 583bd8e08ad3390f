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

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

// Reason says why a running pod may not be a victim of a preemptor; the
// empty Reason means it may.
type Reason string

// Reasons a pod is not a victim.
const (
	// Eligible: the pod may be preempted.
	Eligible Reason = ""
	// NotLowerPriority: default preemption only ever takes pods of a lower
	// priority than the preemptor.
	NotLowerPriority Reason = "NotLowerPriority"
	// StaticOrMirror: deleting a mirror pod frees nothing (the kubelet keeps
	// the static pod running and recreates the mirror), so a preemptor
	// waiting for it would wait forever.
	StaticOrMirror Reason = "StaticOrMirror"
	// DaemonSetPod: a DaemonSet pod is recreated on the same node at once;
	// preempting it trades one pending pod for another and takes a node agent
	// away (DaemonSets must not be preempted;
	// docs/design/preemption.md#victim-rules).
	DaemonSetPod Reason = "DaemonSet"
	// NonPreemptibleClass: the pod's PriorityClass is NonPreemptible and the
	// preemptor's priority is below the class's threshold.
	NonPreemptibleClass Reason = "NonPreemptible"
)

// Verdict is the decision on one victim for one preemptor.
type Verdict struct {
	// Reason is Eligible or why the pod may not be a victim.
	Reason Reason
	// PreemptorPriority is the preemptor's priority.
	PreemptorPriority int32
	// VictimPriority is the victim's priority.
	VictimPriority int32
	// Class and Threshold name the NonPreemptible class and its
	// preemptible-by priority when Reason is NonPreemptibleClass.
	Class     string
	Threshold int32
}

// Eligible reports whether the pod may be preempted.
func (v Verdict) Eligible() bool { return v.Reason == Eligible }

// String explains the verdict as a per-node reason without naming the
// victim, the way the scheduler words and counts reasons
// ("2 node(s) had ..."), so many pods and nodes read as one line.
func (v Verdict) String() string {
	switch v.Reason {
	case Eligible:
		return "preemptible"
	case NotLowerPriority:
		return fmt.Sprintf("node(s) had pods of priority %d, not below the preemptor's priority %d", v.VictimPriority, v.PreemptorPriority)
	case StaticOrMirror:
		return "node(s) had static pods, which are never preempted"
	case DaemonSetPod:
		return "node(s) had DaemonSet pods, which are never preempted"
	case NonPreemptibleClass:
		return fmt.Sprintf("node(s) had pods of NonPreemptible PriorityClass %q, not preemptible by priority %d below threshold %d",
			v.Class, v.PreemptorPriority, v.Threshold)
	}
	return string(v.Reason)
}

// PodPriority is the pod's priority; pods the Priority admission plugin did
// not see count as 0, as in the scheduler.
func PodPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// VictimVerdict decides whether the running pod victim may be preempted by
// preemptor. The rules, in order:
//
//  1. the victim's priority must be below the preemptor's (default
//     preemption);
//  2. static and mirror pods and DaemonSet pods are never victims;
//  3. a pod whose class is NonPreemptible is a victim only of preemptors at
//     or above the class's PreemptibleBy.
//
// classes may be nil: no class is then NonPreemptible.
func VictimVerdict(victim, preemptor *corev1.Pod, classes ClassLookup) Verdict {
	v := Verdict{PreemptorPriority: PodPriority(preemptor), VictimPriority: PodPriority(victim)}
	switch {
	case v.VictimPriority >= v.PreemptorPriority:
		v.Reason = NotLowerPriority
		return v
	case extension.IsStaticOrMirrorPod(victim):
		v.Reason = StaticOrMirror
		return v
	case extension.IsDaemonSetPod(victim):
		v.Reason = DaemonSetPod
		return v
	}
	if classes == nil || victim.Spec.PriorityClassName == "" {
		return v
	}
	c, ok := classes(victim.Spec.PriorityClassName)
	if ok && c.NonPreemptible && v.PreemptorPriority < c.PreemptibleBy {
		v.Reason = NonPreemptibleClass
		v.Class = c.Name
		v.Threshold = c.PreemptibleBy
	}
	return v
}

// PreemptorVerdict reports whether a pending pod may preempt anyone, and
// why not. A pod never preempts when its own preemptionPolicy is Never (the
// Priority admission plugin copies it from the class) or when its class's
// is, which also covers pods created before the class existed.
func PreemptorVerdict(preemptor *corev1.Pod, classes ClassLookup) (bool, string) {
	if p := preemptor.Spec.PreemptionPolicy; p != nil && *p == corev1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never"
	}
	if classes == nil || preemptor.Spec.PriorityClassName == "" {
		return true, ""
	}
	if c, ok := classes(preemptor.Spec.PriorityClassName); ok && c.NeverPreempts {
		return false, fmt.Sprintf("not eligible due to preemptionPolicy=Never of PriorityClass %q", c.Name)
	}
	return true, ""
}
