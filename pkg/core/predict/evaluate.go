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

package predict

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Series is a time series of one resource. Times are in seconds on any
// epoch, strictly increasing; Values are in the resource's unit.
type Series struct {
	Times  []int64
	Values []float64
}

// Len returns the number of samples.
func (s Series) Len() int { return len(s.Times) }

func (s Series) validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.Times) != len(s.Values) {
		return append(errs, field.Invalid(fldPath.Child("values"), len(s.Values),
			fmt.Sprintf("must have as many values as times (%d)", len(s.Times))))
	}
	for i := 1; i < len(s.Times); i++ {
		if s.Times[i] <= s.Times[i-1] {
			return append(errs, field.Invalid(fldPath.Child("times").Index(i), s.Times[i],
				fmt.Sprintf("must be after the previous time %d", s.Times[i-1])))
		}
	}
	return errs
}

// PodTrace is one pod's usage over its life on a node (its first and last
// samples mark when it ran).
type PodTrace struct {
	// Name identifies the pod in errors.
	Name string
	// Request is what the pod requested: it stands in for the pod's usage
	// during cold start and is what BorgDefault divides.
	Request float64
	// Limit is the most the pod may use; Σ limits of the running pods is
	// the savings denominator. 0 means Request.
	Limit float64
	// Usage is the pod's usage.
	Usage Series
}

// NodeTrace is one node's usage, and optionally its pods'.
type NodeTrace struct {
	// Name identifies the node in errors.
	Name string
	// Capacity is the savings denominator while no pod with a limit runs
	// (a trace with node usage only), in the unit of the usage.
	Capacity float64
	// Usage is what the node-level histogram learns from and what every
	// prediction is scored against: the usage of the node's pods and
	// system.
	Usage Series
	// Pods, when known, feed the per-pod models and the Σ limits.
	Pods []PodTrace
}

// EvalConfig says how a trace is walked.
type EvalConfig struct {
	// Layout is the bucket layout and half-life of every histogram.
	Layout *Layout
	// Step is how often a prediction is made. Range: ≥ 1s, whole seconds.
	Step time.Duration
	// Horizon is how long each prediction must hold: it is violated when
	// the node's usage exceeds it anywhere in [T, T+Horizon). Range: ≥ 1s,
	// whole seconds.
	Horizon time.Duration
	// Warmup is how long after the node's first sample predictions start
	// being scored, so that an empty history is not what is measured.
	// Range: ≥ 0.
	Warmup time.Duration
	// PeakWindow, when set, feeds the histograms the maximum of each
	// window of this width (aligned on its multiples) at the window's end,
	// instead of every sample; see seriesFeed. Range: 0 (every sample) or
	// ≥ 1s, whole seconds.
	PeakWindow time.Duration
}

// Validate returns every problem of c.
func (c EvalConfig) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Layout == nil {
		errs = append(errs, field.Required(fldPath.Child("layout"), "a histogram layout is needed"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"step", c.Step}, {"horizon", c.Horizon}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			errs = append(errs, field.Invalid(fldPath.Child(d.name), d.v.String(), "must be a whole number of seconds ≥ 1s"))
		}
	}
	if c.Warmup < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("warmup"), c.Warmup.String(), "must be ≥ 0"))
	}
	return append(errs, validatePeakWindow(fldPath, c.PeakWindow)...)
}

// Score is how one model did: the share of scored intervals whose real
// peak exceeded the prediction, and the mean share of the limits (or
// capacity) the prediction left free -- Bashir et al.'s violation rate and
// savings ratio. Scores of several nodes add up with Add.
type Score struct {
	// Model names the model and its parameters.
	Model string
	// Intervals is how many predictions were scored.
	Intervals int
	// Violations is how many of them the real peak exceeded.
	Violations int
	// SavingsSum is Σ over intervals of 1 − min(prediction, denominator) ÷
	// denominator; a prediction above the limits saves nothing, and counts
	// 0, not less.
	SavingsSum float64
}

// ViolationRate is Violations ÷ Intervals (0 without intervals).
func (s Score) ViolationRate() float64 {
	if s.Intervals == 0 {
		return 0
	}
	return float64(s.Violations) / float64(s.Intervals)
}

// Savings is the mean savings ratio (0 without intervals).
func (s Score) Savings() float64 {
	if s.Intervals == 0 {
		return 0
	}
	return s.SavingsSum / float64(s.Intervals)
}

// Add adds the counts of o to s.
func (s *Score) Add(o Score) {
	s.Intervals += o.Intervals
	s.Violations += o.Violations
	s.SavingsSum += o.SavingsSum
}

// OracleModel names the peak oracle's Score: the prediction that equals the
// real peak, the best savings any model can reach without violations.
const OracleModel = "oracle"

// EvalResult is the outcome of walking one trace.
type EvalResult struct {
	// Scores has one entry per model, in the order given.
	Scores []Score
	// Oracle is the peak oracle over the same intervals.
	Oracle Score
}

