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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixed predicts the same peak whatever the input.
type fixed float64

func (f fixed) Predict(*Input) Prediction { return Prediction{Peak: float64(f), Ready: true} }
func (f fixed) String() string            { return "fixed(" + fmtNum(float64(f)) + ")" }

// sawPeak is PercentilePeak(p=100) without margin or cold start: the
// largest sample seen so far.
var sawPeak = PercentilePeak{Params{Percentile: 100}}

func TestEvaluate(t *testing.T) {
	l := pow2Layout(t, 0)
	// Node usage every 10 s: 1 2 3 10 3 2 at t = 0 … 50.
	spiky := Series{Times: []int64{0, 10, 20, 30, 40, 50}, Values: []float64{1, 2, 3, 10, 3, 2}}
	cfg := EvalConfig{Layout: l, Step: 10 * time.Second, Horizon: 10 * time.Second}
	tests := []struct {
		name   string
		node   NodeTrace
		models []Predictor
		cfg    func(*EvalConfig)
		want   EvalResult
	}{{
		name:   "node only, against capacity",
		node:   NodeTrace{Name: "n", Capacity: 20, Usage: spiky},
		models: []Predictor{sawPeak, fixed(25)},
		// Only full windows: T + 10 ≤ 50 + 1, so T = 10 … 40.
		// Seen max before T: 1 2 3 10; real peak of [T, T+10): 2 3 10 3
		// → 3 violations (T = 10, 20, 30).
		// Savings 1 − pred/20: .95 + .9 + .85 + .5 = 3.2.
		// fixed(25) is above the capacity: no violation, saves 0.
		// Oracle: 1 − peak/20: .9 + .85 + .5 + .85 = 3.1.
		want: EvalResult{
			Scores: []Score{
				{Model: "PercentilePeak(p=100)", Intervals: 4, Violations: 3, SavingsSum: 3.2},
				{Model: "fixed(25)", Intervals: 4, Violations: 0, SavingsSum: 0},
			},
			Oracle: Score{Model: OracleModel, Intervals: 4, SavingsSum: 3.1},
		},
	}, {
		name:   "warm-up skips the first predictions",
		node:   NodeTrace{Name: "n", Capacity: 20, Usage: spiky},
		models: []Predictor{sawPeak},
		cfg:    func(c *EvalConfig) { c.Warmup = 25 * time.Second },
		// Only T = 30, 40: predictions 3 10 vs peaks 10 3.
		// Savings .85 + .5 = 1.35; oracle .5 + .85 = 1.35.
		want: EvalResult{
			Scores: []Score{{Model: "PercentilePeak(p=100)", Intervals: 2, Violations: 1, SavingsSum: 1.35}},
			Oracle: Score{Model: OracleModel, Intervals: 2, SavingsSum: 1.35},
		},
	}, {
		name:   "a longer horizon must cover the next spike",
		node:   NodeTrace{Name: "n", Capacity: 20, Usage: spiky},
		models: []Predictor{sawPeak},
		cfg:    func(c *EvalConfig) { c.Horizon = 30 * time.Second },
		// T = 10, 20 (T + 30 ≤ 51): windows [10,40) → 10, [20,50) → 10;
		// predictions 1, 2: both violated. Savings .95 + .9; oracle .5 + .5.
		want: EvalResult{
			Scores: []Score{{Model: "PercentilePeak(p=100)", Intervals: 2, Violations: 2, SavingsSum: 1.85}},
			Oracle: Score{Model: OracleModel, Intervals: 2, SavingsSum: 1},
		},
	}, {
		name: "windows without samples are not scored",
		node: NodeTrace{Name: "n", Capacity: 10, Usage: Series{
			Times: []int64{0, 10, 40, 50}, Values: []float64{5, 5, 5, 5}}},
		models: []Predictor{fixed(5)},
		// T = 10 … 40; [20,30) and [30,40) are empty: T = 10, 40 scored,
		// each saving 1 − 5/10.
		want: EvalResult{
			Scores: []Score{{Model: "fixed(5)", Intervals: 2, SavingsSum: 1}},
			Oracle: Score{Model: OracleModel, Intervals: 2, SavingsSum: 1},
		},
	}, {
		name: "pods: Σ limits of running pods is the denominator, requests feed Borg",
		node: NodeTrace{
			Name:     "n",
			Capacity: 1000, // ignored while pods with limits run
			Usage:    Series{Times: []int64{0, 10, 20, 30, 40}, Values: []float64{2, 2, 6, 6, 6}},
			Pods: []PodTrace{
				{Name: "a", Request: 4, Limit: 8, Usage: Series{Times: []int64{0, 10, 20, 30, 40}, Values: []float64{2, 2, 2, 2, 2}}},
				// b runs from t = 20: it joins at T = 30.
				{Name: "b", Request: 4, Usage: Series{Times: []int64{20, 30, 40}, Values: []float64{4, 4, 4}}},
			},
		},
		models: []Predictor{BorgDefault{Params{BorgOvercommit: 1}}},
		// T = 10: only a runs: limit 8, Borg 4/1 = 4 vs peak 2 → ok, saves .5.
		// T = 20: b's first sample is at 20, not before T: same as T = 10 but peak 6 → violated, saves .5.
		// T = 30: a + b: limits 8 + 4 (b has no limit: its request) = 12;
		//         Borg (4+4)/1 = 8 vs 6 → ok, saves 1 − 8/12 = 1/3.
		// Oracle: 1 − 2/8, 1 − 6/8, 1 − 6/12 = .75 + .25 + .5.
		want: EvalResult{
			Scores: []Score{{Model: "BorgDefault(a=1)", Intervals: 3, Violations: 1, SavingsSum: 0.5 + 0.5 + 1.0/3}},
			Oracle: Score{Model: OracleModel, Intervals: 3, SavingsSum: 1.5},
		},
	}, {
		name: "a pod that ended no longer counts",
		node: NodeTrace{
			Name:     "n",
			Capacity: 10,
			Usage:    Series{Times: []int64{0, 10, 20, 30, 40}, Values: []float64{1, 1, 1, 1, 1}},
			Pods: []PodTrace{
				{Name: "gone", Request: 5, Limit: 5, Usage: Series{Times: []int64{0}, Values: []float64{1}}},
			},
		},
		models: []Predictor{BorgDefault{Params{BorgOvercommit: 1}}},
		// T = 10, 20, 30: "gone" ended at 0 < T: no pods, so Borg
		// predicts 0 (violated by the usage 1 every time) against the
		// capacity 10, saving 1 each time; oracle 1 − 1/10 each.
		want: EvalResult{
			Scores: []Score{{Model: "BorgDefault(a=1)", Intervals: 3, Violations: 3, SavingsSum: 3}},
			Oracle: Score{Model: OracleModel, Intervals: 3, SavingsSum: 2.7},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			got, err := Evaluate(tc.node, tc.models, c)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluateRejectsBadInput(t *testing.T) {
	l := pow2Layout(t, 0)
	node := NodeTrace{
		Name:     "n1",
		Capacity: -1,
		Usage:    Series{Times: []int64{0, 20, 10}, Values: []float64{1, 1, 1}},
		Pods:     []PodTrace{{Name: "p", Request: -2, Usage: Series{Times: []int64{0}, Values: []float64{1, 2}}}},
	}
	_, err := Evaluate(node, []Predictor{sawPeak}, EvalConfig{Layout: l, Step: 1500 * time.Millisecond, Warmup: -time.Second})
	if err == nil {
		t.Fatal("Evaluate succeeded, want an error")
	}
	for _, want := range []string{`node "n1"`, "config.step", "config.horizon", "config.warmup", "usage.times[2]", "capacity", "pods[0].usage.values", "pods[0].request"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestScore(t *testing.T) {
	var s Score
	s.Add(Score{Intervals: 4, Violations: 1, SavingsSum: 2})
	s.Add(Score{Intervals: 6, Violations: 0, SavingsSum: 3})
	// 1 of 10 violated; savings 5 / 10.
	if diff := cmp.Diff([]float64{0.1, 0.5}, []float64{s.ViolationRate(), s.Savings()}); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
	var empty Score
	if empty.ViolationRate() != 0 || empty.Savings() != 0 {
		t.Errorf("empty score rates = %g, %g; want 0, 0", empty.ViolationRate(), empty.Savings())
	}
}
