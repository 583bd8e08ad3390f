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

package nodeload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestScore(t *testing.T) {
	// 16 cores, 64Gi; the pod adds (1000m, 1Gi).
	alloc := vec(16000, 64*Gi)
	prodPod := PodLoad{Estimate: vec(1000, 1*Gi), Prod: true}
	midPod := PodLoad{Estimate: vec(1000, 1*Gi)}
	now := t0.Add(10 * time.Second)
	usual := makeMetric("n", t0).usage("cpu", "4", "memory", "16Gi").
		pod("ns", "p", extension.BandProd, "cpu", "2", "memory", "8Gi").
		aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "12", "memory", "32Gi").obj()
	tests := []struct {
		name       string
		spec       func(*Spec)
		pod        PodLoad
		metric     *v1alpha1.NodeMetric
		excess     Vector
		prodExcess Vector
		now        time.Time
		want       int64
	}{{
		name:   "weighted least used",
		pod:    midPod,
		metric: usual,
		// used (5000, 17Gi): cpu ⌊11000 × 100 / 16000⌋ = 68; memory ⌊47 × 100 / 64⌋ = 73; (68 + 73) / 2 = 70.
		want: 70,
	}, {
		// Prod pods quiet now (2 cores) but predicted to peak at 8: the
		// node is scored as if 4 + 6 cores were used.
		name: "prediction: a Mid pod scored by the predicted Prod peak",
		spec: func(s *Spec) { s.ScoreAccordingPrediction = true },
		pod:  midPod,
		metric: makeMetric("n", t0).usage("cpu", "4", "memory", "16Gi").
			pod("ns", "p", extension.BandProd, "cpu", "2", "memory", "8Gi").prodPeak("cpu", "8", "memory", "8Gi").obj(),
		// used (4000 + 6000 + 1000, 17Gi): cpu ⌊5000 × 100 / 16000⌋ = 31; memory 73; ⌊104 / 2⌋ = 52.
		want: 52,
	}, {
		name: "prediction off: the same node scored by node usage",
		pod:  midPod,
		metric: makeMetric("n", t0).usage("cpu", "4", "memory", "16Gi").
			pod("ns", "p", extension.BandProd, "cpu", "2", "memory", "8Gi").prodPeak("cpu", "8", "memory", "8Gi").obj(),
		want: 70,
	}, {
		name: "prediction with Prod scoring: max(Prod usage, peak)",
		spec: func(s *Spec) { s.ScoreAccordingPrediction = true; s.ScoreAccordingProdUsage = true },
		pod:  prodPod,
		metric: makeMetric("n", t0).usage("cpu", "4", "memory", "16Gi").
			pod("ns", "p", extension.BandProd, "cpu", "2", "memory", "8Gi").prodPeak("cpu", "8", "memory", "8Gi").obj(),
		// used (8000 + 1000, 8Gi + 1Gi): cpu ⌊7000 × 100 / 16000⌋ = 43; memory ⌊55 × 100 / 64⌋ = 85; 64.
		want: 64,
	}, {
		name:   "dominant resource weight",
		spec:   func(s *Spec) { s.DominantResourceWeight = 2 },
		pod:    midPod,
		metric: usual,
		// dominant is cpu (68 < 73): (68 + 73 + 2 × 68) / (1 + 1 + 2) = 277 / 4 = 69.
		want: 69,
	}, {
		name:   "resource weights",
		spec:   func(s *Spec) { s.ResourceWeights = map[corev1.ResourceName]int64{"cpu": 2, "memory": 1} },
		pod:    midPod,
		metric: usual,
		// (2 × 68 + 73) / 3 = 209 / 3 = 69.
		want: 69,
	}, {
		name:   "excess of assigned pods counts",
		pod:    midPod,
		metric: usual,
		excess: vec(3000, 0),
		// cpu 8000 → ⌊8000 × 100 / 16000⌋ = 50; memory 73; 123 / 2 = 61.
		want: 61,
	}, {
		name:   "a resource over its allocatable scores 0",
		pod:    midPod,
		metric: makeMetric("n", t0).usage("cpu", "16", "memory", "16Gi").obj(),
		// cpu 17000 > 16000 → 0; memory 73; 73 / 2 = 36.
		want: 36,
	}, {
		name:   "an idle node",
		pod:    midPod,
		metric: makeMetric("n", t0).obj(),
		// cpu ⌊15000 × 100 / 16000⌋ = 93; memory ⌊63 × 100 / 64⌋ = 98; 191 / 2 = 95.
		want: 95,
	}, {
		name: "no NodeMetric scores 0",
		pod:  midPod,
		want: 0,
	}, {
		name:   "expired NodeMetric scores 0",
		pod:    midPod,
		metric: usual,
		now:    t0.Add(3 * time.Minute),
		want:   0,
	}, {
		name:       "Prod pod by Prod usage",
		spec:       func(s *Spec) { s.ScoreAccordingProdUsage = true },
		pod:        prodPod,
		metric:     usual,
		excess:     vec(5000, 0),
		prodExcess: vec(1000, 0),
		// Prod 2000 + 1000 + 1000 = 4000 → ⌊12000 × 100 / 16000⌋ = 75; memory 8 + 1 = 9Gi → ⌊55 × 100 / 64⌋ = 85; 160 / 2 = 80.
		want: 80,
	}, {
		name:       "Mid pod ignores ScoreAccordingProdUsage",
		spec:       func(s *Spec) { s.ScoreAccordingProdUsage = true },
		pod:        midPod,
		metric:     usual,
		excess:     vec(5000, 0),
		prodExcess: vec(1000, 0),
		// Node usage 4000 + 5000 + 1000 = 10000 → ⌊6000 × 100 / 16000⌋ = 37; memory 73; 110 / 2 = 55.
		want: 55,
	}, {
		name:   "score by aggregate",
		spec:   func(s *Spec) { s.ScoreAggregation = Aggregation{Type: v1alpha1.AggregationP95} },
		pod:    midPod,
		metric: usual,
		// p95 (12000, 32Gi) + pod = (13000, 33Gi): ⌊3000 × 100 / 16000⌋ = 18; ⌊31 × 100 / 64⌋ = 48; 66 / 2 = 33.
		want: 33,
	}, {
		name:   "score aggregate not reported: node usage",
		spec:   func(s *Spec) { s.ScoreAggregation = Aggregation{Type: v1alpha1.AggregationP99} },
		pod:    midPod,
		metric: usual,
		want:   70,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			if tc.spec != nil {
				tc.spec(&s)
			}
			c := mustConfig(t, s)
			node := NodeLoad{Allocatable: alloc, Thresholds: c.Thresholds, Excess: tc.excess, ProdExcess: tc.prodExcess}
			if tc.metric != nil {
				node.Metric = c.NewMetric(tc.metric)
			}
			at := now
			if !tc.now.IsZero() {
				at = tc.now
			}
			if got := c.Score(&tc.pod, &node, at); got != tc.want {
				t.Errorf("Score = %d, want %d", got, tc.want)
			}
			sum := c.Summarize(&node)
			if got := c.ScoreSummary(&tc.pod, &sum, at.UnixNano()); got != tc.want {
				t.Errorf("ScoreSummary = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLeastUsed(t *testing.T) {
	tests := []struct{ used, total, want int64 }{
		{0, 100, 100},
		{25, 100, 75},
		{1, 3, 66}, // ⌊2 × 100 / 3⌋
		{101, 100, 0},
		{5, 0, 0},
		{-5, 100, 100},
		// 2^59 used of 1E: (1e18 − 2^59) × 100 overflows 64 bits.
		{1 << 59, 1_000_000_000_000_000_000, 42},
	}
	for _, tc := range tests {
		if got := LeastUsed(tc.used, tc.total); got != tc.want {
			t.Errorf("LeastUsed(%d, %d) = %d, want %d", tc.used, tc.total, got, tc.want)
		}
	}
}
