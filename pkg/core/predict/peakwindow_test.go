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
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type fedValue struct {
	V  float64
	At int64
}

func TestSeriesFeed(t *testing.T) {
	// Windows of 300 s: [−300, 0) holds −5 (7); [0, 300) holds 0, 100,
	// 299 (1 5 3); [300, 600) holds 300 (2); [600, 900) holds 610 (4).
	s := Series{Times: []int64{-5, 0, 100, 299, 300, 610}, Values: []float64{7, 1, 5, 3, 2, 4}}
	tests := []struct {
		name   string
		window int64
		calls  []int64 // until(T) for each, in order
		want   [][]fedValue
	}{{
		name:   "every sample, before T",
		window: 0,
		calls:  []int64{100, 100, 1000},
		want: [][]fedValue{
			{{7, -5}, {1, 0}},
			nil,
			{{5, 100}, {3, 299}, {2, 300}, {4, 610}},
		},
	}, {
		name:   "one maximum per window, at its end, once it has ended",
		window: 300,
		// At 299 the window [0, 300) is still open (its sample at 299 is
		// not before T); at 300 it has ended. 610's window ends at 900.
		calls: []int64{299, 300, 899, 900},
		want: [][]fedValue{
			{{7, 0}},
			{{5, 300}},
			{{2, 600}},
			{{4, 900}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := seriesFeed{series: s, window: tc.window}
			for i, T := range tc.calls {
				var got []fedValue
				f.until(T, func(v float64, at time.Time) { got = append(got, fedValue{v, at.Unix()}) })
				if diff := cmp.Diff(tc.want[i], got); diff != "" {
					t.Errorf("until(%d) (-want +got):\n%s", T, diff)
				}
			}
		})
	}
}

// TestEvaluateNextBucketPeakWindow checks that with a peak window of one
// bucket the histograms learn the bucket maxima: without decay, N-sigma
// over them is the window baseline over the same buckets.
func TestEvaluateNextBucketPeakWindow(t *testing.T) {
	// Buckets 0–2 have maxima 2 4 6 (mean 4, population sd √(8/3) ≈ 1.633)
	// and their samples 1 2, 4 3, 6 5 (mean 3.5, sd ≈ 1.708). Bucket 3
	// is predicted: n = 1 gives 5.633 from the maxima (no violation of
	// 5.6) but 5.208 from the samples (a violation).
	node := NodeTrace{Name: "n", Capacity: 100, Usage: perBucket([]float64{1, 2}, []float64{4, 3}, []float64{6, 5}, []float64{5.6})}
	node.Pods = []PodTrace{{Name: "p", Request: 100, Limit: 100, Usage: node.Usage}}
	fromMaxima := 4 + math.Sqrt(8.0/3)
	fromSamples := 3.5 + math.Sqrt((2.5*2.5+1.5*1.5+0.5*0.5+0.5*0.5+2.5*2.5+1.5*1.5)/6)
	models := []Predictor{NSigmaV1{Params{N: 1}}, NSigmaV2{Params{N: 1}}}
	for _, tc := range []struct {
		peakWindow time.Duration
		peak       float64
		violations int
	}{
		{0, fromSamples, 1},
		{5 * time.Minute, fromMaxima, 0},
		// Windows of 10 s hold one sample each here: every sample.
		{10 * time.Second, fromSamples, 1},
	} {
		cfg := BucketEvalConfig{Layout: pow2Layout(t, 0), Bucket: 5 * time.Minute, Contiguous: 3, PeakWindow: tc.peakWindow}
		res, err := EvaluateNextBucket(node, []WindowNSigma{{Window: 3, N: 1}}, models, cfg)
		if err != nil {
			t.Fatalf("peak window %s: %v", tc.peakWindow, err)
		}
		if b := res.Baselines[0]; b.Predictions != 1 || b.Violations != 0 || math.Abs(b.PeakSum-fromMaxima/100) > 1e-12 {
			t.Errorf("baseline %+v, want one prediction of %.4f without violation", b, fromMaxima)
		}
		for _, s := range res.Scores {
			if s.Predictions != 1 || s.Violations != tc.violations || math.Abs(s.PeakSum-tc.peak/100) > 1e-12 {
				t.Errorf("peak window %s: %+v, want one prediction of %.4f with %d violations", tc.peakWindow, s, tc.peak, tc.violations)
			}
		}
	}
}

func TestEvaluatePeakWindow(t *testing.T) {
	// Samples 1 3 | 2 2 | 9 | 0 at 10, 20 | 310, 320 | 610 | 910
	// (windows of 300 s). At T = 610 the maxima 3 and 2 have been fed
	// (mean 2.5, sd 0.5; the samples would give 2 + 0.707), so
	// NSigmaV1(n=1) predicts 3 and the 9 of [610, 910) violates it.
	node := NodeTrace{Name: "n", Capacity: 10, Usage: perBucket([]float64{1, 3}, []float64{2, 2}, []float64{9}, []float64{0})}
	cfg := EvalConfig{Layout: pow2Layout(t, 0), Step: 10 * time.Minute, Horizon: 5 * time.Minute, PeakWindow: 5 * time.Minute}
	res, err := Evaluate(node, []Predictor{NSigmaV1{Params{N: 1}}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := Score{Model: "NSigmaV1(n=1)", Intervals: 1, Violations: 1, SavingsSum: 1 - 3.0/10}
	if diff := cmp.Diff(want, res.Scores[0]); diff != "" {
		t.Errorf("score (-want +got):\n%s", diff)
	}
}

func TestPeakWindowRejected(t *testing.T) {
	node := NodeTrace{Name: "n", Capacity: 10, Usage: perBucket([]float64{1})}
	for _, d := range []time.Duration{-time.Second, 1500 * time.Millisecond} {
		_, err := EvaluateNextBucket(node, nil, nil, BucketEvalConfig{Bucket: time.Minute, Contiguous: 1, PeakWindow: d})
		if err == nil || !strings.Contains(err.Error(), "config.peakWindow") {
			t.Errorf("next-bucket, peak window %s: error %v, want one naming config.peakWindow", d, err)
		}
		_, err = Evaluate(node, nil, EvalConfig{Layout: pow2Layout(t, 0), Step: time.Minute, Horizon: time.Minute, PeakWindow: d})
		if err == nil || !strings.Contains(err.Error(), "config.peakWindow") {
			t.Errorf("horizon, peak window %s: error %v, want one naming config.peakWindow", d, err)
		}
	}
}
