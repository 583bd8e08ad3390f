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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultRegistry(t *testing.T) {
	type attrs struct {
		Name                                         MetricName
		Priority                                     int32
		Sortable, Throttleable, ThrottleQuantified   bool
		Evictable, EvictQuantified, HasThrottleFuncs bool
	}
	var got []attrs
	for _, m := range DefaultRegistry().Metrics() {
		got = append(got, attrs{m.Name, m.ActionPriority, m.Sortable, m.Throttleable, m.ThrottleQuantified,
			m.Evictable, m.EvictQuantified, m.Throttle != nil && m.Restore != nil})
	}
	want := []attrs{
		// Highest action priority first: memory, then CPU.
		{Name: MetricMemory, Priority: 8, Sortable: true, Evictable: true, EvictQuantified: true},
		{Name: MetricCPU, Priority: 5, Sortable: true, Throttleable: true, ThrottleQuantified: true,
			Evictable: true, EvictQuantified: true, HasThrottleFuncs: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default metrics (-want +got):\n%s", diff)
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := DefaultRegistry(), DefaultRegistry()
	if err := a.Register(Metric{Name: "io_usage", ActionPriority: 3}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if _, ok := b.Get("io_usage"); ok {
		t.Errorf("a metric registered in one registry shows in another: registries share state")
	}
	if _, ok := DefaultRegistry().Get("io_usage"); ok {
		t.Errorf("DefaultRegistry returned a registry holding a metric registered elsewhere")
	}
}

func TestRegisterValidation(t *testing.T) {
	tests := []struct {
		name string
		m    Metric
		// want lists substrings every one of which the error must hold.
		want []string
	}{
		{"valid custom metric", Metric{Name: "io_usage", ActionPriority: 10, Evictable: true, Evict: func(*Candidate) int64 { return 0 }}, nil},
		{
			name: "every problem is reported at once",
			m:    Metric{ActionPriority: 11, Sortable: true, Throttleable: true, EvictQuantified: true, ThrottleQuantified: false},
			want: []string{"metric.name: Required", "metric.actionPriority: Invalid value: 11", "metric.sorter: Required",
				"metric.throttle: Required", "metric.evictQuantified: Invalid value"},
		},
		{"quantified but not throttleable", Metric{Name: "x", ThrottleQuantified: true}, []string{"metric.throttleQuantified: Invalid value"}},
		{"evictable without a function", Metric{Name: "x", Evictable: true}, []string{"metric.evict: Required"}},
		{"negative priority", Metric{Name: "x", ActionPriority: -1}, []string{"metric.actionPriority: Invalid value: -1"}},
		{"duplicate of a built-in", CPUMetric(), []string{`metric.name: Duplicate value: "cpu_usage"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DefaultRegistry().Register(tt.m)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Register succeeded, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCPUFloor pins the throttle floor to percent of the request: a peer
// computed it 100× off (a ratio taken as a percent, or the reverse).
func TestCPUFloor(t *testing.T) {
	tests := []struct {
		name    string
		c       Candidate
		percent int32
		want    int64
	}{
		// 10 % of 2000m.
		{"10 percent of a 2-core request", cand(makePod("p").cpu("2", ""), usage{}), 10, 200},
		// 25 % of 500m (batch-cpu is millicores already).
		{"25 percent of a 500m batch-cpu request", cand(makePod("p").batchCPU("500", ""), usage{}), 25, 125},
		// No request: 10 % of one core.
		{"no request: percent of one core", cand(makePod("p"), usage{}), 10, 100},
		// 1 % of 200m = 2m, below the kernel's 10m minimum quota.
		{"never below the kernel minimum", cand(makePod("p").cpu("200m", ""), usage{}), 1, 10},
		{"100 percent is the whole request", cand(makePod("p").cpu("3", ""), usage{}), 100, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CPUFloorMilli(&tt.c, tt.percent); got != tt.want {
				t.Errorf("CPUFloorMilli = %dm, want %dm", got, tt.want)
			}
		})
	}
}

func TestThrottleCPU(t *testing.T) {
	// A pod requesting 2 cores, limited to 4: floor 200m at 10 %, step 400m.
	pod := makePod("p").cpu("2", "4")
	tests := []struct {
		name                    string
		usage, quota, remaining int64
		wantQuota, wantRelease  int64
	}{
		// 1500 − 600 = 900m.
		{"the pod alone closes the gap", 1500, NoQuota, 600, 900, 600},
		// 1500 − 2000 < floor 200: 200m, releasing 1300.
		{"floor when the gap is bigger than the pod", 1500, NoQuota, 2000, 200, 1300},
		// 1500 − 100 = 1400 > current 1000: keep 1000; the sample still
		// shows 1500, so 500 is released by the quota already there.
		{"never raised while throttling down", 1500, 1000, 100, 1000, 500},
		// usage 150 under the 200 floor: nothing to take.
		{"a pod under its floor is left alone", 150, NoQuota, 500, NoQuota, 0},
		// Remaining 0 reports what the current quota releases, unchanged.
		{"remaining 0 changes nothing", 1500, 1200, 0, 1200, 300},
		// Unknown gap: one step of 10 % of the 4000m limit: 1500 − 400.
		{"unknown gap takes one step", 1500, NoQuota, GapUnknown, 1100, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cand(pod, usage{cpu: tt.usage})
			q, rel := ThrottleCPU(&c, ThrottleContext{QuotaMilli: tt.quota, Remaining: tt.remaining,
				StepPercent: 10, MinCPUPercent: 10, NodeCPUMilli: 10_000})
			if diff := cmp.Diff([2]int64{tt.wantQuota, tt.wantRelease}, [2]int64{q, rel}); diff != "" {
				t.Errorf("(quota, released) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestoreCPU pins restore stepping in millicores: a peer capped a step
// given in millicores by a gap given in cores.
func TestRestoreCPU(t *testing.T) {
	limited := makePod("limited").cpu("1", "4")
	unlimited := makePod("unlimited").cpu("1", "")
	tests := []struct {
		name                   string
		pod                    *podBuilder
		quota, remaining       int64
		usage                  int64 // 0: pinned at the quota
		wantQuota, wantGranted int64
	}{
		// Step = 10 % of the 4000m limit = 400m.
		{"one step of the limit", limited, 1000, 5000, 0, 1400, 400},
		// Step 400m capped at the 150m left of the restore gap.
		{"capped by the remaining gap in millicores", limited, 1000, 150, 0, 1150, 150},
		// 3800 + 400 ≥ 4000: back to no quota; 200m granted.
		{"reaching the limit removes the quota", limited, 3800, 5000, 0, NoQuota, 200},
		// No limit: step = 10 % of the 10 000m node = 1000m.
		{"without a limit the step is of the node", unlimited, 500, 5000, 0, 1500, 1000},
		// 9500 + 1000 ≥ 10 000m node: no quota.
		{"without a limit, reaching the node removes the quota", unlimited, 9500, 5000, 0, NoQuota, 500},
		{"no gap left: unchanged", limited, 1000, 0, 0, 1000, 0},
		{"not throttled: unchanged", limited, NoQuota, 5000, 100, NoQuota, 0},
		{"unknown gap: a full step", limited, 1000, GapUnknown, 0, 1400, 400},
		// At 90 % of its quota a pod is held by it: charged in full.
		{"at 90 % of its quota the raise is charged", limited, 1000, 5000, 900, 1400, 400},
		// A pod using 500m of an 800m quota is not held by it: a raise
		// changes nothing it uses, so it costs the room nothing.
		{"using well under its quota: a step for nothing", limited, 800, 150, 500, 1200, 0},
		{"using well under its quota, reaching the limit", limited, 3800, 150, 500, NoQuota, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			use := tt.usage
			if use == 0 {
				use = tt.quota
			}
			c := cand(tt.pod, usage{cpu: use})
			q, g := RestoreCPU(&c, ThrottleContext{QuotaMilli: tt.quota, Remaining: tt.remaining,
				StepPercent: 10, MinCPUPercent: 10, NodeCPUMilli: 10_000})
			if diff := cmp.Diff([2]int64{tt.wantQuota, tt.wantGranted}, [2]int64{q, g}); diff != "" {
				t.Errorf("(quota, granted) (-want +got):\n%s", diff)
			}
		})
	}
}
