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

package metriccache

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newCache(t testing.TB, cfg Config) (*Cache, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	_, ctx := ktesting.NewTestContext(t)
	c, err := New(ctx, cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

// fill appends one sample a second for n seconds starting at the clock's
// now, each from points(i), and leaves the clock at the last sample.
func fill(t testing.TB, c *Cache, clk *clocktesting.FakeClock, n int, points func(i int) []Point) {
	t.Helper()
	for i := range n {
		if i > 0 {
			clk.Step(time.Second)
		}
		if err := c.Append(clk.Now(), points(i)); err != nil {
			t.Fatal(err)
		}
	}
}

var nodeCPU = NodeKey(ResourceCPU)

func TestAggregate(t *testing.T) {
	tests := []struct {
		name   string
		values []float32
		want   Aggregate
		wantOK bool
	}{{
		name: "empty",
	}, {
		name: "one value is every statistic", values: []float32{3},
		want: Aggregate{Count: 1, Avg: 3, P50: 3, P90: 3, P95: 3, P99: 3, Max: 3}, wantOK: true,
	}, {
		// 1..10 shuffled: avg 55/10; ranks ⌈5⌉=5, ⌈9⌉=9, ⌈9.5⌉=10, ⌈9.9⌉=10.
		name: "nearest rank", values: []float32{7, 1, 10, 3, 5, 9, 2, 8, 4, 6},
		want: Aggregate{Count: 10, Avg: 5.5, P50: 5, P90: 9, P95: 10, P99: 10, Max: 10}, wantOK: true,
	}, {
		// 200 values 1..200: ranks 100, 180, 190, 198.
		name: "p99 of 200", values: seq(1, 200),
		want: Aggregate{Count: 200, Avg: 100.5, P50: 100, P90: 180, P95: 190, P99: 198, Max: 200}, wantOK: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := aggregate(append([]float32(nil), tc.values...))
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("aggregate (-want +got):\n%s", diff)
			}
		})
	}
}

func seq(from, to int) []float32 {
	var out []float32
	for i := from; i <= to; i++ {
		out = append(out, float32(i))
	}
	return out
}

func TestAggregateGet(t *testing.T) {
	a := Aggregate{Avg: 1, P50: 2, P90: 3, P95: 4, P99: 5, Max: 6}
	var got []float64
	for _, typ := range []v1alpha1.AggregationType{v1alpha1.AggregationAvg, v1alpha1.AggregationP50, v1alpha1.AggregationP90,
		v1alpha1.AggregationP95, v1alpha1.AggregationP99, v1alpha1.AggregationMax} {
		v, ok := a.Get(typ)
		if !ok {
			t.Fatalf("Get(%s) not ok", typ)
		}
		got = append(got, v)
	}
	if diff := cmp.Diff([]float64{1, 2, 3, 4, 5, 6}, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	if _, ok := a.Get("p42"); ok {
		t.Errorf("Get(p42) ok, want false")
	}
}

func TestWindows(t *testing.T) {
	c, clk := newCache(t, Config{})
	// Ten minutes, value = seconds since t0; the pod reports every other
	// second only.
	pod := PodKey("p1", ResourceCPU)
	fill(t, c, clk, 600, func(i int) []Point {
		pts := []Point{{nodeCPU, float64(i)}}
		if i%2 == 0 {
			pts = append(pts, Point{pod, float64(i)})
		}
		return pts
	})
	tests := []struct {
		name   string
		key    SeriesKey
		window time.Duration
		want   Aggregate
	}{{
		// now = t0+599 s; (now−300 s, now] holds i = 300..599: 300
		// values, avg 449.5, ranks 150 → 449, 270 → 569, 285 → 584,
		// 297 → 596.
		name: "5m of the node", key: nodeCPU, window: 5 * time.Minute,
		want: Aggregate{Count: 300, Avg: 449.5, P50: 449, P90: 569, P95: 584, P99: 596, Max: 599},
	}, {
		// Even i in 300..598: 150 values, avg 449, ranks 75 → 448,
		// 135 → 568, 143 → 584, 149 → 596.
		name: "5m of a series with gaps", key: pod, window: 5 * time.Minute,
		want: Aggregate{Count: 150, Avg: 449, P50: 448, P90: 568, P95: 584, P99: 596, Max: 598},
	}, {
		// Longer than the data: everything, 0..599.
		name: "window longer than the data", key: nodeCPU, window: time.Hour,
		want: Aggregate{Count: 600, Avg: 299.5, P50: 299, P90: 539, P95: 569, P99: 593, Max: 599},
	}, {
		// i = 590..599.
		name: "10s", key: nodeCPU, window: 10 * time.Second,
		want: Aggregate{Count: 10, Avg: 594.5, P50: 594, P90: 598, P95: 599, P99: 599, Max: 599},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := c.Aggregate(tc.key, tc.window)
			if !ok {
				t.Fatal("no values")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Aggregate (-want +got):\n%s", diff)
			}
		})
	}

	// Time passes without samples: the window slides past them.
	clk.Step(4 * time.Minute)
	if got, _ := c.Aggregate(nodeCPU, 5*time.Minute); got.Count != 60 || got.Max != 599 {
		t.Errorf("5m window 4m after the last sample: %+v, want the last 60 samples", got)
	}
	if _, ok := c.Aggregate(PodKey("unknown", ResourceCPU), time.Minute); ok {
		t.Errorf("Aggregate of an unknown series ok, want false")
	}
}

