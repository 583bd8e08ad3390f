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
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// The fixture, on the power-of-two layout without decay (buckets [0,1)
// [1,3) [3,7) [7,15) ...):
//
//	node: 2 4 4 4 5 5 7 9   mean 5, sd 2 (the textbook example)
//	pod a: request 6, samples 1 3, mean 2, sd 1, started 2h ago
//	pod b: request 2, samples 2 2, mean 2, sd 0, started 2h ago
//	pod c: request 3, sample 1, started 10m ago (cold with the 1h cold start)
//
// Σ requests = 11.
type fixture struct {
	node    []float64
	a, b, c []float64
	noNode  bool
}

func (f fixture) input(t *testing.T) *Input {
	l := pow2Layout(t, 0)
	hist := func(vs []float64) *Histogram {
		h := l.NewHistogram()
		for _, v := range vs {
			h.AddSample(v, 1, t0)
		}
		return h
	}
	now := t0.Add(3 * time.Hour)
	in := &Input{Now: now, Node: hist(f.node)}
	if f.noNode {
		in.Node = nil
	}
	in.Pods = []PodInput{
		{Start: now.Add(-2 * time.Hour), Request: 6, Usage: hist(f.a)},
		{Start: now.Add(-2 * time.Hour), Request: 2, Usage: hist(f.b)},
		{Start: now.Add(-10 * time.Minute), Request: 3, Usage: hist(f.c)},
	}
	return in
}

var std = fixture{
	node: []float64{2, 4, 4, 4, 5, 5, 7, 9},
	a:    []float64{1, 3},
	b:    []float64{2, 2},
	c:    []float64{1},
}

func params(mod func(*Params)) Params {
	p := Params{N: 2, Percentile: 100, ColdStart: time.Hour, BorgOvercommit: 1.1}
	if mod != nil {
		mod(&p)
	}
	return p
}

