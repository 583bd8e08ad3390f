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
	"iter"
	"math/bits"
	"time"
)

// NeedsEstimate reports whether the metric may not show all of the pod's
// load yet, so that its estimate must stand in for (part of) it:
//
//   - the pod is not in the report at all;
//   - it has run for less than the metric's averaging window before the
//     report (updateTime − window < scheduledAt): node usage is an average
//     over that window (300 s by default), so it holds only the share of
//     the pod's load the pod ran for. The source documents (and
//     Koordinator) use the report interval (60 s) here, which treats a pod
//     as fully reported after a minute while the average still holds a
//     fifth of it -- a burst of pods then piles onto nodes that look cold
//     for minutes. The longer of the two windows is used;
//   - it is inside a forced window: AfterScheduled after scheduling, or
//     AfterInitialized after initialization -- and, when that window is on,
//     before initialization too, since a pod still initializing has not
//     started the containers whose load the window is about.
//
// until is when the answer may change by time alone (a forced window ends);
// zero when only a new report or a change of the pod can change it.
func (p *AssignedPod) NeedsEstimate(m *Metric, now time.Time) (needed bool, until time.Time) {
	return p.needsEstimate(m, m.PodReport(p.Key), now)
}

// NeedsEstimateOf is NeedsEstimate with what the metric reports of the pod
// given (r must be m.PodReport(p.Key)), as ExcessOf is Excess's.
func (p *AssignedPod) NeedsEstimateOf(m *Metric, r PodReport, now time.Time) (needed bool, until time.Time) {
	return p.needsEstimate(m, r, now)
}

// PodReport is what a NodeMetric says of one pod: whether it lists the pod,
// and the pod's usage if it does.
type PodReport struct {
	Usage    Vector
	Reported bool
}

// PodReport returns what m says of the pod with key (PodKey).
func (m *Metric) PodReport(key string) PodReport {
	usage, reported := m.PodUsage[key]
	return PodReport{Usage: usage, Reported: reported}
}

func (p *AssignedPod) needsEstimate(m *Metric, r PodReport, now time.Time) (needed bool, until time.Time) {
	if p.AfterScheduled > 0 {
		if end := p.ScheduledAt.Add(p.AfterScheduled); now.Before(end) {
			needed, until = true, end
		}
	}
	if p.AfterInitialized > 0 {
		switch end := p.InitializedAt.Add(p.AfterInitialized); {
		case p.InitializedAt.IsZero():
			needed = true
		case now.Before(end):
			needed = true
			until = latest(until, end)
		}
	}
	if needed {
		return true, until
	}
	if !r.Reported {
		return true, time.Time{}
	}
	return m.dated.Add(-m.averagingWindow()).Before(p.ScheduledAt), time.Time{}
}

// averagingWindow is the averaging window of the metric's usage: the longer of the
// aggregation window and the report interval.
func (m *Metric) averagingWindow() time.Duration { return max(m.AggregateWindow, m.ReportInterval) }

// reflectedPerTenThousand is the share, in 1/10000, of a pod's reported
// usage that node usage holds: the part of the averaging window the pod
// ran in before the report, in [0, 10000].
func (p *AssignedPod) reflectedPerTenThousand(m *Metric) int64 {
	w := m.averagingWindow()
	ran := m.dated.Sub(p.ScheduledAt)
	switch {
	case ran <= 0:
		return 0
	case w <= 0 || ran >= w:
		return 10000
	}
	return int64(ran / (w / 10000))
}

// Excess is the part of the pod's estimated load the metric does not show:
// zero when the pod needs no estimate; otherwise the estimate, raised to the
// reported usage and capped at the limit, minus the share of the reported
// usage that node usage holds (the part of the averaging window the pod
// ran in), floored at 0. Adding Excess to node usage counts a reported pod
// once: node usage − its share + its estimate = node usage + excess.
func (p *AssignedPod) Excess(m *Metric, now time.Time) (excess Vector, until time.Time) {
	return p.ExcessOf(m, m.PodReport(p.Key), now)
}

// ExcessOf is Excess with what the metric reports of the pod given (r
// must be m.PodReport(p.Key)), for a caller that keeps each pod's
// reported usage beside the pod -- the simulator, which would otherwise
// look every pod up by name whenever a node's excess is summed.
func (p *AssignedPod) ExcessOf(m *Metric, r PodReport, now time.Time) (excess Vector, until time.Time) {
	needed, until := p.needsEstimate(m, r, now)
	if !needed {
		return Vector{}, until
	}
	usage := r.Usage
	share := int64(0)
	if r.Reported {
		share = p.reflectedPerTenThousand(m)
	}
	for i := range excess {
		est := max(p.Estimate[i], usage[i])
		if p.Limit[i] > 0 {
			est = min(est, p.Limit[i])
		}
		excess[i] = max(0, est-scaleShare(usage[i], share))
	}
	return excess, until
}

// scaleShare is ⌊v × share / 10000⌋, in 128 bits for byte counts.
func scaleShare(v, share int64) int64 {
	if v <= 0 || share <= 0 {
		return 0
	}
	if share >= 10000 {
		return v
	}
	hi, lo := bits.Mul64(uint64(v), uint64(share))
	q, _ := bits.Div64(hi, lo, 10000)
	return int64(q)
}

// NodeExcess sums Excess over the pods assigned to a node: all of them, and
// the Prod ones alone (for Prod usage). until is the earliest time at which
// the sums may change by time alone; zero if none.
func NodeExcess(pods iter.Seq[*AssignedPod], m *Metric, now time.Time) (all, prod Vector, until time.Time) {
	var s ExcessSum
	for p := range pods {
		excess, u := p.Excess(m, now)
		s.Add(p, excess, u)
	}
	return s.All, s.Prod, s.Until
}

// ExcessShrinks reports whether a node's pods add less excess under cur
// than under old, in any resource, all pods or the Prod ones: a report
// that shows a pod for longer gives back part of its estimate, and one
// past the pod's averaging window all of it, though no usage went down --
// which MayAdmitMore, looking at usage only, does not see. Usage and
// excess together make the load Filter judges: expiry and
// forbid-scheduling aside (MayAdmitMore's too), a report that lowers
// neither leaves every refusal standing. old nil shrinks nothing.
func ExcessShrinks(pods iter.Seq[*AssignedPod], old, cur *Metric, now time.Time) bool {
	if old == nil || cur == nil {
		return false
	}
	oldAll, oldProd, _ := NodeExcess(pods, old, now)
	curAll, curProd, _ := NodeExcess(pods, cur, now)
	return lower(curAll, oldAll) || lower(curProd, oldProd)
}

// ExcessSum is NodeExcess summed by the caller, one pod's Excess (or
// ExcessOf) at a time.
type ExcessSum struct {
	// All and Prod are the excess of every pod added and of the Prod ones.
	All, Prod Vector
	// Until is the earliest time the sums may change by time alone; zero
	// if none.
	Until time.Time
}

// Add adds pod p's excess, valid until until (zero: no time limit).
func (s *ExcessSum) Add(p *AssignedPod, excess Vector, until time.Time) {
	s.All = s.All.Add(excess)
	if p.Prod {
		s.Prod = s.Prod.Add(excess)
	}
	if !until.IsZero() && (s.Until.IsZero() || until.Before(s.Until)) {
		s.Until = until
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
