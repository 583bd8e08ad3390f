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

package report

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/test/bench/benchutil"
)

var (
	// The CPU metrics are "cpu_usage" (and "cpu" in older messages);
	// memory metrics do not match.
	gapRE     = regexp.MustCompile(`\bcpu(?:_\w+)? usage (\d+) over (?:throttle|evict) line (\d+) \([^)]*\) by (\d+)`)
	releaseRE = regexp.MustCompile(`releases (\d+)`)
)

// ParseAction reads the gap and the booked release out of the agent's
// Event message for a CPU throttle or eviction (see pkg/core/qos:
// "cpu_usage usage U over throttle line L (source) by G: ... releases R,
// ..."); a zero gap when the message has none (memory, restores).
func ParseAction(msg string) (gapMilli, releaseMilli int64) {
	if m := gapRE.FindStringSubmatch(msg); m != nil {
		gapMilli, _ = strconv.ParseInt(m[3], 10, 64)
	}
	if m := releaseRE.FindStringSubmatch(msg); m != nil {
		releaseMilli, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return gapMilli, releaseMilli
}

// OverActionWindows says how node CPU is averaged over Before seconds before a
// cycle's actions and over After seconds starting Settle seconds after
// them (a throttle takes effect at the next CFS period, an eviction when
// the pod's processes are gone).
type OverActionWindows struct {
	Before, Settle, After float64
}

// DefaultOverActionWindows fit the agent's 1 s cycle.
var DefaultOverActionWindows = OverActionWindows{Before: 3, Settle: 2, After: 3}

// EpisodeGap joins actions into one episode: the agent's cycle is 1 s.
const EpisodeGap = 1.5

// MeasureOverAction groups the CPU throttles and evictions of an episode
// (actions of one kind, each within EpisodeGap seconds of the one before:
// the agent acting cycle after cycle; the gap is the largest any of them
// meant to close, the release booked their sum) and measures
// the drop of CPU use around them against the gap the planner meant to
// close. The ratio is taken on the Batch pods' cgroups: the node's drop
// (also reported) mixes in whatever Prod's load did meanwhile. A cycle
// without a parsed gap, without samples on both sides, or with another
// action of the agent inside its windows (whose effect would mix in) is
// left out.
func MeasureOverAction(samples []Sample, actions []Action, w OverActionWindows) []Effect {
	acts := append([]Action(nil), actions...)
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].T < acts[j].T })
	type cycle struct {
		e    Effect
		last float64
	}
	var cycles []cycle
	for i := 0; i < len(acts); {
		a := acts[i]
		j := i + 1
		c := cycle{e: Effect{T: a.T, Kind: a.Kind, Pods: 1, GapMilli: a.GapMilli, BookedMilli: a.ReleaseMilli}, last: a.T}
		// One episode: actions of a kind, each within EpisodeGap of the
		// one before (the agent acting cycle after cycle until the gap
		// closes).
		for j < len(acts) && acts[j].Kind == a.Kind && acts[j].T-acts[j-1].T <= EpisodeGap {
			c.e.Pods++
			c.e.GapMilli = max(c.e.GapMilli, acts[j].GapMilli)
			c.e.BookedMilli += acts[j].ReleaseMilli
			c.last = acts[j].T
			j++
		}
		cycles = append(cycles, c)
		i = j
	}
	var out []Effect
	for k, c := range cycles {
		e := c.e
		if (e.Kind != ActionThrottle && e.Kind != ActionEvict) || e.GapMilli <= 0 {
			continue
		}
		// Another action (a further throttle, a restore, an eviction)
		// before the after-window ends would be measured with this one.
		if k+1 < len(cycles) && cycles[k+1].e.T <= c.last+w.Settle+w.After {
			continue
		}
		if k > 0 && cycles[k-1].last > e.T-w.Before {
			continue
		}
		before, nb := meanUse(samples, e.T-w.Before, e.T)
		after, na := meanUse(samples, c.last+w.Settle, c.last+w.Settle+w.After)
		if nb == 0 || na == 0 {
			continue
		}
		e.ObservedMilli = int64(math.Round((before.Batch - after.Batch) * 1000))
		e.NodeDropMilli = int64(math.Round((before.Node - after.Node) * 1000))
		e.Ratio = float64(e.ObservedMilli) / float64(e.GapMilli)
		out = append(out, e)
	}
	return out
}

func meanUse(samples []Sample, from, to float64) (Sample, int) {
	var s Sample
	n := 0
	for _, x := range samples {
		if x.T > from && x.T <= to {
			s.Node += x.Node
			s.Batch += x.Batch
			n++
		}
	}
	if n == 0 {
		return s, 0
	}
	return Sample{Node: s.Node / float64(n), Batch: s.Batch / float64(n)}, n
}

