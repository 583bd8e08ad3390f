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
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

// CompareFunc orders two candidates for action: negative when a is to be
// acted on before b (a matters less), positive when after, 0 when this
// criterion cannot tell them apart.
type CompareFunc func(a, b *Candidate) int

// Sorter orders candidates by a list of criteria, the first that tells two pods
// apart deciding (Crane's orderedBy, docs/design/node-qos.md#sorting). Pods
// equal on every criterion are ordered by namespace, name and UID, so a plan
// never depends on the order the shell listed the pods in.
type Sorter struct {
	cmps []CompareFunc
}

// OrderedBy returns a Sorter applying cmps in order.
func OrderedBy(cmps ...CompareFunc) Sorter {
	return Sorter{cmps: slices.Clone(cmps)}
}

// IsZero reports whether the sorter has no criteria of its own.
func (s Sorter) IsZero() bool { return len(s.cmps) == 0 }

// Compare orders a and b: negative when a is acted on first.
func (s Sorter) Compare(a, b *Candidate) int {
	for _, f := range s.cmps {
		if c := f(a, b); c != 0 {
			return c
		}
	}
	return byIdentity(a, b)
}

// Sort orders cs so that the pod to act on first comes first.
func (s Sorter) Sort(cs []*Candidate) {
	slices.SortFunc(cs, s.Compare)
}

// Reverse returns the sorter that puts the most important pod first, the
// order in which throttled pods get their CPU back.
func (s Sorter) Reverse() Sorter {
	return Sorter{cmps: []CompareFunc{func(a, b *Candidate) int { return s.Compare(b, a) }}}
}

func byIdentity(a, b *Candidate) int {
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

// GeneralSorter orders by class and priority, then running time: for
// metrics without a sorter of their own.
func GeneralSorter() Sorter { return OrderedBy(ClassAndPriority, RunningTime) }

// CPUSorter orders for CPU throttling (docs/design/node-qos.md#sorting): class
// and priority, then CPU usage (the biggest user closes the gap with the fewest
// pods), then the tier CPU usage ratio, then running time.
func CPUSorter() Sorter { return OrderedBy(ClassAndPriority, CPUUsage, ExtCPUUsage, RunningTime) }

// MemorySorter orders for memory eviction (priority, then size;
// docs/design/node-qos.md#eviction-order): class and priority, then memory
// usage, then running time.
func MemorySorter() Sorter { return OrderedBy(ClassAndPriority, MemoryUsage, RunningTime) }

// CPUEvictionSorter orders victims of the CPU waterline's satisfaction-based
// eviction: PriorityReleaseSorter of cpu_usage.
func CPUEvictionSorter() Sorter { return PriorityReleaseSorter(MetricCPU) }

// PriorityReleaseSorter orders the victims of the CPU and memory waterlines
// (docs/design/node-qos.md, after the Alibaba waterline article): the
// lowest priority first -- Free before Batch, then spec.priority, with no
// QoS class in between -- then the pod whose eviction releases the most,
// measured by its usage of m (not its request: a pod that requests much
// and uses little relieves the node little), then the newest.
func PriorityReleaseSorter(m MetricName) Sorter {
	return OrderedBy(BandAndPriority, func(a, b *Candidate) int { return cmp.Compare(b.Usage(m), a.Usage(m)) }, RunningTime)
}

// BandAndPriority acts first on the lower band, then the lower
// spec.priority.
func BandAndPriority(a, b *Candidate) int {
	if c := cmp.Compare(bandRank(a.Band), bandRank(b.Band)); c != 0 {
		return c
	}
	return cmp.Compare(a.Priority, b.Priority)
}

// ClassAndPriority acts first on the less important pod: Free before Batch,
// then (QoS class before priority value, docs/design/node-qos.md#sorting)
// BestEffort before Burstable before Guaranteed, then the lower spec.priority.
func ClassAndPriority(a, b *Candidate) int {
	if c := cmp.Compare(bandRank(a.Band), bandRank(b.Band)); c != 0 {
		return c
	}
	if c := cmp.Compare(qosRank(a.QOSClass), qosRank(b.QOSClass)); c != 0 {
		return c
	}
	return cmp.Compare(a.Priority, b.Priority)
}

// CPUUsage acts first on the pod using more CPU.
func CPUUsage(a, b *Candidate) int { return cmp.Compare(b.CPUUsageMilli, a.CPUUsageMilli) }

// MemoryUsage acts first on the pod using more memory.
func MemoryUsage(a, b *Candidate) int { return cmp.Compare(b.MemoryUsageBytes, a.MemoryUsageBytes) }

// CPURequest acts first on the pod requesting more CPU.
func CPURequest(a, b *Candidate) int { return cmp.Compare(b.CPURequestMilli, a.CPURequestMilli) }

// ExtCPUUsage compares the extended (tier) CPU usage ratio, CPU usage ÷ tier
// CPU limit (docs/design/node-qos.md#sorting). A pod running on tier CPU is
// acted on before one that is not: its CPU is what the node over-committed.
// Between two tier pods the one nearer its tier limit goes first.
func ExtCPUUsage(a, b *Candidate) int {
	aTier, bTier := a.TierCPULimitMilli > 0, b.TierCPULimitMilli > 0
	switch {
	case aTier && !bTier:
		return -1
	case !aTier && bTier:
		return 1
	case !aTier && !bTier:
		return 0
	}
	// a.usage/a.limit > b.usage/b.limit without division; millicores times
	// millicores stays far inside int64.
	return cmp.Compare(b.CPUUsageMilli*a.TierCPULimitMilli, a.CPUUsageMilli*b.TierCPULimitMilli)
}

// RunningTime acts first on the pod that has run for less time: a pod that
// has run longer has more work to lose. A pod not yet started counts as the
// newest.
func RunningTime(a, b *Candidate) int {
	switch az, bz := a.StartTime.IsZero(), b.StartTime.IsZero(); {
	case az && bz:
		return 0
	case az:
		return -1
	case bz:
		return 1
	}
	return b.StartTime.Compare(a.StartTime)
}

func bandRank(b extension.Band) int {
	switch b {
	case extension.BandFree:
		return 0
	case extension.BandBatch:
		return 1
	case extension.BandMid:
		return 2
	}
	return 3
}

func qosRank(q corev1.PodQOSClass) int {
	switch q {
	case corev1.PodQOSBestEffort:
		return 0
	case corev1.PodQOSGuaranteed:
		return 2
	}
	return 1
}
