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

package qos

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
)

// NoQuota is the CPU quota of a pod Waterline does not hold down: the pod
// runs at its own limit (kubelet's quota, or the tier limit the agent
// enforces) or unlimited.
const NoQuota int64 = -1

// minQuotaMilli is the lowest CPU quota the kernel accepts: cpu.cfs_quota_us
// (and the first field of cpu.max) must be at least 1000 µs, which at the
// default 100 ms period is 10 millicores. A lower floor would be rejected by
// the shell's write, so the planner never plans one.
const minQuotaMilli int64 = 10

// PodUsage is what the shell measured for one pod.
type PodUsage struct {
	// CPUMilli is the pod's latest CPU usage, in millicores.
	CPUMilli int64
	// MemoryBytes is the pod's latest memory usage (working set), in bytes.
	MemoryBytes int64
	// CPUQuotaMilli is the CPU quota Waterline currently holds the pod at,
	// in millicores, or NoQuota when it holds none. The shell remembers what
	// it applied rather than reading cgroup files, so a quota kubelet reset
	// behind its back is re-applied from the plan.
	CPUQuotaMilli int64
	// Metrics holds the pod's usage of metrics registered beyond cpu and
	// memory, in each metric's own unit. May be nil.
	Metrics map[MetricName]int64
}

// PodRef names a pod in a plan.
type PodRef struct {
	Namespace string
	Name      string
	UID       types.UID
}

// String returns namespace/name.
func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// Candidate is a pod the planner may act on, as plain data. Build it with
// NewCandidate; the planner re-checks Pod with extension.QoSProtection and
// ignores any candidate that is protected, whatever the other fields say.
type Candidate struct {
	// The fields read for every candidate of every cycle (eligibility and
	// SampleBECPU) come first, to share a cache line: a simulator of a
	// thousand nodes walks their candidates every step.

	// Pod is the pod itself. It is the authority on protection: a candidate
	// without a Pod is never acted on. The planner does not modify it.
	Pod *corev1.Pod
	// Band is the pod's priority band (extension.BandOf).
	Band extension.Band
	// CPUUsageMilli is the latest CPU usage, in millicores.
	CPUUsageMilli int64
	// CPURequestMilli is the pod's CPU request in millicores, counting
	// mid-cpu/batch-cpu tier requests (which are already millicores);
	// 0 when it requests none.
	CPURequestMilli int64
	// CPULimitMilli is the pod's CPU limit in millicores, counting tier
	// limits; 0 when some container has no limit.
	CPULimitMilli int64
	// CPUQuotaMilli is the quota Waterline currently holds the pod at, or
	// NoQuota.
	CPUQuotaMilli int64
	// MemoryUsageBytes is the latest memory usage, in bytes.
	MemoryUsageBytes int64

	PodRef
	// Priority is spec.priority, 0 when unset.
	Priority int32
	// QOSClass is the pod's Kubernetes QoS class.
	QOSClass corev1.PodQOSClass
	// StartTime is when kubelet started the pod; zero when not yet started,
	// which sorts as the shortest-running pod.
	StartTime time.Time

	// TierCPULimitMilli is the part of the limit given as mid-cpu/batch-cpu,
	// in millicores; 0 when the pod runs on no tier CPU.
	TierCPULimitMilli int64
	// MemoryRequestBytes and MemoryLimitBytes count tier memory too; the
	// limit is 0 when some container has none.
	MemoryRequestBytes int64
	MemoryLimitBytes   int64
	// Metrics is the pod's usage of further registered metrics.
	Metrics map[MetricName]int64
}

// NewCandidate describes pod with the usage the shell measured. It fills
// every field from the pod; it does not decide whether the pod may be acted
// on (the planner does, from Pod).
func NewCandidate(pod *corev1.Pod, u PodUsage) Candidate {
	c := Candidate{
		Pod:              pod,
		PodRef:           PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Band:             extension.BandOf(pod),
		QOSClass:         qosClassOf(pod),
		CPUUsageMilli:    u.CPUMilli,
		MemoryUsageBytes: u.MemoryBytes,
		CPUQuotaMilli:    u.CPUQuotaMilli,
		Metrics:          u.Metrics,
	}
	if pod.Spec.Priority != nil {
		c.Priority = *pod.Spec.Priority
	}
	if pod.Status.StartTime != nil {
		c.StartTime = pod.Status.StartTime.Time
	}
	if c.CPUQuotaMilli < 0 {
		c.CPUQuotaMilli = NoQuota
	}
	cpu := podResources(pod, corev1.ResourceCPU, extension.ResourceMidCPU, extension.ResourceBatchCPU, true)
	mem := podResources(pod, corev1.ResourceMemory, extension.ResourceMidMemory, extension.ResourceBatchMemory, false)
	c.CPURequestMilli, c.CPULimitMilli, c.TierCPULimitMilli = cpu.request, cpu.limit, cpu.tierLimit
	c.MemoryRequestBytes, c.MemoryLimitBytes = mem.request, mem.limit
	return c
}

