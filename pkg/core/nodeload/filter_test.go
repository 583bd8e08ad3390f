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
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// verdict flattens a Judgement for the tables below.
type verdict struct {
	Reason                         Reason
	Over                           uint16
	Estimated, Percent, Thresholds Vector
}

func TestFilter(t *testing.T) {
	// Every node offers 16 cores and 64Gi; the agent reported at t0, the
	// scheduler decides at t0 + 10 s; default thresholds cpu 65 %, memory 95 %.
	now := t0.Add(10 * time.Second)
	alloc := vec(16000, 64*Gi)
	prod := PodLoad{Estimate: vec(1000, 1*Gi), Prod: true}
	mid := PodLoad{Estimate: vec(1000, 1*Gi)}
	batch := PodLoad{Estimate: vec(1000, 1*Gi), LowPriority: true}
	daemon := PodLoad{Estimate: vec(1000, 1*Gi), Prod: true, DaemonSet: true}
	used := func(cpu, memory string) *metricBuilder {
		return makeMetric("n", t0).usage("cpu", cpu, "memory", memory)
	}
	// A node busy with Batch work: 14 cores used, 4 of them by Prod pods.
	busyWithBatch := func() *metricBuilder {
		return used("14", "32Gi").
			pod("ns", "prod", extension.BandProd, "cpu", "4", "memory", "8Gi").
			pod("ns", "batch", extension.BandBatch, "cpu", "10", "memory", "24Gi")
	}
	usageOnly := Thresholds{Usage: Vector{65, 95}}
	withProd := Thresholds{Usage: Vector{65, 95}, Prod: Vector{55}}
	aggregated := Thresholds{Usage: Vector{65, 95}, Aggregated: Vector{70}, Aggregation: Aggregation{Type: v1alpha1.AggregationP95, Duration: 5 * time.Minute}}
	aggregatedLongest := Thresholds{Usage: Vector{65, 95}, Aggregated: Vector{60}, Aggregation: Aggregation{Type: v1alpha1.AggregationP95}}
	aggregated15m := Thresholds{Usage: Vector{65, 95}, Aggregated: Vector{60}, Aggregation: Aggregation{Type: v1alpha1.AggregationP95, Duration: 15 * time.Minute}}

	tests := []struct {
		name       string
		spec       func(*Spec)
		pod        PodLoad
		metric     *v1alpha1.NodeMetric // nil: the node has no NodeMetric
		thresholds Thresholds
		excess     Vector
		prodExcess Vector
		now        time.Time
		want       verdict
	}{{
		name:   "fits",
		pod:    mid,
		metric: used("8", "32Gi").obj(),
		// cpu (8000 + 1000) / 16000 = 56.25 % → 56; memory 33 / 64 = 51.6 % → 52.
		want: verdict{Estimated: vec(9000, 33*Gi), Percent: Vector{56, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "cpu over its threshold",
		pod:    mid,
		metric: used("9500m", "32Gi").obj(),
		// cpu 10500 / 16000 = 65.6 % → 66 > 65.
		want: verdict{Reason: ReasonUsage, Over: 1 << CPU, Estimated: vec(10500, 33*Gi), Percent: Vector{66, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "65.4 % rounds to 65 and fits",
		pod:    mid,
		metric: used("9464m", "32Gi").obj(),
		// 10464 / 16000 = 65.4 % → 65, not > 65.
		want: verdict{Estimated: vec(10464, 33*Gi), Percent: Vector{65, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "65.5 % rounds to 66 and does not fit",
		pod:    mid,
		metric: used("9480m", "32Gi").obj(),
		// 10480 / 16000 = 65.5 % → 66.
		want: verdict{Reason: ReasonUsage, Over: 1 << CPU, Estimated: vec(10480, 33*Gi), Percent: Vector{66, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "excess of assigned pods counts",
		pod:    mid,
		metric: used("8", "32Gi").obj(),
		excess: vec(1500, 0),
		// cpu 8000 + 1500 + 1000 = 10500 → 66 > 65.
		want: verdict{Reason: ReasonUsage, Over: 1 << CPU, Estimated: vec(10500, 33*Gi), Percent: Vector{66, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "memory over its threshold",
		pod:    mid,
		metric: used("1", "61952Mi").obj(),
		// memory 60.5Gi + 1Gi = 61.5 / 64 = 96.1 % → 96 > 95; cpu 2000 / 16000 = 12.5 → 13.
		want: verdict{Reason: ReasonUsage, Over: 1 << Memory, Estimated: vec(2000, 62976*Mi), Percent: Vector{13, 96}, Thresholds: Vector{65, 95}},
	}, {
		name:   "both over: both named",
		pod:    mid,
		metric: used("12", "62Gi").obj(),
		// cpu 13000 / 16000 = 81.25 → 81; memory 63 / 64 = 98.4 → 98.
		want: verdict{Reason: ReasonUsage, Over: 1<<CPU | 1<<Memory, Estimated: vec(13000, 63*Gi), Percent: Vector{81, 98}, Thresholds: Vector{65, 95}},
	}, {
		name:       "a zero threshold is not checked",
		pod:        mid,
		metric:     used("1", "70Gi").obj(),
		thresholds: Thresholds{Usage: Vector{65}},
		// cpu 2000 / 16000 → 13; memory not judged.
		want: verdict{Estimated: vec(2000, 71*Gi), Percent: Vector{13}, Thresholds: Vector{65}},
	}, {
		name: "no NodeMetric: fits unchecked",
		pod:  mid,
		want: verdict{},
	}, {
		name:   "DaemonSet pod fits a node over its thresholds",
		pod:    daemon,
		metric: used("16", "64Gi").forbid(metav1.ConditionTrue).obj(),
		want:   verdict{},
	}, {
		name:   "forbid scheduling refuses Batch pods",
		pod:    batch,
		metric: used("1", "1Gi").forbid(metav1.ConditionTrue).obj(),
		want:   verdict{Reason: ReasonForbidScheduling},
	}, {
		name:   "forbid scheduling refuses Free pods",
		pod:    PodLoad{Estimate: vec(1000, 1*Gi), LowPriority: true},
		metric: used("1", "1Gi").forbid(metav1.ConditionTrue).obj(),
		want:   verdict{Reason: ReasonForbidScheduling},
	}, {
		name:   "forbid scheduling lets Prod pods in",
		pod:    prod,
		metric: used("1", "1Gi").forbid(metav1.ConditionTrue).obj(),
		// cpu 2000 / 16000 → 13; memory 2 / 64 = 3.1 → 3.
		want: verdict{Estimated: vec(2000, 2*Gi), Percent: Vector{13, 3}, Thresholds: Vector{65, 95}},
	}, {
		name:   "forbid scheduling lets Mid pods in",
		pod:    mid,
		metric: used("1", "1Gi").forbid(metav1.ConditionTrue).obj(),
		want:   verdict{Estimated: vec(2000, 2*Gi), Percent: Vector{13, 3}, Thresholds: Vector{65, 95}},
	}, {
		name:   "forbid scheduling False lets Batch pods in",
		pod:    batch,
		metric: used("1", "1Gi").forbid(metav1.ConditionFalse).obj(),
		want:   verdict{Estimated: vec(2000, 2*Gi), Percent: Vector{13, 3}, Thresholds: Vector{65, 95}},
	}, {
		name:   "expired at exactly 180 s",
		pod:    mid,
		metric: used("1", "1Gi").obj(),
		now:    t0.Add(180 * time.Second),
		want:   verdict{Reason: ReasonMetricExpired},
	}, {
		name:   "fresh at 179 s",
		pod:    mid,
		metric: used("1", "1Gi").obj(),
		now:    t0.Add(179 * time.Second),
		want:   verdict{Estimated: vec(2000, 2*Gi), Percent: Vector{13, 3}, Thresholds: Vector{65, 95}},
	}, {
		// Created (by the manager) but never reported: no agent runs there
		// yet. Like a node without a NodeMetric it fits unchecked, rather
		// than trapping a cluster without agents as "expired".
		name:   "never reported counts as no NodeMetric: fits unchecked",
		pod:    mid,
		metric: &v1alpha1.NodeMetric{},
		want:   verdict{},
	}, {
		name:   "never reported, forbid condition set: Batch still refused",
		pod:    batch,
		metric: &v1alpha1.NodeMetric{Status: v1alpha1.NodeMetricStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionForbidScheduling, Status: metav1.ConditionTrue}}}},
		want:   verdict{Reason: ReasonForbidScheduling},
	}, {
		name:   "expired allowed: fits unchecked",
		spec:   func(s *Spec) { s.EnableScheduleWhenNodeMetricsExpired = true },
		pod:    mid,
		metric: used("16", "64Gi").obj(),
		now:    t0.Add(time.Hour),
		want:   verdict{},
	}, {
		name:   "expired and forbidden: Batch refused for the forbid",
		pod:    batch,
		metric: used("1", "1Gi").forbid(metav1.ConditionTrue).obj(),
		now:    t0.Add(time.Hour),
		want:   verdict{Reason: ReasonForbidScheduling},
	}, {
		name:       "Prod pod judged by Prod usage on a node busy with Batch work",
		pod:        prod,
		metric:     busyWithBatch().obj(),
		thresholds: withProd,
		// Prod usage 4000 + 1000 = 5000 / 16000 = 31.25 % → 31 ≤ 55; node usage (88 %) does not matter.
		want: verdict{Estimated: vec(5000, 9*Gi), Percent: Vector{31}, Thresholds: Vector{55}},
	}, {
		name:       "Mid pod on the same node judged by node usage",
		pod:        mid,
		metric:     busyWithBatch().obj(),
		thresholds: withProd,
		// 14000 + 1000 = 15000 / 16000 = 93.75 % → 94 > 65; memory 33 / 64 → 52.
		want: verdict{Reason: ReasonUsage, Over: 1 << CPU, Estimated: vec(15000, 33*Gi), Percent: Vector{94, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:       "Prod pod without Prod thresholds judged by node usage",
		pod:        prod,
		metric:     busyWithBatch().obj(),
		thresholds: usageOnly,
		want:       verdict{Reason: ReasonUsage, Over: 1 << CPU, Estimated: vec(15000, 33*Gi), Percent: Vector{94, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:       "Prod excess counts for Prod pods",
		pod:        prod,
		metric:     busyWithBatch().obj(),
		thresholds: withProd,
		excess:     vec(9000, 0),
		prodExcess: vec(4000, 0),
		// Prod 4000 + Prod excess 4000 + 1000 = 9000 / 16000 = 56.25 % → 56 > 55.
		want: verdict{Reason: ReasonProdUsage, Over: 1 << CPU, Estimated: vec(9000, 9*Gi), Percent: Vector{56}, Thresholds: Vector{55}},
	}, {
		name:       "prediction: prodPeak above Prod usage refuses",
		spec:       func(s *Spec) { s.ProdUsageIncludePrediction = true },
		pod:        prod,
		metric:     busyWithBatch().prodPeak("cpu", "8", "memory", "10Gi").obj(),
		thresholds: withProd,
		// max(4000, 8000) + 1000 = 9000 / 16000 → 56 > 55.
		want: verdict{Reason: ReasonProdUsage, Over: 1 << CPU, Estimated: vec(9000, 11*Gi), Percent: Vector{56}, Thresholds: Vector{55}},
	}, {
		name:       "prediction off: prodPeak ignored",
		pod:        prod,
		metric:     busyWithBatch().prodPeak("cpu", "8", "memory", "10Gi").obj(),
		thresholds: withProd,
		want:       verdict{Estimated: vec(5000, 9*Gi), Percent: Vector{31}, Thresholds: Vector{55}},
	}, {
		name:       "prediction: prodPeak below Prod usage changes nothing",
		spec:       func(s *Spec) { s.ProdUsageIncludePrediction = true },
		pod:        prod,
		metric:     busyWithBatch().prodPeak("cpu", "2", "memory", "1Gi").obj(),
		thresholds: withProd,
		// max(4000, 2000) + 1000 = 5000 → 31.
		want: verdict{Estimated: vec(5000, 9*Gi), Percent: Vector{31}, Thresholds: Vector{55}},
	}, {
		// Mid and Batch tiers are sold from what Prod is predicted not to
		// use: a node whose Prod pods (2 cores now) are predicted to peak
		// at 6 has 4 cores less room than its usage shows.
		name:   "prediction for every pod: a Mid pod judged against the predicted Prod peak",
		spec:   func(s *Spec) { s.NodeUsageIncludePrediction = true },
		pod:    mid,
		metric: used("6", "32Gi").pod("ns", "prod", extension.BandProd, "cpu", "2", "memory", "8Gi").prodPeak("cpu", "6", "memory", "8Gi").obj(),
		// (6000 + 6000 − 2000 + 1000) / 16000 = 68.75 → 69 > 65.
		want: verdict{Reason: ReasonUsage, Over: 1 << CPU, Estimated: vec(11000, 33*Gi), Percent: Vector{69, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "prediction for every pod off: the Mid pod judged by node usage",
		pod:    mid,
		metric: used("6", "32Gi").pod("ns", "prod", extension.BandProd, "cpu", "2", "memory", "8Gi").prodPeak("cpu", "6", "memory", "8Gi").obj(),
		// 7000 / 16000 = 43.75 → 44.
		want: verdict{Estimated: vec(7000, 33*Gi), Percent: Vector{44, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:   "prediction for every pod, Batch pod, peak below Prod usage: node usage",
		spec:   func(s *Spec) { s.NodeUsageIncludePrediction = true },
		pod:    batch,
		metric: used("6", "32Gi").pod("ns", "prod", extension.BandProd, "cpu", "4", "memory", "8Gi").prodPeak("cpu", "3", "memory", "8Gi").obj(),
		want:   verdict{Estimated: vec(7000, 33*Gi), Percent: Vector{44, 52}, Thresholds: Vector{65, 95}},
	}, {
		name:       "aggregated thresholds judge the aggregate",
		pod:        mid,
		metric:     used("4", "8Gi").aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "11", "memory", "16Gi").obj(),
		thresholds: aggregated,
		// p95 11000 + 1000 = 12000 / 16000 = 75 % > 70.
		want: verdict{Reason: ReasonAggregatedUsage, Over: 1 << CPU, Estimated: vec(12000, 17*Gi), Percent: Vector{75}, Thresholds: Vector{70}},
	}, {
		name:       "aggregate not reported: node usage against the aggregated thresholds",
		pod:        mid,
		metric:     used("4", "8Gi").obj(),
		thresholds: aggregated,
		// 4000 + 1000 = 5000 / 16000 = 31.25 → 31.
		want: verdict{Estimated: vec(5000, 9*Gi), Percent: Vector{31}, Thresholds: Vector{70}},
	}, {
		// The agent has not filled the 15m window yet: the longest window
		// that has cpu (5m) is judged, not an empty one read as 0 %.
		name:       "aggregated, longest window empty: the longest window with the resource",
		pod:        mid,
		metric:     used("4", "8Gi").aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "11680m").aggregate(15*time.Minute, v1alpha1.AggregationP95).obj(),
		thresholds: aggregatedLongest,
		// p95 5m 11680 + 1000 = 12680 / 16000 = 79.25 → 79 > 60.
		want: verdict{Reason: ReasonAggregatedUsage, Over: 1 << CPU, Estimated: vec(12680, 9*Gi), Percent: Vector{79}, Thresholds: Vector{60}},
	}, {
		name:       "aggregated, asked window empty: the longest window with the resource",
		pod:        mid,
		metric:     used("4", "8Gi").aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "11680m").aggregate(15*time.Minute, v1alpha1.AggregationP95, "memory", "8Gi").obj(),
		thresholds: aggregated15m,
		want:       verdict{Reason: ReasonAggregatedUsage, Over: 1 << CPU, Estimated: vec(12680, 9*Gi), Percent: Vector{79}, Thresholds: Vector{60}},
	}, {
		name:       "aggregated, no window has the resource: node usage",
		pod:        mid,
		metric:     used("11", "8Gi").aggregate(15*time.Minute, v1alpha1.AggregationP95, "memory", "8Gi").obj(),
		thresholds: aggregatedLongest,
		// node usage 11000 + 1000 = 12000 / 16000 = 75 > 60.
		want: verdict{Reason: ReasonAggregatedUsage, Over: 1 << CPU, Estimated: vec(12000, 9*Gi), Percent: Vector{75}, Thresholds: Vector{60}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			if tc.spec != nil {
				tc.spec(&s)
			}
			c := mustConfig(t, s)
			node := NodeLoad{Allocatable: alloc, Thresholds: tc.thresholds, Excess: tc.excess, ProdExcess: tc.prodExcess}
			if node.Thresholds == (Thresholds{}) {
				node.Thresholds = usageOnly
			}
			if tc.metric != nil {
				node.Metric = c.NewMetric(tc.metric)
			}
			at := now
			if !tc.now.IsZero() {
				at = tc.now
			}
			j := c.Judge(&tc.pod, &node, at)
			got := verdict{Reason: j.Reason, Over: j.Over, Estimated: j.Estimated, Percent: j.Percent, Thresholds: j.Thresholds}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Judge (-want +got):\n%s", diff)
			}
			if v := c.Filter(&tc.pod, &node, at); v != j.Verdict {
				t.Errorf("Filter = %+v, Judge = %+v: they must agree", v, j.Verdict)
			}
			sum := c.Summarize(&node)
			if v := c.FilterSummary(&tc.pod, &sum, at.UnixNano()); v != j.Verdict {
				t.Errorf("FilterSummary = %+v, Judge = %+v: they must agree", v, j.Verdict)
			}
		})
	}
}

func TestFilterSkipsResourcesWithoutAllocatable(t *testing.T) {
	s := defaultSpec()
	s.UsageThresholds[corev1.ResourceName("nvidia.com/gpu")] = 50
	c := mustConfig(t, s)
	// The node has no GPU: a GPU threshold cannot be judged, so it is skipped.
	node := NodeLoad{Allocatable: vec(16000, 64*Gi), Thresholds: c.Thresholds, Metric: c.NewMetric(makeMetric("n", t0).usage("cpu", "1", "nvidia.com/gpu", "1").obj())}
	pod := PodLoad{Estimate: Vector{1000, 1 * Gi, 1}}
	got := c.Filter(&pod, &node, t0)
	if got.Reason != Fit {
		t.Errorf("Filter = %+v, want Fit", got)
	}
}

func TestFilterHugeQuantities(t *testing.T) {
	// raw-allocatable {"memory":"1E"} and a reported usage of 1Ei: the
	// node is at 115 % of its memory and must be refused, however large
	// the numbers.
	c := mustConfig(t, defaultSpec())
	node := makeNode("n", map[string]string{extension.AnnotationRawAllocatable: `{"memory":"1E"}`}, "cpu", "16", "memory", "64Gi")
	alloc, err := c.Allocatable(node)
	if err != nil {
		t.Fatalf("Allocatable: %v", err)
	}
	load := NodeLoad{Allocatable: alloc, Thresholds: c.Thresholds, Metric: c.NewMetric(makeMetric("n", t0).usage("cpu", "1", "memory", "1Ei").obj())}
	pod := PodLoad{Estimate: vec(1000, 1*Gi)}
	if got := c.Filter(&pod, &load, t0); got.Reason != ReasonUsage || got.Over != 1<<Memory {
		t.Errorf("Filter = %+v, want memory over its threshold", got)
	}
	// Usage near the int64 limit with excess on top must not wrap to a
	// negative, fitting sum.
	load.Excess = Vector{Memory: math.MaxInt64 / 2}
	load.Metric = c.NewMetric(makeMetric("n", t0).usage("cpu", "1", "memory", "7Ei").obj())
	if got := c.Filter(&pod, &load, t0); got.Reason != ReasonUsage || got.Over != 1<<Memory {
		t.Errorf("Filter with excess near the int64 limit = %+v, want memory over its threshold", got)
	}
	// cpu (1000 + 1000) of 16000 → 87; memory over → 0; ⌊87 / 2⌋.
	if got := c.Score(&pod, &load, t0); got != 43 {
		t.Errorf("Score of a node over its memory = %d, want 43", got)
	}
}

func TestPercent(t *testing.T) {
	tests := []struct{ used, total, want int64 }{
		{0, 100, 0},
		{-5, 100, 0},
		{1, 200, 1}, // 0.5 % rounds up to 1
		{1, 201, 0}, // 0.497 % rounds down
		{3, 2, 150}, // over 100 % is reported as is
		{1 << 40, 1 << 41, 50},
		// 1Ei used of 1E: 115 %, not the −4 % that 64-bit used × 200 gave.
		{1 << 60, 1_000_000_000_000_000_000, 115},
		{math.MaxInt64, math.MaxInt64, 100},
		{math.MaxInt64, 1, math.MaxInt64}, // saturates instead of wrapping
		{math.MaxInt64 / 2, math.MaxInt64, 50},
	}
	for _, tc := range tests {
		if got := Percent(tc.used, tc.total); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.used, tc.total, got, tc.want)
		}
	}
}

// TestPercentOverAgreesWithPercent holds percentOver to Percent compared
// with the threshold, on random amounts of every magnitude (exabytes and
// quotients that saturate included), negative and zero ones, and
// thresholds around the percentage and at the extremes.
func TestPercentOverAgreesWithPercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	amount := func() int64 {
		switch rng.IntN(8) {
		case 0:
			return []int64{0, 1, -1, 2, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1}[rng.IntN(7)]
		case 1:
			return -rng.Int64N(1 << 40)
		}
		return rng.Int64N(int64(1) << (1 + rng.IntN(62)))
	}
	over := 0
	for range 200_000 {
		used, total := amount(), amount()
		if rng.IntN(4) == 0 && total > 0 {
			// Exactly at a percentage, or one off it: the rounding's edges.
			used = total*int64(rng.IntN(101))/100 + int64(rng.IntN(3)) - 1
		}
		p := Percent(used, total)
		for _, threshold := range []int64{p - 1, p, p + 1, int64(rng.IntN(101)), 0, -1, math.MaxInt64, math.MinInt64} {
			want := p > threshold
			if got := percentOver(used, total, threshold); got != want {
				t.Fatalf("percentOver(%d, %d, %d) = %t; Percent = %d", used, total, threshold, got, p)
			}
			if want {
				over++
			}
		}
	}
	if over == 0 {
		t.Fatal("no case over its threshold")
	}
}

// TestFilterHugeSumsSaturate: load added up from huge pods -- assigned
// pods whose estimates are exabytes each (limits the API server admits),
// and an agent reporting exabytes per pod -- saturates instead of wrapping
// to a negative sum that fits any threshold, on every path Filter takes:
// node usage, Prod usage, and Prod usage raised to the predicted peak.
func TestFilterHugeSumsSaturate(t *testing.T) {
	s := defaultSpec()
	s.ProdUsageThresholds = map[corev1.ResourceName]int64{corev1.ResourceMemory: 90}
	s.ProdUsageIncludePrediction = true
	c := mustConfig(t, s)
	var assigned []*AssignedPod
	for _, name := range []string{"a", "b", "c"} {
		p, err := c.NewAssignedPod(makePod("ns", name).req("cpu", "1", "memory", "5Ei").obj(), t0)
		if err != nil {
			t.Fatal(err)
		}
		assigned = append(assigned, &p)
	}
	huge := makePod("ns", "p").req("cpu", "1", "memory", "5Ei").obj()
	prod, err := c.NewPodLoad(huge)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.NewPodLoad(makePod("ns", "p").band(extension.BandBatch).req("cpu", "1", "memory", "1Gi").obj())
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]*v1alpha1.NodeMetric{
		"not reported yet": makeMetric("n", t0).usage("cpu", "1", "memory", "1Gi").prodPeak("cpu", "1", "memory", "1Gi").obj(),
		"reported by the agent": makeMetric("n", t0).usage("cpu", "1", "memory", "1Gi").
			pod("ns", "x", extension.BandProd, "memory", "5Ei").pod("ns", "y", extension.BandProd, "memory", "5Ei").obj(),
	}
	for name, nm := range metrics {
		t.Run(name, func(t *testing.T) {
			m := c.NewMetric(nm)
			all, prodExcess, _ := NodeExcess(slices.Values(assigned), m, t0.Add(time.Second))
			node := NodeLoad{Allocatable: vec(16000, 64*Gi), Thresholds: c.Thresholds, Metric: m, Excess: all, ProdExcess: prodExcess}
			sum := c.Summarize(&node)
			now := t0.Add(time.Second)
			for _, tc := range []struct {
				name string
				pod  *PodLoad
				want Reason
			}{{"prod", &prod, ReasonProdUsage}, {"batch", &batch, ReasonUsage}} {
				if got := c.Filter(tc.pod, &node, now); got.Reason != tc.want || got.Over != 1<<Memory {
					t.Errorf("Filter of a %s pod = %+v, want memory refused with reason %v", tc.name, got, tc.want)
				}
				if got := c.FilterSummary(tc.pod, &sum, now.UnixNano()); got.Reason != tc.want || got.Over != 1<<Memory {
					t.Errorf("FilterSummary of a %s pod = %+v, want memory refused with reason %v", tc.name, got, tc.want)
				}
			}
		})
	}
}
