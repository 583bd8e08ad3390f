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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// perBucket builds a series with the given samples in consecutive
// 300 s buckets from bucket 0: each inner slice is one bucket's values, at
// 300·b + 10, 300·b + 20, …; nil leaves the bucket empty.
func perBucket(buckets ...[]float64) Series {
	var s Series
	for b, vs := range buckets {
		for i, v := range vs {
			s.Times = append(s.Times, int64(300*b+10*(i+1)))
			s.Values = append(s.Values, v)
		}
	}
	return s
}

func TestBucketMaxima(t *testing.T) {
	s := Series{Times: []int64{-5, 0, 10, 299, 300, 650}, Values: []float64{7, 1, 3, 2, 4, 5}}
	index, maxima := BucketMaxima(s, 300)
	// -5 is in bucket −1 (floor, not truncation); 0, 10, 299 in bucket 0;
	// bucket 1 holds 300; 650 is in bucket 2.
	if diff := cmp.Diff([]int64{-1, 0, 1, 2}, index); diff != "" {
		t.Errorf("index (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{7, 3, 4, 5}, maxima); diff != "" {
		t.Errorf("maxima (-want +got):\n%s", diff)
	}
}

func TestEvaluateNextBucket(t *testing.T) {
	l := pow2Layout(t, 0)
	cfg := BucketEvalConfig{Layout: l, Bucket: 5 * time.Minute}
	tests := []struct {
		name       string
		node       NodeTrace
		baselines  []WindowNSigma
		models     []Predictor
		contiguous int
		want       BucketResult
	}{{
		name: "population standard deviation",
		// Maxima 2 4 4 4 5 5 7 9: mean 5, population sd 2 (the sample sd
		// would be 2.14). n = 5 predicts 15 for bucket 8, whose maximum
		// 15.5 exceeds it (the sample sd would predict 15.69: no violation).
		node: NodeTrace{Name: "n", Capacity: 100, Usage: perBucket(
			[]float64{1, 2}, []float64{4}, []float64{4, 3}, []float64{4}, []float64{5}, []float64{5}, []float64{7}, []float64{9},
			[]float64{15.5, 0})},
		baselines:  []WindowNSigma{{Window: 8, N: 5}, {Window: 8, N: 0}},
		contiguous: 8,
		want: BucketResult{Baselines: []PeakScore{
			{Model: "window(w=8,n=5)", Predictions: 1, Violations: 1, PeakSum: 0.15},
			{Model: "window(w=8,n=0)", Predictions: 1, Violations: 1, PeakSum: 0.05},
		}, Scores: []PeakScore{}},
	}, {
		name: "predictions are capped at the capacity",
		// Maxima 0 10 0 10: mean 5, sd 5; n = 5 predicts 30, capped at
		// 10; bucket 4 reaches 10 exactly: no violation, and the mean
		// peak is the whole node.
		node:       NodeTrace{Name: "n", Capacity: 10, Usage: perBucket([]float64{0}, []float64{10}, []float64{0}, []float64{10}, []float64{10})},
		baselines:  []WindowNSigma{{Window: 4, N: 5}},
		contiguous: 4,
		want: BucketResult{Baselines: []PeakScore{{Model: "window(w=4,n=5)", Predictions: 1, PeakSum: 1}},
			Scores: []PeakScore{}},
	}, {
		name: "only buckets after enough contiguous buckets are scored",
		// Buckets 0–3 and 5–9 hold samples; 4 is empty. Window 3: bucket 3
		// (after 0, 1, 2), 8 (after 5, 6, 7) and 9 are predicted; 5, 6, 7
		// are not (the gap is in their window). Maxima 1 1 1 2 _ 1 1 1 1 3:
		// bucket 3 predicts 1 (sd 0) < 2; bucket 8 predicts 1 = 1; bucket 9
		// predicts 1 < 3.
		node: NodeTrace{Name: "n", Capacity: 10, Usage: perBucket(
			[]float64{1}, []float64{1}, []float64{1}, []float64{2}, nil,
			[]float64{1}, []float64{1}, []float64{1}, []float64{1}, []float64{3})},
		baselines:  []WindowNSigma{{Window: 3, N: 5}},
		contiguous: 3,
		want: BucketResult{Baselines: []PeakScore{{Model: "window(w=3,n=5)", Predictions: 3, Violations: 2, PeakSum: 0.3}},
			Scores: []PeakScore{}},
	}, {
		name: "a longer contiguity rule scores fewer buckets",
		// The same trace with 4 buckets required before: bucket 3 has only
		// 3 before it, bucket 8 has the gap at 4; only bucket 9 (after
		// 5–8) is scored, with the same 3-bucket window.
		node: NodeTrace{Name: "n", Capacity: 10, Usage: perBucket(
			[]float64{1}, []float64{1}, []float64{1}, []float64{2}, nil,
			[]float64{1}, []float64{1}, []float64{1}, []float64{1}, []float64{3})},
		baselines:  []WindowNSigma{{Window: 3, N: 5}},
		contiguous: 4,
		want: BucketResult{Baselines: []PeakScore{{Model: "window(w=3,n=5)", Predictions: 1, Violations: 1, PeakSum: 0.1}},
			Scores: []PeakScore{}},
	}, {
		name: "models predict at the bucket's start from the samples before it",
		// Buckets 0: 1 3, 1: 2 2, 2: 4 1, 3: 9 (at t = 910, ... but the
		// model must not see it before predicting bucket 3). Window 2:
		// bucket 2 ← mean(3, 2) = 2.5 < 4; bucket 3 ← mean(2, 4) = 3 < 9.
		// The largest sample before 600 is 3 (< 4), before 900 it is 4
		// (< 9): both violated too. fixed(20) is capped at 10.
		node: NodeTrace{Name: "n", Capacity: 10, Usage: perBucket(
			[]float64{1, 3}, []float64{2, 2}, []float64{4, 1}, []float64{9})},
		baselines:  []WindowNSigma{{Window: 2, N: 0}},
		models:     []Predictor{sawPeak, fixed(20)},
		contiguous: 2,
		want: BucketResult{
			Baselines: []PeakScore{{Model: "window(w=2,n=0)", Predictions: 2, Violations: 2, PeakSum: 0.55}},
			Scores: []PeakScore{
				{Model: "PercentilePeak(p=100)", Predictions: 2, Violations: 2, PeakSum: 0.7},
				{Model: "fixed(20)", Predictions: 2, PeakSum: 2},
			},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Contiguous = tc.contiguous
			got, err := EvaluateNextBucket(tc.node, tc.baselines, tc.models, c)
			if err != nil {
				t.Fatalf("EvaluateNextBucket: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("EvaluateNextBucket (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluateNextBucketRejectsBadInput(t *testing.T) {
	node := NodeTrace{Name: "n1", Usage: Series{Times: []int64{0, 20, 10}, Values: []float64{1, 1, 1}}}
	_, err := EvaluateNextBucket(node, []WindowNSigma{{Window: 0, N: -1}, {Window: 4, N: 1}}, []Predictor{sawPeak},
		BucketEvalConfig{Bucket: 1500 * time.Millisecond, Contiguous: 2})
	if err == nil {
		t.Fatal("EvaluateNextBucket succeeded, want an error")
	}
	for _, want := range []string{`node "n1"`, "config.layout", "config.bucket", "config.baselines[0].window",
		"config.baselines[0].n", "config.contiguous", "usage.times[2]", "capacity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestMatchMeanPeak(t *testing.T) {
	// A family whose mean peak is x/10 and whose violations fall as x
	// grows.
	calls := 0
	eval := func(xs []float64) ([]PeakScore, error) {
		calls++
		out := make([]PeakScore, len(xs))
		for i, x := range xs {
			out[i] = PeakScore{Model: "f(" + fmtNum(x) + ")", Predictions: 100, Violations: int(100 - 10*x), PeakSum: 10 * x}
		}
		return out, nil
	}
	x, s, err := MatchMeanPeak(0, 10, 0.37, 11, 4, eval)
	if err != nil {
		t.Fatalf("MatchMeanPeak: %v", err)
	}
	if x != 3.7 || s.Model != "f(3.7)" || s.Violations != 63 {
		t.Errorf("MatchMeanPeak(0.37) = %v, %+v; want 3.7 and its score", x, s)
	}
	if calls != 4 {
		t.Errorf("eval called %d times, want one per round (4)", calls)
	}

	if _, s, err := MatchMeanPeak(0, 10, 2, 11, 4, eval); !errors.Is(err, ErrPeakOutOfReach) || s.Model != "f(10)" {
		t.Errorf("a target above the family: %+v, %v; want hi's score and ErrPeakOutOfReach", s, err)
	}
	if x, _, err := MatchMeanPeak(5, 10, 0.2, 11, 4, eval); !errors.Is(err, ErrPeakOutOfReach) || x != 5 {
		t.Errorf("a target below the family: %v, %v; want lo and ErrPeakOutOfReach", x, err)
	}
	if _, _, err := MatchMeanPeak(1, 0, 0.5, 11, 4, eval); err == nil {
		t.Error("an empty range was accepted")
	}
}
