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

package predictor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/core/predict"
)

const benchPods = 200

// benchEnv is a node with benchPods Prod pods whose noisy usage has
// filled the metric cache for its whole retention (30 min at 1 s) and
// the predictor's histograms with the 60 windows of it.
func benchEnv(b *testing.B) *env {
	b.Helper()
	e := newEnv(b, Config{}, &v1alpha1.PredictPolicy{Model: v1alpha1.PredictMax, ColdStartSeconds: new(int64)})
	rng := rand.New(rand.NewPCG(1, 2))
	loads := make([]podLoad, benchPods)
	for i := range loads {
		p := makePod(fmt.Sprintf("p%03d", i)).priority(9500).req("500m", "1Gi").started(t0.Add(-2 * time.Hour)).obj()
		e.pods = append(e.pods, p)
		loads[i] = podLoad{pod: p}
	}
	e.load = func(time.Time) load {
		l := load{nodeCPU: 1, nodeMemory: 2 * gi}
		for i := range loads {
			// Five significant digits of CPU, page-sized memory jitter:
			// nothing a store or a histogram could take a shortcut on.
			loads[i].cpu = math.Round((0.1+0.3*rng.Float64())*1e5) / 1e5
			loads[i].memory = uint64(512*mi + rng.IntN(256*1024)*4096)
			l.nodeCPU += loads[i].cpu
			l.nodeMemory += loads[i].memory
		}
		l.pods = loads
		return l
	}
	e.run(30 * time.Minute)
	var st v1alpha1.NodeMetricStatus
	e.p.ContributeStatus(&st)
	return e
}

// BenchmarkUpdate200Pods measures one histogram update of the predict
// server on a node with 200 Prod pods (each with 30 min of history): what
// the agent's loop spends every update interval (30 s). Sub-benchmarks
// split it up and measure two baselines in the same run:
//
//   - module: sync the Prod pods, read the 30 s window of every series
//     from the metric cache, feed the histograms, predict (the agent's
//     whole update);
//   - read: only reading the window averages of the 412 series;
//   - read-baseline-aggregate: the same window read with the cache's
//     Aggregate/AggregateKind (what the reporter uses: full statistics);
//   - core-baseline: only the histogram updates and the prediction, from
//     averages already at hand (what pkg/core/predict's benchmark covers).
func BenchmarkUpdate200Pods(b *testing.B) {
	e := benchEnv(b)
	logger := klog.FromContext(e.ctx)
	now := e.clock.Now()
	step := e.p.cfg.UpdateInterval
	perPod := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/pod")
	}
	p := e.p

	b.Run("module", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.mu.Lock()
			p.fedUntil = now.Add(-step) // the last window again
			p.syncPodsLocked(e.pods, now)
			if n := p.feedLocked(logger, e.cache, now); n != 1 {
				b.Fatalf("Fed %d windows, want 1", n)
			}
			p.predictLocked(now)
			p.mu.Unlock()
		}
		perPod(b)
	})

	w := newWindows(now.Add(-step), step, 1)
	keys := benchKeys(e)
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, k := range keys {
				if math.IsNaN(p.averages(e.cache, k, w, now, slotPod)[0]) {
					b.Fatalf("No value of %v", k)
				}
			}
		}
		perPod(b)
	})

	b.Run("read-baseline-aggregate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range []metriccache.Resource{metriccache.ResourceCPU, metriccache.ResourceMemory} {
				for _, k := range []metriccache.SeriesKey{metriccache.NodeKey(r), metriccache.SystemKey(r)} {
					if _, ok := e.cache.Aggregate(k, step); !ok {
						b.Fatalf("No value of %v", k)
					}
				}
				for _, band := range extension.Bands {
					e.cache.Aggregate(metriccache.BandKey(band, r), step)
				}
				if got := e.cache.AggregateKind(metriccache.KindPod, r, step); len(got) != benchPods {
					b.Fatalf("%d pods aggregated, want %d", len(got), benchPods)
				}
			}
		}
		perPod(b)
	})

	b.Run("core-baseline", func(b *testing.B) {
		rs := p.res
		ids := make([]string, 0, benchPods)
		for id := range p.tracked {
			ids = append(ids, id)
		}
		vals := make([]float64, len(ids))
		for i := range vals {
			vals[i] = 0.25
		}
		model := p.model
		b.ReportAllocs()
		for b.Loop() {
			for r, st := range rs {
				v := 1 + float64(r)
				st.prod.AddNodeSample(v*50, 1, now)
				st.prod.AddPodSample(predict.SystemPodID, v, 1, now)
				for _, h := range st.bands {
					h.AddSample(v, 1, now)
				}
				for i, id := range ids {
					st.prod.AddPodSample(id, vals[i]*v, 1, now)
				}
				_ = model.Predict(st.prod.Input(now))
			}
		}
		perPod(b)
	})
}

func benchKeys(e *env) []metriccache.SeriesKey {
	var keys []metriccache.SeriesKey
	for _, r := range []metriccache.Resource{metriccache.ResourceCPU, metriccache.ResourceMemory} {
		keys = append(keys, metriccache.NodeKey(r), metriccache.SystemKey(r))
		for _, band := range extension.Bands {
			keys = append(keys, metriccache.BandKey(band, r)) // bands without pods store 0
		}
		for _, pod := range e.pods {
			keys = append(keys, metriccache.PodKey(pod.UID, r))
		}
	}
	return keys
}
