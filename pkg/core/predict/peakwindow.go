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
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What a histogram learns from decides what its mean and deviation
// describe. Fed every sample, N-sigma measures the spread of single
// samples; but what a node must hold is the maximum its usage reaches
// over a while, and the maxima of short windows are a distribution of
// their own: higher, and less spread, than the samples they are taken of
// (the sliding-window baseline of docs/design/prediction.md takes its
// N-sigma over 5-minute maxima). A peak window makes the evaluations feed
// the histograms one value per window instead, the window's maximum, so
// that the models can be scored on that statistic
// (docs/design/prediction.md#against-a-sliding-window-baseline).

// seriesFeed walks a series forward and hands its samples to a histogram,
// either one by one at their own times (window 0), or, with a peak window
// of w seconds, one value per window: the largest sample of
// [k·w, (k+1)·w) (windows aligned on multiples of w on the series' epoch,
// as BucketMaxima's buckets are), at the window's end, once the window has
// ended. Windows without samples feed nothing.
type seriesFeed struct {
	series Series
	window int64 // seconds; 0 feeds every sample
	next   int   // first sample not yet fed
}

// until feeds everything due before T: every sample with time < T, or
// every peak window that ends at or before T (its samples are all before
// T). A window still open at T waits for a later call.
func (f *seriesFeed) until(T int64, add func(v float64, at time.Time)) {
	s := f.series
	if f.window <= 0 {
		for ; f.next < s.Len() && s.Times[f.next] < T; f.next++ {
			add(s.Values[f.next], time.Unix(s.Times[f.next], 0))
		}
		return
	}
	for f.next < s.Len() {
		end := (floorDiv(s.Times[f.next], f.window) + 1) * f.window
		if end > T {
			return
		}
		peak := s.Values[f.next]
		for f.next++; f.next < s.Len() && s.Times[f.next] < end; f.next++ {
			peak = max(peak, s.Values[f.next])
		}
		add(peak, time.Unix(end, 0))
	}
}

// validatePeakWindow checks a config's peak window (0 = off, else whole
// seconds ≥ 1s); fldPath is the config's path, so that nothing is
// allocated when the window is valid (the evaluations validate once per
// node).
func validatePeakWindow(fldPath *field.Path, d time.Duration) field.ErrorList {
	if d == 0 || (d >= time.Second && d%time.Second == 0) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("peakWindow"), d.String(), "must be 0 (every sample) or a whole number of seconds ≥ 1s")}
}
