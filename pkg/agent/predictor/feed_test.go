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
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/core/predict"
)

// TestFeedAveragesEachWindow: every update interval each histogram gets
// one sample, the cache's average over the interval -- not the raw 1 s
// samples -- and the node level is the node minus the Mid, Batch and Free
// bands.
func TestFeedAveragesEachWindow(t *testing.T) {
	prod := makePod("prod").priority(9500).req("4", "8Gi").started(t0.Add(-2 * time.Hour)).obj()
	mid := makePod("mid").priority(7500).req("2", "1Gi").started(t0.Add(-2 * time.Hour)).obj()
	batch := makePod("batch").priority(5500).started(t0.Add(-2 * time.Hour)).obj()
	free := makePod("free").priority(3500).started(t0.Add(-2 * time.Hour)).obj()

	e := newEnv(t, Config{}, noDecay(v1alpha1.PredictPolicy{}))
	e.pods = []*corev1.Pod{prod, mid, batch, free}
	e.load = func(now time.Time) load {
		// The Prod pod alternates 1 and 3 cores every second: 2 on
		// average in every 30 s window, but a standard deviation of 1
		// over the raw samples.
		prodCPU := 1.0
		if now.Unix()%2 == 0 {
			prodCPU = 3
		}
		// Node 10 cores: prod 2 (avg) + mid 2 + batch 3 + free 1 + system 2.
		// Memory: node 10Gi: prod 4Gi + mid 1Gi + batch 2Gi + free 1Gi + system 2Gi.
		return load{nodeCPU: prodCPU + 8, nodeMemory: 10 * gi, pods: []podLoad{
			{prod, prodCPU, 4 * gi}, {mid, 2, 1 * gi}, {batch, 3, 2 * gi}, {free, 1, 1 * gi},
		}}
	}
	// 95 s: windows (t0, t0+30s], (…, t0+60s], (…, t0+90s] are complete,
	// the fourth is not.
	e.run(95 * time.Second)

	cpu := func(h func(*resourceState) histStats) stats { return statsOf(e.p, cpuIndex, h) }
	mem := func(h func(*resourceState) histStats) stats { return statsOf(e.p, memoryIndex, h) }
	node := func(rs *resourceState) histStats { return rs.prod.Node() }
	pod := func(id string) func(*resourceState) histStats {
		return func(rs *resourceState) histStats { return rs.prod.Pod(id) }
	}
	band := func(b extension.Band) func(*resourceState) histStats {
		return func(rs *resourceState) histStats { return rs.bands[bandIndex(b)] }
	}
	for _, tc := range []struct {
		name string
		got  stats
		want stats
	}{
		// 3 windows each: weight 3 (no decay).
		{"cpu node level = node − mid − batch − free: 10 − 2 − 3 − 1", cpu(node), stats{4, 0, 3}},
		{"cpu prod pod: window averages of 1,3,1,3…", cpu(pod("uid-prod")), stats{2, 0, 3}},
		{"cpu system: 10 − 2 − 2 − 3 − 1", cpu(pod(predict.SystemPodID)), stats{2, 0, 3}},
		{"cpu band prod", cpu(band(extension.BandProd)), stats{2, 0, 3}},
		{"cpu band mid", cpu(band(extension.BandMid)), stats{2, 0, 3}},
		{"cpu band batch", cpu(band(extension.BandBatch)), stats{3, 0, 3}},
		{"cpu band free", cpu(band(extension.BandFree)), stats{1, 0, 3}},
		{"memory node level: 10Gi − 1Gi − 2Gi − 1Gi", mem(node), stats{6 * gi, 0, 3}},
		{"memory prod pod", mem(pod("uid-prod")), stats{4 * gi, 0, 3}},
		{"memory system", mem(pod(predict.SystemPodID)), stats{2 * gi, 0, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("Histogram (-want +got):\n%s", diff)
			}
		})
	}
	// Only the Prod pod (and the system) have per-pod histograms.
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	if got := e.p.res[cpuIndex].prod.Len(); got != 2 {
		t.Errorf("Tracked pods = %d, want 2 (the Prod pod and the system)", got)
	}
	if want := t0.Add(90 * time.Second); !e.p.fedUntil.Equal(want) {
		t.Errorf("fedUntil = %s, want t0+90s", e.p.fedUntil.Sub(t0))
	}
}

// TestWindowsIndex checks the window arithmetic at its boundaries: a
// sample at a window's end belongs to it, one just after to the next.
func TestWindowsIndex(t *testing.T) {
	w := newWindows(t0, 30*time.Second, 2)
	for _, tc := range []struct {
		at   time.Duration
		want int
	}{
		{0, -1},
		{time.Nanosecond, 0},
		{30 * time.Second, 0},
		{30*time.Second + time.Nanosecond, 1},
		{60 * time.Second, 1},
		{60*time.Second + time.Nanosecond, -1},
		{-time.Second, -1},
	} {
		if got := w.index(t0.Add(tc.at)); got != tc.want {
			t.Errorf("index(t0+%s) = %d, want %d", tc.at, got, tc.want)
		}
	}
}

// TestFeedAfterGap: windows without samples (the agent was down) feed
// nothing, and a gap longer than the cache's retention is skipped rather
// than walked window by window.
func TestFeedAfterGap(t *testing.T) {
	prod := makePod("prod").priority(9500).req("1", "1Gi").started(t0.Add(-2 * time.Hour)).obj()
	e := newEnv(t, Config{}, noDecay(v1alpha1.PredictPolicy{}))
	e.pods = []*corev1.Pod{prod}
	// Node level: the Prod pod 1 + the system 1.
	e.load = func(time.Time) load { return load{nodeCPU: 2, nodeMemory: 2 * gi, pods: []podLoad{{prod, 1, gi}}} }
	e.run(60 * time.Second) // 2 windows
	// Down for 3 hours: nothing appended, the clock moves on.
	e.clock.Step(3 * time.Hour)
	e.run(60 * time.Second) // the cache's samples from before are out of its retention
	got := statsOf(e.p, cpuIndex, func(rs *resourceState) histStats { return rs.prod.Node() })
	// 2 windows before the gap. After it the grid from t0 goes on: the
	// 360 empty windows up to t0+3h+60s are skipped, then
	// (3h+60s, 3h+90s] and (3h+90s, 3h+120s] hold 30 samples each.
	if diff := cmp.Diff(stats{2, 0, 4}, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Node histogram (-want +got):\n%s", diff)
	}
}

// TestAveragesMissingValues: a window without values is NaN, never 0.
func TestAveragesMissingValues(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	e.pods = nil
	e.load = func(now time.Time) load { return load{nodeCPU: float64(window(now)), nodeMemory: gi} }
	e.run(60 * time.Second)
	w := newWindows(t0.Add(-30*time.Second), 30*time.Second, 3)
	got := e.p.averages(e.cache, metriccache.NodeKey(metriccache.ResourceCPU), w, e.clock.Now(), slotNode)
	want := []float64{math.NaN(), 1, 2}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("averages (-want +got):\n%s", diff)
	}
}