// Row is the summary of one scenario under one load over its rounds.
// Latencies are ns; ranges are [min, max] over rounds.
type Row struct {
	Scenario string `json:"scenario"`
	Load     string `json:"load"`
	Rounds   int    `json:"rounds"`
	// P99 and P999 are medians over rounds; P99Range the spread.
	P99      int64    `json:"p99"`
	P99Range [2]int64 `json:"p99Range"`
	P999     int64    `json:"p999"`
	// P99Ratio and P999Ratio are medians over rounds of the ratio to the
	// same round's Prod-alone run (NaN without one).
	P99Ratio  Num `json:"p99Ratio"`
	P999Ratio Num `json:"p999Ratio"`
	// Errors and Offered sum over rounds.
	Errors  int64 `json:"errors"`
	Offered int64 `json:"offered"`
	// BatchUnits is the median over rounds; BatchShare the median of the
	// units as a share of the same round's batch-alone units (what the
	// node gives Batch when Prod wants nothing).
	BatchUnits int64 `json:"batchUnits"`
	BatchShare Num   `json:"batchShare"`
	// ProdCores and BatchCores are mean CPU use over the runs.
	ProdCores  float64 `json:"prodCores"`
	BatchCores float64 `json:"batchCores"`
	// Throttles and Evictions sum over rounds.
	Throttles int `json:"throttles"`
	Evictions int `json:"evictions"`
	// OverAction is the median ratio of observed drop to gap over the
	// measured cycles (NaN with none); OverActionCycles counts them.
	OverAction       Num `json:"overAction"`
	OverActionCycles int `json:"overActionCycles"`
}

// Summarize computes the table: one row per scenario and load that ran,
// in Scenarios order then load order. It fills each run's Effects.
func Summarize(r *Results) []Row {
	type key struct{ scenario, load string }
	type loadRound struct {
		load  string
		round int
	}
	alone := map[loadRound]*Run{}
	batchAlone := map[int]*Run{}
	groups := map[key][]*Run{}
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Scenario == Alone {
			alone[loadRound{run.Load, run.Round}] = run
		}
		if run.Scenario == BatchAlone {
			batchAlone[run.Round] = run
		}
		if run.Scenario == Waterline || run.Scenario == WaterlineNoThrottle || run.Scenario == WaterlineMemory {
			run.Effects = MeasureOverAction(run.Samples, run.Actions, DefaultOverActionWindows)
		}
		k := key{run.Scenario, run.Load}
		groups[k] = append(groups[k], run)
	}
	var rows []Row
	for _, sc := range Scenarios {
		for _, load := range []string{Steady, Bursty, ""} {
			runs := groups[key{sc, load}]
			if len(runs) == 0 {
				continue
			}
			row := Row{Scenario: sc, Load: load, Rounds: len(runs)}
			var p99s, p999s, r99, r999, units, shares, over []float64
			var prod, batch float64
			var nsamples int
			for _, run := range runs {
				if run.Prod != nil {
					p99s = append(p99s, float64(run.Prod.Latency.P99))
					p999s = append(p999s, float64(run.Prod.Latency.P999))
					row.Errors += run.Prod.Errors
					row.Offered += run.Prod.Offered
					if a := alone[loadRound{load, run.Round}]; a != nil && a.Prod != nil && a.Prod.Latency.P99 > 0 {
						r99 = append(r99, float64(run.Prod.Latency.P99)/float64(a.Prod.Latency.P99))
						r999 = append(r999, float64(run.Prod.Latency.P999)/float64(a.Prod.Latency.P999))
					}
				}
				units = append(units, float64(run.BatchUnits))
				if b := batchAlone[run.Round]; b != nil && b.BatchUnits > 0 && CPUScenarios[sc] {
					shares = append(shares, float64(run.BatchUnits)/float64(b.BatchUnits))
				}
				for _, s := range run.Samples {
					if s.T <= 0 {
						continue // the warmup, before the load
					}
					prod += s.Prod
					batch += s.Batch
					nsamples++
				}
				for _, a := range run.Actions {
					switch a.Kind {
					case ActionThrottle:
						row.Throttles++
					case ActionEvict:
						row.Evictions++
					}
				}
				for _, e := range run.Effects {
					over = append(over, e.Ratio)
				}
			}
			if len(p99s) > 0 {
				row.P99, row.P999 = int64(benchutil.Median(p99s)), int64(benchutil.Median(p999s))
				row.P99Range = [2]int64{int64(minOf(p99s)), int64(maxOf(p99s))}
			}
			row.P99Ratio, row.P999Ratio = Num(benchutil.Median(r99)), Num(benchutil.Median(r999))
			if len(units) > 0 {
				row.BatchUnits = int64(benchutil.Median(units))
			}
			row.BatchShare = Num(benchutil.Median(shares))
			if nsamples > 0 {
				row.ProdCores, row.BatchCores = prod/float64(nsamples), batch/float64(nsamples)
			}
			row.OverAction, row.OverActionCycles = Num(benchutil.Median(over)), len(over)
			rows = append(rows, row)
		}
	}
	return rows
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// CalibrationPoint is one window of a run with Batch beside Prod: how
// much CPU Batch used and how Prod's p99 compared with Prod alone.
type CalibrationPoint struct {
	Scenario   string  `json:"scenario"`
	BatchCores float64 `json:"batchCores"`
	ProdCores  float64 `json:"prodCores"`
	// P99Ratio is the window's Prod p99 over the median window p99 of
	// the same round's Prod-alone run under the same load.
	P99Ratio float64 `json:"p99Ratio"`
}

