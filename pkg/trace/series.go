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

package trace

import (
	"fmt"
	"slices"
)

// Series is a time series: Times in seconds (on the trace's own epoch),
// strictly increasing, and one value per time. Its layout matches
// predict.Series, so predict.Series(s) converts it.
type Series struct {
	Times  []int64
	Values []float64
}

// Len returns the number of samples.
func (s Series) Len() int { return len(s.Times) }

// add appends a sample at t ≥ the last time; at an equal time it keeps
// the larger value (a trace that reports one time twice). It reports
// false, adding nothing, when t is before the last time.
func (s *Series) add(t int64, v float64) bool {
	n := len(s.Times)
	switch {
	case n == 0 || t > s.Times[n-1]:
		s.Times = append(s.Times, t)
		s.Values = append(s.Values, v)
	case t == s.Times[n-1]:
		s.Values[n-1] = max(s.Values[n-1], v)
	default:
		return false
	}
	return true
}

// Resample puts s on a grid of step seconds: each sample moves to the
// start of its slot (t − t mod step), a slot with several samples keeps
// the largest (the peak is what a predictor is scored on), and an empty
// slot repeats the previous value when at most hold slots have been empty
// in a row since the last sample (a late sample must not look like a dip
// to zero), else stays empty.
func Resample(s Series, step int64, hold int) (Series, error) {
	if step <= 0 {
		return Series{}, fmt.Errorf("resampling: step %d must be > 0", step)
	}
	var out Series
	for i, t := range s.Times {
		slot := t - ((t%step)+step)%step
		if n := out.Len(); n > 0 {
			last := out.Times[n-1]
			for gap := int64(1); last+gap*step < slot && gap <= int64(hold); gap++ {
				out.add(last+gap*step, out.Values[n-1])
			}
		}
		if !out.add(slot, s.Values[i]) {
			return Series{}, fmt.Errorf("resampling: time %d is before the previous sample's slot", t)
		}
	}
	return out, nil
}

// Sum adds series sample by sample: at each time any of them has a
// sample, the result is the sum of the values of those that have one.
// Put the series on the same grid first (Resample) so that their samples
// meet.
func Sum(series ...Series) Series {
	total := map[int64]float64{}
	for _, s := range series {
		for i, t := range s.Times {
			total[t] += s.Values[i]
		}
	}
	out := Series{Times: make([]int64, 0, len(total)), Values: make([]float64, 0, len(total))}
	for t := range total {
		out.Times = append(out.Times, t)
	}
	slices.Sort(out.Times)
	for _, t := range out.Times {
		out.Values = append(out.Values, total[t])
	}
	return out
}
