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

package nodeload

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxResources is how many resources one Config can track. cpu and memory
// take two slots; the rest are for extended resources named in the args.
// Eight keeps a Vector at one cache line.
const MaxResources = 8

// Positions of cpu and memory in every Vector.
const (
	CPU    = 0
	Memory = 1
)

// Vector holds one value per tracked resource, at the position the
// Resources of its Config give it: cpu in millicores, every other resource
// in its base unit (bytes for memory). Positions past Resources.Len() are
// zero.
type Vector [MaxResources]int64

// Add returns v + o, saturating like Filter's sums: the excess of pods
// with exabyte estimates, or exabytes of usage reported per pod, would
// otherwise wrap to a negative load that fits any threshold.
func (v Vector) Add(o Vector) Vector {
	for i := range v {
		v[i] = addSat(v[i], o[i])
	}
	return v
}

// Max returns the element-wise maximum of v and o.
func (v Vector) Max(o Vector) Vector {
	for i := range v {
		v[i] = max(v[i], o[i])
	}
	return v
}

// Resources maps the resources a Config tracks to Vector positions. cpu is
// always at CPU and memory at Memory; extra resources follow in name order,
// so two Configs built from the same names agree on positions.
type Resources struct {
	names [MaxResources]corev1.ResourceName
	n     int
}

// NewResources returns the positions of cpu, memory and the extra names
// (duplicates, cpu and memory among them are ignored). It fails when more
// than MaxResources resources would be tracked.
func NewResources(extra ...corev1.ResourceName) (Resources, error) {
	r := Resources{n: 2}
	r.names[CPU] = corev1.ResourceCPU
	r.names[Memory] = corev1.ResourceMemory
	sorted := slices.Clone(extra)
	slices.Sort(sorted)
	for _, name := range slices.Compact(sorted) {
		if _, ok := r.Index(name); ok || name == "" {
			continue
		}
		if r.n == MaxResources {
			return Resources{}, fmt.Errorf("tracking %d resources (cpu, memory and %v): at most %d are supported", len(sorted)+2, sorted, MaxResources)
		}
		r.names[r.n] = name
		r.n++
	}
	return r, nil
}

// Len is the number of tracked resources.
func (r *Resources) Len() int { return r.n }

// Name returns the resource at position i.
func (r *Resources) Name(i int) corev1.ResourceName { return r.names[i] }

// Names returns the tracked resources in position order.
func (r *Resources) Names() []corev1.ResourceName { return slices.Clone(r.names[:r.n]) }

// Index returns the position of name, and false when it is not tracked.
func (r *Resources) Index(name corev1.ResourceName) (int, bool) {
	for i := range r.n {
		if r.names[i] == name {
			return i, true
		}
	}
	return 0, false
}

// Vector converts a ResourceList; resources that are not tracked are left
// out.
func (r *Resources) Vector(rl corev1.ResourceList) Vector {
	var v Vector
	for i := range r.n {
		if q, ok := rl[r.names[i]]; ok {
			v[i] = value(i, q)
		}
	}
	return v
}

// vectorReported is Vector with bit i of reported set for each tracked
// resource the list names.
func (r *Resources) vectorReported(rl corev1.ResourceList) (v Vector, reported uint16) {
	for i := range r.n {
		if q, ok := rl[r.names[i]]; ok {
			v[i] = value(i, q)
			reported |= 1 << i
		}
	}
	return v, reported
}

// Percents converts a map of percentages (thresholds, weights, factors);
// names that are not tracked are left out.
func (r *Resources) Percents(m map[corev1.ResourceName]int64) Vector {
	var v Vector
	for i := range r.n {
		v[i] = m[r.names[i]]
	}
	return v
}

// List converts v back to a ResourceList, for logs and tests.
func (r *Resources) List(v Vector) corev1.ResourceList {
	rl := make(corev1.ResourceList, r.n)
	for i := range r.n {
		if i == CPU {
			rl[r.names[i]] = *resource.NewMilliQuantity(v[i], resource.DecimalSI)
			continue
		}
		rl[r.names[i]] = *resource.NewQuantity(v[i], resource.BinarySI)
	}
	return rl
}

// value is a quantity in the unit of position i: millicores for cpu, the
// base unit for everything else.
func value(i int, q resource.Quantity) int64 {
	if i == CPU {
		return q.MilliValue()
	}
	return q.Value()
}
