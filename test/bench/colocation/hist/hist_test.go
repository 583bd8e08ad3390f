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

package hist

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exactQuantile is the ceil(q*n)-th smallest value, the rank Quantile uses.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(rank, 1)
	return sorted[rank-1]
}

// TestQuantilesOfKnownDistributions records samples of distributions with
// known shapes and checks every reported quantile against the exact one:
// never under it, at most 2^-(p-1) over it; min, max, count and mean exact.
func TestQuantilesOfKnownDistributions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() int64{
		// 1 ms of service time, ±0.5 ms: a latency body.
		"uniform 0.5-1.5ms": func() int64 { return 500_000 + r.Int64N(1_000_000) },
		// Exponential with mean 2 ms: queueing delay.
		"exponential mean 2ms": func() int64 { return int64(r.ExpFloat64() * 2e6) },
		// A long tail over six decades: lognormal.
		"lognormal": func() int64 { return int64(math.Exp(r.NormFloat64()*2 + 13)) },
		// Small integers sit in exact buckets.
		"small ints": func() int64 { return r.Int64N(200) },
	}
	qs := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for _, p := range []int{5, 8, 11} {
		for name, draw := range dists {
			t.Run(name, func(t *testing.T) {
				h := MustNew(p)
				vals := make([]int64, 200_000)
				var sum float64
				for i := range vals {
					vals[i] = draw()
					sum += float64(vals[i])
					h.Record(vals[i])
				}
				sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
				bound := math.Ldexp(1, -(p - 1))
				for _, q := range qs {
					want, got := exactQuantile(vals, q), h.Quantile(q)
					if got < want || float64(got-want) > bound*float64(want) {
						t.Errorf("precision %d: quantile %v = %d, exact %d: off by more than %.4f", p, q, got, want, bound)
					}
				}
				if h.Count() != int64(len(vals)) || h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
					t.Errorf("count/min/max = %d/%d/%d, want %d/%d/%d", h.Count(), h.Min(), h.Max(), len(vals), vals[0], vals[len(vals)-1])
				}
				if m := sum / float64(len(vals)); math.Abs(h.Mean()-m) > 1e-6*m {
					t.Errorf("mean = %v, want %v", h.Mean(), m)
				}
			})
		}
	}
}

// TestAnalyticQuantiles checks against the distribution itself, not the
// sample: the p99 of uniform [0, 10 ms) is 9.9 ms.
func TestAnalyticQuantiles(t *testing.T) {
	h := MustNew(DefaultPrecision)
	for v := range int64(10_000) {
		h.Record(v * 1000) // 0, 1 µs, ..., 9.999 ms
	}
	for q, want := range map[float64]float64{0.5: 5e6, 0.99: 9.9e6, 0.999: 9.99e6} {
		if got := float64(h.Quantile(q)); math.Abs(got-want) > want/128 {
			t.Errorf("uniform p%v = %v, want %v within 1/128", q*100, got, want)
		}
	}
}

func TestBucketsCoverEveryValue(t *testing.T) {
	h := MustNew(4)
	for _, v := range []int64{0, 1, 15, 16, 17, 31, 32, 1000, 1 << 40, math.MaxInt64} {
		lo, hi := h.bounds(h.index(v))
		if v < lo || v > hi {
			t.Errorf("value %d in bucket [%d, %d]", v, lo, hi)
		}
		if hi-lo > lo>>3 {
			t.Errorf("bucket [%d, %d] wider than 1/8 of its low end", lo, hi)
		}
	}
	// Neighbouring buckets touch.
	for i := 1; i < len(h.counts); i++ {
		_, prevHi := h.bounds(i - 1)
		lo, _ := h.bounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
		}
		if lo < 0 { // past MaxInt64
			break
		}
	}
}

func TestMergeSnapshotCDF(t *testing.T) {
	a, b, all := MustNew(7), MustNew(7), MustNew(7)
	for i := range int64(1000) {
		a.Record(i * 37)
		b.Record(i*i + 5)
		all.Record(i * 37)
		all.Record(i*i + 5)
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all.Summary(), a.Summary()); diff != "" {
		t.Errorf("merged summary (-want +got):\n%s", diff)
	}
	if err := a.Merge(MustNew(8)); err == nil {
		t.Error("merging precision 8 into 7: no error")
	}
	js, err := json.Marshal(all.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	if err := json.Unmarshal(js, &s); err != nil {
		t.Fatal(err)
	}
	back, err := FromSnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all.Summary(), back.Summary()); diff != "" {
		t.Errorf("summary after a JSON round trip (-want +got):\n%s", diff)
	}
	cdf := all.CDF()
	if len(cdf) == 0 || cdf[len(cdf)-1].Fraction != 1 || cdf[len(cdf)-1].Value != all.Max() {
		t.Fatalf("CDF does not end at (max, 1): %v", cdf[len(cdf)-1])
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Value <= cdf[i-1].Value || cdf[i].Fraction <= cdf[i-1].Fraction {
			t.Fatalf("CDF not increasing at %d: %v then %v", i, cdf[i-1], cdf[i])
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, p := range []int{-1, 0, 1, 13, 64} {
		if _, err := New(p); err == nil {
			t.Errorf("New(%d): no error", p)
		}
	}
	if _, err := FromSnapshot(Snapshot{Precision: 8, Min: 5, Max: 1, Buckets: []Bucket{{Value: 3, Count: 1}}}); err == nil {
		t.Error("snapshot with min over max: no error")
	}
	if _, err := FromSnapshot(Snapshot{Precision: 8, Buckets: []Bucket{{Value: -3, Count: 1}}}); err == nil {
		t.Error("snapshot with a negative value: no error")
	}
	h := MustNew(8)
	if h.Quantile(0.99) != 0 || h.Min() != 0 || h.Mean() != 0 {
		t.Error("empty histogram reports non-zero")
	}
	h.Record(-5)
	if h.Max() != 0 {
		t.Errorf("a negative value recorded as %d, want 0", h.Max())
	}
}

func BenchmarkRecord(b *testing.B) {
	h := MustNew(DefaultPrecision)
	b.ReportAllocs()
	for i := range b.N {
		h.Record(int64(i) * 7919)
	}
}
