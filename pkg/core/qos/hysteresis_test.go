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

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// hysteresisLines: forbid at 6000m, throttle at 7000m restoring at 5000m,
// evict at 9000m; avoidance 2, restore 3 (the NodeQOS defaults).
func hysteresisLines() *Waterlines {
	w := NewWaterlines(node10)
	for _, l := range []Line{
		{Action: ActionForbidScheduling, Metric: MetricCPU, Value: 6000, AvoidanceCount: 2, RestoreCount: 3},
		{Action: ActionThrottleDown, Metric: MetricCPU, Value: 7000, AvoidanceCount: 2, RestoreCount: 3},
		{Action: ActionThrottleUp, Metric: MetricCPU, Value: 5000, AvoidanceCount: 2, RestoreCount: 3},
		{Action: ActionEvict, Metric: MetricCPU, Value: 9000, AvoidanceCount: 2, RestoreCount: 3},
	} {
		w.Add(l)
	}
	return w
}

func TestAdvance(t *testing.T) {
	const missing = -1
	tests := []struct {
		name string
		// samples of node CPU usage in millicores, missing = no sample.
		samples []int64
		// want: after each sample, whether ForbidScheduling, ThrottleDown
		// and Evict are on ("FTE", '-' for off).
		want []string
	}{
		{
			name:    "one noisy sample over every line triggers nothing",
			samples: []int64{9500, 4000, 9500, 4000},
			want:    []string{"---", "---", "---", "---"},
		},
		{
			name:    "two consecutive samples over trigger",
			samples: []int64{9500, 9500},
			want:    []string{"---", "FTE"},
		},
		{
			name: "one noisy sample under does not release; three do",
			// Evict is off at the first sample under its line: an eviction
			// has nothing to release.
			samples: []int64{9500, 9500, 4000, 9500, 4000, 4000, 4000},
			want:    []string{"---", "FTE", "FT-", "FT-", "FT-", "FT-", "---"},
		},
		{
			name: "throttle releases only under the restore line, forbid under its own",
			// 5500m is under the forbid line (6000m) but over the restore
			// line (5000m): forbid releases after 3, throttle holds.
			samples: []int64{7500, 7500, 5500, 5500, 5500, 5500, 4900, 4900, 4900},
			want:    []string{"---", "FT-", "FT-", "FT-", "-T-", "-T-", "-T-", "-T-", "---"},
		},
		{
			name: "a missing sample neither counts nor resets",
			// over, missing, over: the two overs are consecutive samples.
			samples: []int64{9500, missing, 9500, 4000, missing, 4000, 4000},
			want:    []string{"---", "---", "FTE", "FT-", "FT-", "FT-", "---"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := hysteresisLines()
			var h Hysteresis
			var got []string
			for _, s := range tt.samples {
				u := NodeUsage{}
				if s != missing {
					u[MetricCPU] = s
				}
				h = w.Advance(h, u)
				on := []byte("---")
				for i, a := range []Action{ActionForbidScheduling, ActionThrottleDown, ActionEvict} {
					if h.Active(a, MetricCPU) {
						on[i] = "FTE"[i]
					}
				}
				got = append(got, string(on))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("actions after each sample (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdvanceDoesNotChangeItsInput(t *testing.T) {
	w := hysteresisLines()
	h := w.Advance(Hysteresis{}, NodeUsage{MetricCPU: 9500})
	before := Hysteresis{Counters: append([]Counter(nil), h.Counters...)}
	_ = w.Advance(h, NodeUsage{MetricCPU: 9500})
	if diff := cmp.Diff(before, h); diff != "" {
		t.Errorf("Advance changed its input (-before +after):\n%s", diff)
	}
}

func TestHysteresisSerialises(t *testing.T) {
	w := hysteresisLines()
	var h Hysteresis
	for _, s := range []int64{9500, 9500, 4000} {
		h = w.Advance(h, NodeUsage{MetricCPU: s})
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var back Hysteresis
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if diff := cmp.Diff(h, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// The state restored from JSON and the state kept in memory go on the
	// same way.
	if diff := cmp.Diff(w.Advance(h, NodeUsage{MetricCPU: 4000}), w.Advance(back, NodeUsage{MetricCPU: 4000})); diff != "" {
		t.Errorf("restored state diverges (-memory +restored):\n%s", diff)
	}
}

func TestAdvanceDropsCountersOfRemovedLines(t *testing.T) {
	w := hysteresisLines()
	h := w.Advance(Hysteresis{}, NodeUsage{MetricCPU: 9500})
	h = w.Advance(h, NodeUsage{MetricCPU: 9500})
	// The NodeQOS went away: no lines, no state, nothing on.
	h = NewWaterlines(node10).Advance(h, NodeUsage{MetricCPU: 9500})
	if len(h.Counters) != 0 {
		t.Errorf("counters of removed lines kept: %+v", h.Counters)
	}
}

// advanceByLookup is Advance computed the straightforward way, searching h
// and the lines for every line, to hold the resolved counter lines to.
func advanceByLookup(w *Waterlines, h Hysteresis, usage NodeUsage) Hysteresis {
	var next Hysteresis
	for _, l := range w.Lines {
		if l.Action == ActionThrottleUp {
			continue
		}
		c := h.Counter(l.Action, l.Metric)
		if u, ok := usage[l.Metric]; ok {
			release := l
			if up, found := w.Line(ActionThrottleUp, l.Metric); found && l.Action == ActionThrottleDown {
				release = up
			}
			if u > l.Value {
				c.Over = min(c.Over+1, maxCount)
			} else {
				c.Over = 0
			}
			if u <= release.Value {
				c.Under = min(c.Under+1, maxCount)
			} else {
				c.Under = 0
			}
			switch {
			case l.Action == ActionEvict:
				c.Active = c.Over >= l.AvoidanceCount
			case !c.Active && c.Over >= l.AvoidanceCount:
				c.Active = true
			case c.Active && c.Under >= release.RestoreCount:
				c.Active = false
			}
		}
		if c != (Counter{Action: l.Action, Metric: l.Metric}) {
			next.Counters = append(next.Counters, c)
		}
	}
	return next
}

// randomLines returns waterlines on node10 with a random subset of the
// lines of every action on cpu_usage, memory_usage and a custom metric,
// with random counts. One set in five is built by hand instead of with
// Add: out of order and with lines sharing an action and metric.
func randomLines(rng *rand.Rand) *Waterlines {
	w := NewWaterlines(node10)
	var lines []Line
	for _, m := range []MetricName{MetricCPU, MetricMemory, "custom"} {
		for _, a := range []Action{ActionForbidScheduling, ActionThrottleDown, ActionThrottleUp, ActionEvict} {
			if rng.IntN(3) == 0 {
				continue
			}
			lines = append(lines, Line{
				Action: a, Metric: m, Value: rng.Int64N(10),
				AvoidanceCount: 1 + rng.Int32N(3), RestoreCount: 1 + rng.Int32N(3),
			})
		}
	}
	if rng.IntN(5) == 0 {
		for range rng.IntN(3) {
			if len(lines) > 0 {
				lines = append(lines, lines[rng.IntN(len(lines))])
			}
		}
		rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		w.Lines = lines
		return w
	}
	for _, l := range lines {
		w.Add(l)
	}
	return w
}

// randomCounters returns counters for w's lines the way Advance writes
// them or, one time in three, shuffled, with duplicates and with counters
// of lines w does not have, as a state edited by hand might be.
func randomCounters(rng *rand.Rand, w *Waterlines) Hysteresis {
	var h Hysteresis
	for _, l := range w.Lines {
		if l.Action == ActionThrottleUp || rng.IntN(4) == 0 {
			continue
		}
		h.Counters = append(h.Counters, Counter{
			Action: l.Action, Metric: l.Metric,
			Over: rng.Int32N(4), Under: rng.Int32N(4), Active: rng.IntN(2) == 0,
		})
	}
	if rng.IntN(3) == 0 {
		for range rng.IntN(4) {
			c := Counter{Action: ActionEvict, Metric: "gone", Over: 1 + rng.Int32N(3)}
			if len(h.Counters) > 0 && rng.IntN(2) == 0 {
				c = h.Counters[rng.IntN(len(h.Counters))]
				c.Over, c.Active = rng.Int32N(4), !c.Active
			}
			h.Counters = append(h.Counters, c)
		}
		rng.Shuffle(len(h.Counters), func(i, j int) { h.Counters[i], h.Counters[j] = h.Counters[j], h.Counters[i] })
	}
	return h
}

// TestAdvanceAgreesWithLookup holds Advance, and the counter lines a
// planner resolves once, to the straightforward lookup of every counter
// and line, over random lines, states and samples, each state advanced
// for a few samples in a row.
func TestAdvanceAgreesWithLookup(t *testing.T) {
	for seed := range uint64(1000) {
		rng := rand.New(rand.NewPCG(seed, 44))
		w := randomLines(rng)
		cl := w.counterLines()
		h := randomCounters(rng, w)
		var buf []Counter
		for sample := range 4 {
			usage := NodeUsage{}
			for _, m := range []MetricName{MetricCPU, MetricMemory, "custom"} {
				if rng.IntN(6) != 0 {
					usage[m] = rng.Int64N(10)
				}
			}
			want := advanceByLookup(w, h, usage)
			if diff := cmp.Diff(want, w.Advance(h, usage), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("seed %d sample %d: Advance differs from the lookup (-lookup +Advance):\n%s", seed, sample, diff)
			}
			got, _ := cl.advance(buf, h, usage)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("seed %d sample %d: resolved counter lines differ from the lookup (-lookup +resolved):\n%s", seed, sample, diff)
			}
			// The next sample starts from this one's state, in memory
			// the next one does not write: a shell's pair of buffers.
			h, buf = got, h.Counters
		}
	}
}
