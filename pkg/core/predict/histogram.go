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

const (
	// maxBuckets bounds the memory of one histogram: a layout that would
	// need more is a configuration mistake (a tiny first bucket or a ratio
	// barely above 1), not something to allocate.
	maxBuckets = 10000
	// rebaseExponent is how many half-lives the newest sample may lie past
	// the reference time before the weights are renormalised. 2^30 ≈ 1e9
	// keeps Σ w·x² of byte-sized values (1e12² · 1e9 = 1e33) far from
	// float64 overflow while rebasing (O(buckets)) only every 30 half-lives.
	rebaseExponent = 30
	// negligibleShare is the share of the total weight under which a bucket
	// is dropped when rebasing: it can no longer move any percentile, and
	// dropping it keeps checkpoints of long-lived histograms small.
	negligibleShare = 1e-12
)

// HistogramConfig describes the buckets and the decay of a family of
// histograms. Histograms built from the same Layout can be merged.
//
// Bucket i covers [s(i), s(i+1)) with s(i) = FirstBucketSize·(Ratio^i − 1)/(Ratio − 1):
// each bucket is Ratio times as wide as the one before, so the relative
// error of a percentile is about Ratio − 1 everywhere on the scale.
type HistogramConfig struct {
	// FirstBucketSize is the width of the first bucket, in the unit of the
	// samples (cores, bytes, ...). It is the absolute resolution near zero.
	// Range: > 0. No default.
	FirstBucketSize float64
	// Ratio is how much wider each bucket is than the one before.
	// Range: (1, 10]. VPA uses 1.05 (about 5 % relative error).
	Ratio float64
	// MaxValue is the largest value the buckets resolve, in the unit of the
	// samples; larger samples land in the last bucket, whose percentile is
	// then the largest sample seen. Range: > FirstBucketSize.
	MaxValue float64
	// HalfLife is how long it takes a sample's weight to halve relative to
	// a new sample. Range: ≥ 0; 0 turns decay off (every sample counts the
	// same forever). The predict policy's default is 12h.
	HalfLife time.Duration
}

// Validate returns every problem of c, each naming the field and value.
func (c HistogramConfig) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !(c.FirstBucketSize > 0) || math.IsInf(c.FirstBucketSize, 0) {
		errs = append(errs, field.Invalid(fldPath.Child("firstBucketSize"), c.FirstBucketSize, "must be a finite number > 0"))
	}
	if !(c.Ratio > 1 && c.Ratio <= 10) {
		errs = append(errs, field.Invalid(fldPath.Child("ratio"), c.Ratio, "must be in (1, 10]"))
	}
	if !(c.MaxValue > c.FirstBucketSize) || math.IsInf(c.MaxValue, 0) {
		errs = append(errs, field.Invalid(fldPath.Child("maxValue"), c.MaxValue, "must be finite and greater than firstBucketSize"))
	}
	if c.HalfLife < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("halfLife"), c.HalfLife.String(), "must be ≥ 0"))
	}
	if len(errs) == 0 {
		if n := bucketCount(c); n > maxBuckets {
			errs = append(errs, field.Invalid(fldPath, fmt.Sprintf("%d buckets", n),
				fmt.Sprintf("firstBucketSize, ratio and maxValue need more than %d buckets; raise firstBucketSize or ratio", maxBuckets)))
		}
	}
	return errs
}

func bucketCount(c HistogramConfig) int {
	return int(math.Ceil(math.Log1p(c.MaxValue*(c.Ratio-1)/c.FirstBucketSize)/math.Log(c.Ratio))) + 1
}

// Layout is a validated HistogramConfig with its bucket boundaries
// precomputed. It is immutable and safe to share between goroutines and
// between any number of histograms.
type Layout struct {
	config HistogramConfig
	// starts[i] is the lower bound of bucket i; starts[n] the upper bound
	// of the last resolved bucket.
	starts      []float64
	scale       float64 // (Ratio − 1) / FirstBucketSize
	invLogRatio float64
	halfLifeSec float64
}

