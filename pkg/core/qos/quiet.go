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

// Quiet reports whether Plan, given node and h and candidates of which
// none holds a quota (every CPUQuotaMilli is NoQuota), would decide
// nothing: no forbid scheduling, no throttling, no restoring, no eviction,
// every quota left as it is. It holds when every metric with a
// forbid-scheduling, throttle or evict line is measured and at or under
// each of those lines, and no counter of h is on or has counted a sample
// over its line.
//
// The only thing Plan would still do then is count one more sample at or
// under each line. Such a count decides nothing later: a counter that is
// off with no sample over its line turns on only after avoidanceCount
// samples over it, whatever it counted under; the under-count only
// releases a counter that is on. So a caller may skip Plan on a quiet node
// and keep h, which is what a simulator of a thousand mostly idle nodes
// needs: Quiet reads the lines and h and allocates nothing.
//
// Quiet does not look at the candidates: the caller must know that none
// holds a quota, since Plan would restore or release it.
func (p *Planner) Quiet(node NodeState, h Hysteresis) bool {
	return p.QuietUsage(node) && h.Settled()
}

// QuietUsage is the half of Quiet that reads the node: every metric with
// a forbid-scheduling, throttle or evict line is measured and at or under
// each of those lines. Quiet is QuietUsage and h.Settled(); a caller that
// keeps whether its hysteresis is settled beside it need not read the
// counters every cycle.
func (p *Planner) QuietUsage(node NodeState) bool {
	// Every line with a counter is at or above the lowest one of its
	// metric.
	for i, m := range p.counters.metrics {
		u, ok := node.Usage[m]
		if !ok || u > p.quietUnder[i] {
			return false
		}
	}
	return true
}

// Settled reports whether no counter of h is on or has counted a sample
// over its line: the half of Quiet that reads the hysteresis.
func (h Hysteresis) Settled() bool {
	for _, c := range h.Counters {
		if c.Active || c.Over > 0 {
			return false
		}
	}
	return true
}

// Held reports whether Plan, given node and h, would change no quota and
// evict no pod, whatever the candidates, and returns what it would still
// decide: the hysteresis (Plan.Hysteresis, its counters appended to
// buf[:0], which must not share memory with h) and, when the cycle is
// held, ForbidScheduling. next is Plan's either way.
//
// A cycle is held when, with h advanced by this sample, no evict line is
// on, and either
//
//   - throttling is on and every metric it is on for is measured and at or
//     under its throttle line: Plan holds the quotas between the lines; or
//   - throttling is off and some metric with a throttle line is missing or
//     over its restore line: Plan gives no CPU back yet.
//
// That is most cycles of a node that throttled a while ago, so a caller
// that plans many such nodes may take next and forbid from Held and plan
// only when it reports false; the plan would only restate every quota.
// Held reads the lines and h and allocates nothing beyond next.
func (p *Planner) Held(node NodeState, h Hysteresis, buf []Counter) (next Hysteresis, forbid, held bool) {
	next, st := p.counters.advance(buf, h, node.Usage)
	held = p.counters.distinct && !st.evicting
	if st.throttling {
		held = held && !st.throttleActs
	} else {
		held = held && st.restoreHeld
	}
	return next, st.forbid, held
}

// advance is Waterlines.Advance of the planner's waterlines, appending
// the counters to buf[:0] (see counterLines.advance).
func (p *Planner) advance(buf []Counter, h Hysteresis, usage NodeUsage) Hysteresis {
	next, _ := p.counters.advance(buf, h, usage)
	return next
}
