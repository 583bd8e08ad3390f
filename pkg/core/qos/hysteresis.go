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

// maxCount bounds the counters so that a state kept for months neither
// overflows nor grows: no count above 100 is ever asked for.
const maxCount int32 = 1000

// Hysteresis is what the planner remembers between cycles: for each action
// and metric with a line, how many consecutive samples were over and under
// it and whether the action is on. The shell keeps it between cycles and
// may persist it (it is plain data, JSON-ready). The zero value is safe to
// start from, e.g. after an agent restart: no action is on until
// avoidanceCount fresh samples say so, and throttled pods are given their
// CPU back only while usage is under the restore line.
type Hysteresis struct {
	Counters []Counter `json:"counters,omitempty"`
}

// Counter debounces one action on one metric.
type Counter struct {
	Action Action     `json:"action"`
	Metric MetricName `json:"metric"`
	// Over is the number of consecutive samples over the trigger line.
	Over int32 `json:"over,omitempty"`
	// Under is the number of consecutive samples at or under the release
	// line.
	Under int32 `json:"under,omitempty"`
	// Active says the action is on.
	Active bool `json:"active,omitempty"`
}

// Counter returns the counter of action a on metric m (zero when none).
func (h Hysteresis) Counter(a Action, m MetricName) Counter {
	for _, c := range h.Counters {
		if c.Action == a && c.Metric == m {
			return c
		}
	}
	return Counter{Action: a, Metric: m}
}

// Active reports whether action a is on for metric m.
func (h Hysteresis) Active(a Action, m MetricName) bool { return h.Counter(a, m).Active }

// Advance returns the hysteresis after one more sample; h is not changed.
//
//   - ForbidScheduling: on after AvoidanceCount consecutive samples over its
//     line, off after RestoreCount consecutive samples at or under it.
//   - ThrottleDown: on after AvoidanceCount samples over the throttle line,
//     off after RestoreCount samples at or under the restore (ThrottleUp)
//     line -- the throttle line when there is none.
//   - Evict: on while the last AvoidanceCount samples were over its line,
//     off at the first sample at or under it: an eviction cannot be undone,
//     there is nothing to release.
//
// A metric missing from usage is not a sample: its counters stay as they
// were, neither counting nor resetting. Counters of lines that no longer
// exist are dropped.
func (w *Waterlines) Advance(h Hysteresis, usage NodeUsage) Hysteresis {
	return w.advance(nil, h, usage)
}

// advance is Advance appending the counters to buf[:0]; buf must not share
// memory with h. A nil buf is allocated once, when the first counter is
// kept.
func (w *Waterlines) advance(buf []Counter, h Hysteresis, usage NodeUsage) Hysteresis {
	next := Hysteresis{Counters: buf[:0]}
	for _, l := range w.Lines {
		if l.Action == ActionThrottleUp {
			continue
		}
		c := h.Counter(l.Action, l.Metric)
		u, ok := usage[l.Metric]
		if ok {
			release := l
			if l.Action == ActionThrottleDown {
				if up, found := w.Line(ActionThrottleUp, l.Metric); found {
					release = up
				}
			}
			c = step(c, u, l, release)
		}
		if c != (Counter{Action: l.Action, Metric: l.Metric}) {
			if next.Counters == nil {
				// One allocation: at most one counter per line.
				next.Counters = make([]Counter, 0, len(w.Lines))
			}
			next.Counters = append(next.Counters, c)
		}
	}
	// w.Lines is ordered by action and metric, so the counters are too: the
	// state serialises the same way every time.
	return next
}

func step(c Counter, usage int64, trigger, release Line) Counter {
	if usage > trigger.Value {
		c.Over = min(c.Over+1, maxCount)
	} else {
		c.Over = 0
	}
	if usage <= release.Value {
		c.Under = min(c.Under+1, maxCount)
	} else {
		c.Under = 0
	}
	if trigger.Action == ActionEvict {
		c.Active = c.Over >= trigger.AvoidanceCount
		return c
	}
	switch {
	case !c.Active && c.Over >= trigger.AvoidanceCount:
		c.Active = true
	case c.Active && c.Under >= release.RestoreCount:
		c.Active = false
	}
	return c
}
