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
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// cpuLayout is the layout the agent would use for CPU in cores: 0.01-core
// first bucket, 5 % growth, up to 1000 cores, 12 h half-life.
func cpuLayout(b testing.TB) *Layout {
	l, err := NewLayout(HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 1000, HalfLife: 12 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// usage returns n CPU samples (cores) around 4 ± 1.5.
func usage(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = max(0, 4+1.5*rng.NormFloat64())
	}
	return out
}

func BenchmarkHistogramAddSample(b *testing.B) {
	values := usage(rand.New(rand.NewPCG(1, 1)), 4096)
	b.Run("decaying", func(b *testing.B) {
		h := cpuLayout(b).NewHistogram()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// One sample every 30 s, as the agent's histogram update.
			h.AddSample(values[i%len(values)], 1, t0.Add(time.Duration(i)*30*time.Second))
			i++
		}
	})
	// Baseline: keeping the raw samples of a 24 h window at 30 s (2,880,
	// 23 KB per series) in a ring buffer, as a predictor without
	// histograms would; the histogram holds ~100 buckets (< 1 KB) and
	// answers percentiles without sorting.
	b.Run("baseline-raw-ring", func(b *testing.B) {
		ring := make([]float64, 2880)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ring[i%len(ring)] = values[i%len(values)]
			i++
		}
	})
}

func BenchmarkHistogramPercentile(b *testing.B) {
	values := usage(rand.New(rand.NewPCG(2, 2)), 2880)
	h := cpuLayout(b).NewHistogram()
	for i, v := range values {
		h.AddSample(v, 1, t0.Add(time.Duration(i)*30*time.Second))
	}
	b.Run("histogram-p99", func(b *testing.B) {
		b.ReportAllocs()
		var sink float64
		for b.Loop() {
			sink += h.Percentile(99)
		}
		_ = sink
	})
	b.Run("histogram-mean+stddev", func(b *testing.B) {
		b.ReportAllocs()
		var sink float64
		for b.Loop() {
			sink += h.Mean() + 5*h.StdDev()
		}
		_ = sink
	})
	// Baseline: the exact p99 of the raw 24 h window (copy and sort).
	b.Run("baseline-sort-p99", func(b *testing.B) {
		buf := make([]float64, len(values))
		b.ReportAllocs()
		var sink float64
		for b.Loop() {
			copy(buf, values)
			slices.Sort(buf)
			sink += buf[int(0.99*float64(len(buf)))]
		}
		_ = sink
	})
}

// podTracker is a node with pods pods, each with a day of history at 30 s.
func podTracker(b *testing.B, pods int) *Tracker {
	rng := rand.New(rand.NewPCG(3, 3))
	tr := NewTracker(cpuLayout(b))
	for p := range pods {
		id := "pod-" + strconv.Itoa(p)
		tr.SetPod(id, t0.Add(-48*time.Hour), 2)
		for i, v := range usage(rng, 2880) {
			tr.AddPodSample(id, v/float64(pods)*8, 1, t0.Add(time.Duration(i)*30*time.Second))
		}
	}
	for i, v := range usage(rng, 2880) {
		tr.AddNodeSample(v*8, 1, t0.Add(time.Duration(i)*30*time.Second))
	}
	return tr
}

// BenchmarkPredictorUpdate200Pods is one histogram-update cycle of the
// agent on a node with 200 Prod pods: one new sample for each pod and the
// node, then one prediction.
func BenchmarkPredictorUpdate200Pods(b *testing.B) {
	const pods = 200
	params := Params{N: 5, Percentile: 99, ColdStart: time.Hour, SafetyMarginPercent: 10, BorgOvercommit: 1.1}
	models := []Predictor{NSigmaV1{params}, NSigmaV2{params}, BorgDefault{params}, ResourceCentral{params}, PercentilePeak{params},
		Max{NSigmaV2{params}, BorgDefault{params}, ResourceCentral{params}}}
	ids := make([]string, pods)
	for p := range ids {
		ids[p] = "pod-" + strconv.Itoa(p)
	}
	for _, m := range models {
		b.Run(m.String(), func(b *testing.B) {
			tr := podTracker(b, pods)
			now := t0.Add(24 * time.Hour)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(30 * time.Second)
				for _, id := range ids {
					tr.AddPodSample(id, 0.04, 1, now)
				}
				tr.AddNodeSample(8, 1, now)
				_ = m.Predict(tr.Input(now))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/pod")
		})
	}
	// Predict alone, without the samples.
	b.Run("predict-only/"+models[5].String(), func(b *testing.B) {
		tr := podTracker(b, pods)
		in := tr.Input(t0.Add(24 * time.Hour))
		b.ReportAllocs()
		for b.Loop() {
			_ = models[5].Predict(in)
		}
	})
	// Baseline: Resource Central from raw windows, the exact p99 of each
	// pod's day of samples (copy and sort per pod).
	b.Run("baseline-sort-ResourceCentral", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(4, 4))
		windows := make([][]float64, pods)
		for p := range windows {
			windows[p] = usage(rng, 2880)
		}
		buf := make([]float64, 2880)
		b.ReportAllocs()
		for b.Loop() {
			var peak float64
			for _, w := range windows {
				copy(buf, w)
				slices.Sort(buf)
				peak += buf[int(0.99*float64(len(buf)))]
			}
			_ = peak
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/pod")
	})
}

// BenchmarkEvaluate walks one node-week at 60 s samples with every model
// (the shape of the Alibaba sample): the cost the simulator pays per node.
func BenchmarkEvaluate(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	const samples = 7 * 24 * 60
	s := Series{Times: make([]int64, samples), Values: usage(rng, samples)}
	for i := range s.Times {
		s.Times[i] = int64(i) * 60
	}
	node := NodeTrace{Name: "n", Capacity: 96, Usage: s, Pods: []PodTrace{{Name: "m", Request: 96, Limit: 96, Usage: s}}}
	p := Params{N: 5, Percentile: 99, ColdStart: time.Hour, BorgOvercommit: 1.1}
	models := []Predictor{NSigmaV1{p}, NSigmaV2{p}, BorgDefault{p}, ResourceCentral{p}, PercentilePeak{p},
		Max{NSigmaV2{p}, BorgDefault{p}, ResourceCentral{p}}}
	cfg := EvalConfig{Layout: cpuLayout(b), Step: 5 * time.Minute, Horizon: time.Hour, Warmup: 24 * time.Hour}
	b.ReportAllocs()
	var steps int
	for b.Loop() {
		res, err := Evaluate(node, models, cfg)
		if err != nil {
			b.Fatal(err)
		}
		steps = res.Oracle.Intervals
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}
