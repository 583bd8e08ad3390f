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

package extension

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProtectionReason says why node QoS must never act on a pod; empty means
// it may.
type ProtectionReason string

// Reasons a pod is protected from throttling and eviction.
const (
	NotProtected            ProtectionReason = ""
	ProtectedBand           ProtectionReason = "band is not batch or free"
	ProtectedDaemonSet      ProtectionReason = "DaemonSet pod"
	ProtectedStaticOrMirror ProtectionReason = "static or mirror pod"
	ProtectedSystemCritical ProtectionReason = "system-critical pod"
	ProtectedTerminating    ProtectionReason = "already terminating"
	ProtectedPriority       ProtectionReason = "priority in the mid or prod range"
	ProtectedNamespace      ProtectionReason = "protected namespace"
)

// IsProtectedNamespace reports whether node QoS must leave every pod of ns
// alone whatever its priority or band label says: kube-system, where the
// cluster's own components run, always; and the namespaces in extra (NodeQOS
// spec.protectedNamespaces, where the chart adds the namespace it installs
// Waterline into).
func IsProtectedNamespace(ns string, extra ...string) bool {
	if ns == metav1.NamespaceSystem {
		return true
	}
	for _, p := range extra {
		if ns == p {
			return true
		}
	}
	return false
}

// QoSProtection returns why node QoS must never throttle or evict the pod,
// or NotProtected. The rules are absolute: Prod and Mid pods, pods whose
// priority lies in the Mid range or above, DaemonSet pods, static and
// mirror pods, system-critical pods and pods of kube-system are never
// candidates, whatever their band label says.
func QoSProtection(pod *corev1.Pod) ProtectionReason {
	switch {
	case IsProtectedNamespace(pod.Namespace):
		return ProtectedNamespace
	case IsSystemCritical(pod):
		return ProtectedSystemCritical
	case IsStaticOrMirrorPod(pod):
		return ProtectedStaticOrMirror
	case IsDaemonSetPod(pod):
		return ProtectedDaemonSet
	case pod.DeletionTimestamp != nil:
		return ProtectedTerminating
	case !BandOf(pod).IsLowPriority():
		return ProtectedBand
	case pod.Spec.Priority != nil && *pod.Spec.Priority >= lowestProtectedPriority():
		// A label put a Mid- or Prod-priority pod in a low band: its priority
		// still protects it.
		return ProtectedPriority
	}
	return NotProtected
}

// IsDaemonSetPod reports whether a DaemonSet owns the pod: any owner
// reference of kind DaemonSet, controller or not, as Koordinator's
// LoadAware and the descheduler read it. The DaemonSet controller marks its
// reference as the controller; a pod that lists a DaemonSet otherwise is
// protected all the same, the safe side.
func IsDaemonSetPod(pod *corev1.Pod) bool {
	for i := range pod.OwnerReferences {
		if pod.OwnerReferences[i].Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// IsStaticOrMirrorPod reports whether the pod is a kubelet static pod or its
// mirror in the API server.
func IsStaticOrMirrorPod(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[annotationMirrorPod]; ok {
		return true
	}
	if src, ok := pod.Annotations[annotationConfigSource]; ok && src != "api" {
		return true
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	return owner != nil && owner.Kind == "Node"
}

// IsSystemCritical reports whether the pod runs at a system-critical
// priority or names one of the system-critical classes.
func IsSystemCritical(pod *corev1.Pod) bool {
	if pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority {
		return true
	}
	switch pod.Spec.PriorityClassName {
	case "system-cluster-critical", "system-node-critical":
		return true
	}
	return false
}

// lowestProtectedPriority is the bottom of the Mid range: a pod at or above
// it is never acted on, even when a label puts it in a lower band.
func lowestProtectedPriority() int32 {
	lowest := SystemCriticalPriority
	for _, r := range DefaultBandRanges {
		if !r.Band.IsLowPriority() && r.Min < lowest {
			lowest = r.Min
		}
	}
	return lowest
}