func TestValuesAndLatest(t *testing.T) {
	c, clk := newCache(t, Config{})
	fill(t, c, clk, 5, func(i int) []Point { return []Point{{nodeCPU, float64(i) / 4}} })
	// (now−2 s, now] = samples 3 and 4.
	got := c.Values(nil, nodeCPU, 2*time.Second)
	want := []TimedValue{{t0.Add(3 * time.Second), 0.75}, {t0.Add(4 * time.Second), 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Values (-want +got):\n%s", diff)
	}
	latest, ok := c.Latest(nodeCPU)
	if diff := cmp.Diff(TimedValue{t0.Add(4 * time.Second), 1}, latest); diff != "" || !ok {
		t.Errorf("Latest (-want +got), ok %v:\n%s", ok, diff)
	}
}

func TestAggregateKind(t *testing.T) {
	c, clk := newCache(t, Config{})
	fill(t, c, clk, 60, func(i int) []Point {
		return []Point{
			{PodKey("a", ResourceCPU), 1},
			{PodKey("b", ResourceCPU), float64(i % 2)}, // 0,1,0,1…
			{PodKey("a", ResourceMemory), 100},
		}
	})
	got := c.AggregateKind(KindPod, ResourceCPU, time.Minute)
	want := map[string]Aggregate{
		"a": {Count: 60, Avg: 1, P50: 1, P90: 1, P95: 1, P99: 1, Max: 1},
		// 30 zeros then 30 ones sorted: rank 30 → 0, ranks 54, 57, 60 → 1.
		"b": {Count: 60, Avg: 0.5, P50: 0, P90: 1, P95: 1, P99: 1, Max: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AggregateKind (-want +got):\n%s", diff)
	}
}

// TestAverageKind: the averages the reporter asks for are AggregateKind's,
// over windows shorter and longer than a chunk, with gaps in the series,
// and nothing for a series without a value in the window.
func TestAverageKind(t *testing.T) {
	c, clk := newCache(t, Config{})
	fillPods(t, c, clk, 20, 600) // memory has a gap every third second
	clk.Step(time.Second)
	fill(t, c, clk, 100, func(int) []Point { return []Point{{PodKey("late", ResourceMemory), 7}} })
	for _, r := range []Resource{ResourceCPU, ResourceMemory} {
		for _, w := range []time.Duration{10 * time.Second, 5 * time.Minute, time.Hour} {
			want := map[string]float64{}
			for id, a := range c.AggregateKind(KindPod, r, w) {
				want[id] = a.Avg
			}
			got := c.AverageKind(KindPod, r, w)
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("AverageKind(%s, %s) (-AggregateKind's +got):\n%s", r, w, diff)
			}
			if n := len(got); (w == 10*time.Second && r == ResourceCPU && n != 0) || (w > 10*time.Second && n < 20) {
				t.Errorf("AverageKind(%s, %s) has %d pods", r, w, n)
			}
		}
	}
}

func TestRetention(t *testing.T) {
	c, clk := newCache(t, Config{Retention: 30 * time.Minute})
	gone := PodKey("gone", ResourceCPU)
	// 40 minutes; the pod "gone" exists for the first 5 only.
	fill(t, c, clk, 2400, func(i int) []Point {
		pts := []Point{{nodeCPU, 1}}
		if i < 300 {
			pts = append(pts, Point{gone, 1})
		}
		return pts
	})
	st := c.Stats()
	// now = t0+2399 s; kept: times > now − 30 m, i = 600..2399.
	if st.Samples != 1800 || !st.Oldest.Equal(t0.Add(600*time.Second)) {
		t.Errorf("Kept %d samples from %s, want 1800 from %s", st.Samples, st.Oldest, t0.Add(600*time.Second))
	}
	if a, _ := c.Aggregate(nodeCPU, time.Hour); a.Count != 1800 {
		t.Errorf("1h window holds %d samples, want the 1800 kept", a.Count)
	}
	if keys := c.Keys(KindPod); len(keys) != 0 {
		t.Errorf("Series of a pod gone for longer than the retention still kept: %v", keys)
	}
	// Node CPU: 1800 kept samples span 16 chunks of 120 at most.
	wantBytes := int64(len(c.times))*timeSlotBytes + seriesBytes(nodeCPU) + 16*chunkBytes
	if st.UsedBytes > wantBytes {
		t.Errorf("UsedBytes %d, want at most %d (ring + node series)", st.UsedBytes, wantBytes)
	}
}

func TestOutOfOrder(t *testing.T) {
	c, clk := newCache(t, Config{})
	fill(t, c, clk, 3, func(i int) []Point { return []Point{{nodeCPU, float64(i)}} })
	for _, at := range []time.Time{clk.Now(), clk.Now().Add(-time.Second)} {
		if err := c.Append(at, []Point{{nodeCPU, 99}}); !errors.Is(err, ErrOutOfOrder) {
			t.Errorf("Append at %s: %v, want ErrOutOfOrder", at, err)
		}
	}
	if a, _ := c.Aggregate(nodeCPU, time.Hour); a.Max != 2 || a.Count != 3 {
		t.Errorf("A refused sample was stored: %+v", a)
	}
	if st := c.Stats(); st.OutOfOrder != 2 {
		t.Errorf("OutOfOrder = %d, want 2", st.OutOfOrder)
	}
}

func TestMemoryBudget(t *testing.T) {
	tests := []struct {
		name        string
		pods        int
		wantRefused bool
	}{
		// 1000 pods × 10 min: 5 chunks each would be 1000 × (196 + 5 ×
		// 488) = 2.6 MB; the 1 MiB budget holds their current chunks
		// (1000 × 684 = 684 kB) but must evict older ones.
		{"evicts oldest pod chunks", 1000, false},
		// 2000 pods: even their current chunks (1.37 MB) do not fit.
		{"refuses what cannot fit", 2000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const budget = 1 << 20
			c, clk := newCache(t, Config{MemoryBudgetBytes: budget})
			keys := make([]SeriesKey, tc.pods)
			for i := range keys {
				keys[i] = PodKey(types.UID(fmt.Sprintf("%036d", i)), ResourceCPU)
			}
			pts := make([]Point, 0, tc.pods+2)
			for i := range 600 {
				if i > 0 {
					clk.Step(time.Second)
				}
				// Node first and last: the order must not matter.
				pts = append(pts[:0], Point{nodeCPU, 1})
				for _, k := range keys {
					pts = append(pts, Point{k, 1})
				}
				pts = append(pts, Point{NodeKey(ResourceMemory), 1})
				if err := c.Append(clk.Now(), pts); err != nil {
					t.Fatal(err)
				}
				if st := c.Stats(); st.UsedBytes > budget {
					t.Fatalf("Sample %d: UsedBytes %d over the %d budget", i, st.UsedBytes, budget)
				}
			}
			st := c.Stats()
			if st.EvictedChunks == 0 {
				t.Errorf("No chunk evicted")
			}
			if (st.Refused > 0) != tc.wantRefused {
				t.Errorf("Refused = %d, want refusals %v", st.Refused, tc.wantRefused)
			}
			for _, k := range []SeriesKey{nodeCPU, NodeKey(ResourceMemory)} {
				if a, _ := c.Aggregate(k, time.Hour); a.Count != 600 {
					t.Errorf("Node series %s kept %d of 600 samples; node history must outlive pod history", k.Resource, a.Count)
				}
			}
			if !tc.wantRefused {
				// Every pod keeps at least its latest value.
				for _, k := range keys {
					if _, ok := c.Latest(k); !ok {
						t.Fatalf("Pod series %s lost its latest value", k.ID)
					}
				}
			}
		})
	}
}

