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
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/apis/extension"
)

func TestExcess(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	// The agent reported at t0 with a 60 s interval, averaging over the
	// default 300 s window: pods scheduled after t0 − 300 s are only the
	// part of the window they ran in. Shares below are of 10000.
	reported := c.NewMetric(makeMetric("n", t0).reportInterval(60).
		pod("ns", "low", extension.BandProd, "cpu", "300m", "memory", "256Mi").
		pod("ns", "high", extension.BandProd, "cpu", "1500m", "memory", "1536Mi").
		pod("ns", "over", extension.BandProd, "cpu", "2500m", "memory", "256Mi").obj())
	now := t0.Add(10 * time.Second)
	pod := func(key string, scheduled time.Time) AssignedPod {
		return AssignedPod{Key: key, Estimate: vec(1000, 1*Gi), Limit: vec(2000, 2*Gi), ScheduledAt: scheduled}
	}
	tests := []struct {
		name      string
		pod       AssignedPod
		want      Vector
		wantUntil time.Time
	}{{
		name: "not reported: the whole estimate",
		pod:  pod("ns/new", t0.Add(-10*time.Minute)),
		want: vec(1000, 1*Gi),
	}, {
		name: "reported, scheduled long before the report window: nothing",
		pod:  pod("ns/low", t0.Add(-10*time.Minute)),
		want: Vector{},
	}, {
		name: "reported, ran 30 s of the 300 s window: estimate minus a tenth of its usage",
		pod:  pod("ns/low", t0.Add(-30*time.Second)),
		// (1000 − 300 × 0.1, 1Gi − 256Mi × 0.1).
		want: vec(970, 1*Gi-256*Mi/10),
	}, {
		name: "a report interval after scheduling, the average holds a fifth of the pod",
		pod:  pod("ns/low", t0.Add(-60*time.Second)),
		// The source documents' rule (updateTime − 60 s < scheduledAt is
		// false) would add nothing; node usage holds 60/300 of the pod.
		want: vec(1000-60, 1*Gi-256*Mi/5),
	}, {
		name: "scheduled exactly one averaging window before is fully reported",
		pod:  pod("ns/low", t0.Add(-300*time.Second)),
		want: Vector{},
	}, {
		name: "burst: a busy pod 2 minutes in is 40 % in the average",
		pod:  pod("ns/high", t0.Add(-2*time.Minute)),
		// estimate raised to its usage (1500m, 1.5Gi) − 40 % of that usage.
		want: vec(1500-600, 1536*Mi-1536*Mi*4/10),
	}, {
		name: "usage above the estimate: the part not yet in the average",
		pod:  pod("ns/high", t0.Add(-30*time.Second)),
		// max(1000, 1500) − 150 = 1350; 1.5Gi − 0.15Gi.
		want: vec(1350, 1536*Mi-1536*Mi/10),
	}, {
		name: "usage above the limit is capped",
		pod:  pod("ns/over", t0.Add(-30*time.Second)),
		// cpu min(max(1000, 2500), 2000) − 250 = 1750; memory 1Gi − 25.6Mi.
		want: vec(1750, 1*Gi-256*Mi/10),
	}, {
		name: "forced window after scheduling",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-2*time.Minute))
			p.AfterScheduled = 5 * time.Minute
			return p
		}(),
		// Inside t0 − 2m + 5m = t0 + 3m; 120 of 300 s in the average.
		want:      vec(1000-120, 1*Gi-256*Mi*4/10),
		wantUntil: t0.Add(3 * time.Minute),
	}, {
		name: "forced window after scheduling is over",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-10*time.Minute))
			p.AfterScheduled = 5 * time.Minute
			return p
		}(),
		want: Vector{},
	}, {
		name: "forced window after initialization, not initialized yet",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-10*time.Minute))
			p.AfterInitialized = 2 * time.Minute
			return p
		}(),
		want: vec(700, 768*Mi),
	}, {
		name: "forced window after initialization, initialized a minute ago",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-10*time.Minute))
			p.InitializedAt = t0.Add(-time.Minute)
			p.AfterInitialized = 2 * time.Minute
			return p
		}(),
		want:      vec(700, 768*Mi),
		wantUntil: t0.Add(time.Minute),
	}, {
		name: "forced window after initialization is over",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-10*time.Minute))
			p.InitializedAt = t0.Add(-5 * time.Minute)
			p.AfterInitialized = 2 * time.Minute
			return p
		}(),
		want: Vector{},
	}, {
		name: "both windows: estimated until the later end",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-2*time.Minute))
			p.AfterScheduled = 5 * time.Minute
			p.InitializedAt = t0.Add(-time.Minute)
			p.AfterInitialized = 2 * time.Minute
			return p
		}(),
		want:      vec(1000-120, 1*Gi-256*Mi*4/10),
		wantUntil: t0.Add(3 * time.Minute),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, until := tc.pod.Excess(reported, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Excess (-want +got):\n%s", diff)
			}
			if !until.Equal(tc.wantUntil) {
				t.Errorf("Excess until = %v, want %v", until, tc.wantUntil)
			}
		})
	}
}

