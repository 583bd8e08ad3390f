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
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The next-bucket evaluation asks one question of every predictor: at the
// start of a bucket (5 minutes, say), how high will the node's usage go
// before the bucket ends? It scores Waterline's histogram predictors and a
// plain sliding-window baseline on exactly the same buckets, so that the
// two can be compared at the same mean predicted peak
// (docs/design/prediction.md#against-a-sliding-window-baseline).

// BucketMaxima cuts s into buckets of width seconds, aligned on multiples
// of width on the series' epoch (a sample at t is in bucket ⌊t / width⌋),
// and returns the index and the largest value of every bucket that holds
// at least one sample, in time order. Buckets without samples are absent.
// width must be > 0; otherwise nothing is returned.
func BucketMaxima(s Series, width int64) (index []int64, maxima []float64) {
	if width <= 0 {
		return nil, nil
	}
	for i, t := range s.Times {
		b := floorDiv(t, width)
		if n := len(index); n > 0 && index[n-1] == b {
			maxima[n-1] = max(maxima[n-1], s.Values[i])
			continue
		}
		index = append(index, b)
		maxima = append(maxima, s.Values[i])
	}
	return index, maxima
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// WindowNSigma is a sliding-window baseline that keeps no histogram: it
// predicts the mean plus N population standard deviations of the maxima
// of the Window buckets right before the predicted one (all of which must
// hold samples; see BucketEvalConfig.Contiguous). Every prediction is
// capped at the node's capacity.
type WindowNSigma struct {
	// Window is how many bucket maxima the mean and deviation are taken
	// over. Range: ≥ 1.
	Window int
	// N is how many standard deviations are added to the mean. Range: ≥ 0.
	N float64
}

func (b WindowNSigma) String() string {
	return fmt.Sprintf("window(w=%d,n=%s)", b.Window, fmtNum(b.N))
}

// predict returns mean + N × population stdev of maxima (len ≥ 1). Two
// passes: the one-pass Σx² form loses digits when the values are large
// and close together.
func (b WindowNSigma) predict(maxima []float64) float64 {
	var sum float64
	for _, v := range maxima {
		sum += v
	}
	mean := sum / float64(len(maxima))
	var sq float64
	for _, v := range maxima {
		sq += (v - mean) * (v - mean)
	}
	return mean + b.N*math.Sqrt(sq/float64(len(maxima)))
}

func (b WindowNSigma) validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if b.Window < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("window"), b.Window, "must be ≥ 1"))
	}
	if !(b.N >= 0) || math.IsInf(b.N, 0) {
		errs = append(errs, field.Invalid(fldPath.Child("n"), b.N, "must be a finite number ≥ 0"))
	}
	return errs
}

// BucketEvalConfig says how EvaluateNextBucket walks a trace.
type BucketEvalConfig struct {
	// Layout is the bucket layout and half-life of every histogram the
	// models read. Required when models are given.
	Layout *Layout
	// Bucket is the width of the buckets whose maxima are predicted.
	// Range: ≥ 1s, whole seconds.
	Bucket time.Duration
	// Contiguous is how many buckets right before a bucket must all hold
	// samples for the bucket to be predicted and scored: the same buckets
	// for every model and baseline. Range: ≥ the largest baseline Window,
	// and ≥ 1.
	Contiguous int
	// PeakWindow, when set, feeds the models' histograms the maximum of
	// each window of this width (aligned on its multiples, as the buckets
	// are) at the window's end, instead of every sample; see seriesFeed.
	// A window that divides Bucket has all its samples before a bucket's
	// start fed by then; with PeakWindow = Bucket the histograms learn
	// exactly the bucket maxima the baselines see. Range: 0 (every sample)
	// or ≥ 1s, whole seconds.
	PeakWindow time.Duration
}

// Validate returns every problem of c, given the baselines it is used
// with and whether models are evaluated.
func (c BucketEvalConfig) Validate(fldPath *field.Path, baselines []WindowNSigma, models bool) field.ErrorList {
	var errs field.ErrorList
	if models && c.Layout == nil {
		errs = append(errs, field.Required(fldPath.Child("layout"), "a histogram layout is needed to evaluate models"))
	}
	if c.Bucket < time.Second || c.Bucket%time.Second != 0 {
		errs = append(errs, field.Invalid(fldPath.Child("bucket"), c.Bucket.String(), "must be a whole number of seconds ≥ 1s"))
	}
	window := 1
	for i, b := range baselines {
		errs = append(errs, b.validate(fldPath.Child("baselines").Index(i))...)
		window = max(window, b.Window)
	}
	errs = append(errs, validatePeakWindow(fldPath, c.PeakWindow)...)
	if c.Contiguous < window {
		errs = append(errs, field.Invalid(fldPath.Child("contiguous"), c.Contiguous,
			fmt.Sprintf("must be ≥ 1 and ≥ the largest baseline window (%d)", window)))
	}
	return errs
}

