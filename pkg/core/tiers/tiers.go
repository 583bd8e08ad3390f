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

// Package tiers decides how much of a node is sold as Mid and Batch tier
// resources (docs/design/tiers.md): Mid from what the Prod pods requested but
// are predicted not to use, Batch from what is really idle, both reset to zero
// when the node's agent stops reporting, and whether a new value differs enough
// from the published one to be written.
//
// It is pure: the manager's tiers controller and the simulator give it
// numbers (or the Node, its pods and its NodeMetric) and write the result
// themselves. It must never read clocks or the API server, and never sell
// anything on a node whose metrics are stale or whose Prod peak is unknown.
package tiers

import (
	"fmt"
	"math"
	"time"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// ResourceState is what the formulas know about one resource of a node.
// CPU is in millicores, memory in bytes.
type ResourceState struct {
	// Capacity is the node's capacity (Node status.capacity); 0 means the
	// same as Allocatable. Capacity − Allocatable is what the kubelet
	// reserves for the system.
	Capacity int64
	// Allocatable is the node's allocatable (Node status.allocatable).
	Allocatable int64
	// ProdAllocated is Σ requests of the Prod pods on the node.
	ProdAllocated int64
	// ProdPeak is the predicted Prod peak (NodeMetric status.prodPeak);
	// meaningful only when ProdPeakKnown.
	ProdPeak int64
	// ProdPeakKnown is false until the agent reports a peak: nothing is
	// reclaimed from Prod pods whose peak nobody predicted.
	ProdPeakKnown bool
	// ReportedReclaimable is the Reclaimable the agent reported with the
	// peak (NodeMetric status.prodReclaimable), over the Prod pods it knew
	// then; meaningful only when ReportedReclaimableKnown (an agent that
	// predates the field reports none). Reclaimable is at most this: a Prod
	// pod bound since that report is in ProdAllocated at its request but
	// not in ProdPeak yet, and would be sold whole as Mid until the next.
	ReportedReclaimable      int64
	ReportedReclaimableKnown bool
	// ProdMidUsage is the real usage of the Prod and Mid pods.
	ProdMidUsage int64
	// SystemUsage is the node's usage outside pods.
	SystemUsage int64
	// NodeUsage is the whole node's usage, system included (NodeMetric
	// nodeUsage).
	NodeUsage int64
}

// Unused is what the node does not use, keeping the system's share:
// max(0, Capacity − max(system use, Capacity − Allocatable) − pods' use),
// with the pods' use the larger of NodeUsage − system use and the Prod and
// Mid pods' use (a NodeMetric that lists pods but no node usage still
// counts them).
func Unused(s ResourceState) int64 {
	capacity := s.Capacity
	if capacity == 0 {
		capacity = s.Allocatable
	}
	system := max(s.SystemUsage, capacity-s.Allocatable)
	pods := max(s.NodeUsage-s.SystemUsage, s.ProdMidUsage, 0)
	return max(0, capacity-system-pods)
}

// Reclaimable is what the Prod pods requested but are predicted not to
// use: ReclaimableOf(reclaimRatio, Allocated[Prod], Peak[Prod]), at most
// what the agent reported with the peak; 0 while the peak is unknown.
//
// Allocated[Prod] is the pods bound now, the peak those the agent knew at
// its last report. Between a Prod pod's binding and the next report the
// first counts its request and the second does not; the reported value
// counts neither, and the agent's next prediction counts the new pod at its
// request while it is cold. A Prod pod gone since the report lowers
// Allocated[Prod] at once, and the reported value not yet: the smaller of
// the two is right both ways.
func Reclaimable(reclaimRatioPercent int32, s ResourceState) int64 {
	if !s.ProdPeakKnown {
		return 0
	}
	r := ReclaimableOf(reclaimRatioPercent, s.ProdAllocated, s.ProdPeak)
	if s.ReportedReclaimableKnown {
		r = min(r, max(0, s.ReportedReclaimable))
	}
	return r
}

// ReclaimableOf is Waterline's one definition of "reclaimable":
// max(0, reclaimRatio% × requested − peak). The manager sells Mid from it
// at the policy's reclaim ratio; the agent reports it in a NodeMetric's
// status.prodReclaimable at the same ratio, which the manager writes into
// the NodeMetric's spec.tiers.reclaimRatioPercent; `waterline predict`'s
// savings ratio is it at 100 %, with the limits as requested, divided by
// them.
func ReclaimableOf(reclaimRatioPercent int32, requested, peak int64) int64 {
	return max(0, requested*int64(reclaimRatioPercent)/100-peak)
}

// Unallocated is what no Prod pod requested: max(Allocatable − Allocated[Prod], 0).
func Unallocated(s ResourceState) int64 {
	return max(s.Allocatable-s.ProdAllocated, 0)
}

// Mid is the Mid allocatable: min(Reclaimable, Allocatable × midThreshold%,
// Unused) -- Koordinator's cap: what Prod pods are predicted not to use is
// sold only as far as the node really has it free -- plus Unallocated in
// the mixed variant of docs/design/tiers.md (includeUnallocated), where an
// idle node runs Mid pods and Prod pods preempt them when the node fills
// up. Calculate never asks for the mixed variant: the preemption it needs
// does not exist yet, and the API refuses it.
func Mid(midThresholdPercent, reclaimRatioPercent int32, includeUnallocated bool, s ResourceState) int64 {
	mid := min(Reclaimable(reclaimRatioPercent, s), max(0, s.Allocatable*int64(midThresholdPercent)/100), Unused(s))
	if includeUnallocated {
		mid += Unallocated(s)
	}
	return mid
}

// Batch is the Batch allocatable: max(0, Allocatable × batchThreshold% −
// usage[Prod+Mid] − system usage). It follows real use, not requests: Batch
// pods are the ones node QoS throttles and evicts when the use comes back.
func Batch(batchThresholdPercent int32, s ResourceState) int64 {
	return max(0, s.Allocatable*int64(batchThresholdPercent)/100-s.ProdMidUsage-s.SystemUsage)
}

// DegradeAfter is the defaulted policy's degradeSeconds as a
// time.Duration: how old a NodeMetric may be before the node's tiers are
// reset. The schema bounds degradeSeconds only below, so one too large for
// a Duration (about 292 years) saturates rather than wraps to a negative
// limit that would degrade every node.
func DegradeAfter(p *v1alpha1.TierPolicy) time.Duration {
	if s := *p.DegradeSeconds; s < int64(math.MaxInt64/time.Second) {
		return time.Duration(s) * time.Second
	}
	return math.MaxInt64
}

// NodeInput is one node's state for Calculate.
type NodeInput struct {
	// CPU in millicores, Memory in bytes.
	CPU, Memory ResourceState
	// UpdateTime is the NodeMetric's status.updateTime; zero when the agent
	// never reported.
	UpdateTime time.Time
	// NodeUsageMissing is true when the NodeMetric reports no node usage
	// of cpu and memory: what the node does not use is then unknown.
	NodeUsageMissing bool
}

// Allocatable is what a node sells per tier: CPU in millicores, memory in
// bytes.
type Allocatable struct {
	MidCPU, MidMemory, BatchCPU, BatchMemory int64
}

// Result is the outcome of Calculate.
type Result struct {
	Allocatable
	// Degraded is true when the node's metrics were missing or stale and
	// every tier was reset to zero.
	Degraded bool
	// Reason explains a zero result (disabled, degraded); empty otherwise.
	Reason string
}

// Calculate returns the node's tier allocatable under policy (unset fields
// take the API defaults; policy may be nil) at now. The tiers are zero when
// the policy disables them, and when the NodeMetric is missing or older
// than degradeSeconds (degraded): nothing is sold on a node whose agent is
// silent, or when it reports no node usage.
func Calculate(policy *v1alpha1.TierPolicy, in NodeInput, now time.Time) Result {
	return CalculateDefaulted(v1alpha1.TierPolicyWithDefaults(policy), in, now)
}

// CalculateDefaulted is Calculate for a policy already defaulted
// (v1alpha1.TierPolicyWithDefaults, as policy.ForNode resolves it): it
// neither copies nor re-defaults the policy, for a caller that calculates
// every node's tiers every report (the simulator).
func CalculateDefaulted(p *v1alpha1.TierPolicy, in NodeInput, now time.Time) Result {
	if !*p.Enabled {
		return Result{Reason: "tiers are disabled by the policy"}
	}
	if in.UpdateTime.IsZero() {
		return Result{Degraded: true, Reason: "the node's NodeMetric has no status.updateTime"}
	}
	limit := DegradeAfter(p)
	if age := now.Sub(in.UpdateTime); age > limit {
		return Result{Degraded: true, Reason: fmt.Sprintf("the node's NodeMetric was last updated %s ago, more than degradeSeconds (%ds)",
			age.Round(time.Second), *p.DegradeSeconds)}
	}
	if in.NodeUsageMissing {
		// Koordinator degrades likewise: without node usage, neither
		// what is free (Mid's cap) nor what is idle (Batch) is known.
		return Result{Degraded: true, Reason: "the node's NodeMetric reports no node usage of cpu and memory"}
	}
	// The mixed variant (p.MidIncludeUnallocated) is never applied: see
	// Mid.
	return Result{Allocatable: Allocatable{
		MidCPU:      Mid(*p.MidCPUThresholdPercent, *p.ReclaimRatioPercent, false, in.CPU),
		MidMemory:   Mid(*p.MidMemoryThresholdPercent, *p.ReclaimRatioPercent, false, in.Memory),
		BatchCPU:    Batch(*p.BatchCPUThresholdPercent, in.CPU),
		BatchMemory: Batch(*p.BatchMemoryThresholdPercent, in.Memory),
	}}
}
