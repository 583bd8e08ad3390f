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

package qos

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// TestRestoreDoesNotStarvePinnedPods replays the trace of the issue: a
// throttled pod using 500m of its 800m quota sorts before a pod pinned at
// its 1000m quota. Charging the idle pod the full raise gave it the whole
// room under the restore line every cycle (800m -> 6560m in 12 cycles)
// while the pinned pod got nothing. The room goes to what pods can use:
// the pinned pod gets it, and the node never goes past the restore line.
func TestRestoreDoesNotStarvePinnedPods(t *testing.T) {
	p := mustPlanner(t, nodeQOS("throttle", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
		s.AvoidanceCount, s.RestoreCount = ptr.To[int32](1), ptr.To[int32](1)
	}))
	const (
		line      = 7000 // 70 % of 10 cores
		others    = 4860 // Prod usage: 640m of room at the start
		idleUse   = 500
		pinDemand = 4000
	)
	quota := map[string]int64{"idle": 800, "pinned": 1000}
	var h Hysteresis
	for cycle := 0; cycle < 12; cycle++ {
		pinnedUse := int64(pinDemand)
		if q := quota["pinned"]; q != NoQuota {
			pinnedUse = min(pinnedUse, q)
		}
		node := others + idleUse + pinnedUse
		if node > line {
			t.Fatalf("cycle %d: node at %dm, past the restore line %dm", cycle, node, line)
		}
		cands := []Candidate{
			// idle sorts first for restore: higher priority.
			cand(makePod("idle").priority(5900).cpu("1", "8"), usage{cpu: idleUse, quota: quota["idle"]}),
			cand(makePod("pinned").priority(5000).cpu("1", "8"), usage{cpu: pinnedUse, quota: quota["pinned"]}),
		}
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: node}}, cands, h)
		h = plan.Hysteresis
		for _, q := range plan.Quotas {
			quota[q.Pod.Name] = q.DesiredMilli
		}
		if o, ok := plan.Outcome(ActionThrottleUp, MetricCPU); ok && o.Released > o.Gap {
			t.Errorf("cycle %d: charged %dm against a room of %dm", cycle, o.Released, o.Gap)
		}
	}
	// The pinned pod took the 640m of room (1000m -> 1640m); the idle pod,
	// which never used its quota, is no longer held at all.
	if got := quota["pinned"]; got != 1640 {
		t.Errorf("pinned pod's quota after 12 cycles = %dm, want 1640m (it got the room)", got)
	}
	if got := quota["idle"]; got != NoQuota {
		t.Errorf("idle pod's quota after 12 cycles = %dm, want none", got)
	}
}
