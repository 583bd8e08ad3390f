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

// NodeSummary is a NodeLoad reduced to what Filter and Score read, with
// every sum that does not depend on the incoming pod done once: the
// NodeMetric's expiry and forbid-scheduling flag copied out of it, the
// usage each kind of pod is judged and scored by already added to the
// assigned pods' excess, and the thresholds that apply. A caller that
// judges the same node for many pods (the scheduler plugin, once per change
// of the node's load) builds it with Summarize and calls FilterSummary and
// ScoreSummary, which give exactly Filter's and Score's answers while
// reading one small block of memory instead of a NodeLoad and its Metric:
// per resource the values sit side by side, so a node tracking cpu and
// memory is two cache lines.
type NodeSummary struct {
	// expiresAt is Metric.expiresAt: 0 if never reported.
	expiresAt int64
	flags     summaryFlags
	// usageReason is the reason a refusal of a pod not judged by Prod
	// usage gives: ReasonUsage or ReasonAggregatedUsage.
	usageReason Reason
	res         [MaxResources]resourceSummary
}

type summaryFlags uint8

const (
	// hasMetric: the node has a NodeMetric.
	hasMetric summaryFlags = 1 << iota
	// reported: the NodeMetric has an updateTime.
	reported
	// forbidScheduling: the NodeMetric's ForbidScheduling.
	forbidScheduling
	// prodThresholds: the node has Prod thresholds (Thresholds.HasProd).
	prodThresholds
)

// resourceSummary is one resource of a NodeSummary.
type resourceSummary struct {
	alloc int64
	// threshold and base are what a pod not judged by Prod usage is held
	// against: the threshold, and the usage judged (node usage, its
	// prediction or aggregate) + the excess of all assigned pods.
	threshold, base int64
	// prodThreshold and prodBase are the same for Prod pods on a node
	// with Prod thresholds: Prod usage (or its peak) + the Prod excess.
	prodThreshold, prodBase int64
	// scoreBase and prodScoreBase are the used amount Score starts from,
	// for every pod and for Prod pods under ScoreAccordingProdUsage.
	scoreBase, prodScoreBase int64
}

// Summarize reduces node to its NodeSummary under c. The summary holds
// copies: node may change afterwards.
func (c *Config) Summarize(node *NodeLoad) NodeSummary {
	var s NodeSummary
	n := c.Resources.Len()
	for i := range n {
		s.res[i].alloc = node.Allocatable[i]
	}
	m := node.Metric
	if m == nil {
		return s
	}
	s.flags |= hasMetric
	s.expiresAt = m.expiresAt
	if !m.UpdateTime.IsZero() {
		s.flags |= reported
	}
	if m.ForbidScheduling {
		s.flags |= forbidScheduling
	}
	t := &node.Thresholds

	// Filter, rule 5 (Config.judged).
	if t.HasProd() {
		s.flags |= prodThresholds
		withPeak := c.ProdUsageIncludePrediction && m.HasProdPeak
		for i := range n {
			r := &s.res[i]
			r.prodThreshold = t.Prod[i]
			base := m.ProdUsage[i]
			if withPeak {
				base = max(base, m.ProdPeak[i])
			}
			r.prodBase = addSat(base, node.ProdExcess[i])
		}
	}
	base, thresholds := &m.NodeUsage, &t.Usage
	s.usageReason = ReasonUsage
	var aggregate Vector
	switch {
	case t.HasAggregated():
		aggregate, _ = m.Aggregate(t.Aggregation)
		base, thresholds = &aggregate, &t.Aggregated
		s.usageReason = ReasonAggregatedUsage
	case c.NodeUsageIncludePrediction:
		base = &m.PredictedNodeUsage
	}
	for i := range n {
		s.res[i].threshold = thresholds[i]
		s.res[i].base = addSat(base[i], node.Excess[i])
	}

	// Score (Config.Score).
	scoreBase := &m.NodeUsage
	var scoreAggregate Vector
	switch {
	case c.ScoreAggregation.Enabled():
		scoreAggregate, _ = m.Aggregate(c.ScoreAggregation)
		scoreBase = &scoreAggregate
	case c.ScoreAccordingPrediction:
		scoreBase = &m.PredictedNodeUsage
	}
	prodScore := &m.ProdUsage
	var prodPeak Vector
	if c.ScoreAccordingPrediction && m.HasProdPeak {
		prodPeak = m.ProdUsage.Max(m.ProdPeak)
		prodScore = &prodPeak
	}
	for i := range n {
		s.res[i].scoreBase = addSat(scoreBase[i], node.Excess[i])
		s.res[i].prodScoreBase = addSat(prodScore[i], node.ProdExcess[i])
	}
	return s
}

// Expired reports whether the summary's NodeMetric counts as expired at
// now (Unix nanoseconds): never reported, or reported too long ago.
// FilterSummary and ScoreSummary read now only through Expired, so that
// on one summary they give the same answers at any two times at which
// Expired agrees; a caller may keep their answers on that condition.
func (s *NodeSummary) Expired(now int64) bool {
	return s.expiresAt == 0 || now >= s.expiresAt
}

// FilterSummary is Filter on a node's summary; now is in Unix
// nanoseconds. It gives the same verdict as Filter on the NodeLoad the
// summary was made of.
func (c *Config) FilterSummary(pod *PodLoad, s *NodeSummary, now int64) Verdict {
	switch {
	case pod.DaemonSet || s.flags&hasMetric == 0:
		return Verdict{}
	case s.flags&forbidScheduling != 0 && pod.LowPriority:
		return Verdict{Reason: ReasonForbidScheduling}
	case s.flags&reported == 0:
		return Verdict{}
	case s.Expired(now):
		if c.ScheduleWhenMetricExpired {
			return Verdict{}
		}
		return Verdict{Reason: ReasonMetricExpired}
	}
	prod := pod.Prod && s.flags&prodThresholds != 0
	var over uint16
	for i := range c.Resources.Len() {
		r := &s.res[i]
		threshold, base := r.threshold, r.base
		if prod {
			threshold, base = r.prodThreshold, r.prodBase
		}
		if threshold == 0 || r.alloc <= 0 {
			continue
		}
		if percentOver(addSat(base, pod.Estimate[i]), r.alloc, threshold) {
			over |= 1 << i
		}
	}
	if over == 0 {
		return Verdict{}
	}
	if prod {
		return Verdict{Reason: ReasonProdUsage, Over: over}
	}
	return Verdict{Reason: s.usageReason, Over: over}
}

// ScoreSummary is Score on a node's summary; now is in Unix nanoseconds.
// It gives the same score as Score on the NodeLoad the summary was made
// of.
func (c *Config) ScoreSummary(pod *PodLoad, s *NodeSummary, now int64) int64 {
	if s.flags&hasMetric == 0 || s.Expired(now) {
		return 0
	}
	prod := pod.Prod && c.ScoreAccordingProdUsage
	var sum, weights int64
	dominant := int64(MaxScore)
	for i := range c.Resources.Len() {
		w := c.Weights[i]
		if w <= 0 {
			continue
		}
		r := &s.res[i]
		base := r.scoreBase
		if prod {
			base = r.prodScoreBase
		}
		lu := LeastUsed(addSat(base, pod.Estimate[i]), r.alloc)
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
