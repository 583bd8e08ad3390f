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

package tierlimits

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
)

// PodTier is what a pod asks for in tier resources, counted as kubelet
// counts cpu and memory, with tier CPU (millicores) and native CPU added
// together and tier and native memory likewise.
type PodTier struct {
	// CPU says the pod asks for mid-cpu or batch-cpu; Memory for mid-memory
	// or batch-memory.
	CPU, Memory bool
	// BatchCPURequestMilli is the batch-cpu the pod requests: what it takes
	// of the node's Batch allocatable.
	BatchCPURequestMilli int64
	// CPURequestMilli is the pod's CPU request, native and tier, in
	// millicores.
	CPURequestMilli int64
	// CPULimitMilli is the pod's CPU limit, native and tier, in millicores;
	// 0 when some container has neither (then kubelet's rule sets no quota).
	CPULimitMilli int64
	// MemoryLimitBytes is the pod's memory limit, native and tier; 0 when
	// some container has neither.
	MemoryLimitBytes int64
}

// TierOf returns the tier resources of a pod, and false for a pod without
// any. Init containers, sidecars and overhead count as kubelet counts
// them (k8s.io/component-helpers/resource): the pod's request is the larger
// of its containers' sum and its largest init container; a limit exists
// only when every container (init containers included) declares one, in
// cpu or a tier resource.
func TierOf(pod *corev1.Pod) (PodTier, bool) {
	var t PodTier
	cpuDeclared, memDeclared := true, true
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lims := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{
		ContainerFn: func(res corev1.ResourceList, _ resourcehelper.ContainerType) {
			if res.Cpu().IsZero() && isZero(res, extension.ResourceMidCPU) && isZero(res, extension.ResourceBatchCPU) {
				cpuDeclared = false
			}
			if res.Memory().IsZero() && isZero(res, extension.ResourceMidMemory) && isZero(res, extension.ResourceBatchMemory) {
				memDeclared = false
			}
		},
	})
	for _, name := range []corev1.ResourceName{extension.ResourceMidCPU, extension.ResourceBatchCPU} {
		_, inReq := reqs[name]
		_, inLim := lims[name]
		t.CPU = t.CPU || inReq || inLim
	}
	for _, name := range []corev1.ResourceName{extension.ResourceMidMemory, extension.ResourceBatchMemory} {
		_, inReq := reqs[name]
		_, inLim := lims[name]
		t.Memory = t.Memory || inReq || inLim
	}
	if !t.CPU && !t.Memory {
		return PodTier{}, false
	}
	// Tier CPU quantities count millicores: a batch-cpu of 500 is 0.5 CPU.
	batch := reqs[extension.ResourceBatchCPU]
	t.BatchCPURequestMilli = batch.Value()
	t.CPURequestMilli = reqs.Cpu().MilliValue() + value(reqs, extension.ResourceMidCPU) + t.BatchCPURequestMilli
	// PodLimits adds overhead only to a native limit that is there; a pod
	// limited by tier resources alone gets it added here, as kubelet would
	// have had they been cpu and memory.
	if cpuDeclared {
		t.CPULimitMilli = lims.Cpu().MilliValue() + value(lims, extension.ResourceMidCPU) + value(lims, extension.ResourceBatchCPU)
		if lims.Cpu().IsZero() {
			t.CPULimitMilli += pod.Spec.Overhead.Cpu().MilliValue()
		}
	}
	if memDeclared {
		t.MemoryLimitBytes = lims.Memory().Value() + value(lims, extension.ResourceMidMemory) + value(lims, extension.ResourceBatchMemory)
		if lims.Memory().IsZero() {
			t.MemoryLimitBytes += pod.Spec.Overhead.Memory().Value()
		}
	}
	return t, true
}

func isZero(rl corev1.ResourceList, name corev1.ResourceName) bool {
	q, ok := rl[name]
	return !ok || q.IsZero()
}

func value(rl corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := rl[name]
	if !ok {
		return 0
	}
	return q.Value()
}

// Intent is what kubelet would have set had the tier resources been cpu
// and memory: shares from the CPU request, a quota from the CPU limit, a
// memory limit from the memory limit. These are the pod's own limits, not
// a throttle.
func (t PodTier) Intent() resctl.Intent {
	var in resctl.Intent
	if t.CPU {
		in.CPUShares = resctl.MilliCPUToShares(t.CPURequestMilli)
		in.CPUQuotaMilli = t.CPULimitMilli
	}
	if t.Memory {
		in.MemoryLimitBytes = t.MemoryLimitBytes
	}
	return in
}
