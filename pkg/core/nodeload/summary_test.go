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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// TestSummaryAgrees: on random configs, nodes and pods -- every switch of
// the args, metrics missing, never reported, expired or forbidding,
// aggregates reported or not, and quantities up to the int64 limit and
// below zero, where sums saturate -- FilterSummary and
// ScoreSummary give exactly Filter's verdict and Score's score; and at
// another time at which Expired agrees, the same answers again (the
// condition on which a caller may keep them).
func TestSummaryAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	spec := defaultSpec()
	spec.SupportedResources = []corev1.ResourceName{"nvidia.com/gpu"}
	base := mustConfig(t, spec)
	n := base.Resources.Len()
	types := []v1alpha1.AggregationType{v1alpha1.AggregationP95, v1alpha1.AggregationP99}
	durations := []time.Duration{0, 5 * time.Minute, 15 * time.Minute}
	quantity := func() int64 {
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return math.MaxInt64 - rng.Int64N(1000)
		case 2:
			return -rng.Int64N(1 << 40)
		case 3:
			return rng.Int64()
		}
		return rng.Int64N(64 * Gi)
	}
	vector := func() (v Vector) {
		for i := range n {
			v[i] = quantity()
		}
		return v
	}
	percents := func() (v Vector) {
		if rng.IntN(3) == 0 {
			return v
		}
		for i := range n {
			if rng.IntN(4) != 0 {
				v[i] = rng.Int64N(101)
			}
		}
		return v
	}
	aggregation := func() Aggregation {
		if rng.IntN(2) == 0 {
			return Aggregation{}
		}
		return Aggregation{Type: types[rng.IntN(len(types))], Duration: durations[rng.IntN(len(durations))]}
	}
	now := t0.Add(time.Minute)
	for iter := range 200_000 {
		c := *base
		c.ScheduleWhenMetricExpired = rng.IntN(2) == 0
		c.ProdUsageIncludePrediction = rng.IntN(2) == 0
		c.NodeUsageIncludePrediction = rng.IntN(2) == 0
		c.ScoreAccordingPrediction = rng.IntN(2) == 0
		c.ScoreAccordingProdUsage = rng.IntN(2) == 0
		c.ScoreAggregation = aggregation()
		c.DominantWeight = rng.Int64N(3)
		for i := range n {
			c.Weights[i] = rng.Int64N(3)
		}
		node := NodeLoad{
			Allocatable: vector(),
			Thresholds:  Thresholds{Usage: percents(), Prod: percents(), Aggregated: percents(), Aggregation: aggregation()},
			Excess:      vector(),
			ProdExcess:  vector(),
		}
		if rng.IntN(8) != 0 {
			m := &Metric{
				NodeUsage: vector(), ProdUsage: vector(), ProdPeak: vector(), HasProdPeak: rng.IntN(2) == 0,
				PredictedNodeUsage: vector(), ForbidScheduling: rng.IntN(4) == 0,
			}
			for range rng.IntN(4) {
				m.Aggregates = append(m.Aggregates, Aggregate{
					Type: types[rng.IntN(len(types))], Duration: durations[1+rng.IntN(2)],
					Usage: vector(), Reported: uint16(rng.IntN(1 << n)),
				})
			}
			switch rng.IntN(6) {
			case 0: // never reported
			case 1:
				c.SetUpdateTime(m, now.Add(-time.Hour)) // expired
			default:
				c.SetUpdateTime(m, now.Add(-time.Duration(rng.IntN(200))*time.Second))
			}
			node.Metric = m
		}
		pod := PodLoad{Estimate: vector(), Prod: rng.IntN(2) == 0, LowPriority: rng.IntN(2) == 0, DaemonSet: rng.IntN(10) == 0}

		sum := c.Summarize(&node)
		if got, want := c.FilterSummary(&pod, &sum, now.UnixNano()), c.Filter(&pod, &node, now); got != want {
			t.Fatalf("case %d: FilterSummary = %+v, Filter = %+v\nconfig %+v\nnode %+v\nmetric %+v\npod %+v", iter, got, want, c, node, node.Metric, pod)
		}
		if got, want := c.ScoreSummary(&pod, &sum, now.UnixNano()), c.Score(&pod, &node, now); got != want {
			t.Fatalf("case %d: ScoreSummary = %d, Score = %d\nconfig %+v\nnode %+v\nmetric %+v\npod %+v", iter, got, want, c, node, node.Metric, pod)
		}
		later := now.Add(time.Duration(rng.Int64N(int64(2*time.Hour))) - time.Hour).UnixNano()
		if sum.Expired(later) == sum.Expired(now.UnixNano()) {
			if got, want := c.FilterSummary(&pod, &sum, later), c.FilterSummary(&pod, &sum, now.UnixNano()); got != want {
				t.Fatalf("case %d: FilterSummary = %+v at %d, %+v at now, Expired agreeing", iter, got, later, want)
			}
			if got, want := c.ScoreSummary(&pod, &sum, later), c.ScoreSummary(&pod, &sum, now.UnixNano()); got != want {
				t.Fatalf("case %d: ScoreSummary = %d at %d, %d at now, Expired agreeing", iter, got, later, want)
			}
		}
	}
}

// BenchmarkFilterScoreSummary is BenchmarkFilterScore on the nodes'
// summaries, for the ratio in the same run.
func BenchmarkFilterScoreSummary(b *testing.B) {
	c := mustConfig(b, defaultSpec())
	nodes := benchNodes(b, c, 5000)
	sums := make([]NodeSummary, len(nodes))
	for i := range nodes {
		sums[i] = c.Summarize(&nodes[i])
	}
	pod, err := c.NewPodLoad(makePod("ns", "p").req("cpu", "1", "memory", "2Gi").obj())
	if err != nil {
		b.Fatal(err)
	}
	now := t0.Add(10 * time.Second).UnixNano()
	b.ReportAllocs()
	for b.Loop() {
		for i := range sums {
			if v := c.FilterSummary(&pod, &sums[i], now); v.Reason != Fit {
				b.Fatalf("node %d refused: %+v", i, v)
			}
			c.ScoreSummary(&pod, &sums[i], now)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(nodes)), "ns/node")
}
