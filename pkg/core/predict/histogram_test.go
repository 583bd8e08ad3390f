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
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pow2Layout has buckets [0,1) [1,3) [3,7) [7,15) [15,31) ...: bucket i
// starts at 2^i − 1, so every bound in a test is checkable by hand.
func pow2Layout(t testing.TB, halfLife time.Duration) *Layout {
	t.Helper()
	l, err := NewLayout(HistogramConfig{FirstBucketSize: 1, Ratio: 2, MaxValue: 1000, HalfLife: halfLife})
	if err != nil {
		t.Fatalf("NewLayout: %v", err)
	}
	return l
}

type sample struct {
	v, w float64
	at   time.Duration // after t0
}

func fill(h *Histogram, samples ...sample) *Histogram {
	for _, s := range samples {
		h.AddSample(s.v, s.w, t0.Add(s.at))
	}
	return h
}

// stats is what a user of a histogram sees.
type stats struct {
	Empty          bool
	Mean, StdDev   float64
	Max            float64
	P33, P34, P100 float64
}

func statsOf(h *Histogram) stats {
	return stats{
		Empty: h.IsEmpty(), Mean: h.Mean(), StdDev: h.StdDev(), Max: h.Max(),
		P33: h.Percentile(33), P34: h.Percentile(34), P100: h.Percentile(100),
	}
}

var approx = cmpopts.EquateApprox(1e-9, 1e-9)