func TestNodeExcess(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	m := c.NewMetric(makeMetric("n", t0).
		pod("ns", "c", extension.BandProd, "cpu", "300m", "memory", "256Mi").
		pod("ns", "d", extension.BandBatch, "cpu", "100m").obj())
	old := t0.Add(-time.Hour)
	pods := []*AssignedPod{
		// Not reported: (1000m, 1Gi), Prod.
		{Key: "ns/a", Prod: true, Estimate: vec(1000, 1*Gi), ScheduledAt: old},
		// Not reported: (500m, 512Mi), Batch.
		{Key: "ns/b", Estimate: vec(500, 512*Mi), ScheduledAt: old},
		// Reported, forced until t0 + 1m, 60 of 300 s in the average:
		// (1000 − 300/5, 1Gi − 256Mi/5) = (940m, 1Gi − 51.2Mi), Prod.
		{Key: "ns/c", Prod: true, Estimate: vec(1000, 1*Gi), ScheduledAt: t0.Add(-time.Minute), AfterScheduled: 2 * time.Minute},
		// Reported, forced until t0 + 4m: (400 − 100/5, 256Mi − 0) = (380m, 256Mi), Batch.
		{Key: "ns/d", Estimate: vec(400, 256*Mi), ScheduledAt: t0.Add(-time.Minute), AfterScheduled: 5 * time.Minute},
	}
	all, prod, until := NodeExcess(slices.Values(pods), m, t0.Add(10*time.Second))
	// all: cpu 1000 + 500 + 940 + 380 = 2820m; memory 1Gi + 512Mi + (1Gi − 51.2Mi) + 256Mi.
	if diff := cmp.Diff(vec(2820, 2816*Mi-256*Mi/5), all); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	// prod: cpu 1000 + 940 = 1940m; memory 2Gi − 51.2Mi.
	if diff := cmp.Diff(vec(1940, 2*Gi-256*Mi/5), prod); diff != "" {
		t.Errorf("prod (-want +got):\n%s", diff)
	}
	if want := t0.Add(time.Minute); !until.Equal(want) {
		t.Errorf("until = %v, want %v (the earliest window end)", until, want)
	}
}

