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

package reporter

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// BenchmarkBuildUsage builds the usage part of one report for 200 pods
// from a cache holding 30 minutes of them (the default policy: 300 s
// average, 5/10/30 m aggregates). Baselines, same run, the node part the
// same and no status objects built: the pods' full statistics from two
// AggregateKind calls (as before issue 18), and series by series with
// Aggregate.
func BenchmarkBuildUsage(b *testing.B) {
	const pods = 200
	clk := testingclock.NewFakeClock(t0)
	cache, err := metriccache.New(b.Context(), metriccache.Config{}, clk)
	if err != nil {
		b.Fatal(err)
	}
	var podObjs []*corev1.Pod
	var keys []metriccache.SeriesKey
	for _, r := range []metriccache.Resource{metriccache.ResourceCPU, metriccache.ResourceMemory} {
		keys = append(keys, metriccache.NodeKey(r), metriccache.SystemKey(r))
	}
	for i := range pods {
		uid := types.UID(fmt.Sprintf("pod-%03d", i))
		podObjs = append(podObjs, pod("bench", string(uid), string(uid), extension.Bands[i%4]))
		keys = append(keys, metriccache.PodKey(uid, metriccache.ResourceCPU), metriccache.PodKey(uid, metriccache.ResourceMemory))
	}
	points := make([]metriccache.Point, len(keys))
	for s := range 1800 {
		clk.Step(time.Second)
		for i, k := range keys {
			points[i] = metriccache.Point{Key: k, Value: float64((s*31+i*17)%1000) / 100}
		}
		if err := cache.Append(clk.Now(), points); err != nil {
			b.Fatal(err)
		}
	}
	policy := v1alpha1.CollectPolicyWithDefaults(nil)

	b.Run("BuildUsage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u, ok := BuildUsage(cache, policy, podObjs)
			if !ok || len(u.PodsMetric) != pods {
				b.Fatalf("BuildUsage: ok %v, %d pods", ok, len(u.PodsMetric))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/pod")
	})
	b.Run("aggregate-kind-before", func(b *testing.B) {
		// BuildUsage's pod part until issue 18: every pod's full
		// statistics (percentiles selected) for its average alone.
		b.ReportAllocs()
		window := 300 * time.Second
		for b.Loop() {
			cache.InWindow(window, func(w *metriccache.Window) {
				if averages(w, metriccache.NodeKey) == nil {
					b.Fatal("no node usage")
				}
				averages(w, metriccache.SystemKey)
			})
			for _, d := range policy.AggregateDurations {
				aggregated(cache, d.Duration)
			}
			cpu := cache.AggregateKind(metriccache.KindPod, metriccache.ResourceCPU, window)
			mem := cache.AggregateKind(metriccache.KindPod, metriccache.ResourceMemory, window)
			if len(cpu) != pods || len(mem) != pods {
				b.Fatalf("%d, %d pods", len(cpu), len(mem))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/pod")
	})
	b.Run("per-series-baseline", func(b *testing.B) {
		b.ReportAllocs()
		window := 300 * time.Second
		for b.Loop() {
			// The node part is the same code; only the pods differ.
			cache.InWindow(window, func(w *metriccache.Window) {
				if averages(w, metriccache.NodeKey) == nil {
					b.Fatal("no node usage")
				}
				averages(w, metriccache.SystemKey)
			})
			for _, d := range policy.AggregateDurations {
				aggregated(cache, d.Duration)
			}
			n := 0
			for _, p := range podObjs {
				_, okC := cache.Aggregate(metriccache.PodKey(p.UID, metriccache.ResourceCPU), window)
				_, okM := cache.Aggregate(metriccache.PodKey(p.UID, metriccache.ResourceMemory), window)
				if okC && okM {
					n++
				}
			}
			if n != pods {
				b.Fatalf("%d pods", n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/pod")
	})
}
