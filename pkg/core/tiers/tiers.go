// Package tiers decides how much of a node is sold as Mid and Batch tier
// resources (seed 003): Mid from what the Prod pods requested but are
// predicted not to use, Batch from what is really idle, both reset to zero
// when the node's agent stops reporting, and whether a new value differs
// enough from the published one to be written.
//
// It is pure: the manager's tiers controller and the simulator give it
// numbers (or the Node, its pods and its NodeMetric) and write the result
// themselves. It must never read clocks or the API server, and never sell
// anything on a node whose metrics are stale or whose Prod peak is unknown.
package tiers

import (
	"fmt"
	"time"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// ResourceState is what the formulas know about one resource of a node.
// CPU is in millicores, memory in bytes.
type ResourceState struct {
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
	// ProdMidUsage is the real usage of the Prod and Mid pods.
	ProdMidUsage int64
	// SystemUsage is the node's usage outside pods.
	SystemUsage int64
}

// Reclaimable is what the Prod pods requested but are predicted not to
// use: max(0, reclaimRatio% × Allocated[Prod] − Peak[Prod]); 0 while the
// peak is unknown.
func Reclaimable(reclaimRatioPercent int32, s ResourceState) int64 {
	if !s.ProdPeakKnown {
		return 0
	}
	return max(0, s.ProdAllocated*int64(reclaimRatioPercent)/100-s.ProdPeak)
}

// Unallocated is what no Prod pod requested: max(Allocatable − Allocated[Prod], 0).
func Unallocated(s ResourceState) int64 {
	return max(s.Allocatable-s.ProdAllocated, 0)
}

// Mid is the Mid allocatable: min(Reclaimable, Allocatable × midThreshold%),
// plus Unallocated in seed 003's mixed variant (includeUnallocated), where
// an idle node runs Mid pods and Prod pods preempt them when the node
// fills up.
func Mid(midThresholdPercent, reclaimRatioPercent int32, includeUnallocated bool, s ResourceState) int64 {
	mid := min(Reclaimable(reclaimRatioPercent, s), max(0, s.Allocatable*int64(midThresholdPercent)/100))
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

// NodeInput is one node's state for Calculate.
type NodeInput struct {
	// CPU in millicores, Memory in bytes.
	CPU, Memory ResourceState
	// UpdateTime is the NodeMetric's status.updateTime; zero when the agent
	// never reported.
	UpdateTime time.Time
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
// silent.
func Calculate(policy *v1alpha1.TierPolicy, in NodeInput, now time.Time) Result {
	p := v1alpha1.TierPolicyWithDefaults(policy)
	if !*p.Enabled {
		return Result{Reason: "tiers are disabled by the policy"}
	}
	if in.UpdateTime.IsZero() {
		return Result{Degraded: true, Reason: "the node's NodeMetric has no status.updateTime"}
	}
	limit := time.Duration(*p.DegradeSeconds) * time.Second
	if age := now.Sub(in.UpdateTime); age > limit {
		return Result{Degraded: true, Reason: fmt.Sprintf("the node's NodeMetric was last updated %s ago, more than degradeSeconds (%ds)",
			age.Round(time.Second), *p.DegradeSeconds)}
	}
	return Result{Allocatable: Allocatable{
		MidCPU:      Mid(*p.MidCPUThresholdPercent, *p.ReclaimRatioPercent, p.MidIncludeUnallocated, in.CPU),
		MidMemory:   Mid(*p.MidMemoryThresholdPercent, *p.ReclaimRatioPercent, p.MidIncludeUnallocated, in.Memory),
		BatchCPU:    Batch(*p.BatchCPUThresholdPercent, in.CPU),
		BatchMemory: Batch(*p.BatchMemoryThresholdPercent, in.Memory),
	}}
}