// TestExcessOfGivenReports holds the caller-kept path (ExcessOf with each
// pod's report, summed by ExcessSum, and NeedsEstimateOf) against
// NodeExcess and NeedsEstimate on a metric that lists the pods: a metric
// with no pod list and the reports given must decide the same, and a
// wrong report must change the answer.
func TestExcessOfGivenReports(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	nm := makeMetric("n", t0).
		pod("ns", "c", extension.BandProd, "cpu", "300m", "memory", "256Mi").
		pod("ns", "d", extension.BandBatch, "cpu", "100m").obj()
	listed := c.NewMetric(nm)
	nm.Status.PodsMetric = nil
	unlisted := c.NewMetric(nm)
	old := t0.Add(-time.Hour)
	pods := []*AssignedPod{
		{Key: "ns/a", Prod: true, Estimate: vec(1000, 1*Gi), ScheduledAt: old},
		{Key: "ns/c", Prod: true, Estimate: vec(1000, 1*Gi), ScheduledAt: t0.Add(-time.Minute), AfterScheduled: 2 * time.Minute},
		{Key: "ns/d", Estimate: vec(400, 256*Mi), ScheduledAt: t0.Add(-time.Minute), AfterScheduled: 5 * time.Minute},
		{Key: "ns/c", Estimate: vec(400, 256*Mi), ScheduledAt: t0.Add(-2 * time.Minute)},
	}
	now := t0.Add(10 * time.Second)
	all, prod, until := NodeExcess(slices.Values(pods), listed, now)
	var s ExcessSum
	for _, p := range pods {
		e, u := p.ExcessOf(unlisted, listed.PodReport(p.Key), now)
		s.Add(p, e, u)
	}
	needed := 0
	// With a pod reported a whole window after it was scheduled, which
	// needs none.
	for _, p := range append(pods, &AssignedPod{Key: "ns/d", Estimate: vec(400, 256*Mi), ScheduledAt: old}) {
		got, gotUntil := p.NeedsEstimateOf(unlisted, listed.PodReport(p.Key), now)
		want, wantUntil := p.NeedsEstimate(listed, now)
		if got != want || !gotUntil.Equal(wantUntil) {
			t.Errorf("pod %s: NeedsEstimateOf %t until %v, NeedsEstimate %t until %v", p.Key, got, gotUntil, want, wantUntil)
		}
		if got {
			needed++
		}
	}
	if needed == 0 || needed > len(pods) {
		t.Fatalf("%d of %d pods need an estimate: the case must have both", needed, len(pods)+1)
	}
	if diff := cmp.Diff(ExcessSum{All: all, Prod: prod, Until: until}, s); diff != "" {
		t.Errorf("ExcessOf summed (-NodeExcess +got):\n%s", diff)
	}
	if all == (Vector{}) || until.IsZero() {
		t.Fatalf("the case must have excess and a time limit, got %v until %v", all, until)
	}
	// The last pod is reported and past its window: no excess. Unreported,
	// its whole estimate counts.
	e, _ := pods[3].ExcessOf(unlisted, PodReport{}, now)
	if diff := cmp.Diff(vec(400, 256*Mi), e); diff != "" {
		t.Errorf("unreported pod's excess (-want +got):\n%s", diff)
	}
	if needs, _ := pods[3].NeedsEstimateOf(unlisted, PodReport{}, now); !needs {
		t.Errorf("unreported pod needs no estimate")
	}
}

// TestExcessShrinks: a later report of the same usage gives back the
// estimate of a pod it shows for longer, and a report with nothing new
// gives back nothing.
func TestExcessShrinks(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	report := func(at time.Time, withPod bool) *Metric {
		b := makeMetric("n", at).reportInterval(60)
		if withPod {
			b = b.pod("ns", "a", extension.BandBatch, "cpu", "300m", "memory", "256Mi")
		}
		return c.NewMetric(b.obj())
	}
	// Scheduled at t0; the default averaging window is 300 s.
	pods := []*AssignedPod{{Key: "ns/a", Estimate: vec(1000, 1*Gi), ScheduledAt: t0}}
	now := t0.Add(10 * time.Minute)
	tests := []struct {
		name     string
		old, cur *Metric
		want     bool
	}{
		{"the pod reported for the first time", report(t0.Add(time.Minute), false), report(t0.Add(2*time.Minute), true), true},
		{"reported a minute longer: a larger share of it is in the average", report(t0.Add(time.Minute), true), report(t0.Add(2*time.Minute), true), true},
		{"the report passes the averaging window: no estimate left", report(t0.Add(4*time.Minute+30*time.Second), true), report(t0.Add(5*time.Minute+30*time.Second), true), true},
		{"both reports past the window: nothing to give back", report(t0.Add(6*time.Minute), true), report(t0.Add(7*time.Minute), true), false},
		{"the same report again", report(t0.Add(2*time.Minute), true), report(t0.Add(2*time.Minute), true), false},
		{"the pod gone from the report: more estimate, not less", report(t0.Add(2*time.Minute), true), report(t0.Add(3*time.Minute), false), false},
		{"no earlier report", nil, report(t0.Add(2*time.Minute), true), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExcessShrinks(slices.Values(pods), tt.old, tt.cur, now); got != tt.want {
				t.Errorf("ExcessShrinks = %v, want %v", got, tt.want)
			}
		})
	}
}