// NewLayout validates c and precomputes its buckets.
func NewLayout(c HistogramConfig) (*Layout, error) {
	if errs := c.Validate(field.NewPath("histogram")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	n := bucketCount(c)
	l := &Layout{
		config:      c,
		starts:      make([]float64, n+1),
		scale:       (c.Ratio - 1) / c.FirstBucketSize,
		invLogRatio: 1 / math.Log(c.Ratio),
		halfLifeSec: c.HalfLife.Seconds(),
	}
	for i := range l.starts {
		l.starts[i] = c.FirstBucketSize * (math.Pow(c.Ratio, float64(i)) - 1) / (c.Ratio - 1)
	}
	return l, nil
}

// Config returns the configuration the layout was built from.
func (l *Layout) Config() HistogramConfig { return l.config }

// NumBuckets is the number of buckets of every histogram of the layout.
func (l *Layout) NumBuckets() int { return len(l.starts) - 1 }

// BucketBounds returns the lower and upper bound of bucket i. The last
// bucket also holds every sample above its upper bound.
func (l *Layout) BucketBounds(i int) (lower, upper float64) {
	return l.starts[i], l.starts[i+1]
}

// bucket returns the index of the bucket that holds v ≥ 0.
func (l *Layout) bucket(v float64) int {
	i := int(math.Log1p(v*l.scale) * l.invLogRatio)
	last := len(l.starts) - 2
	if i >= last {
		return last
	}
	// The logarithm can land one bucket off at a boundary; the
	// precomputed bounds are the truth.
	if v < l.starts[i] {
		i--
	} else if v >= l.starts[i+1] {
		i++
	}
	return max(0, min(i, last))
}

// NewHistogram returns an empty histogram of the layout.
func (l *Layout) NewHistogram() *Histogram {
	b := &histogramBlock{}
	b.h.layout = l
	b.h.weights = b.buckets[:0]
	return &b.h
}

// inlineBuckets is how many buckets a histogram holds in its own
// allocation (histogramBlock) before its weights move to one of their
// own. 32 buckets span samples within a factor of Ratio^32 of each other
// (4.8 at 1.05): a memory or steady CPU series never leaves them.
const inlineBuckets = 32

// histogramBlock allocates a histogram together with room for its first
// buckets. Adding a sample reads the histogram and then one of its
// buckets; a separate, small weights allocation lands far from the
// histogram in the heap, and where many histograms are fed in turn (a
// node's pods, every update) each sample then waits for two cache misses
// instead of one. The weights slice points into buckets until it outgrows
// them; only the slice is used, so a histogram behaves the same wherever
// its weights live.
type histogramBlock struct {
	h       Histogram
	buckets [inlineBuckets]float64
}

// Histogram is a decaying histogram of samples: a sample added at time t
// weighs 2^((t − t0)/HalfLife) times as much as one added at t0, so the
// past fades at the configured half-life. Besides the buckets (for
// percentiles) it keeps the exact decayed moments (for Mean and StdDev, so
// N-sigma has no bucket error) and the largest sample.
//
// Weights are stored relative to a reference time and grow exponentially
// with newer samples; when they get large they are renormalised to a newer
// reference, so adding a sample is O(1) (amortised) and never rescales
// every bucket.
//
// A Histogram is not safe for concurrent use.
type Histogram struct {
	layout *Layout
	ref    time.Time // reference time of the weights; zero until the first sample
	// weights[k] is the weight of bucket lo+k; the slice spans only the
	// buckets between the lowest and the highest non-empty one.
	lo      int
	weights []float64
	total   float64
	// Moments are kept around pivot (the first sample) so that the
	// variance of large, steady values (bytes) does not cancel out.
	pivot float64
	sum   float64 // Σ w·(x − pivot)
	sumSq float64 // Σ w·(x − pivot)²
	max   float64
}

// Layout returns the layout of the histogram.
func (h *Histogram) Layout() *Layout { return h.layout }

// IsEmpty reports whether the histogram holds no weight.
func (h *Histogram) IsEmpty() bool { return h.total <= 0 }

// Reset empties the histogram, keeping its memory.
func (h *Histogram) Reset() {
	clear(h.weights)
	*h = Histogram{layout: h.layout, weights: h.weights[:0]}
}

// AddSample adds value with the given weight at time t. Negative values
// count as 0 (usage cannot be negative; a counter reset must not corrupt the
// history). NaN or infinite values, and weights that are not > 0 and
// finite, are ignored: this is called in hot loops where an error return
// would only be dropped.
func (h *Histogram) AddSample(value, weight float64, t time.Time) {
	h.add(value, weight, t, nil)
}

// Sampler adds samples taken at one time to any number of histograms,
// exactly as AddSample would. Histograms fed together since their first
// sample (a node's, in the simulator) share their reference time, and so
// the decay of a new sample: a Sampler works it out (a time difference and
// a math.Exp2) once for each run of histograms with the same reference
// time and half-life, not once per histogram.
//
// A Sampler is not safe for concurrent use.
type Sampler struct {
	t time.Time
	// factor is 2^((t − ref)/halfLifeSec), the decay AddSample worked out
	// last for a histogram with that reference time and half-life, when
	// known is set.
	ref         time.Time
	halfLifeSec float64
	factor      float64
	known       bool
}

// NewSampler returns a Sampler of samples taken at t.
func NewSampler(t time.Time) Sampler { return Sampler{t: t} }

// Add adds value with the given weight to h, as h.AddSample(value, weight,
// t) would.
func (s *Sampler) Add(h *Histogram, value, weight float64) {
	h.add(value, weight, s.t, s)
}

// add is AddSample, with the decay taken from s when s worked it out for
// the same reference time and half-life (s may be nil).
func (h *Histogram) add(value, weight float64, t time.Time, s *Sampler) {
	if math.IsNaN(value) || math.IsInf(value, 0) || !(weight > 0) || math.IsInf(weight, 0) {
		return
	}
	value = max(value, 0)
	w := weight * h.decay(t, weight, s)
	if w == 0 {
		return // so far in the past that it no longer counts
	}
	if h.IsEmpty() {
		h.pivot = value
		h.max = value
	}
	h.addToBucket(h.layout.bucket(value), w)
	d := value - h.pivot
	h.total += w
	h.sum += w * d
	h.sumSq += w * d * d
	h.max = max(h.max, value)
}

// decay returns the relative weight of a sample of the given weight at t,
// first moving the reference forward when t is too far past it. A Sampler
// s (of samples at t; may be nil) remembers the last factor worked out;
// the same t, reference time and half-life give the same exponent, and so
// the same factor.
func (h *Histogram) decay(t time.Time, weight float64, s *Sampler) float64 {
	hl := h.layout.halfLifeSec
	if hl == 0 {
		return 1
	}
	if h.ref.IsZero() {
		h.ref = t
		return 1
	}
	// ==, not Equal: the same instant with and without a monotonic
	// reading can give t.Sub different results, and the factor must be
	// the one this histogram would work out.
	if s != nil && s.known && s.ref == h.ref && s.halfLifeSec == hl { //nolint:staticcheck // QF1009: see above
		return s.factor
	}
	e := t.Sub(h.ref).Seconds() / hl
	if e > rebaseExponent {
		h.rebase(t, weight)
		return 1
	}
	f := math.Exp2(e)
	if s != nil {
		s.ref, s.halfLifeSec, s.factor, s.known = h.ref, hl, f, true
	}
	return f
}

// rebase moves the reference time to t (after ref), scaling every weight
// down accordingly. Buckets left negligible next to what is about to be
// added (incoming, at the new reference) or to the rest are dropped.
func (h *Histogram) rebase(t time.Time, incoming float64) {
	f := math.Exp2(-t.Sub(h.ref).Seconds() / h.layout.halfLifeSec)
	h.total *= f
	h.sum *= f
	h.sumSq *= f
	floor := max(h.total, incoming) * negligibleShare
	for i := range h.weights {
		h.weights[i] *= f
		if h.weights[i] < floor {
			h.weights[i] = 0
		}
	}
	h.trim()
	if len(h.weights) == 0 { // nothing left that counts
		h.Reset()
	}
	h.ref = t
}

// trim drops empty buckets at both ends of the window.
func (h *Histogram) trim() {
	a, b := 0, len(h.weights)
	for a < b && h.weights[a] == 0 {
		a++
	}
	for b > a && h.weights[b-1] == 0 {
		b--
	}
	if a == 0 && b == len(h.weights) {
		return
	}
	n := copy(h.weights, h.weights[a:b])
	clear(h.weights[n:])
	h.weights = h.weights[:n]
	h.lo += a
}

func (h *Histogram) addToBucket(i int, w float64) {
	switch {
	case len(h.weights) == 0:
		h.lo = i
		h.weights = append(h.weights[:0], w)
		return
	case i < h.lo:
		grow := h.lo - i
		n := len(h.weights)
		h.weights = append(h.weights, make([]float64, grow)...)
		copy(h.weights[grow:], h.weights[:n])
		clear(h.weights[:grow])
		h.lo = i
	case i >= h.lo+len(h.weights):
		h.weights = append(h.weights, make([]float64, i-h.lo-len(h.weights)+1)...)
	}
	h.weights[i-h.lo] += w
}

// Percentile returns the p-th percentile (p in [0, 100], clamped) of the
// weighted samples: the upper bound of the bucket that holds it, or the
// largest sample if that is smaller (always for the last bucket). It errs
// high by at most one bucket, which is the safe side for a peak. An empty
// histogram returns 0.
func (h *Histogram) Percentile(p float64) float64 {
	if h.IsEmpty() {
		return 0
	}
	p = max(0, min(p, 100))
	target := p / 100 * h.total
	var cum float64
	last := -1
	for k, w := range h.weights {
		if w == 0 {
			continue
		}
		last = k
		cum += w
		if cum >= target {
			break
		}
	}
	if last < 0 {
		return h.max
	}
	return h.upper(h.lo + last)
}

func (h *Histogram) upper(i int) float64 {
	if i == h.layout.NumBuckets()-1 {
		return h.max
	}
	return min(h.layout.starts[i+1], h.max)
}

// Mean returns the weighted mean of the samples (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.IsEmpty() {
		return 0
	}
	return h.pivot + h.sum/h.total
}