func TestHistogramDecay(t *testing.T) {
	const hl = time.Hour
	tests := []struct {
		name     string
		halfLife time.Duration
		samples  []sample
		want     stats
	}{{
		name:     "same time: equal weights",
		halfLife: hl,
		samples:  []sample{{1, 1, 0}, {10, 1, 0}},
		// mean (1+10)/2 = 5.5; sd = 4.5; P33 → 1's bucket [1,3) → 3;
		// P34 likewise (share of 1 is 1/2); P100 → [7,15) capped at max 10.
		want: stats{Mean: 5.5, StdDev: 4.5, Max: 10, P33: 3, P34: 3, P100: 10},
	}, {
		name:     "one half-life later a sample weighs double",
		halfLife: hl,
		samples:  []sample{{1, 1, 0}, {10, 1, hl}},
		// weights 1 and 2: mean (1·1 + 10·2)/3 = 7;
		// var (1·36 + 2·9)/3 = 18, sd √18; share of 1 is 1/3, so P33 is
		// still in 1's bucket (→ 3) and P34 in 10's (→ 10).
		want: stats{Mean: 7, StdDev: math.Sqrt(18), Max: 10, P33: 3, P34: 10, P100: 10},
	}, {
		name:     "two half-lives later four times",
		halfLife: hl,
		samples:  []sample{{1, 1, 0}, {10, 1, 2 * hl}},
		// weights 1 and 4: mean (1 + 40)/5 = 8.2; var (1·7.2² + 4·1.8²)/5 = 12.96, sd 3.6.
		want: stats{Mean: 8.2, StdDev: 3.6, Max: 10, P33: 10, P34: 10, P100: 10},
	}, {
		name:     "an older sample added later decays the same way",
		halfLife: hl,
		samples:  []sample{{10, 1, hl}, {1, 1, 0}},
		want:     stats{Mean: 7, StdDev: math.Sqrt(18), Max: 10, P33: 3, P34: 10, P100: 10},
	}, {
		name:     "caller weights multiply",
		halfLife: hl,
		samples:  []sample{{1, 2, 0}, {10, 1, hl}},
		// weights 2 and 2: as if at the same time.
		want: stats{Mean: 5.5, StdDev: 4.5, Max: 10, P33: 3, P34: 3, P100: 10},
	}, {
		name:     "half-life 0: no decay",
		halfLife: 0,
		samples:  []sample{{1, 1, 0}, {10, 1, 100 * hl}},
		want:     stats{Mean: 5.5, StdDev: 4.5, Max: 10, P33: 3, P34: 3, P100: 10},
	}, {
		name:     "100 half-lives later the old sample no longer counts",
		halfLife: hl,
		samples:  []sample{{1, 1, 0}, {10, 1, 100 * hl}},
		// 2^-100 of the weight is left on 1 (then dropped at the rebase).
		want: stats{Mean: 10, StdDev: 0, Max: 10, P33: 10, P34: 10, P100: 10},
	}, {
		name:     "bad samples are ignored, negative values count as 0",
		halfLife: hl,
		samples:  []sample{{math.NaN(), 1, 0}, {math.Inf(1), 1, 0}, {5, 0, 0}, {5, -1, 0}, {5, math.NaN(), 0}, {-3, 1, 0}, {0, 1, 0}},
		// two samples of 0: bucket [0,1) capped at max 0.
		want: stats{Mean: 0, StdDev: 0, Max: 0, P33: 0, P34: 0, P100: 0},
	}, {
		name:     "empty",
		halfLife: hl,
		want:     stats{Empty: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := fill(pow2Layout(t, tc.halfLife).NewHistogram(), tc.samples...)
			if diff := cmp.Diff(tc.want, statsOf(h), approx); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistogramWeightHalvesEachHalfLife(t *testing.T) {
	h := fill(pow2Layout(t, time.Hour).NewHistogram(), sample{5, 1, 0})
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{0, 1},
		{time.Hour, 0.5},
		{2 * time.Hour, 0.25},
		{3 * time.Hour, 0.125},
		{90 * time.Minute, math.Pow(2, -1.5)},
	}
	for _, tc := range tests {
		t.Run(tc.at.String(), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, h.TotalWeight(t0.Add(tc.at)), approx); diff != "" {
				t.Errorf("TotalWeight (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a newer sample starts at full weight", func(t *testing.T) {
		h2 := fill(pow2Layout(t, time.Hour).NewHistogram(), sample{5, 1, 0}, sample{5, 1, time.Hour})
		// At 1h: 0.5 + 1; at 2h: 0.25 + 0.5.
		got := []float64{h2.TotalWeight(t0.Add(time.Hour)), h2.TotalWeight(t0.Add(2 * time.Hour))}
		if diff := cmp.Diff([]float64{1.5, 0.75}, got, approx); diff != "" {
			t.Errorf("TotalWeight (-want +got):\n%s", diff)
		}
	})
}

// TestPercentileWithinOneBucket checks Percentile against the exact
// (nearest-rank) percentile of the samples: it must land in the same bucket
// and never below the exact value.
func TestPercentileWithinOneBucket(t *testing.T) {
	l, err := NewLayout(HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() float64{
		"uniform 0-100":      func() float64 { return rng.Float64() * 100 },
		"exponential mean 3": func() float64 { return rng.ExpFloat64() * 3 },
		"normal 40±10":       func() float64 { return max(0, 40+10*rng.NormFloat64()) },
		"integers 0-20":      func() float64 { return float64(rng.IntN(21)) },
	}
	for name, gen := range dists {
		values := make([]float64, 5000)
		h := l.NewHistogram()
		for i := range values {
			values[i] = gen()
			h.AddSample(values[i], 1, t0)
		}
		slices.Sort(values)
		for _, p := range []float64{1, 10, 50, 90, 95, 99, 99.9, 100} {
			t.Run(name+"/p"+fmtNum(p), func(t *testing.T) {
				rank := max(1, int(math.Ceil(p/100*float64(len(values)))))
				exact := values[rank-1]
				got := h.Percentile(p)
				lower, upper := l.BucketBounds(l.bucket(exact))
				if got < exact || got > upper {
					t.Errorf("Percentile(%g) = %g, exact %g: want within its bucket [%g, %g] and not below it", p, got, exact, lower, upper)
				}
			})
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	l := pow2Layout(t, time.Hour)
	all := []sample{{1, 1, 0}, {4, 1, 30 * time.Minute}, {10, 1, time.Hour}, {20, 2, 3 * time.Hour}, {2, 1, 40 * time.Hour}}
	tests := []struct {
		name        string
		left, right []sample
	}{
		{"older into newer", all[2:], all[:2]},
		{"newer into older", all[:2], all[2:]},
		{"into empty", nil, all},
		{"empty into full", all, nil},
		{"interleaved", []sample{all[0], all[2], all[4]}, []sample{all[1], all[3]}},
	}
	want := fill(l.NewHistogram(), all...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := fill(l.NewHistogram(), tc.left...)
			b := fill(l.NewHistogram(), tc.right...)
			if err := a.Merge(b); err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if diff := cmp.Diff(statsOf(want), statsOf(a), approx); diff != "" {
				t.Errorf("merged stats (-want +got):\n%s", diff)
			}
			at := t0.Add(48 * time.Hour)
			if diff := cmp.Diff(want.TotalWeight(at), a.TotalWeight(at), approx); diff != "" {
				t.Errorf("merged weight (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("different layouts", func(t *testing.T) {
		err := l.NewHistogram().Merge(pow2Layout(t, 2*time.Hour).NewHistogram())
		if !errors.Is(err, ErrIncompatibleLayout) {
			t.Errorf("Merge error = %v, want ErrIncompatibleLayout", err)
		}
	})
}

func TestCheckpointRoundTrip(t *testing.T) {
	l := pow2Layout(t, time.Hour)
	before := []sample{{1, 1, 0}, {4, 1, 30 * time.Minute}, {10, 1, time.Hour}, {400, 1, 2 * time.Hour}}
	after := []sample{{20, 1, 3 * time.Hour}, {2, 1, 50 * time.Hour}}
	tests := []struct {
		name    string
		samples []sample
	}{
		{"empty", nil},
		{"one sample", before[:1]},
		{"several", before},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := fill(l.NewHistogram(), tc.samples...)
			raw, err := json.Marshal(orig.Checkpoint())
			if err != nil {
				t.Fatal(err)
			}
			var cp HistogramCheckpoint
			if err := json.Unmarshal(raw, &cp); err != nil {
				t.Fatal(err)
			}
			restored, err := l.Restore(cp)
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if diff := cmp.Diff(statsOf(orig), statsOf(restored)); diff != "" {
				t.Errorf("restored stats (-want +got):\n%s", diff)
			}
			// A restarted agent keeps adding samples: it must end where
			// one that never restarted ends.
			fill(orig, after...)
			fill(restored, after...)
			if diff := cmp.Diff(statsOf(orig), statsOf(restored)); diff != "" {
				t.Errorf("stats after more samples (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("only non-empty buckets", func(t *testing.T) {
		cp := fill(l.NewHistogram(), sample{1, 1, 0}, sample{400, 1, 0}).Checkpoint()
		// 1 is in bucket 1 [1,3); 400 in bucket 8 [255,511).
		want := []BucketWeight{{Index: 1, Weight: 1}, {Index: 8, Weight: 1}}
		if diff := cmp.Diff(want, cp.Buckets); diff != "" {
			t.Errorf("buckets (-want +got):\n%s", diff)
		}
	})
	t.Run("decayed buckets are dropped", func(t *testing.T) {
		cp := fill(l.NewHistogram(), sample{1, 1, 0}, sample{400, 1, 100 * time.Hour}).Checkpoint()
		want := []BucketWeight{{Index: 8, Weight: 1}}
		if diff := cmp.Diff(want, cp.Buckets); diff != "" {
			t.Errorf("buckets (-want +got):\n%s", diff)
		}
	})
}

func TestRestoreRejects(t *testing.T) {
	l := pow2Layout(t, time.Hour)
	good := fill(l.NewHistogram(), sample{1, 1, 0}, sample{10, 1, 0}).Checkpoint()
	tests := []struct {
		name       string
		mutate     func(*HistogramCheckpoint)
		incompat   bool
		wantFields []string
	}{{
		name:     "other half-life",
		mutate:   func(c *HistogramCheckpoint) { c.HalfLifeSeconds = 7200 },
		incompat: true,
	}, {
		name:     "other ratio",
		mutate:   func(c *HistogramCheckpoint) { c.Ratio = 1.05 },
		incompat: true,
	}, {
		name: "every bad field is named",
		mutate: func(c *HistogramCheckpoint) {
			c.Buckets = []BucketWeight{{Index: 3, Weight: 1}, {Index: 2, Weight: -1}, {Index: 99, Weight: 1}}
			c.Max = math.NaN()
		},
		wantFields: []string{"checkpoint.max", "checkpoint.buckets[1].i", "checkpoint.buckets[1].w", "checkpoint.buckets[2].i"},
	}, {
		name:       "buckets without weight",
		mutate:     func(c *HistogramCheckpoint) { c.TotalWeight = 0 },
		wantFields: []string{"checkpoint.totalWeight"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp := good
			cp.Buckets = slices.Clone(good.Buckets)
			tc.mutate(&cp)
			_, err := l.Restore(cp)
			if err == nil {
				t.Fatal("Restore succeeded, want an error")
			}
			if got := errors.Is(err, ErrIncompatibleLayout); got != tc.incompat {
				t.Errorf("errors.Is(err, ErrIncompatibleLayout) = %v, want %v (err: %v)", got, tc.incompat, err)
			}
			for _, f := range tc.wantFields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
}

func TestHistogramConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  HistogramConfig
		want []string
	}{
		{"valid", HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 1000, HalfLife: time.Hour}, nil},
		{"all wrong", HistogramConfig{FirstBucketSize: 0, Ratio: 1, MaxValue: -1, HalfLife: -time.Second},
			[]string{"h.firstBucketSize", "h.ratio", "h.maxValue", "h.halfLife"}},
		{"too many buckets", HistogramConfig{FirstBucketSize: 1e-9, Ratio: 1.0001, MaxValue: 1e12}, []string{"more than 10000 buckets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.cfg.Validate(field.NewPath("h"))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d naming %v", len(errs), errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to mention %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestLayoutBuckets(t *testing.T) {
	l := pow2Layout(t, 0)
	tests := []struct {
		v    float64
		want int
	}{
		// bounds 0, 1, 3, 7, 15, ...
		{0, 0}, {0.99, 0}, {1, 1}, {2.999, 1}, {3, 2}, {7, 3}, {14.9, 3}, {15, 4}, {1e9, l.NumBuckets() - 1},
	}
	for _, tc := range tests {
		if got := l.bucket(tc.v); got != tc.want {
			t.Errorf("bucket(%g) = %d, want %d", tc.v, got, tc.want)
		}
	}
	// Far above MaxValue the percentile is the real maximum, not the
	// last bucket's bound.
	h := fill(l.NewHistogram(), sample{5000, 1, 0})
	if got := h.Percentile(99); got != 5000 {
		t.Errorf("Percentile above MaxValue = %g, want 5000", got)
	}
}

// TestInlineBucketsAgreeWithOwnWeights holds a histogram from NewHistogram,
// whose first buckets live in its own allocation (histogramBlock), to one
// whose weights always have an allocation of their own, over random
// samples, decay, rebasing, merges, resets, clones and restores: their
// state must stay identical, bit for bit, as the weights move in and out of
// the inline buckets.
func TestInlineBucketsAgreeWithOwnWeights(t *testing.T) {
	l, err := NewLayout(HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 4096, HalfLife: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	value := func() float64 {
		switch rng.IntN(20) {
		case 0:
			return -1 // counts as 0
		case 1:
			return 1e4 // beyond the last bucket
		}
		// Mostly within a factor of 3 of 1 (inside 32 buckets), now and
		// then spread over 1e-3..1e3 (beyond them).
		spread := 0.5
		if rng.IntN(4) == 0 {
			spread = 3
		}
		return math.Pow(10, (rng.Float64()*2-1)*spread)
	}
	check := func(step int, what string, got, want *Histogram) {
		t.Helper()
		if got.lo != want.lo || !slices.Equal(got.weights, want.weights) {
			t.Fatalf("step %d (%s): buckets from %d %v, want from %d %v", step, what, got.lo, got.weights, want.lo, want.weights)
		}
		if diff := cmp.Diff(want.Checkpoint(), got.Checkpoint()); diff != "" {
			t.Fatalf("step %d (%s): checkpoint (-want +got):\n%s", step, what, diff)
		}
		for _, p := range []float64{0, 1, 50, 90, 99, 100} {
			if g, w := got.Percentile(p), want.Percentile(p); g != w {
				t.Fatalf("step %d (%s): p%g = %g, want %g", step, what, p, g, w)
			}
		}
	}
	inline, own := l.NewHistogram(), &Histogram{layout: l}
	at := t0
	var narrow, wide int // steps that ended within, and beyond, the inline buckets
	for step := range 5000 {
		switch op := rng.IntN(100); {
		case op < 2:
			inline.Reset()
			own.Reset()
		case op < 5:
			// Another pair, fed the same, merged into both.
			src, srcOwn := l.NewHistogram(), &Histogram{layout: l}
			for range rng.IntN(50) {
				v, when := value(), at.Add(-time.Duration(rng.IntN(48))*time.Hour)
				src.AddSample(v, 1, when)
				srcOwn.AddSample(v, 1, when)
			}
			check(step, "merge source", src, srcOwn)
			if err := inline.Merge(src); err != nil {
				t.Fatal(err)
			}
			if err := own.Merge(srcOwn); err != nil {
				t.Fatal(err)
			}
		case op < 8:
			// A clone is independent of its original.
			c := inline.Clone()
			inline.AddSample(value(), 1, at)
			check(step, "clone", c, own)
			inline = c
		case op < 10:
			r, err := l.Restore(inline.Checkpoint())
			if err != nil {
				t.Fatal(err)
			}
			check(step, "restore", r, own)
			inline = r
		default:
			if rng.IntN(200) == 0 {
				at = at.Add(time.Duration(31+rng.IntN(30)) * time.Hour) // rebases
			}
			at = at.Add(time.Duration(rng.IntN(600)) * time.Second)
			v, w := value(), 1+rng.Float64()
			inline.AddSample(v, w, at)
			own.AddSample(v, w, at)
		}
		check(step, "after the step", inline, own)
		if len(inline.weights) > inlineBuckets {
			wide++
		} else if len(inline.weights) > 0 {
			narrow++
		}
	}
	if narrow == 0 || wide == 0 {
		t.Errorf("%d steps within the inline buckets, %d beyond: want both", narrow, wide)
	}
}

// TestSamplerAgreesWithAddSample holds histograms fed by Samplers to
// histograms fed the same samples by AddSample, bit for bit: histograms
// of two half-lives (and none), started at different times or together,
// some fed only now and then, through rebases.
func TestSamplerAgreesWithAddSample(t *testing.T) {
	var layouts []*Layout
	for _, hl := range []time.Duration{0, time.Hour, 2 * time.Hour} {
		l, err := NewLayout(HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 4096, HalfLife: hl})
		if err != nil {
			t.Fatal(err)
		}
		layouts = append(layouts, l)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 40
	var viaSampler, viaAdd [n]*Histogram
	for i := range n {
		l := layouts[rng.IntN(len(layouts))]
		viaSampler[i], viaAdd[i] = l.NewHistogram(), l.NewHistogram()
	}
	at := t0
	var shared int // histograms that took a factor a Sampler worked out for another
	for step := range 2000 {
		at = at.Add(time.Duration(1+rng.IntN(600)) * time.Second)
		if rng.IntN(300) == 0 {
			at = at.Add(time.Duration(25+rng.IntN(50)) * time.Hour) // rebases some
		}
		s := NewSampler(at)
		for i := range n {
			if rng.IntN(4) == 0 && step > 0 {
				continue // not fed now: its reference time drifts from the others'
			}
			if rng.IntN(1000) == 0 {
				viaSampler[i].Reset()
				viaAdd[i].Reset()
			}
			v, w := rng.Float64()*10, 1+rng.Float64()
			known, ref := s.known, s.ref
			s.Add(viaSampler[i], v, w)
			viaAdd[i].AddSample(v, w, at)
			if known && ref == viaSampler[i].ref && viaSampler[i].layout.halfLifeSec > 0 { //nolint:staticcheck // QF1009: the Sampler's own test (==)
				shared++
			}
			a, b := viaAdd[i], viaSampler[i]
			if a.ref != b.ref || a.total != b.total || a.pivot != b.pivot || a.sum != b.sum || a.sumSq != b.sumSq ||
				a.max != b.max || a.lo != b.lo || !slices.Equal(a.weights, b.weights) {
				t.Fatalf("step %d, histogram %d: fed by a Sampler %+v, by AddSample %+v", step, i, *b, *a)
			}
		}
	}
	if shared == 0 {
		t.Errorf("no histogram took a factor worked out for another: the test shows nothing")
	}
}