func TestPredictors(t *testing.T) {
	tests := []struct {
		name  string
		model Predictor
		in    fixture
		want  Prediction
	}{{
		name:  "NSigmaV1: node mean + N·sd, plus the cold pod's request",
		model: NSigmaV1{params(nil)},
		in:    std,
		// 5 + 2·2 = 9; c is cold: + 3 = 12.
		want: Prediction{Peak: 12, ColdStartPods: 1},
	}, {
		name:  "NSigmaV1 with a 10% safety margin",
		model: NSigmaV1{params(func(p *Params) { p.SafetyMarginPercent = 10 })},
		in:    std,
		// 12 × 1.1 = 13.2.
		want: Prediction{Peak: 13.2, ColdStartPods: 1},
	}, {
		name:  "NSigmaV1 without cold start: node only, ready",
		model: NSigmaV1{params(func(p *Params) { p.ColdStart = 0 })},
		in:    std,
		want:  Prediction{Peak: 9, Ready: true},
	}, {
		name:  "NSigmaV1 with N = 5",
		model: NSigmaV1{params(func(p *Params) { p.N = 5; p.ColdStart = 0 })},
		in:    std,
		// 5 + 5·2 = 15.
		want: Prediction{Peak: 15, Ready: true},
	}, {
		name:  "NSigmaV1 without node history: Σ requests",
		model: NSigmaV1{params(nil)},
		in:    fixture{noNode: true, a: std.a, b: std.b, c: std.c},
		// 6 + 2 + 3 = 11, every pod counted at its request.
		want: Prediction{Peak: 11, ColdStartPods: 3},
	}, {
		name:  "NSigmaV2: node level wins",
		model: NSigmaV2{params(nil)},
		in:    std,
		// node 12 (as V1); pods: a 2+2·1 = 4, b 2+0 = 2, c cold 3 → 9; max 12.
		want: Prediction{Peak: 12, ColdStartPods: 1},
	}, {
		name:  "NSigmaV2: pod sum wins when the node history was quiet",
		model: NSigmaV2{params(func(p *Params) { p.ColdStart = 0 })},
		in:    fixture{node: []float64{4, 4}, a: std.a, b: std.b, c: std.c},
		// node 4 + 2·0 = 4; pods a 4, b 2, c 1 + 0 = 1 → 7.
		want: Prediction{Peak: 7, Ready: true},
	}, {
		name:  "BorgDefault: Σ requests ÷ 1.1",
		model: BorgDefault{params(nil)},
		in:    std,
		// 11 / 1.1 = 10, whatever the usage.
		want: Prediction{Peak: 10, Ready: true},
	}, {
		name:  "BorgDefault takes no safety margin: a is its margin",
		model: BorgDefault{params(func(p *Params) { p.SafetyMarginPercent = 10 })},
		in:    std,
		want:  Prediction{Peak: 10, Ready: true},
	}, {
		name:  "ResourceCentral p100: Σ per-pod peaks, request for the cold pod",
		model: ResourceCentral{params(nil)},
		in:    std,
		// a: 3 (bucket [3,7) capped at max 3), b: 2 ([1,3) capped at 2), c cold: 3 → 8.
		want: Prediction{Peak: 8, ColdStartPods: 1},
	}, {
		name:  "ResourceCentral without cold start",
		model: ResourceCentral{params(func(p *Params) { p.ColdStart = 0 })},
		in:    std,
		// a 3, b 2, c 1 → 6.
		want: Prediction{Peak: 6, Ready: true},
	}, {
		name:  "ResourceCentral: an old pod without history counts at its request",
		model: ResourceCentral{params(func(p *Params) { p.ColdStart = 0 })},
		in:    fixture{node: std.node, a: nil, b: std.b, c: std.c},
		// a has no samples: 6; b 2; c 1 → 9.
		want: Prediction{Peak: 9, ColdStartPods: 1},
	}, {
		name:  "PercentilePeak p100: node maximum plus the cold pod",
		model: PercentilePeak{params(nil)},
		in:    std,
		// max 9 (bucket [7,15) capped at 9) + 3 = 12.
		want: Prediction{Peak: 12, ColdStartPods: 1},
	}, {
		name:  "PercentilePeak p50",
		model: PercentilePeak{params(func(p *Params) { p.Percentile = 50; p.ColdStart = 0 })},
		in:    std,
		// 4 of 8 samples: {2} fills [1,3), {4,4,4,5,5} reach 6 ≥ 4 in [3,7) → 7.
		want: Prediction{Peak: 7, Ready: true},
	}, {
		name:  "Max of V2, Borg and RC",
		model: Max{NSigmaV2{params(nil)}, BorgDefault{params(nil)}, ResourceCentral{params(nil)}},
		in:    std,
		// max(12, 10, 8) = 12; cold pods: the most any model saw.
		want: Prediction{Peak: 12, ColdStartPods: 1},
	}, {
		name:  "Max picks Borg when usage history is low",
		model: Max{NSigmaV2{params(func(p *Params) { p.ColdStart = 0 })}, BorgDefault{params(nil)}},
		in:    fixture{node: []float64{4, 4}, a: std.a, b: std.b, c: std.c},
		// max(7, 10) = 10.
		want: Prediction{Peak: 10, Ready: true},
	}, {
		name:  "empty Max",
		model: Max{},
		in:    std,
		want:  Prediction{Ready: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.model.Predict(tc.in.input(t))
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("%s.Predict (-want +got):\n%s", tc.model, diff)
			}
		})
	}
}