// eligible reports whether the planner may act on c. Both the pod and the
// band the candidate claims must say so: a candidate whose fields were
// edited into a low band while its pod is Prod is still refused. Pods of
// kube-system and of the protectedNamespaces are refused too.
func eligible(c *Candidate, protectedNamespaces ...string) bool {
	return c.Pod != nil && c.Band.IsLowPriority() &&
		extension.QoSProtection(c.Pod) == extension.NotProtected &&
		!extension.IsProtectedNamespace(c.Pod.Namespace, protectedNamespaces...)
}

// eligibleMemo remembers eligible's verdict for the last pod object and
// band it was asked about. The verdict depends on nothing else (the
// protected namespaces are fixed for one Plan or sample), so a run of
// candidates sharing a pod object is checked once: the simulator's
// candidates point at a few shared stand-in pods, and checking each one's
// protection again costs more than the rest of a plan. Candidates of a
// real node each have their own pod and are all checked.
type eligibleMemo struct {
	namespaces []string
	pod        *corev1.Pod
	band       extension.Band
	ok         bool
}

func (m *eligibleMemo) eligible(c *Candidate) bool {
	if c.Pod == nil || c.Pod != m.pod || c.Band != m.band {
		m.pod, m.band, m.ok = c.Pod, c.Band, eligible(c, m.namespaces...)
	}
	return m.ok
}

// terminatingLowPriority reports whether c is a Batch/Free pod already on its
// way out: what it uses is about to be released without any action.
func terminatingLowPriority(c *Candidate) bool {
	return c.Pod != nil && c.Pod.DeletionTimestamp != nil && extension.BandOf(c.Pod).IsLowPriority()
}

type podAmounts struct{ request, limit, tierLimit int64 }

// podResources sums a pod's request and limit of one resource, in
// millicores for CPU and bytes otherwise. Tier resources count as the native
// resource: mid-cpu/batch-cpu quantities already are millicores.
// Regular containers and restartable (sidecar) init containers run together
// and add up; a plain init container runs alone, so the pod needs at least
// its amount. Overhead is added on top, as the scheduler does.
func podResources(pod *corev1.Pod, native, mid, batch corev1.ResourceName, milli bool) podAmounts {
	native1 := func(q resource.Quantity) int64 {
		if milli {
			return q.MilliValue()
		}
		return q.Value()
	}
	one := func(rl corev1.ResourceList) (amount, tier int64, ok bool) {
		if q, found := rl[native]; found {
			amount, ok = native1(q), true
		}
		for _, name := range []corev1.ResourceName{mid, batch} {
			if q, found := rl[name]; found {
				amount += q.Value()
				tier += q.Value()
				ok = true
			}
		}
		return amount, tier, ok
	}
	var out podAmounts
	limited := true
	for i := range pod.Spec.Containers {
		r := &pod.Spec.Containers[i].Resources
		req, _, _ := one(r.Requests)
		lim, tier, ok := one(r.Limits)
		if !ok {
			limited = false
		}
		if req == 0 && ok {
			// Kubernetes defaults a missing request to the limit.
			req = lim
		}
		out.request += req
		out.limit += lim
		out.tierLimit += tier
	}
	var initMax int64
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		req, _, _ := one(ic.Resources.Requests)
		lim, tier, ok := one(ic.Resources.Limits)
		if req == 0 && ok {
			req = lim
		}
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out.request += req
			if !ok {
				limited = false
			}
			out.limit += lim
			out.tierLimit += tier
			continue
		}
		initMax = max(initMax, req)
	}
	out.request = max(out.request, initMax)
	if q, ok := pod.Spec.Overhead[native]; ok {
		out.request += native1(q)
		if limited {
			out.limit += native1(q)
		}
	}
	if !limited || len(pod.Spec.Containers) == 0 {
		out.limit = 0
	}
	return out
}

// qosClassOf returns status.qosClass, which the API server sets on every
// pod; for a pod built without it (a simulator's, a test's) it applies the
// Kubernetes rule on cpu and memory: no requests or limits at all is
// BestEffort, limits equal to requests for both in every container is
// Guaranteed, anything else Burstable. Tier resources are extended resources
// and do not count, so a pod that asks only for batch-cpu is BestEffort.
func qosClassOf(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requested, guaranteed := false, true
	for i := range pod.Spec.Containers {
		r := &pod.Spec.Containers[i].Resources
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := r.Requests[name]
			lim, hasLim := r.Limits[name]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				requested = true
			}
			if !hasLim || hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
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
