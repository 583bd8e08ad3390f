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

package nodeload

import (
	"math"
	"math/bits"
	"time"
)

// Reason says why Filter refused a node.
type Reason uint8

// Filter verdicts.
const (
	// Fit means the node may take the pod.
	Fit Reason = iota
	// ReasonMetricExpired: the node's agent has not reported for
	// MetricExpiration.
	ReasonMetricExpired
	// ReasonForbidScheduling: the node is over a forbid-scheduling
	// waterline and the pod is Batch or Free.
	ReasonForbidScheduling
	// ReasonUsage: node usage with the pod would cross a usage threshold.
	ReasonUsage
	// ReasonAggregatedUsage: the percentile aggregate of node usage with the
	// pod would cross an aggregated threshold.
	ReasonAggregatedUsage
	// ReasonProdUsage: Prod usage with the pod would cross a Prod threshold.
	ReasonProdUsage
)

// NodeLoad is what the decisions need to know about one node.
type NodeLoad struct {
	// Allocatable is what the node offers (Config.Allocatable).
	Allocatable Vector
	// Thresholds apply to the node (Config.NodeThresholds).
	Thresholds Thresholds
	// Metric is the node's NodeMetric; nil when it has none.
	Metric *Metric
	// Excess and ProdExcess are NodeExcess of the pods assigned to the node.
	Excess, ProdExcess Vector
}

// Verdict is Filter's answer.
type Verdict struct {
	// Reason is Fit, or why the node was refused.
	Reason Reason
	// Over has bit i set for each resource i over its threshold.
	Over uint16
}

// Judgement is a verdict with the numbers behind it, for logs, tests and
// the simulator's reports.
type Judgement struct {
	Verdict
	// Estimated is the usage judged, with the pod.
	Estimated Vector
	// Percent is round(100 × Estimated / allocatable) for each resource
	// judged.
	Percent Vector
	// Thresholds are the thresholds Percent was held against.
	Thresholds Vector
}

// Filter decides whether the pod may go to the node, in this order:
//
//  1. DaemonSet pods always fit: they must run on every node.
//  2. A node without a NodeMetric, or whose NodeMetric was never reported,
//     fits: its load is unknown, so LoadAware steps aside, as Koordinator
//     does for nodes without an agent (a forbid-scheduling condition on
//     a never-reported NodeMetric still counts, rule 3).
//  3. Batch and Free pods do not fit a node in forbid-scheduling state.
//  4. A node whose NodeMetric expired does not fit, unless
//     ScheduleWhenMetricExpired, in which case it fits unchecked.
//  5. Prod pods, when the node has Prod thresholds, are judged by Prod usage
//     (max(Prod usage, prodPeak) with ProdUsageIncludePrediction) + the Prod
//     pods' excess; every other pod by the aggregate of node usage when
//     aggregated thresholds are set (the average if the agent does not
//     report that aggregate), else by node usage; + the excess of all
//     assigned pods. The pod's own estimate is added to either, and the node
//     is refused when round(100 × estimated / allocatable) > threshold for
//     any resource with a non-zero threshold and allocatable.
//
// Filter runs for every node of every scheduling cycle, so it only
// compares; Judge gives the same verdict with the numbers.
func (c *Config) Filter(pod *PodLoad, node *NodeLoad, now time.Time) Verdict {
	if v, decided := c.gate(pod, node, now); decided {
		return v
	}
	var est Vector
	reason, thresholds := c.judged(pod, node, &est)
	var over uint16
	for i := range c.Resources.Len() {
		if thresholds[i] == 0 || node.Allocatable[i] <= 0 {
			continue
		}
		if Percent(est[i], node.Allocatable[i]) > thresholds[i] {
			over |= 1 << i
		}
	}
	if over == 0 {
		return Verdict{}
	}
	return Verdict{Reason: reason, Over: over}
}

// Judge is Filter with the numbers behind the verdict; they are zero when
// usage was not judged (rules 1 to 4 of Filter).
func (c *Config) Judge(pod *PodLoad, node *NodeLoad, now time.Time) Judgement {
	if v, decided := c.gate(pod, node, now); decided {
		return Judgement{Verdict: v}
	}
	var j Judgement
	reason, thresholds := c.judged(pod, node, &j.Estimated)
	j.Thresholds = *thresholds
	for i := range c.Resources.Len() {
		if thresholds[i] == 0 || node.Allocatable[i] <= 0 {
			continue
		}
		j.Percent[i] = Percent(j.Estimated[i], node.Allocatable[i])
		if j.Percent[i] > thresholds[i] {
			j.Over |= 1 << i
		}
	}
	if j.Over != 0 {
		j.Reason = reason
	}
	return j
}