func TestNewMaxOf(t *testing.T) {
	in := std.input(t)
	// Koordinator node prediction's example (docs/design/prediction.md#models),
	// Max_Borg-default_ResourceCentral:
	// max(Σ requests ÷ 1.1 = 10, Σ p100 = 8) = 10.
	m, err := New(v1alpha1.PredictMax, params(func(p *Params) {
		p.MaxOf = []v1alpha1.PredictModel{v1alpha1.PredictBorgDefault, v1alpha1.PredictResourceCentral}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Predict(in).Peak; math.Abs(got-10) > 1e-9 {
		t.Errorf("Max(BorgDefault, ResourceCentral) peak = %v, want 10", got)
	}
	if _, err := New(v1alpha1.PredictMax, params(func(p *Params) { p.MaxOf = []v1alpha1.PredictModel{v1alpha1.PredictMax} })); err == nil ||
		!strings.Contains(err.Error(), "maxOf[0]") {
		t.Errorf("New(Max of Max) error = %v, want one naming maxOf[0]", err)
	}
}

func TestNew(t *testing.T) {
	in := std.input(t)
	tests := []struct {
		model    v1alpha1.PredictModel
		wantName string
		wantPeak float64
	}{
		{v1alpha1.PredictNSigmaV1, "NSigmaV1(n=2)", 12},
		{v1alpha1.PredictNSigmaV2, "NSigmaV2(n=2)", 12},
		{v1alpha1.PredictBorgDefault, "BorgDefault(a=1.1)", 10},
		{v1alpha1.PredictResourceCentral, "ResourceCentral(p=100)", 8},
		{v1alpha1.PredictPercentilePeak, "PercentilePeak(p=100)", 12},
		// Max with MaxOf unset: the API default, max(NSigmaV2 12, ResourceCentral 8).
		{v1alpha1.PredictMax, "Max(NSigmaV2(n=2),ResourceCentral(p=100))", 12},
	}
	for _, tc := range tests {
		t.Run(string(tc.model), func(t *testing.T) {
			// BorgOvercommit 0 means the default 1.1.
			m, err := New(tc.model, params(func(p *Params) { p.BorgOvercommit = 0 }))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if diff := cmp.Diff(tc.wantName, m.String()); diff != "" {
				t.Errorf("name (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPeak, m.Predict(in).Peak, approx); diff != "" {
				t.Errorf("peak (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unknown model", func(t *testing.T) {
		if _, err := New("Prophet", params(nil)); err == nil || !strings.Contains(err.Error(), `"Prophet"`) {
			t.Errorf("New(Prophet) error = %v, want one naming the model", err)
		}
	})
	t.Run("every bad parameter is named", func(t *testing.T) {
		_, err := New(v1alpha1.PredictNSigmaV1, Params{N: -1, Percentile: 0, ColdStart: -time.Second, SafetyMarginPercent: -5, BorgOvercommit: -1})
		if err == nil {
			t.Fatal("New succeeded, want an error")
		}
		for _, f := range []string{"params.n", "params.percentile", "params.coldStart", "params.safetyMarginPercent", "params.borgOvercommit"} {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("error %q does not name %s", err, f)
			}
		}
	})
}

func TestParamsFromPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy *v1alpha1.PredictPolicy
		want   Params
	}{{
		name:   "nil: the API defaults",
		policy: nil,
		want:   Params{N: float64(v1alpha1.DefaultPredictNSigma), Percentile: 99, ColdStart: time.Hour, SafetyMarginPercent: 10, BorgOvercommit: 1.1, MaxOf: v1alpha1.DefaultMaxOf},
	}, {
		name: "set fields win, unset ones default",
		policy: &v1alpha1.PredictPolicy{
			NSigma: ptr.To[int32](3), ColdStartSeconds: ptr.To[int64](0), SafetyMarginPercent: ptr.To[int32](0),
		},
		want: Params{N: 3, Percentile: 99, ColdStart: 0, SafetyMarginPercent: 0, BorgOvercommit: 1.1, MaxOf: v1alpha1.DefaultMaxOf},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParamsFromPolicy(tc.policy)); diff != "" {
				t.Errorf("ParamsFromPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBorgDefaultFromPolicy: the policy's defaults predict Σ requests ÷
// 1.1 -- not Σ requests, which the 10 % safety margin made of it -- and a
// is settable in the policy.
func TestBorgDefaultFromPolicy(t *testing.T) {
	in := &Input{Pods: []PodInput{{Request: 6}, {Request: 5}}}
	for _, tc := range []struct {
		name   string
		policy *v1alpha1.PredictPolicy
		want   float64
	}{
		{"defaults", nil, 10},
		{"a = 1.25", &v1alpha1.PredictPolicy{BorgOvercommitPercent: ptr.To[int32](125)}, 8.8},
		{"a = 1 with a 20 % margin", &v1alpha1.PredictPolicy{BorgOvercommitPercent: ptr.To[int32](100), SafetyMarginPercent: ptr.To[int32](20)}, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(v1alpha1.PredictBorgDefault, ParamsFromPolicy(tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Predict(in).Peak; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("%s predicts %v, want %v", m, got, tc.want)
			}
		})
	}
}
