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

// Package hist is an HDR-style histogram of non-negative integer values
// (nanoseconds in the benchmark): log-linear buckets, so every recorded
// value is kept within a fixed relative error whatever its magnitude, in
// constant memory, with exact counts, min and max.
//
// A value v is put in bucket
//
//	v                              when v < 2^p
//	shift*2^(p-1) + v>>shift       otherwise, shift = bitlen(v) - p
//
// so a bucket spans at most 2^-(p-1) of its lower bound; quantiles report
// the bucket's highest value, clamped to the recorded min and max (as
// HdrHistogram's "highest equivalent value" does): never under the true
// quantile, at most 2^-(p-1) over it.
package hist

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// Precision bounds. 8 bits keeps values within 0.8 %.
const (
	MinPrecision     = 2
	MaxPrecision     = 12
	DefaultPrecision = 8
)

// Histogram counts values. The zero value is not usable: call New.
// Not safe for concurrent use.
type Histogram struct {
	p      uint
	counts []int64
	total  int64
	min    int64
	max    int64
	sum    float64
}

// New returns a histogram keeping values within 2^-(precision-1)
// relative error.
func New(precision int) (*Histogram, error) {
	if precision < MinPrecision || precision > MaxPrecision {
		return nil, fmt.Errorf("histogram precision %d: must be in [%d, %d] bits", precision, MinPrecision, MaxPrecision)
	}
	p := uint(precision)
	// The largest index is that of MaxInt64: shift 63-p, sub < 2^p.
	n := (64-int(p))*(1<<(p-1)) + (1 << p)
	return &Histogram{p: p, counts: make([]int64, n), min: math.MaxInt64}, nil
}

// MustNew is New for constant precisions.
func MustNew(precision int) *Histogram {
	h, err := New(precision)
	if err != nil {
		panic(err)
	}
	return h
}

// Precision returns the precision in bits.
func (h *Histogram) Precision() int { return int(h.p) }

func (h *Histogram) index(v int64) int {
	u := uint64(v)
	n := uint(bits.Len64(u))
	if n <= h.p {
		return int(u)
	}
	shift := n - h.p
	return int(shift)*(1<<(h.p-1)) + int(u>>shift)
}

// bounds returns the lowest and highest value of bucket i (the inverse
// of index).
func (h *Histogram) bounds(i int) (lo, hi int64) {
	full, half := 1<<h.p, 1<<(h.p-1)
	if i < full {
		return int64(i), int64(i)
	}
	shift := uint((i-full)/half + 1)
	sub := int64((i-full)%half + half)
	lo = sub << shift
	return lo, lo + (int64(1) << shift) - 1
}

// Record counts v once; a negative v counts as 0.
func (h *Histogram) Record(v int64) { h.RecordN(v, 1) }

// RecordN counts v n times.
func (h *Histogram) RecordN(v int64, n int64) {
	if n <= 0 {
		return
	}
	if v < 0 {
		v = 0
	}
	h.counts[h.index(v)] += n
	h.total += n
	h.sum += float64(v) * float64(n)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.total }

// Min is the smallest value recorded, 0 when empty.
func (h *Histogram) Min() int64 {
	if h.total == 0 {
		return 0
	}
	return h.min
}

// Max is the largest value recorded, exact.
func (h *Histogram) Max() int64 { return h.max }

// Mean is the exact mean, 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}

// Quantile returns the value at quantile q in [0,1]: the highest value of
// the bucket holding the ceil(q*count)-th smallest value (at least the
// first), clamped to [Min, Max]. 0 when empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	q = math.Max(0, math.Min(1, q))
	rank := int64(math.Ceil(q * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			_, hi := h.bounds(i)
			return min(max(hi, h.min), h.max)
		}
	}
	return h.max
}

// Merge adds o's counts to h. Both must have the same precision.
func (h *Histogram) Merge(o *Histogram) error {
	if o.p != h.p {
		return fmt.Errorf("merging histograms of precision %d into %d", o.p, h.p)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	if o.total > 0 {
		h.min = min(h.min, o.min)
		h.max = max(h.max, o.max)
	}
	return nil
}

// Point is one step of a cumulative distribution: Fraction of the values
// are at most Value.
type Point struct {
	Value    int64   `json:"value"`
	Fraction float64 `json:"fraction"`
}

// CDF returns the cumulative distribution at each non-empty bucket's
// highest value (clamped to Max), in increasing order.
func (h *Histogram) CDF() []Point {
	var out []Point
	var seen int64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		_, hi := h.bounds(i)
		out = append(out, Point{Value: min(max(hi, h.min), h.max), Fraction: float64(seen) / float64(h.total)})
	}
	return out
}

// Bucket is one non-empty bucket, for serialising a histogram.
type Bucket struct {
	// Value is a value in the bucket (its lowest).
	Value int64 `json:"v"`
	Count int64 `json:"n"`
}

// Snapshot is a histogram in a form JSON keeps: the non-empty buckets
// with exact min, max and sum.
type Snapshot struct {
	Precision int      `json:"precision"`
	Min       int64    `json:"min"`
	Max       int64    `json:"max"`
	Sum       float64  `json:"sum"`
	Buckets   []Bucket `json:"buckets"`
}

// Snapshot returns h's non-empty buckets.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Precision: int(h.p), Min: h.Min(), Max: h.max, Sum: h.sum}
	for i, c := range h.counts {
		if c != 0 {
			lo, _ := h.bounds(i)
			s.Buckets = append(s.Buckets, Bucket{Value: lo, Count: c})
		}
	}
	return s
}

// FromSnapshot rebuilds a histogram.
func FromSnapshot(s Snapshot) (*Histogram, error) {
	h, err := New(s.Precision)
	if err != nil {
		return nil, err
	}
	sort.Slice(s.Buckets, func(i, j int) bool { return s.Buckets[i].Value < s.Buckets[j].Value })
	for i, b := range s.Buckets {
		if b.Value < 0 || b.Count < 0 {
			return nil, fmt.Errorf("histogram bucket %d: value %d count %d: must not be negative", i, b.Value, b.Count)
		}
		h.counts[h.index(b.Value)] += b.Count
		h.total += b.Count
	}
	if h.total > 0 {
		if s.Min > s.Max {
			return nil, fmt.Errorf("histogram min %d over max %d", s.Min, s.Max)
		}
		h.min, h.max = s.Min, s.Max
	}
	h.sum = s.Sum
	return h, nil
}

// Summary is what a report shows of a latency histogram.
type Summary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p999"`
	Max   int64   `json:"max"`
}

// Summary returns the usual quantiles.
func (h *Histogram) Summary() Summary {
	return Summary{Count: h.total, Mean: h.Mean(), P50: h.Quantile(0.5), P90: h.Quantile(0.9),
		P99: h.Quantile(0.99), P999: h.Quantile(0.999), Max: h.max}
}
