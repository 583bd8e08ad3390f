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

// The agent holds the Batch band to what the manager sold on the node; how
// the node's Batch allocatable is split among the band's pods is decided
// here, beside the formula that sets it.

// BandMember is one Batch pod sharing the node's Batch allocatable.
type BandMember struct {
	// RequestMilli is its CPU request (native and tier), in millicores;
	// the share it gets is proportional to it.
	RequestMilli int64
	// LimitMilli is its own CPU limit, or 0 without one.
	LimitMilli int64
}

// BandCaps splits allocatableMilli millicores of CPU among the members, so
// that the Batch band as a whole cannot use more than the manager sold on
// the node. The split is proportional to request, and no member gets more
// than its own limit; what a member's limit leaves of its share goes to the
// others, again by request ("water-filling"):
//
//  1. share_i = R × r_i ÷ Σ r over the members not yet settled, R the
//     allocatable not yet given out;
//  2. every member whose limit is at most its share is settled at its
//     limit, and R shrinks by that limit; repeat from 1 while one settles;
//  3. the others get their share, rounded down.
//
// So Σ caps ≤ allocatable whenever Σ floors fits, and while Σ limits ≤
// allocatable every member keeps its limit (the cap then changes nothing).
// Each cap is at least floorPercent % of the member's request and never
// below minCapMilli (the smallest quota the kernel takes): a band squeezed
// to nothing (allocatable 0 after the manager degraded it) still lets its
// pods run and exit; this floor is the only way Σ caps exceeds the
// allocatable. Members without a request take no share and get minCapMilli.
func BandCaps(allocatableMilli int64, members []BandMember, floorPercent int32, minCapMilli int64) []int64 {
	caps := make([]int64, len(members))
	settled := make([]bool, len(members))
	remaining := max(0, allocatableMilli)
	for {
		var sumReq int64
		for i, m := range members {
			if !settled[i] && m.RequestMilli > 0 {
				sumReq += m.RequestMilli
			}
		}
		if sumReq == 0 {
			break
		}
		changed := false
		for i, m := range members {
			if settled[i] || m.RequestMilli <= 0 || m.LimitMilli <= 0 {
				continue
			}
			if m.LimitMilli*sumReq <= remaining*m.RequestMilli {
				caps[i], settled[i], changed = m.LimitMilli, true, true
				remaining -= m.LimitMilli
			}
		}
		if changed {
			continue
		}
		for i, m := range members {
			if !settled[i] && m.RequestMilli > 0 {
				caps[i] = remaining * m.RequestMilli / sumReq
				settled[i] = true
			}
		}
	}
	for i, m := range members {
		floor := max(minCapMilli, m.RequestMilli*int64(floorPercent)/100)
		if m.LimitMilli > 0 {
			floor = min(floor, m.LimitMilli)
		}
		caps[i] = max(caps[i], floor)
	}
	return caps
}
