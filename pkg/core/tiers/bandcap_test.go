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

package tiers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBandCaps(t *testing.T) {
	type m = BandMember
	tests := []struct {
		name    string
		alloc   int64
		members []m
		floor   int32
		want    []int64
	}{
		{"nothing to split", 1000, nil, 10, []int64{}},
		{"limits fit: each keeps its limit", 2000, []m{{500, 500}, {700, 700}}, 10, []int64{500, 700}},
		// 600 × 600 ÷ 1200 = 300 each.
		{"two equal pods share the allocatable", 600, []m{{600, 600}, {600, 600}}, 10, []int64{300, 300}},
		// 900 × 1000 ÷ 1500 = 600; 900 × 500 ÷ 1500 = 300.
		{"by request", 900, []m{{1000, 1000}, {500, 500}}, 10, []int64{600, 300}},
		// Shares of 1000 over requests 1500: 333 each, but the first pod's
		// limit is 100: it keeps 100, and the 900 left go to the other two
		// by request: 450 each. Σ = 1000.
		{"water-filling: a small limit leaves its share to the others", 1000, []m{{500, 100}, {500, 0}, {500, 0}}, 10, []int64{100, 450, 450}},
		// 1000 × 1000 ÷ 3000 = 333.33 → 333, Σ 999 ≤ 1000.
		{"rounds down", 1000, []m{{1000, 1000}, {1000, 1000}, {1000, 1000}}, 10, []int64{333, 333, 333}},
		// Nothing sold: 10 % of 500 = 50, 10 % of 1000 = 100.
		{"zero allocatable: the floor", 0, []m{{500, 500}, {1000, 1000}}, 10, []int64{50, 100}},
		// 10 % of 50 is 5m, below the 10m minimum cap.
		{"floor never under 10m", 0, []m{{50, 50}}, 10, []int64{10}},
		{"negative allocatable is zero", -300, []m{{500, 500}}, 20, []int64{100}},
		// The pod without a request takes no share: 10m; the other gets the
		// whole 1000, capped at its limit 500.
		{"a pod without a request", 1000, []m{{0, 0}, {500, 500}}, 10, []int64{10, 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BandCaps(tt.alloc, tt.members, tt.floor, 10)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BandCaps (-want +got):\n%s", diff)
			}
		})
	}
}
