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

package sim

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Harm is the model of what co-running work costs the online (Prod)
// services: how CPU is shared when a node runs out (cfsShare), how much
// the p99 latency of Prod requests grows with the CPU other pods use on the
// node, and when that breaks a Prod pod's SLO. docs/design/simulator.md
// gives the sources of each number.
//
// The p99 latency of a node's Prod pods, relative to the same pods with
// the node to themselves, is
//
//	L = (1 + κ·b·ρ) × (1 + W(ρ_shared)) ÷ (1 + W(ρ))
//
// where b is the CPU non-Prod pods use ÷ node capacity and ρ the Prod
// pods' CPU use ÷ the CPU pods can use. The first factor is interference
// (run-queue wake-up delays, caches, memory bandwidth, SMT siblings): it
// is there even when Prod gets every cycle it asks for, as the real-node
// probe measured with BestEffort burners at cpu.shares 2, and it grew
// with the Prod load there. W is the mean wait in an M/M/c queue with c
// the node's cores, in service times (Sakasegawa's approximation):
// ρ_shared adds to ρ the CPU of the non-Prod pods that compete with Prod
// on equal CFS terms (those with a CPU request; two shares -- a pod
// without a CPU request, or the besteffort cgroup -- do not hold a CPU
// Prod wakes up on). On a many-core node W
// stays near 0 until the node is nearly full.
//
// A Prod pod is over its SLO in a step when L exceeds SLOLatencyFactor or
// when it got less than (100 − StarvedPercent) % of the CPU it wanted (its
// queue grows without bound until the node has CPU again).
type Harm struct {
	// InterferencePercent is κ × 100 in L. In [0, 10000]. Default 400
	// (κ = 4, between the probe's 2 at 300 requests/s and 7.4 at 700).
	InterferencePercent float64 `json:"interferencePercent"`
	// SLOLatencyFactor is a Prod pod's p99 latency SLO as a multiple of its
	// p99 latency with the node to itself, at least 1. Default 1.5: the
	// probe's p99 alone varied by 1.28× between rounds, so an SLO tighter
	// than that is broken by noise; results also report 1.25, 2 and 3
	// (SLOFactors).
	SLOLatencyFactor float64 `json:"sloLatencyFactor"`
	// StarvedPercent is the share of the CPU a Prod pod wants that it may
	// miss in a step before the step counts against its SLO, in [0, 100).
	// Default 1.
	StarvedPercent float64 `json:"starvedPercent"`
}

// DefaultHarm returns the harm model's defaults.
func DefaultHarm() Harm {
	return Harm{InterferencePercent: 400, SLOLatencyFactor: 1.5, StarvedPercent: 1}
}

// SLOFactors are the SLOs every result also reports Prod SLO-violation
// time at (Summary.ProdSLOCurve), so that a reader sees how the verdict
// depends on how tight the SLO is.
var SLOFactors = [...]float64{1.25, 1.5, 2, 3}

func (h *Harm) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !(h.InterferencePercent >= 0 && h.InterferencePercent <= 10000) {
		errs = append(errs, field.Invalid(path.Child("interferencePercent"), h.InterferencePercent, "must be in [0, 10000]"))
	}
	if !(h.SLOLatencyFactor >= 1) {
		errs = append(errs, field.Invalid(path.Child("sloLatencyFactor"), h.SLOLatencyFactor, "must be at least 1"))
	}
	if !(h.StarvedPercent >= 0 && h.StarvedPercent < 100) {
		errs = append(errs, field.Invalid(path.Child("starvedPercent"), h.StarvedPercent, "must be in [0, 100)"))
	}
	return errs
}

// latencyFactor is L above: nonProd is the CPU non-Prod pods use,
// competing the part of it that competes with Prod on equal CFS terms,
// prod what Prod pods use and avail the CPU pods can use, all in
// millicores; capacity the node's CPU.
func (h *Harm) latencyFactor(prod, nonProd, competing, avail, capacity int64) float64 {
	if avail <= 0 || capacity <= 0 {
		return 1
	}
	b := float64(nonProd) / float64(capacity)
	rho := float64(prod) / float64(avail)
	shared := float64(prod+competing) / float64(avail)
	l := 1 + h.InterferencePercent/100*b*rho
	if competing == 0 {
		// The queueing term is 1: nothing competes on equal terms (the
		// common case, and two math.Pow calls saved per node-step).
		return l
	}
	cores := float64(capacity) / 1000
	return l * (1 + mmcWait(shared, cores)) / (1 + mmcWait(rho, cores))
}

// latencyFactorOn is latencyFactor for a node whose queueing terms t
// remembers (nil: none do), bit for bit the same value.
func (h *Harm) latencyFactorOn(t *waitTable, prod, nonProd, competing, avail, capacity int64) float64 {
	if t == nil || competing == 0 {
		return h.latencyFactor(prod, nonProd, competing, avail, capacity)
	}
	b := float64(nonProd) / float64(capacity)
	rho := float64(prod) / float64(avail)
	l := 1 + h.InterferencePercent/100*b*rho
	return l * t.onePlusWait(prod+competing) / t.onePlusWait(prod)
}

