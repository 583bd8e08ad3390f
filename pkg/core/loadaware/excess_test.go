package loadaware

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/apis/extension"
)

func TestExcess(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	// The agent reported at t0 with a 60 s interval: pods scheduled after
	// t0 − 60 s are only partly in the report.
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
		name: "reported, scheduled inside the report window: estimate minus usage",
		pod:  pod("ns/low", t0.Add(-30*time.Second)),
		// t0 − 60 s < t0 − 30 s: (1000 − 300, 1024Mi − 256Mi) = (700m, 768Mi).
		want: vec(700, 768*Mi),
	}, {
		name: "scheduled exactly at the window start is fully reported",
		pod:  pod("ns/low", t0.Add(-60*time.Second)),
		// t0 − 60 s < t0 − 60 s is false.
		want: Vector{},
	}, {
		name: "usage above the estimate: nothing on top",
		pod:  pod("ns/high", t0.Add(-30*time.Second)),
		// max(1000, 1500) − 1500 = 0; max(1Gi, 1.5Gi) − 1.5Gi = 0.
		want: Vector{},
	}, {
		name: "usage above the limit is capped: nothing on top",
		pod:  pod("ns/over", t0.Add(-30*time.Second)),
		// cpu min(max(1000, 2500), 2000) − 2500 < 0 → 0; memory 1Gi − 256Mi = 768Mi.
		want: vec(0, 768*Mi),
	}, {
		name: "forced window after scheduling",
		pod: func() AssignedPod {
			p := pod("ns/low", t0.Add(-2*time.Minute))
			p.AfterScheduled = 5 * time.Minute
			return p
		}(),
		// Outside the report window but inside t0 − 2m + 5m = t0 + 3m.
		want:      vec(700, 768*Mi),
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
		want:      vec(700, 768*Mi),
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
		// Reported, forced until t0 + 1m: (1000 − 300, 1024Mi − 256Mi) = (700m, 768Mi), Prod.
		{Key: "ns/c", Prod: true, Estimate: vec(1000, 1*Gi), ScheduledAt: t0.Add(-time.Minute), AfterScheduled: 2 * time.Minute},
		// Reported, forced until t0 + 4m: (400 − 100, 256Mi − 0) = (300m, 256Mi), Batch.
		{Key: "ns/d", Estimate: vec(400, 256*Mi), ScheduledAt: t0.Add(-time.Minute), AfterScheduled: 5 * time.Minute},
	}
	all, prod, until := NodeExcess(slices.Values(pods), m, t0.Add(10*time.Second))
	// all: cpu 1000 + 500 + 700 + 300 = 2500m; memory 1024 + 512 + 768 + 256 = 2560Mi.
	if diff := cmp.Diff(vec(2500, 2560*Mi), all); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	// prod: cpu 1000 + 700 = 1700m; memory 1024 + 768 = 1792Mi.
	if diff := cmp.Diff(vec(1700, 1792*Mi), prod); diff != "" {
		t.Errorf("prod (-want +got):\n%s", diff)
	}
	if want := t0.Add(time.Minute); !until.Equal(want) {
		t.Errorf("until = %v, want %v (the earliest window end)", until, want)
	}
}
