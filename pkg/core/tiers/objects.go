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

package tiers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// BuildInput gathers a node's state from the objects the manager watches:
// the Node (allocatable), the pods bound to it (Prod requests) and its
// NodeMetric (peak, usage, update time; nm may be nil, which degrades).
// Pods bound to other nodes and pods that have finished are ignored.
//
// Usage of Prod and Mid pods is the larger of what the pod metrics add
// up to and node usage minus system minus the Batch and Free pods: a pod
// missing from the pod metrics (just started, or its band unknown) then
// still counts, on the safe side.
func BuildInput(node *corev1.Node, pods []*corev1.Pod, nm *v1alpha1.NodeMetric) NodeInput {
	var in NodeInput
	alloc := node.Status.Allocatable
	in.CPU.Allocatable = alloc.Cpu().MilliValue()
	in.Memory.Allocatable = alloc.Memory().Value()
	in.CPU.Capacity, in.Memory.Capacity = in.CPU.Allocatable, in.Memory.Allocatable
	if q, ok := node.Status.Capacity[corev1.ResourceCPU]; ok {
		in.CPU.Capacity = q.MilliValue()
	}
	if q, ok := node.Status.Capacity[corev1.ResourceMemory]; ok {
		in.Memory.Capacity = q.Value()
	}
	in.NodeUsageMissing = true
	for _, pod := range pods {
		if pod.Spec.NodeName != node.Name || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if extension.BandOf(pod) != extension.BandProd {
			continue
		}
		cpu, mem := PodRequests(pod)
		in.CPU.ProdAllocated += cpu
		in.Memory.ProdAllocated += mem
	}
	if nm == nil {
		return in
	}
	st := &nm.Status
	if st.UpdateTime != nil {
		in.UpdateTime = st.UpdateTime.Time
	}
	if q, ok := st.ProdPeak[corev1.ResourceCPU]; ok {
		in.CPU.ProdPeak, in.CPU.ProdPeakKnown = q.MilliValue(), true
	}
	if q, ok := st.ProdPeak[corev1.ResourceMemory]; ok {
		in.Memory.ProdPeak, in.Memory.ProdPeakKnown = q.Value(), true
	}
	if q, ok := st.ProdReclaimable[corev1.ResourceCPU]; ok {
		in.CPU.ReportedReclaimable, in.CPU.ReportedReclaimableKnown = q.MilliValue(), true
	}
	if q, ok := st.ProdReclaimable[corev1.ResourceMemory]; ok {
		in.Memory.ReportedReclaimable, in.Memory.ReportedReclaimableKnown = q.Value(), true
	}
	var podsCPU, podsMem, lowCPU, lowMem int64
	for i := range st.PodsMetric {
		pm := &st.PodsMetric[i]
		cpu, mem := pm.Usage.Cpu().MilliValue(), pm.Usage.Memory().Value()
		if b, err := extension.ParseBand(pm.Band); err == nil && b.IsLowPriority() {
			lowCPU += cpu
			lowMem += mem
			continue
		}
		// Prod, Mid, and any pod whose band is not reported.
		podsCPU += cpu
		podsMem += mem
	}
	var nodeCPU, nodeMem int64
	if st.NodeMetric != nil {
		in.CPU.SystemUsage = st.NodeMetric.SystemUsage.Cpu().MilliValue()
		in.Memory.SystemUsage = st.NodeMetric.SystemUsage.Memory().Value()
		nodeCPU = st.NodeMetric.NodeUsage.Cpu().MilliValue()
		nodeMem = st.NodeMetric.NodeUsage.Memory().Value()
		_, hasCPU := st.NodeMetric.NodeUsage[corev1.ResourceCPU]
		_, hasMem := st.NodeMetric.NodeUsage[corev1.ResourceMemory]
		in.NodeUsageMissing = !hasCPU || !hasMem
	}
	in.CPU.NodeUsage, in.Memory.NodeUsage = nodeCPU, nodeMem
	in.CPU.ProdMidUsage = max(podsCPU, nodeCPU-in.CPU.SystemUsage-lowCPU, 0)
	in.Memory.ProdMidUsage = max(podsMem, nodeMem-in.Memory.SystemUsage-lowMem, 0)
	return in
}

