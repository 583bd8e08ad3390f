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

package colocation

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// FuzzApplyQuantities: whatever cpu and memory a container asks for, a
// Batch profile either refuses the pod or moves them into batch-cpu
// (whole millicores) and batch-memory (whole bytes) exactly -- the limit
// where there is one, else the request -- and records the originals in
// the annotation; it never panics, never sells a different amount, and
// answers at once however large the exponent (the fuzzing engine reports
// an input that runs for long).
//
// Each quantity is a mantissa and a decimal exponent, the low four bits
// of set saying which of the four are given, in the form the API server
// hands the webhook: the quantity as it prints it. Exponents stay within
// ±10^8 (upstream's ParseQuantity does not return for some past int32).
func FuzzApplyQuantities(f *testing.F) {
	f.Add(int64(500), int32(-3), int64(2), int32(0), int64(1), int32(9), int64(0), int32(0), uint8(0b0111))
	f.Add(int64(0), int32(0), int64(15), int32(-1), int64(0), int32(0), int64(3), int32(8), uint8(0b1010))
	f.Add(int64(10), int32(15), int64(0), int32(0), int64(100), int32(18), int64(0), int32(0), uint8(0b0101))
	f.Add(int64(9223372036854775), int32(0), int64(0), int32(0), int64(0), int32(0), int64(9223372036854775807), int32(0), uint8(0b1001))
	f.Add(int64(1500500), int32(-6), int64(0), int32(0), int64(1), int32(3), int64(0), int32(0), uint8(0b0101))
	// Exact comparisons of these take seconds.
	f.Add(int64(100), int32(8888886), int64(0), int32(0), int64(0), int32(0), int64(1), int32(888888), uint8(0b1001))
	f.Fuzz(func(t *testing.T, cpuReqM int64, cpuReqE int32, cpuLimM int64, cpuLimE int32, memReqM int64, memReqE int32, memLimM int64, memLimE int32, set uint8) {
		req, lim := corev1.ResourceList{}, corev1.ResourceList{}
		for i, q := range []struct {
			rl   corev1.ResourceList
			name corev1.ResourceName
			m    int64
			e    int32
		}{{req, corev1.ResourceCPU, cpuReqM, cpuReqE}, {lim, corev1.ResourceCPU, cpuLimM, cpuLimE}, {req, corev1.ResourceMemory, memReqM, memReqE}, {lim, corev1.ResourceMemory, memLimM, memLimE}} {
			if set&(1<<i) == 0 {
				continue
			}
			if q.m < 0 || q.e > 1e8 || q.e < -1e8 {
				return // not a quantity the API server admits, or past the bound above
			}
			v, err := resource.ParseQuantity(fmt.Sprintf("%de%d", q.m, q.e))
			if err != nil {
				return
			}
			// The API server hands the webhook the quantity as it prints
			// it; past what a Quantity prints faithfully (1e22 written out
			// in digits prints as "10") that is another amount than the
			// one asked for, which is upstream's to mind. (Compared as
			// floats: an exact comparison of 0e8888888 takes long.)
			back, err := resource.ParseQuantity(v.String())
			if fa, fb := v.AsApproximateFloat64(), back.AsApproximateFloat64(); err != nil || !(fa == fb || math.Abs(fa-fb) <= 1e-9*math.Abs(fa)) {
				return
			}
			q.rl[q.name] = back
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
		}
		before := pod.DeepCopy()
		req, lim = before.Spec.Containers[0].Resources.Requests, before.Spec.Containers[0].Resources.Limits // Apply edits the pod's maps
		if err := Apply(pod, &v1alpha1.ColocationProfile{Name: "b", Band: "batch"}, nil); err != nil {
			return // refused, with its reason: the webhook denies the pod
		}
		got := pod.Spec.Containers[0].Resources
		for _, r := range []struct {
			from, to corev1.ResourceName
			milli    bool
		}{{corev1.ResourceCPU, extension.ResourceBatchCPU, true}, {corev1.ResourceMemory, extension.ResourceBatchMemory, false}} {
			want, asked := lim[r.from]
			if !asked {
				want, asked = req[r.from]
			}
			if _, left := got.Requests[r.from]; left {
				t.Fatalf("%s left in the requests: %v", r.from, got.Requests)
			}
			if _, left := got.Limits[r.from]; left {
				t.Fatalf("%s left in the limits: %v", r.from, got.Limits)
			}
			tierReq, hasReq := got.Requests[r.to]
			tierLim, hasLim := got.Limits[r.to]
			if !asked {
				if hasReq || hasLim {
					t.Fatalf("%s set without %s asked for: %v", r.to, r.from, got)
				}
				continue
			}
			if !hasReq || !hasLim || tierReq.Cmp(tierLim) != 0 {
				t.Fatalf("%s request %v and limit %v, want both and equal", r.to, tierReq, tierLim)
			}
			sold := tierReq.DeepCopy()
			if r.milli {
				// batch-cpu counts millicores.
				sold = *resource.NewMilliQuantity(tierReq.Value(), resource.DecimalSI)
				if tierReq.Cmp(*resource.NewQuantity(tierReq.Value(), resource.DecimalSI)) != 0 {
					t.Fatalf("%s %v is not a whole number", r.to, tierReq)
				}
			}
			if sold.Cmp(want) != 0 {
				t.Fatalf("%s %v asked for became %s %v (%v)", r.from, want.String(), r.to, tierReq.String(), sold.String())
			}
		}
		var orig OriginalResources
		if err := json.Unmarshal([]byte(pod.Annotations[extension.AnnotationOriginalResources]), &orig); err != nil && (len(req) > 0 || len(lim) > 0) {
			t.Fatalf("annotation %s: %v", extension.AnnotationOriginalResources, err)
		}
		if len(req) > 0 || len(lim) > 0 {
			rec := orig.Containers["c"]
			for name, q := range before.Spec.Containers[0].Resources.Requests {
				if r := rec.Requests[name]; r.Cmp(q) != 0 {
					t.Fatalf("annotation records request %s %v, asked %v", name, r, q)
				}
			}
			for name, q := range before.Spec.Containers[0].Resources.Limits {
				if r := rec.Limits[name]; r.Cmp(q) != 0 {
					t.Fatalf("annotation records limit %s %v, asked %v", name, r, q)
				}
			}
		}
	})
}