// waitTable remembers 1 + mmcWait(k ÷ avail, cores) for the integer
// loads k millicores of one node shape (its capacity, and avail of it
// for pods), as runNode meets them. runNode's ρ and ρ_shared are whole
// millicores over the same avail, so an entry is exactly what
// latencyFactor computes -- the same division, the same math.Pow -- and
// the harm model's two math.Pow calls per contended node-step, the
// largest part of its cost, become two loads.
type waitTable struct {
	avail int64
	cores float64
	// w[k] is 1 + mmcWait(k ÷ avail, cores) once computed, 0 before (a
	// computed entry is at least 1).
	w []float64
}

func (t *waitTable) onePlusWait(k int64) float64 {
	if k < 0 || k >= int64(len(t.w)) {
		return 1 + mmcWait(float64(k)/float64(t.avail), t.cores)
	}
	if v := t.w[k]; v != 0 {
		return v
	}
	v := 1 + mmcWait(float64(k)/float64(t.avail), t.cores)
	t.w[k] = v
	return v
}

// waitTables hands out one waitTable per node shape.
type waitTables struct {
	byShape map[[2]int64]*waitTable
	entries int
}

// maxWaitEntries bounds the memory of a run's wait tables (8 bytes an
// entry: 64 MiB): a cluster of many large, distinct node shapes computes
// the terms instead.
const maxWaitEntries = 8 << 20

// forNode is the table of a node with capacity millicores, avail of them
// for pods; nil (compute the terms) past maxWaitEntries, or when the
// node has no CPU for pods.
func (ts *waitTables) forNode(capacity, avail int64) *waitTable {
	key := [2]int64{capacity, avail}
	if t, ok := ts.byShape[key]; ok {
		return t
	}
	if avail <= 0 || capacity <= 0 || ts.entries+int(avail)+1 > maxWaitEntries {
		return nil
	}
	if ts.byShape == nil {
		ts.byShape = map[[2]int64]*waitTable{}
	}
	t := &waitTable{avail: avail, cores: float64(capacity) / 1000, w: make([]float64, avail+1)}
	ts.entries += len(t.w)
	ts.byShape[key] = t
	return t
}

// mmcWait is the mean wait of an M/M/c queue at utilisation rho, in
// service times, by Sakasegawa's approximation ρ^√(2(c+1)) ÷ (c(1 − ρ))
// ÷ ρ; rho is held below maxRho (a full CPU is a queue that grows without
// bound, which starvation counts already).
func mmcWait(rho, c float64) float64 {
	rho = min(max(rho, 0), maxRho)
	if rho == 0 || c <= 0 {
		return 0
	}
	return math.Pow(rho, math.Sqrt(2*(c+1))-1) / (c * (1 - rho))
}

const maxRho = 0.99

// CPU shares as kubelet writes them (pkg/agent/resctl.MilliCPUToShares):
// requested millicores × 1024 ÷ 1000, within [2, 262144]; the besteffort
// cgroup gets 2 for all its pods.
const (
	minShares        = 2
	maxShares        = 262144
	bestEffortShares = minShares
)

func milliCPUToShares(milli int64) int64 {
	return min(max(milli*1024/1000, minShares), maxShares)
}

// cfsShare shares avail millicores among claims the way CFS shares a
// contended CPU among sibling cgroups: weighted max-min fairness, each
// claim gets min(demand, λ × weight) for the level λ that uses all of
// avail (or everyone's demand, when that is less). got must be as long as
// claims; scratch is reused between calls.
func cfsShare(avail int64, demand, weight []int64, got []int64, active []int) {
	var total int64
	for i, d := range demand {
		got[i] = 0
		total += d
	}
	if total <= avail {
		copy(got, demand)
		return
	}
	// w is Σ weight over active, kept as claims leave it.
	active = active[:0]
	var w int64
	for i, d := range demand {
		if d > 0 {
			active = append(active, i)
			w += weight[i]
		}
	}
	left := avail
	for len(active) > 0 && left > 0 {
		level := float64(left) / float64(w)
		kept := active[:0]
		satisfied := false
		for _, i := range active {
			if float64(demand[i]) <= level*float64(weight[i]) {
				got[i] = demand[i]
				left -= demand[i]
				w -= weight[i]
				satisfied = true
				continue
			}
			kept = append(kept, i)
		}
		active = kept
		if !satisfied {
			for _, i := range active {
				got[i] = int64(level * float64(weight[i]))
			}
			return
		}
	}
}

// String describes the model for reports.
func (h Harm) String() string {
	return fmt.Sprintf("interference κ %.0f %%, SLO at %.1f× p99 alone, starved below %.0f %% of demand",
		h.InterferencePercent, h.SLOLatencyFactor, 100-h.StarvedPercent)
}