// PeakScore is how a model or baseline did on next-bucket maxima: how
// often the bucket's maximum exceeded the prediction, and how high the
// predictions were on average. Scores of several nodes add up with Add.
type PeakScore struct {
	// Model names the model or baseline and its parameters.
	Model string `json:"model"`
	// Predictions is how many buckets were predicted and scored.
	Predictions int `json:"predictions"`
	// Violations is how many of them had a maximum above the prediction.
	Violations int `json:"violations"`
	// PeakSum is Σ over predictions of min(prediction, capacity) ÷
	// capacity: a prediction above the node is worth the node.
	PeakSum float64 `json:"peakSum"`
}

// ViolationRate is Violations ÷ Predictions (0 without predictions).
func (s PeakScore) ViolationRate() float64 {
	if s.Predictions == 0 {
		return 0
	}
	return float64(s.Violations) / float64(s.Predictions)
}

// MeanPeak is the mean prediction as a share of the node's capacity (0
// without predictions).
func (s PeakScore) MeanPeak() float64 {
	if s.Predictions == 0 {
		return 0
	}
	return s.PeakSum / float64(s.Predictions)
}

// Add adds the counts of o to s.
func (s *PeakScore) Add(o PeakScore) {
	s.Predictions += o.Predictions
	s.Violations += o.Violations
	s.PeakSum += o.PeakSum
}

func (s *PeakScore) add(predicted, actual, capacity float64) {
	predicted = min(predicted, capacity)
	s.Predictions++
	if actual > predicted {
		s.Violations++
	}
	s.PeakSum += predicted / capacity
}

// BucketResult is the outcome of EvaluateNextBucket on one node.
type BucketResult struct {
	// Baselines has one score per baseline, in the order given.
	Baselines []PeakScore
	// Scores has one score per model, in the order given.
	Scores []PeakScore
}

// EvaluateNextBucket cuts the node's usage into buckets (BucketMaxima) and
// walks them in time order. A bucket is predicted when it and the
// cfg.Contiguous buckets right before it all hold samples. Each baseline
// predicts from the maxima of the buckets before it; each model predicts
// at the bucket's start from histograms fed every node (and pod) sample
// before that start, one at a time with weight 1, as Evaluate does (or
// each peak window's maximum; see below).
// Predictions are capped at node.Capacity (> 0), and a bucket whose
// maximum is above a prediction is a violation. With cfg.PeakWindow the
// histograms are fed the maximum of each peak window instead of every
// sample.
//
// Every model and baseline is scored on the same buckets, so their
// violation rates at equal mean peaks can be compared directly.
func EvaluateNextBucket(node NodeTrace, baselines []WindowNSigma, models []Predictor, cfg BucketEvalConfig) (BucketResult, error) {
	errs := cfg.Validate(field.NewPath("config"), baselines, len(models) > 0)
	errs = append(errs, validateNode(node)...)
	if !(node.Capacity > 0) || math.IsInf(node.Capacity, 0) {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), node.Capacity, "must be a finite number > 0: predictions are capped at it and mean peaks are shares of it"))
	}
	if len(errs) > 0 {
		return BucketResult{}, fmt.Errorf("evaluating node %q by next-bucket maxima: %w", node.Name, errs.ToAggregate())
	}
	res := BucketResult{Baselines: make([]PeakScore, len(baselines)), Scores: make([]PeakScore, len(models))}
	for i, b := range baselines {
		res.Baselines[i].Model = b.String()
	}
	for i, m := range models {
		res.Scores[i].Model = m.String()
	}
	width := int64(cfg.Bucket / time.Second)
	index, maxima := BucketMaxima(node.Usage, width)

	var tr *Tracker
	if len(models) > 0 {
		tr = NewTracker(cfg.Layout)
	}
	peakWindow := int64(cfg.PeakWindow / time.Second)
	pods := newPodCursors(node.Pods, peakWindow)
	fed := seriesFeed{series: node.Usage, window: peakWindow}
	c := cfg.Contiguous
	for k := c; k < len(index); k++ {
		// Indices strictly increase, so c buckets between index[k−c] and
		// index[k] exactly fill the gap when none is missing.
		if index[k-c] != index[k]-int64(c) {
			continue
		}
		actual := maxima[k]
		for i, b := range baselines {
			res.Baselines[i].add(b.predict(maxima[k-b.Window:k]), actual, node.Capacity)
		}
		if tr == nil {
			continue
		}
		T := index[k] * width
		fed.until(T, func(v float64, at time.Time) { tr.AddNodeSample(v, 1, at) })
		for i := range pods {
			pods[i].advance(tr, T)
		}
		in := tr.Input(time.Unix(T, 0))
		for i, m := range models {
			res.Scores[i].add(m.Predict(in).Peak, actual, node.Capacity)
		}
	}
	return res, nil
}