// Evaluate walks the node's trace forward Step by Step. At each time T it
// first feeds every sample before T into the histograms (node and pods,
// weight 1 each, or each peak window's maximum with cfg.PeakWindow; pods
// join when their first sample is before T and leave after their last), then asks each model for the peak of [T, T+Horizon)
// and scores it against the node's real maximum there. Only full windows
// with at least one sample, after the warm-up, are scored.
//
// The histograms are shared by all models, so evaluating many models costs
// one pass over the samples plus one Predict per model and step.
func Evaluate(node NodeTrace, models []Predictor, cfg EvalConfig) (EvalResult, error) {
	if errs := validateEval(node, cfg); len(errs) > 0 {
		return EvalResult{}, fmt.Errorf("evaluating node %q: %w", node.Name, errs.ToAggregate())
	}
	res := EvalResult{Scores: make([]Score, len(models)), Oracle: Score{Model: OracleModel}}
	for i, m := range models {
		res.Scores[i].Model = m.String()
	}
	u := node.Usage
	if u.Len() == 0 {
		return res, nil
	}
	step, horizon := int64(cfg.Step/time.Second), int64(cfg.Horizon/time.Second)
	warmup := int64(math.Ceil(cfg.Warmup.Seconds()))
	t0, tEnd := u.Times[0], u.Times[u.Len()-1]

	tr := NewTracker(cfg.Layout)
	peakWindow := int64(cfg.PeakWindow / time.Second)
	pods := newPodCursors(node.Pods, peakWindow)
	fed := seriesFeed{series: u, window: peakWindow}
	window := maxWindow{series: u} // node samples in [T, T+horizon)
	for T := t0 + step; T+horizon <= tEnd+1; T += step {
		now := time.Unix(T, 0)
		fed.until(T, func(v float64, at time.Time) { tr.AddNodeSample(v, 1, at) })
		limits := 0.0
		for i := range pods {
			limits += pods[i].advance(tr, T)
		}
		if T-t0 < warmup {
			continue
		}
		actual, ok := window.max(T, T+horizon)
		if !ok {
			continue
		}
		denom := node.Capacity
		if limits > 0 {
			denom = limits
		}
		if !(denom > 0) {
			continue // nothing to save from: the node has neither pods with limits nor a capacity
		}
		res.Oracle.add(actual, actual, denom)
		in := tr.Input(now)
		for i, m := range models {
			res.Scores[i].add(m.Predict(in).Peak, actual, denom)
		}
	}
	return res, nil
}

func (s *Score) add(predicted, actual, denom float64) {
	s.Intervals++
	if actual > predicted {
		s.Violations++
	}
	s.SavingsSum += 1 - min(predicted, denom)/denom
}

func validateEval(node NodeTrace, cfg EvalConfig) field.ErrorList {
	errs := cfg.Validate(field.NewPath("config"))
	errs = append(errs, validateNode(node)...)
	if !(node.Capacity >= 0) || math.IsInf(node.Capacity, 0) {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), node.Capacity, "must be a finite number ≥ 0"))
	}
	return errs
}

// podCursor walks one pod's samples alongside the node's.
type podCursor struct {
	trace   *PodTrace
	id      string
	feed    seriesFeed
	joined  bool
	removed bool
}

func newPodCursors(pods []PodTrace, peakWindow int64) []podCursor {
	out := make([]podCursor, len(pods))
	for i := range pods {
		out[i] = podCursor{trace: &pods[i], id: fmt.Sprint(i), feed: seriesFeed{series: pods[i].Usage, window: peakWindow}}
	}
	return out
}

// advance feeds the pod's samples before T into the tracker, adding the
// pod when it has started and removing it when it has ended; it returns
// the pod's limit when it runs at T, else 0.
func (c *podCursor) advance(tr *Tracker, T int64) float64 {
	u := c.trace.Usage
	if c.removed || u.Len() == 0 || u.Times[0] >= T {
		return 0
	}
	if !c.joined {
		tr.SetPod(c.id, time.Unix(u.Times[0], 0), c.trace.Request)
		c.joined = true
	}
	c.feed.until(T, func(v float64, at time.Time) { tr.AddPodSample(c.id, v, 1, at) })
	if u.Times[u.Len()-1] < T {
		tr.RemovePod(c.id)
		c.removed = true
		return 0
	}
	if c.trace.Limit > 0 {
		return c.trace.Limit
	}
	return c.trace.Request
}

// maxWindow is a sliding-window maximum over a series (a monotonic deque of
// sample indices whose values decrease): each sample enters and leaves
// once, so a whole walk is O(samples).
type maxWindow struct {
	series Series
	next   int   // first sample not yet pushed
	deque  []int // indices, values strictly decreasing
	head   int
}

// max returns the largest value with time in [from, to), which must not
// move backwards between calls, and false when there is none.
func (w *maxWindow) max(from, to int64) (float64, bool) {
	s := w.series
	for ; w.next < s.Len() && s.Times[w.next] < to; w.next++ {
		for len(w.deque) > w.head && s.Values[w.deque[len(w.deque)-1]] <= s.Values[w.next] {
			w.deque = w.deque[:len(w.deque)-1]
		}
		w.deque = append(w.deque, w.next)
	}
	for w.head < len(w.deque) && s.Times[w.deque[w.head]] < from {
		w.head++
	}
	if w.head == len(w.deque) {
		w.deque, w.head = w.deque[:0], 0
		return 0, false
	}
	if w.head > 1024 && w.head*2 > len(w.deque) { // keep the slice from growing forever
		n := copy(w.deque, w.deque[w.head:])
		w.deque, w.head = w.deque[:n], 0
	}
	return s.Values[w.deque[w.head]], true
}
