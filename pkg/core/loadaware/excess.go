package loadaware

import (
	"iter"
	"time"
)

// NeedsEstimate reports whether the metric may not show all of the pod's
// load yet, so that its estimate must stand in for (part of) it (seed 001):
//
//   - the pod is not in the report at all;
//   - it was scheduled within the report interval before the report
//     (updateTime − reportInterval < scheduledAt): the report averages over
//     a window the pod only partly ran in, if at all;
//   - it is inside a forced window: AfterScheduled after scheduling, or
//     AfterInitialized after initialization -- and, when that window is on,
//     before initialization too, since a pod still initializing has not
//     started the containers whose load the window is about.
//
// until is when the answer may change by time alone (a forced window ends);
// zero when only a new report or a change of the pod can change it.
func (p *AssignedPod) NeedsEstimate(m *Metric, now time.Time) (needed bool, until time.Time) {
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
	if _, reported := m.PodUsage[p.Key]; !reported {
		return true, time.Time{}
	}
	return m.UpdateTime.Add(-m.ReportInterval).Before(p.ScheduledAt), time.Time{}
}

// Excess is the part of the pod's estimated load the metric does not show:
// zero when the pod needs no estimate; otherwise the estimate, raised to the
// reported usage and capped at the limit, minus the reported usage, floored
// at 0. Adding Excess to node usage counts a reported pod once: its reported
// usage is already inside node usage, so only what the estimate says on top
// of it is added.
func (p *AssignedPod) Excess(m *Metric, now time.Time) (excess Vector, until time.Time) {
	needed, until := p.NeedsEstimate(m, now)
	if !needed {
		return Vector{}, until
	}
	usage := m.PodUsage[p.Key]
	for i := range excess {
		est := max(p.Estimate[i], usage[i])
		if p.Limit[i] > 0 {
			est = min(est, p.Limit[i])
		}
		excess[i] = max(0, est-usage[i])
	}
	return excess, until
}

// NodeExcess sums Excess over the pods assigned to a node: all of them, and
// the Prod ones alone (for Prod usage). until is the earliest time at which
// the sums may change by time alone; zero if none.
func NodeExcess(pods iter.Seq[*AssignedPod], m *Metric, now time.Time) (all, prod Vector, until time.Time) {
	for p := range pods {
		excess, u := p.Excess(m, now)
		all = all.Add(excess)
		if p.Prod {
			prod = prod.Add(excess)
		}
		if !u.IsZero() && (until.IsZero() || u.Before(until)) {
			until = u
		}
	}
	return all, prod, until
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