// CalibrationBin is the median slowdown for Batch CPU in [Lo, Hi) cores.
type CalibrationBin struct {
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Windows     int     `json:"windows"`
	MedianRatio float64 `json:"medianRatio"`
	P90Ratio    float64 `json:"p90Ratio"`
}

// Calibration is Prod slowdown as a function of co-running Batch CPU, for
// the simulator (pkg/sim reads it: waterline sim --calibration): per 1 s
// window of the steady-load runs of the CPU scenarios.
type Calibration struct {
	NodeCPUs int                `json:"nodeCPUs"`
	Points   []CalibrationPoint `json:"points"`
	Bins     []CalibrationBin   `json:"bins"`
	// Interference is the simulator's harm model fitted to Points
	// (sim.Calibration.FitInterference); nil when the run had too few
	// windows, InterferenceError then says why.
	Interference      *sim.InterferenceFit `json:"interference,omitempty"`
	InterferenceError string               `json:"interferenceError,omitempty"`
	// CensoredWindows were left out: some of their requests failed or
	// timed out, so their p99 is a lower bound, not a slowdown (an alone
	// run's such windows leave its baseline too).
	CensoredWindows int `json:"censoredWindows"`
}

// Calibrate pairs each steady-load window's Prod p99 with the Batch CPU
// the cgroups showed over it. Windows with failed or timed-out requests
// are left out (counted in CensoredWindows).
func Calibrate(r *Results, binWidth float64) Calibration {
	cal := Calibration{NodeCPUs: r.Machine.CPUs}
	aloneP99 := map[int]float64{}
	for _, run := range r.Runs {
		if run.Scenario == Alone && run.Load == Steady && run.Prod != nil {
			var ps []float64
			for _, w := range run.Prod.Windows {
				if w.Errors > 0 {
					cal.CensoredWindows++
				} else if w.OK > 0 {
					ps = append(ps, float64(w.P99))
				}
			}
			aloneP99[run.Round] = benchutil.Median(ps)
		}
	}
	for _, run := range r.Runs {
		base := aloneP99[run.Round]
		if run.Load != Steady || run.Prod == nil || !CPUScenarios[run.Scenario] || !(base > 0) {
			continue
		}
		for _, w := range run.Prod.Windows {
			if w.Errors > 0 {
				cal.CensoredWindows++
				continue
			}
			if w.OK == 0 {
				continue
			}
			from, to := w.Start.Seconds(), w.Start.Seconds()+1
			var b, p float64
			n := 0
			for _, s := range run.Samples {
				if s.T > from && s.T <= to+0.5 {
					b += s.Batch
					p += s.Prod
					n++
				}
			}
			if n == 0 {
				continue
			}
			cal.Points = append(cal.Points, CalibrationPoint{Scenario: run.Scenario, BatchCores: b / float64(n), ProdCores: p / float64(n), P99Ratio: float64(w.P99) / base})
		}
	}
	if binWidth <= 0 {
		binWidth = 0.25
	}
	bins := map[int][]float64{}
	for _, p := range cal.Points {
		i := int(p.BatchCores / binWidth)
		bins[i] = append(bins[i], p.P99Ratio)
	}
	var idx []int
	for i := range bins {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		rs := bins[i]
		sort.Float64s(rs)
		cal.Bins = append(cal.Bins, CalibrationBin{Lo: float64(i) * binWidth, Hi: float64(i+1) * binWidth, Windows: len(rs),
			MedianRatio: benchutil.Median(rs), P90Ratio: rs[min(len(rs)-1, int(math.Ceil(0.9*float64(len(rs))))-1)]})
	}
	sc := sim.Calibration{NodeCPUs: cal.NodeCPUs}
	for _, p := range cal.Points {
		sc.Points = append(sc.Points, sim.CalibrationPoint{Scenario: p.Scenario, BatchCores: p.BatchCores, ProdCores: p.ProdCores, P99Ratio: p.P99Ratio})
	}
	if fit, err := sc.FitInterference(); err != nil {
		cal.InterferenceError = err.Error()
		if cal.CensoredWindows > 0 {
			cal.InterferenceError += fmt.Sprintf("; %d windows left out for failed or timed-out requests (an overloaded machine?)", cal.CensoredWindows)
		}
	} else {
		cal.Interference = &fit
	}
	return cal
}

// Num is a float that is null in JSON when it is NaN (no data).
type Num float64

// MarshalJSON writes null for NaN.
func (n Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatFloat(float64(n), 'g', 6, 64)), nil
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}
