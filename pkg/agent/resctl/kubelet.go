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

package resctl

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// Unlimited is a Limits value meaning "no limit" (an unlimited CFS quota,
// no memory limit).
const Unlimited int64 = cgroups.Unlimited

// MinQuotaMilli is the smallest CPU quota the kernel accepts at kubelet's
// 100 ms period: 1000 µs, i.e. 10 millicores. Lower caps are raised to it.
const MinQuotaMilli int64 = 10

// Limits are the values of one pod cgroup Waterline reconciles.
type Limits struct {
	// CPUQuotaMilli is the CFS quota in millicores, or Unlimited.
	CPUQuotaMilli int64
	// CPUShares is cpu.shares (v1); on v2 cpu.weight is derived from it
	// with cgroups.CPUSharesToWeight, as kubelet does.
	CPUShares uint64
	// MemoryBytes is the memory limit in bytes, or Unlimited.
	MemoryBytes int64
}

// KubeletLimits returns what kubelet writes into the pod's cgroup, following
// its ResourceConfigForPod (pod-level resources included, CFS quota
// enforced):
//
//   - shares = requested millicores × 1024 ÷ 1000, at least 2 and at most
//     262144; a BestEffort pod gets 2;
//   - quota = the sum of the CPU limits when the pod is Guaranteed, or
//     Burstable with a CPU limit on every container; otherwise unlimited;
//   - memory = the sum of the memory limits under the same rule.
//
// Init containers and sidecars count as the scheduler counts them
// (k8s.io/component-helpers/resource), overhead included. Tier resources
// (waterline.dev/*) are extended resources: kubelet ignores them, and so
// does this function.
//
// Kubelet computes from the allocated resources, which differ from the spec
// only while an in-place resize is in progress; this reads the spec.
func KubeletLimits(pod *corev1.Pod) Limits {
	cpuDeclared, memDeclared := true, true
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lims := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{
		ContainerFn: func(res corev1.ResourceList, _ resourcehelper.ContainerType) {
			if res.Cpu().IsZero() {
				cpuDeclared = false
			}
			if res.Memory().IsZero() {
				memDeclared = false
			}
		},
	})
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuDeclared = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memDeclared = true
		}
	}
	out := Limits{CPUQuotaMilli: Unlimited, CPUShares: cgroups.MinCPUShares, MemoryBytes: Unlimited}
	switch PodQOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		cpuDeclared, memDeclared = true, true
	case corev1.PodQOSBestEffort:
		return out
	}
	out.CPUShares = MilliCPUToShares(reqs.Cpu().MilliValue())
	if cpuDeclared {
		if m := lims.Cpu().MilliValue(); m > 0 {
			out.CPUQuotaMilli = max(m, MinQuotaMilli)
		}
	}
	if memDeclared {
		if b := lims.Memory().Value(); b > 0 {
			out.MemoryBytes = b
		}
	}
	return out
}

// KubeletContainerQuotaMilli returns the CFS quota the runtime gives a
// container of the pod at kubelet's request: its CPU limit, or Unlimited
// without one. ok is false when no container or init container of the pod
// has that name.
func KubeletContainerQuotaMilli(pod *corev1.Pod, name string) (quota int64, ok bool) {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name != name {
				continue
			}
			if m := cs[i].Resources.Limits.Cpu().MilliValue(); m > 0 {
				return max(m, MinQuotaMilli), true
			}
			return Unlimited, true
		}
	}
	return 0, false
}

// MilliCPUToShares is kubelet's conversion of requested millicores to
// cpu.shares: milli × 1024 ÷ 1000, rounded down, within [2, 262144].
func MilliCPUToShares(milli int64) uint64 {
	shares := milli * 1024 / 1000
	switch {
	case shares < int64(cgroups.MinCPUShares):
		return cgroups.MinCPUShares
	case shares > int64(cgroups.MaxCPUShares):
		return cgroups.MaxCPUShares
	}
	return uint64(shares)
}

// PodQOSClass returns status.qosClass, or, for a pod without one yet, the
// class the Kubernetes rules give it from its cpu and memory requests and
// limits (extended resources, tier resources among them, do not count).
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requested, guaranteed := false, true
	check := func(r *corev1.ResourceRequirements) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := r.Requests[name]
			lim, hasLim := r.Limits[name]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				requested = true
			}
			if !hasLim || lim.IsZero() || hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	if pod.Spec.Resources != nil {
		check(pod.Spec.Resources)
		if requested {
			// Pod-level resources decide alone when set.
			if guaranteed {
				return corev1.PodQOSGuaranteed
			}
			return corev1.PodQOSBurstable
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			check(&cs[i].Resources)
		}
	}
	switch {
	case !requested:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
