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
	"math/bits"
	"time"
)

// MaxScore is the best score; it equals the scheduler framework's
// MaxNodeScore.
const MaxScore = 100

// Score ranks a node for the pod, 0 (worst) to MaxScore (best):
//
//	LU_r  = ⌊(alloc_r − used_r) × 100 / alloc_r⌋   (0 when used_r > alloc_r or alloc_r = 0)
//	score = ⌊(Σ_r w_r × LU_r + D × min_r LU_r) / (Σ_r w_r + D)⌋
//
// over the resources r with a weight w_r > 0; D is DominantWeight, and
// min_r LU_r is the least-used score of the dominant (most used) resource,
// which pulls down nodes where one resource is nearly exhausted even if the
// others are idle. used is node usage (or the ScoreAggregation aggregate
// when the agent reports it) + the excess of all assigned pods, or, for Prod
// pods with ScoreAccordingProdUsage, Prod usage + the Prod pods' excess;
// plus the pod's own estimate either way. A node without a NodeMetric or
// with an expired one scores 0.
func (c *Config) Score(pod *PodLoad, node *NodeLoad, now time.Time) int64 {
	m := node.Metric
	if m == nil || c.Expired(m, now) {
		return 0
	}
	var used Vector
	n := c.Resources.Len()
	switch {
	case pod.Prod && c.ScoreAccordingProdUsage && c.ScoreAccordingPrediction && m.HasProdPeak:
		prod := m.ProdUsage.Max(m.ProdPeak)
		sum3(&used, &prod, &node.ProdExcess, &pod.Estimate, n)
	case pod.Prod && c.ScoreAccordingProdUsage:
		sum3(&used, &m.ProdUsage, &node.ProdExcess, &pod.Estimate, n)
	case c.ScoreAggregation.Enabled():
		base, _ := m.Aggregate(c.ScoreAggregation)
		sum3(&used, &base, &node.Excess, &pod.Estimate, n)
	case c.ScoreAccordingPrediction:
		sum3(&used, &m.PredictedNodeUsage, &node.Excess, &pod.Estimate, n)
	default:
		sum3(&used, &m.NodeUsage, &node.Excess, &pod.Estimate, n)
	}
	var sum, weights int64
	dominant := int64(MaxScore)
	for i := range n {
		w := c.Weights[i]
		if w <= 0 {
			continue
		}
		lu := LeastUsed(used[i], node.Allocatable[i])
		sum += w * lu
		weights += w
		dominant = min(dominant, lu)
	}
	if weights == 0 {
		return 0
	}
	if c.DominantWeight > 0 {
		sum += c.DominantWeight * dominant
		weights += c.DominantWeight
	}
	return sum / weights
}

// LeastUsed is the least-used score of one resource:
// ⌊(total − used) × 100 / total⌋, 0 when used > total or total ≤ 0.
func LeastUsed(used, total int64) int64 {
	if total <= 0 || used > total {
		return 0
	}
	// (total − used) × 100 in 128 bits: exabyte totals overflow 64.
	hi, lo := bits.Mul64(uint64(total-max(used, 0)), MaxScore)
	q, _ := bits.Div64(hi, lo, uint64(total))
	return int64(q)
}