func TestAppendSample(t *testing.T) {
	c, _ := newCache(t, Config{})
	cpuMem := func(cpu float64, mem uint64) collector.Usage {
		return collector.Usage{CPU: cpu, HasCPU: true, Memory: mem, HasMemory: true}
	}
	s := &collector.Sample{
		Time:   t0,
		Node:   cpuMem(4, 8000),
		System: collector.Usage{Memory: 1000, HasMemory: true}, // no CPU this cycle
		Pods: []collector.PodSample{
			{Pod: collector.PodRef{UID: "a", Band: extension.BandProd}, Usage: cpuMem(1, 3000)},
			{Pod: collector.PodRef{UID: "b", Band: ""}, Usage: cpuMem(0.5, 2000)}, // no band: Prod
			{Pod: collector.PodRef{UID: "c", Band: extension.BandBatch}, Usage: cpuMem(1.5, 1000)},
			// A new batch pod without a CPU rate yet.
			{Pod: collector.PodRef{UID: "d", Band: extension.BandBatch}, Usage: collector.Usage{Memory: 1000, HasMemory: true}},
		},
	}
	if err := c.AppendSample(s); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, kind := range []Kind{KindNode, KindSystem, KindPod, KindBand} {
		for _, k := range c.Keys(kind) {
			v, _ := c.Latest(k)
			got[fmt.Sprintf("%s/%s/%s", k.Kind, k.ID, k.Resource)] = v.Value
		}
	}
	want := map[string]float64{
		"node//cpu": 4, "node//memory": 8000,
		"system//memory": 1000,
		"pod/a/cpu":      1, "pod/a/memory": 3000,
		"pod/b/cpu": 0.5, "pod/b/memory": 2000,
		"pod/c/cpu": 1.5, "pod/c/memory": 1000,
		"pod/d/memory": 1000,
		// Prod: 1 + 0.5 cores, 3000 + 2000 bytes.
		"band/prod/cpu": 1.5, "band/prod/memory": 5000,
		"band/mid/cpu": 0, "band/mid/memory": 0,
		// Batch memory 1000 + 1000; no CPU: pod d has no rate.
		"band/batch/memory": 2000,
		"band/free/cpu":     0, "band/free/memory": 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stored series (-want +got):\n%s", diff)
	}
}

