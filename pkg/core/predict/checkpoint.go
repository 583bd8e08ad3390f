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
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrIncompatibleLayout is returned (wrapped) when histograms of different
// layouts meet: a merge, or a checkpoint written with another bucket layout
// or half-life. A caller restoring a checkpoint after a policy change
// should discard the checkpoint and start afresh.
var ErrIncompatibleLayout = errors.New("incompatible histogram layout")

// HistogramCheckpoint is the serialisable form of a Histogram: JSON-able,
// holding only the non-empty buckets. Restoring it gives back a histogram
// that answers every query exactly as the original did.
type HistogramCheckpoint struct {
	// FirstBucketSize, Ratio, MaxValue and HalfLifeSeconds record the
	// layout, so that a checkpoint is never read into different buckets.
	FirstBucketSize float64 `json:"firstBucketSize"`
	Ratio           float64 `json:"ratio"`
	MaxValue        float64 `json:"maxValue"`
	HalfLifeSeconds float64 `json:"halfLifeSeconds"`
	// ReferenceTime is the time the weights are relative to.
	ReferenceTime time.Time `json:"referenceTime,omitzero"`
	// TotalWeight is Σ bucket weights, relative to ReferenceTime.
	TotalWeight float64 `json:"totalWeight,omitempty"`
	// Pivot, Sum and SumSquares are the moments: Σ w·(x − Pivot) and
	// Σ w·(x − Pivot)².
	Pivot      float64 `json:"pivot,omitempty"`
	Sum        float64 `json:"sum,omitempty"`
	SumSquares float64 `json:"sumSquares,omitempty"`
	// Max is the largest sample.
	Max float64 `json:"max,omitempty"`
	// Buckets are the non-empty buckets in increasing index order.
	Buckets []BucketWeight `json:"buckets,omitempty"`
}

// BucketWeight is one non-empty bucket of a checkpoint.
type BucketWeight struct {
	Index  int     `json:"i"`
	Weight float64 `json:"w"`
}

// Checkpoint returns the serialisable form of h.
func (h *Histogram) Checkpoint() HistogramCheckpoint {
	c := h.layout.config
	cp := HistogramCheckpoint{
		FirstBucketSize: c.FirstBucketSize,
		Ratio:           c.Ratio,
		MaxValue:        c.MaxValue,
		HalfLifeSeconds: c.HalfLife.Seconds(),
	}
	if h.IsEmpty() {
		return cp
	}
	cp.ReferenceTime = h.ref
	cp.TotalWeight = h.total
	cp.Pivot, cp.Sum, cp.SumSquares, cp.Max = h.pivot, h.sum, h.sumSq, h.max
	for k, w := range h.weights {
		if w > 0 {
			cp.Buckets = append(cp.Buckets, BucketWeight{Index: h.lo + k, Weight: w})
		}
	}
	return cp
}

// Restore returns the histogram cp was taken from. It fails with
// ErrIncompatibleLayout (wrapped) when cp was written with another layout,
// and with a field.ErrorList aggregate naming every bad field otherwise.
func (l *Layout) Restore(cp HistogramCheckpoint) (*Histogram, error) {
	c := l.config
	if cp.FirstBucketSize != c.FirstBucketSize || cp.Ratio != c.Ratio || cp.MaxValue != c.MaxValue ||
		cp.HalfLifeSeconds != c.HalfLife.Seconds() {
		return nil, fmt.Errorf("restoring histogram: %w: checkpoint has firstBucketSize=%g ratio=%g maxValue=%g halfLifeSeconds=%g, layout has %g %g %g %g",
			ErrIncompatibleLayout, cp.FirstBucketSize, cp.Ratio, cp.MaxValue, cp.HalfLifeSeconds,
			c.FirstBucketSize, c.Ratio, c.MaxValue, c.HalfLife.Seconds())
	}
	if errs := l.validateCheckpoint(cp, field.NewPath("checkpoint")); len(errs) > 0 {
		return nil, fmt.Errorf("restoring histogram: %w", errs.ToAggregate())
	}
	h := l.NewHistogram()
	if len(cp.Buckets) == 0 {
		return h, nil
	}
	h.ref = cp.ReferenceTime
	h.total = cp.TotalWeight
	h.pivot, h.sum, h.sumSq, h.max = cp.Pivot, cp.Sum, cp.SumSquares, cp.Max
	for _, b := range cp.Buckets {
		h.addToBucket(b.Index, b.Weight)
	}
	return h, nil
}

func (l *Layout) validateCheckpoint(cp HistogramCheckpoint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	finite := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, field.Invalid(fldPath.Child(name), v, "must be finite"))
		}
	}
	finite("pivot", cp.Pivot)
	finite("sum", cp.Sum)
	finite("sumSquares", cp.SumSquares)
	finite("max", cp.Max)
	if len(cp.Buckets) > 0 && (!(cp.TotalWeight > 0) || math.IsInf(cp.TotalWeight, 0)) {
		errs = append(errs, field.Invalid(fldPath.Child("totalWeight"), cp.TotalWeight, "must be finite and > 0 when there are buckets"))
	}
	prev := -1
	for i, b := range cp.Buckets {
		p := fldPath.Child("buckets").Index(i)
		if b.Index < 0 || b.Index >= l.NumBuckets() {
			errs = append(errs, field.Invalid(p.Child("i"), b.Index, fmt.Sprintf("must be in [0, %d)", l.NumBuckets())))
		} else if b.Index <= prev {
			errs = append(errs, field.Invalid(p.Child("i"), b.Index, "must be greater than the previous bucket's index"))
		}
		prev = b.Index
		if !(b.Weight > 0) || math.IsInf(b.Weight, 0) {
			errs = append(errs, field.Invalid(p.Child("w"), b.Weight, "must be finite and > 0"))
		}
	}
	return errs
}