// PodRequests returns the pod's effective cpu (millicores) and memory
// (bytes) requests as the scheduler counts them: the app containers plus
// restartable init containers (sidecars), or the largest init container
// (with the sidecars started before it) if that is more, replaced by the
// pod-level request (spec.resources) where the pod sets one, plus the pod
// overhead.
func PodRequests(pod *corev1.Pod) (milliCPU, memory int64) {
	var sideCPU, sideMem, initCPU, initMem int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cpu, mem := c.Resources.Requests.Cpu().MilliValue(), c.Resources.Requests.Memory().Value()
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sideCPU += cpu
			sideMem += mem
			continue
		}
		initCPU = max(initCPU, cpu+sideCPU)
		initMem = max(initMem, mem+sideMem)
	}
	appCPU, appMem := sideCPU, sideMem
	for i := range pod.Spec.Containers {
		r := pod.Spec.Containers[i].Resources.Requests
		appCPU += r.Cpu().MilliValue()
		appMem += r.Memory().Value()
	}
	milliCPU, memory = max(appCPU, initCPU), max(appMem, initMem)
	if pod.Spec.Resources != nil {
		if q, ok := pod.Spec.Resources.Requests[corev1.ResourceCPU]; ok {
			milliCPU = q.MilliValue()
		}
		if q, ok := pod.Spec.Resources.Requests[corev1.ResourceMemory]; ok {
			memory = q.Value()
		}
	}
	milliCPU += pod.Spec.Overhead.Cpu().MilliValue()
	memory += pod.Spec.Overhead.Memory().Value()
	return milliCPU, memory
}

// ResourceList returns the tier allocatable as Node status extended
// resources: waterline.dev/{mid,batch}-cpu count millicores,
// waterline.dev/{mid,batch}-memory count bytes.
func (a Allocatable) ResourceList() corev1.ResourceList {
	return corev1.ResourceList{
		extension.ResourceMidCPU:      *resource.NewQuantity(a.MidCPU, resource.DecimalSI),
		extension.ResourceMidMemory:   *resource.NewQuantity(a.MidMemory, resource.BinarySI),
		extension.ResourceBatchCPU:    *resource.NewQuantity(a.BatchCPU, resource.DecimalSI),
		extension.ResourceBatchMemory: *resource.NewQuantity(a.BatchMemory, resource.BinarySI),
	}
}

// ShouldUpdate reports whether next should replace the tier resources the
// node publishes (current, its status.allocatable): when one is missing,
// when one goes to or comes from zero (a node that stops or starts
// selling), or when one moves by more than updateThresholdPercent of the
// node's allocatable of that resource (cpu in millicores, memory in
// bytes). Small moves are left out to spare
// the API server and the scheduler's caches. The reason names the first
// resource that decided.
func ShouldUpdate(policy *v1alpha1.TierPolicy, allocatableMilliCPU, allocatableMemory int64, current corev1.ResourceList, next Allocatable) (bool, string) {
	var cur Allocatable
	var published [numTierResources]bool
	for i, name := range tierResources {
		if q, ok := current[name]; ok {
			*cur.field(i), published[i] = q.Value(), true
		}
	}
	return shouldUpdate(int64(*v1alpha1.TierPolicyWithDefaults(policy).UpdateThresholdPercent), allocatableMilliCPU, allocatableMemory, &cur, &published, &next)
}

// ShouldUpdateDefaulted is ShouldUpdate for a policy already defaulted and
// the tier resources published as an Allocatable (nil: none published),
// for a caller that keeps them so (the simulator): it neither copies the
// policy nor reads quantities.
func ShouldUpdateDefaulted(policy *v1alpha1.TierPolicy, allocatableMilliCPU, allocatableMemory int64, current *Allocatable, next Allocatable) (bool, string) {
	var cur Allocatable
	published := [numTierResources]bool{}
	if current != nil {
		cur = *current
		published = [numTierResources]bool{true, true, true, true}
	}
	return shouldUpdate(int64(*policy.UpdateThresholdPercent), allocatableMilliCPU, allocatableMemory, &cur, &published, &next)
}

// The tier resources, in the order ShouldUpdate checks them.
const numTierResources = 4

var tierResources = [numTierResources]corev1.ResourceName{
	extension.ResourceMidCPU, extension.ResourceMidMemory, extension.ResourceBatchCPU, extension.ResourceBatchMemory,
}

// field returns the amount of tierResources[i].
func (a *Allocatable) field(i int) *int64 {
	switch i {
	case 0:
		return &a.MidCPU
	case 1:
		return &a.MidMemory
	case 2:
		return &a.BatchCPU
	}
	return &a.BatchMemory
}

func shouldUpdate(pct, allocatableMilliCPU, allocatableMemory int64, current *Allocatable, published *[numTierResources]bool, next *Allocatable) (bool, string) {
	for i, name := range tierResources {
		base := allocatableMilliCPU
		if i%2 == 1 {
			base = allocatableMemory
		}
		if !published[i] {
			return true, fmt.Sprintf("%s is not published yet", name)
		}
		cur, nxt := *current.field(i), *next.field(i)
		if (cur == 0) != (nxt == 0) {
			return true, fmt.Sprintf("%s goes from %d to %d", name, cur, nxt)
		}
		if diff := abs(nxt - cur); diff*100 > base*pct {
			return true, fmt.Sprintf("%s moves by %d (from %d to %d), more than %d%% of %d", name, diff, cur, nxt, pct, base)
		}
	}
	return false, ""
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
