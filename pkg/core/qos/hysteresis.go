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

import "slices"

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
	cl := w.counterLines()
	next, _ := cl.advance(nil, h, usage)
	return next
}

// counterLine is a line with a counter of its own (forbid scheduling,
// throttle down, evict), with what step reads of it and of its release
// line resolved: a planner advances the counters of its node every cycle,
// and a simulator the counters of a thousand nodes, so it resolves them
// once (Planner.counters) rather than search the lines every cycle.
type counterLine struct {
	action Action
	metric MetricName
	// m is the index of metric in counterLines.metrics.
	m int
	// trigger is the line's value. release is the value of the line that
	// releases the action: the restore (ThrottleUp) line of a throttle
	// line, else the line itself.
	trigger, release int64
	// avoidance is the line's AvoidanceCount, restore the release line's
	// RestoreCount.
	avoidance, restore int32
}

// counterLines are the counter lines of a set of waterlines, in the order
// of Waterlines.Lines (so the counters come out in that order too).
type counterLines struct {
	lines []counterLine
	// metrics are the distinct metrics of lines, each looked up once per
	// sample.
	metrics []MetricName
	// distinct says no two lines share an action and metric, which
	// Waterlines.Add ensures. advance then finds the counter of each line
	// by walking h alongside the lines; a Lines slice built by hand with
	// duplicates is advanced by searching h for each line instead.
	distinct bool
}

// counterLines resolves w's counter lines.
func (w *Waterlines) counterLines() counterLines {
	var cl counterLines
	cl.distinct = true
	for _, l := range w.Lines {
		if l.Action == ActionThrottleUp {
			continue
		}
		release := l
		if l.Action == ActionThrottleDown {
			if up, found := w.Line(ActionThrottleUp, l.Metric); found {
				release = up
			}
		}
		m := slices.Index(cl.metrics, l.Metric)
		if m < 0 {
			m = len(cl.metrics)
			cl.metrics = append(cl.metrics, l.Metric)
		}
		for _, o := range cl.lines {
			if o.action == l.Action && o.metric == l.Metric {
				cl.distinct = false
			}
		}
		cl.lines = append(cl.lines, counterLine{
			action: l.Action, metric: l.Metric, m: m,
			trigger: l.Value, release: release.Value,
			avoidance: l.AvoidanceCount, restore: release.RestoreCount,
		})
	}
	return cl
}

// reading is one metric's usage in a sample; ok is false when it is
// missing.
type reading struct {
	value int64
	ok    bool
}

// read looks up the usage of each of cl.metrics, appending to dst[:0].
func (cl *counterLines) read(dst []reading, usage NodeUsage) []reading {
	dst = dst[:0]
	for _, m := range cl.metrics {
		u, ok := usage[m]
		dst = append(dst, reading{value: u, ok: ok})
	}
	return dst
}

// cycleState is what the counters advanced with one sample say of the
// cycle Plan plans with them: which actions are on, and whether the
// throttle lines hold every quota (Planner.Held).
type cycleState struct {
	// forbid: a forbid-scheduling counter is on.
	forbid bool
	// evicting: an evict counter is on.
	evicting bool
	// throttling: a throttle counter is on; throttleActs: one of those
	// has its metric missing or over its throttle line, so Plan throttles.
	throttling, throttleActs bool
	// restoreHeld: some throttle line has its metric missing or over its
	// restore line, so Plan restores nothing.
	restoreHeld bool
}

// advance is Waterlines.Advance with the counter lines resolved, appending
// the counters to buf[:0]; buf must not share memory with h. A nil buf is
// allocated once, when the first counter is kept. It also sums up the
// cycle the new counters plan.
func (cl *counterLines) advance(buf []Counter, h Hysteresis, usage NodeUsage) (Hysteresis, cycleState) {
	var stack [4]reading
	return cl.advanceRead(buf, h, cl.read(stack[:0], usage))
}

// advanceRead is advance with the usage of cl.metrics read.
func (cl *counterLines) advanceRead(buf []Counter, h Hysteresis, usage []reading) (Hysteresis, cycleState) {
	next := Hysteresis{Counters: buf[:0]}
	var st cycleState
	// h.Counters[:j] are the counters of earlier lines (distinct only).
	j := 0
	for i := range cl.lines {
		l := &cl.lines[i]
		var c Counter
		if cl.distinct && j < len(h.Counters) && h.Counters[j].Action == l.action && h.Counters[j].Metric == l.metric {
			// The first counter of this line in h: the ones before it
			// belong to earlier lines, of other actions or metrics. A
			// state this package wrote is in the lines' order, so the
			// walk finds every counter there is.
			c = h.Counters[j]
			j++
		} else {
			c = h.Counter(l.action, l.metric)
		}
		u := usage[l.m]
		if u.ok {
			c = step(c, u.value, l)
		}
		if c != (Counter{Action: l.action, Metric: l.metric}) {
			if next.Counters == nil {
				// One allocation: at most one counter per line.
				next.Counters = make([]Counter, 0, len(cl.lines))
			}
			next.Counters = append(next.Counters, c)
		}
		switch l.action {
		case ActionForbidScheduling:
			st.forbid = st.forbid || c.Active
		case ActionEvict:
			st.evicting = st.evicting || c.Active
		case ActionThrottleDown:
			if c.Active {
				st.throttling = true
				st.throttleActs = st.throttleActs || !u.ok || u.value > l.trigger
			}
			st.restoreHeld = st.restoreHeld || !u.ok || u.value > l.release
		}
	}
	// w.Lines is ordered by action and metric, so the counters are too: the
	// state serialises the same way every time.
	return next, st
}

func step(c Counter, usage int64, l *counterLine) Counter {
	if usage > l.trigger {
		c.Over = min(c.Over+1, maxCount)
	} else {
		c.Over = 0
	}
	if usage <= l.release {
		c.Under = min(c.Under+1, maxCount)
	} else {
		c.Under = 0
	}
	if l.action == ActionEvict {
		c.Active = c.Over >= l.avoidance
		return c
	}
	switch {
	case !c.Active && c.Over >= l.avoidance:
		c.Active = true
	case c.Active && c.Under >= l.restore:
		c.Active = false
	}
	return c
}