// ErrPeakOutOfReach is returned (wrapped) by MatchMeanPeak when no value of
// the knob in its range reaches the target mean peak.
var ErrPeakOutOfReach = errors.New("target mean peak out of reach")

// MatchMeanPeak finds the smallest knob x in [lo, hi] (an N, a margin) at
// which a family of predictors reaches a mean peak of at least target (a
// share of capacity), to compare families at the same mean peak. eval
// scores the family at several knob values at once (one pass over a trace
// scores any number of models); the mean peak must not fall as x grows.
// It narrows [lo, hi] by a grid of steps points per round, rounds times,
// and returns the best x found with its score. When even hi falls short, or
// lo already overshoots, it returns that end's knob and score with an
// error wrapping ErrPeakOutOfReach.
func MatchMeanPeak(lo, hi, target float64, steps, rounds int, eval func(xs []float64) ([]PeakScore, error)) (float64, PeakScore, error) {
	if !(lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || steps < 2 || rounds < 1 {
		return 0, PeakScore{}, fmt.Errorf("matching mean peak: invalid search [%g, %g] with %d steps × %d rounds", lo, hi, steps, rounds)
	}
	var best *PeakScore
	bestX := hi
	for range rounds {
		xs := make([]float64, steps)
		for i := range xs {
			// Rounded so that a knob reads as the decimal it is meant
			// to be (4.3382, not 4.3382000000000005).
			xs[i] = math.Round((lo+(hi-lo)*float64(i)/float64(steps-1))*1e9) / 1e9
		}
		scores, err := eval(xs)
		if err != nil {
			return 0, PeakScore{}, err
		}
		if len(scores) != len(xs) {
			return 0, PeakScore{}, fmt.Errorf("matching mean peak: %d scores for %d knob values", len(scores), len(xs))
		}
		i := slices.IndexFunc(scores, func(s PeakScore) bool { return s.MeanPeak() >= target })
		switch {
		case i < 0 && best == nil:
			s := scores[len(scores)-1]
			return xs[len(xs)-1], s, fmt.Errorf("matching mean peak %.4g: %w: %s reaches %.4g at most",
				target, ErrPeakOutOfReach, s.Model, s.MeanPeak())
		case i < 0:
			return bestX, *best, nil // cannot happen for a monotone family; keep the last match
		case i == 0 && best == nil:
			s := scores[0]
			return xs[0], s, fmt.Errorf("matching mean peak %.4g: %w: %s is already at %.4g",
				target, ErrPeakOutOfReach, s.Model, s.MeanPeak())
		case i == 0:
			return xs[0], scores[0], nil
		}
		s := scores[i]
		best, bestX = &s, xs[i]
		lo, hi = xs[i-1], xs[i]
	}
	return bestX, *best, nil
}

// validateNode checks the node's series (as Evaluate does), without the
// capacity rule, which differs between the two evaluations.
func validateNode(node NodeTrace) field.ErrorList {
	errs := node.Usage.validate(field.NewPath("usage"))
	for i := range node.Pods {
		p := &node.Pods[i]
		fp := field.NewPath("pods").Index(i)
		errs = append(errs, p.Usage.validate(fp.Child("usage"))...)
		if !(p.Request >= 0) || math.IsInf(p.Request, 0) {
			errs = append(errs, field.Invalid(fp.Child("request"), p.Request, "must be a finite number ≥ 0"))
		}
		if !(p.Limit >= 0) || math.IsInf(p.Limit, 0) {
			errs = append(errs, field.Invalid(fp.Child("limit"), p.Limit, "must be a finite number ≥ 0"))
		}
	}
	return errs
}