func TestFloat32Precision(t *testing.T) {
	// Memory in bytes stored as float32 keeps 24 bits of mantissa: 64 GiB
	// is exact to 4 KiB, well under what a working set moves by.
	c, _ := newCache(t, Config{})
	const v = 64<<30 + 4096*3
	if err := c.Append(t0, []Point{{NodeKey(ResourceMemory), v}}); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Latest(NodeKey(ResourceMemory))
	if math.Abs(got.Value-v) > 4096 {
		t.Errorf("Stored %v as %v", float64(v), got.Value)
	}
}

func TestConfigValidate(t *testing.T) {
	p := field.NewPath("m")
	tests := []struct {
		name string
		cfg  Config
		want field.ErrorList
	}{{
		name: "defaults are valid",
	}, {
		name: "every field wrong",
		cfg:  Config{Retention: time.Second, Interval: time.Hour, MemoryBudgetBytes: 1000, CheckpointPath: "cache.ckpt", CheckpointInterval: 2 * time.Hour},
		want: field.ErrorList{
			field.Invalid(p.Child("retention"), "1s", "must be between 1m and 24h"),
			field.Invalid(p.Child("interval"), "1h0m0s", "must be between 100ms and 1m"),
			field.Invalid(p.Child("memoryBudgetBytes"), int64(1000), "must be at least 1048576 (1 MiB)"),
			field.Invalid(p.Child("checkpointPath"), "cache.ckpt", "must be an absolute path"),
			field.Invalid(p.Child("checkpointInterval"), "2h0m0s", "must be between 1s and 1h"),
		},
	}, {
		// 24 h at 1 s: (86400 + 120) slots × 8 B = 692160 B of ring.
		name: "budget below twice the ring",
		cfg:  Config{Retention: 24 * time.Hour, MemoryBudgetBytes: 1 << 20},
		want: field.ErrorList{field.Invalid(p.Child("memoryBudgetBytes"), int64(1<<20), "must be at least twice the 692160 bytes of the timestamp ring that retention/interval needs")},
	}, {
		// No ring of 24 h at 1 ns (14 TB) is held against the budget.
		name: "a refused interval is one error",
		cfg:  Config{Retention: 24 * time.Hour, Interval: time.Nanosecond},
		want: field.ErrorList{field.Invalid(p.Child("interval"), "1ns", "must be between 100ms and 1m")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SetDefaults()
			if diff := cmp.Diff(tc.want, cfg.Validate(p)); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRejectsBudgetBelowRing(t *testing.T) {
	// 24 h at 1 s is 86520 slots × 8 B = 692 kB of ring: a 1 MiB budget
	// would leave less than the ring for data.
	_, err := New(t.Context(), Config{Retention: 24 * time.Hour, MemoryBudgetBytes: 1 << 20}, clocktesting.NewFakeClock(t0))
	if err == nil {
		t.Errorf("New accepted a budget smaller than twice its timestamp ring")
	}
}

func uidOf(p int) types.UID { return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", p, p)) }

// TestConcurrentUse runs appends, queries and checkpoints at once; run
// with -race it checks the locking.
func TestConcurrentUse(t *testing.T) {
	c, clk := newCache(t, Config{CheckpointPath: filepath.Join(t.TempDir(), "ckpt")})
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, reader := range []func(){
		func() { c.Aggregate(nodeCPU, 5*time.Minute) },
		func() { c.AggregateKind(KindPod, ResourceCPU, time.Minute) },
		func() { c.Values(nil, PodKey(uidOf(1), ResourceCPU), time.Minute) },
		func() { c.Stats(); c.Keys(KindPod) },
		func() {
			if err := c.Checkpoint(); err != nil {
				t.Error(err)
			}
		},
	} {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					reader()
				}
			}
		})
	}
	fillPods(t, c, clk, 20, 400)
	close(done)
	wg.Wait()
	if a, _ := c.Aggregate(nodeCPU, time.Hour); a.Count != 400 {
		t.Errorf("Node CPU holds %d samples after concurrent use, want 400", a.Count)
	}
}

func TestAggregateMatchesSorting(t *testing.T) {
	// Selection must agree with sorting on any data: random sizes, many
	// duplicates, already sorted and reversed input.
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + r.IntN(700)
		values := make([]float32, n)
		for i := range values {
			switch trial % 4 {
			case 0:
				values[i] = r.Float32() * 4
			case 1:
				values[i] = float32(r.IntN(5)) // heavy duplicates
			case 2:
				values[i] = float32(i)
			case 3:
				values[i] = float32(n - i)
			}
		}
		sorted := slices.Clone(values)
		slices.Sort(sorted)
		rank := func(p int) float64 { return float64(sorted[max((p*n+99)/100, 1)-1]) }
		got, _ := aggregate(slices.Clone(values))
		want := Aggregate{Count: n, P50: rank(50), P90: rank(90), P95: rank(95), P99: rank(99), Max: float64(sorted[n-1])}
		got.Avg = 0
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Trial %d, %d values (-sorted +selected):\n%s", trial, n, diff)
		}
	}
}