// gate applies rules 1 to 4 of Filter; decided is false when usage must be
// judged.
func (c *Config) gate(pod *PodLoad, node *NodeLoad, now time.Time) (v Verdict, decided bool) {
	m := node.Metric
	switch {
	case pod.DaemonSet || m == nil:
		return Verdict{}, true
	case m.ForbidScheduling && pod.LowPriority:
		return Verdict{Reason: ReasonForbidScheduling}, true
	case m.UpdateTime.IsZero():
		// Created (the manager makes one per node) but never reported: no
		// agent runs there yet, which is no NodeMetric at all -- not a
		// silent agent. Refusing it as expired would trap a cluster
		// installed without agents.
		return Verdict{}, true
	case c.Expired(m, now) && c.ScheduleWhenMetricExpired:
		return Verdict{}, true
	case c.Expired(m, now):
		return Verdict{Reason: ReasonMetricExpired}, true
	}
	return Verdict{}, false
}

// judged applies rule 5 of Filter: it writes the usage judged, with the
// pod, to est and returns the reason a refusal would give and the
// thresholds that apply.
func (c *Config) judged(pod *PodLoad, node *NodeLoad, est *Vector) (Reason, *Vector) {
	m, t, n := node.Metric, &node.Thresholds, c.Resources.Len()
	switch {
	case pod.Prod && t.HasProd():
		base := &m.ProdUsage
		var peak Vector
		if c.ProdUsageIncludePrediction && m.HasProdPeak {
			peak = m.ProdUsage.Max(m.ProdPeak)
			base = &peak
		}
		sum3(est, base, &node.ProdExcess, &pod.Estimate, n)
		return ReasonProdUsage, &t.Prod
	case t.HasAggregated():
		base, _ := m.Aggregate(t.Aggregation)
		sum3(est, &base, &node.Excess, &pod.Estimate, n)
		return ReasonAggregatedUsage, &t.Aggregated
	}
	base := &m.NodeUsage
	if c.NodeUsageIncludePrediction {
		base = &m.PredictedNodeUsage
	}
	sum3(est, base, &node.Excess, &pod.Estimate, n)
	return ReasonUsage, &t.Usage
}

// sum3 sets dst = a + b + c over the first n resources, saturating at
// math.MaxInt64: a sum that wrapped to a negative number would fit any
// threshold.
func sum3(dst, a, b, c *Vector, n int) {
	for i := range n {
		dst[i] = addSat(addSat(a[i], b[i]), c[i])
	}
}

// addSat is a + b, held to [math.MinInt64, math.MaxInt64].
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// percentOver reports whether Percent(used, total) > threshold, without
// Percent's division: FilterSummary asks it for every resource of every
// node a pod is filtered on. For used and total positive,
// Percent = ⌊N / D⌋ with N = used × 200 + total and D = 2 × total (or
// math.MaxInt64 when the quotient does not fit 64 bits), and for
// 0 ≤ threshold < math.MaxInt64, ⌊N / D⌋ > threshold ⟺
// N ≥ (threshold + 1) × D; both products are taken in 128 bits, as
// Percent's is.
func percentOver(used, total, threshold int64) bool {
	switch {
	case threshold < 0:
		return true // Percent is never negative
	case threshold == math.MaxInt64:
		return false
	case used <= 0 || total <= 0:
		return false // Percent is 0
	}
	nHi, nLo := bits.Mul64(uint64(used), 200)
	nLo, carry := bits.Add64(nLo, uint64(total), 0)
	nHi += carry
	tHi, tLo := bits.Mul64(uint64(threshold)+1, 2*uint64(total))
	return nHi > tHi || nHi == tHi && nLo >= tLo
}

// Percent is round(100 × used / total), rounding halves up, in integers so
// that the byte counts of large nodes stay exact; total must be positive.
// The product is taken in 128 bits, so exabyte quantities give their true
// percentage instead of a wrapped one; a result beyond int64 saturates.
func Percent(used, total int64) int64 {
	if used <= 0 || total <= 0 {
		return 0
	}
	// (used × 200 + total) / (2 × total); 2 × total < 2^64 as total < 2^63.
	hi, lo := bits.Mul64(uint64(used), 200)
	lo, carry := bits.Add64(lo, uint64(total), 0)
	hi += carry
	div := 2 * uint64(total)
	if hi >= div {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, div)
	return int64(min(q, math.MaxInt64))
}