// StdDev returns the weighted (population) standard deviation of the
// samples (0 when empty).
func (h *Histogram) StdDev() float64 {
	if h.IsEmpty() {
		return 0
	}
	m := h.sum / h.total
	return math.Sqrt(max(0, h.sumSq/h.total-m*m))
}

// Max returns the largest sample ever added and not yet reset (0 when
// empty). It does not decay: a peak is a peak however old.
func (h *Histogram) Max() float64 {
	if h.IsEmpty() {
		return 0
	}
	return h.max
}

// TotalWeight returns the decayed weight of all samples as seen at time t:
// a sample of weight 1 added one half-life before t counts 0.5.
func (h *Histogram) TotalWeight(t time.Time) float64 {
	if h.IsEmpty() {
		return 0
	}
	if h.layout.halfLifeSec == 0 {
		return h.total
	}
	return h.total * math.Exp2(-t.Sub(h.ref).Seconds()/h.layout.halfLifeSec)
}

// Merge adds every sample of other to h, as if they had been added to h at
// their own times. Both must share a layout configuration.
func (h *Histogram) Merge(other *Histogram) error {
	if h.layout.config != other.layout.config {
		return fmt.Errorf("merging histograms: %w: %+v vs %+v", ErrIncompatibleLayout, other.layout.config, h.layout.config)
	}
	if other.IsEmpty() {
		return nil
	}
	if h.IsEmpty() {
		h.copyFrom(other)
		return nil
	}
	f := 1.0
	if h.layout.halfLifeSec > 0 {
		if other.ref.After(h.ref) {
			h.rebase(other.ref, other.total)
		}
		f = math.Exp2(other.ref.Sub(h.ref).Seconds() / h.layout.halfLifeSec)
	}
	for k, w := range other.weights {
		if w*f > 0 {
			h.addToBucket(other.lo+k, w*f)
		}
	}
	// Move other's moments from its pivot to ours: with d = x − p2 and
	// δ = p2 − p1, x − p1 = d + δ.
	delta := other.pivot - h.pivot
	tw, s, sq := other.total*f, other.sum*f, other.sumSq*f
	h.sum += s + delta*tw
	h.sumSq += sq + 2*delta*s + delta*delta*tw
	h.total += tw
	h.max = max(h.max, other.max)
	return nil
}

func (h *Histogram) copyFrom(o *Histogram) {
	w := append(h.weights[:0], o.weights...)
	*h = *o
	h.weights = w
}

// Clone returns an independent copy of h.
func (h *Histogram) Clone() *Histogram {
	c := h.layout.NewHistogram()
	c.copyFrom(h)
	return c
}
