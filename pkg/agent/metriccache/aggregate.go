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
	"slices"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Aggregate is the statistics of a series over a window. Percentiles are
// nearest-rank: the p-th percentile of n sorted values is the value at
// rank ⌈p·n/100⌉ (1-based), always one of the samples, so p99 of fewer than
// 100 samples is the maximum.
type Aggregate struct {
	// Count is the number of samples in the window.
	Count int
	Avg   float64
	P50   float64
	P90   float64
	P95   float64
	P99   float64
	Max   float64
}

// Get returns the statistic an AggregationType names, and false for an
// unknown type.
func (a Aggregate) Get(t v1alpha1.AggregationType) (float64, bool) {
	switch t {
	case v1alpha1.AggregationAvg:
		return a.Avg, true
	case v1alpha1.AggregationP50:
		return a.P50, true
	case v1alpha1.AggregationP90:
		return a.P90, true
	case v1alpha1.AggregationP95:
		return a.P95, true
	case v1alpha1.AggregationP99:
		return a.P99, true
	case v1alpha1.AggregationMax:
		return a.Max, true
	}
	return 0, false
}

// aggregate computes the statistics of values, reordering them; false when
// there are none. values must not hold NaN (the cache never returns one).
func aggregate(values []float32) (Aggregate, bool) {
	n := len(values)
	if n == 0 {
		return Aggregate{}, false
	}
	// Sum in float64: 1800 float32 additions would lose digits.
	var sum float64
	hi := values[0]
	for _, v := range values {
		sum += float64(v)
		hi = max(hi, v)
	}
	// Each percentile is an order statistic. Selecting them in increasing
	// rank, each within what is right of the previous one, costs a few
	// passes over the values instead of a full sort (4× faster at 300).
	var out [4]float64
	from := 0
	for i, p := range [...]int{50, 90, 95, 99} {
		k := max((p*n+99)/100, 1) - 1 // ⌈p·n/100⌉, 0-based
		out[i] = float64(selectKth(values, from, k))
		from = k
	}
	return Aggregate{Count: n, Avg: sum / float64(n), P50: out[0], P90: out[1], P95: out[2], P99: out[3], Max: float64(hi)}, true
}

// selectKth reorders v[from:] so that v[k] is the value a sort would put
// there, with nothing smaller right of it, and returns v[k]. It expects
// v[:from] to hold nothing larger than any of v[from:].
func selectKth(v []float32, from, k int) float32 {
	lo, hi := from, len(v)-1
	for hi-lo > 16 {
		// Median of three as pivot, then Hoare partition.
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k] // between j and i: equal to the pivot
		}
	}
	slices.Sort(v[lo : hi+1])
	return v[k]
}
