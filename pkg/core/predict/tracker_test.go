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
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTracker(t *testing.T) {
	l := pow2Layout(t, 0)
	model := Max{NSigmaV2{params(func(p *Params) { p.ColdStart = time.Hour })}, ResourceCentral{params(nil)}}
	tests := []struct {
		name string
		ops  func(tr *Tracker)
		want Prediction
	}{{
		name: "pods and node fed",
		ops: func(tr *Tracker) {
			for _, v := range std.node {
				tr.AddNodeSample(v, 1, t0)
			}
			tr.SetPod("a", t0.Add(-2*time.Hour), 6)
			tr.SetPod("b", t0.Add(-2*time.Hour), 2)
			for _, v := range std.a {
				tr.AddPodSample("a", v, 1, t0)
			}
			for _, v := range std.b {
				tr.AddPodSample("b", v, 1, t0)
			}
		},
		// NSigmaV2 (n=2): node 5 + 4 = 9, pods 4 + 2 = 6 → 9; RC: 3 + 2 = 5 → 9.
		want: Prediction{Peak: 9, Ready: true},
	}, {
		name: "samples of unknown pods are refused, a new pod is cold",
		ops: func(tr *Tracker) {
			for _, v := range std.node {
				tr.AddNodeSample(v, 1, t0)
			}
			if tr.AddPodSample("ghost", 100, 1, t0) {
				t.Errorf("AddPodSample(ghost) = true, want false")
			}
			tr.SetPod("c", t0.Add(-10*time.Minute), 3)
		},
		// node 9 + cold c 3 = 12.
		want: Prediction{Peak: 12, ColdStartPods: 1},
	}, {
		name: "a removed pod no longer counts",
		ops: func(tr *Tracker) {
			for _, v := range std.node {
				tr.AddNodeSample(v, 1, t0)
			}
			tr.SetPod("a", t0.Add(-2*time.Hour), 6)
			tr.SetPod("c", t0.Add(-10*time.Minute), 3)
			tr.RemovePod("c")
			tr.RemovePod("c")
			for _, v := range std.a {
				tr.AddPodSample("a", v, 1, t0)
			}
		},
		// node 9 vs pod a 4: 9.
		want: Prediction{Peak: 9, Ready: true},
	}, {
		name: "SetPod updates the request and keeps the history",
		ops: func(tr *Tracker) {
			tr.SetPod("c", t0.Add(-10*time.Minute), 3)
			tr.AddPodSample("c", 1, 1, t0)
			tr.SetPod("c", t0.Add(-10*time.Minute), 5)
		},
		// no node history: Σ requests 5 (node level) vs pods cold 5: 5.
		want: Prediction{Peak: 5, ColdStartPods: 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(l)
			tc.ops(tr)
			got := model.Predict(tr.Input(t0))
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("Predict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrackerRestartMidRun is what the agent relies on: checkpoint,
// restart (restore from JSON), keep feeding, and predict what an agent that
// never restarted predicts.
func TestTrackerRestartMidRun(t *testing.T) {
	l, err := NewLayout(HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 1000, HalfLife: 12 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	model, err := New("Max", Params{N: 5, Percentile: 99, ColdStart: time.Hour, SafetyMarginPercent: 10})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(tr *Tracker, from, to int) {
		for i := from; i < to; i++ {
			at := t0.Add(time.Duration(i) * time.Minute)
			if i == 30 {
				tr.SetPod("late", at, 2)
			}
			for p, id := range []string{"web", "db", "late"} {
				v := 0.5 + float64((i*7+p*3)%11)/10
				tr.AddPodSample(id, v, 1, at)
			}
			tr.AddNodeSample(3+float64(i%13)/5, 1, at)
		}
	}
	newTracker := func() *Tracker {
		tr := NewTracker(l)
		tr.SetPod("web", t0.Add(-48*time.Hour), 2)
		tr.SetPod("db", t0.Add(-48*time.Hour), 4)
		return tr
	}
	always := newTracker()
	feed(always, 0, 3000)

	restarted := newTracker()
	feed(restarted, 0, 1500)
	raw, err := json.Marshal(restarted.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	var cp TrackerCheckpoint
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	restarted, err = l.RestoreTracker(cp)
	if err != nil {
		t.Fatalf("RestoreTracker: %v", err)
	}
	feed(restarted, 1500, 3000)

	now := t0.Add(3000 * time.Minute)
	want, got := model.Predict(always.Input(now)), model.Predict(restarted.Input(now))
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("prediction after restart (-want +got):\n%s", diff)
	}
	if !want.Ready || want.Peak <= 0 {
		t.Errorf("prediction %+v: want a ready, positive peak (the test would prove nothing otherwise)", want)
	}

	t.Run("another layout is refused", func(t *testing.T) {
		_, err := pow2Layout(t, time.Hour).RestoreTracker(cp)
		if !errors.Is(err, ErrIncompatibleLayout) {
			t.Errorf("RestoreTracker error = %v, want ErrIncompatibleLayout", err)
		}
	})
	t.Run("duplicate pods are refused", func(t *testing.T) {
		dup := cp
		dup.Pods = append(dup.Pods, cp.Pods[0])
		if _, err := l.RestoreTracker(dup); err == nil {
			t.Error("RestoreTracker accepted a duplicate pod")
		}
	})
}

// TestTrackerGeneration holds a copy of Input's pods, kept while the
// tracker's Generation stays the same, to the pods Input lists afresh,
// over random changes and samples: a change that Generation missed shows
// as a stale copy.
func TestTrackerGeneration(t *testing.T) {
	l := pow2Layout(t, time.Hour)
	tr := NewTracker(l)
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []string{"a", "b", "c", "d", "e", SystemPodID}
	var kept []PodInput
	gen := tr.Generation()
	for step := range 5000 {
		at := t0.Add(time.Duration(step) * time.Minute)
		id := ids[rng.IntN(len(ids))]
		switch rng.IntN(6) {
		case 0:
			tr.SetPod(id, at.Add(-time.Duration(rng.IntN(3))*time.Hour), float64(rng.IntN(4)))
		case 1:
			tr.RemovePod(id)
		case 2:
			tr.AddSystemSample(rng.Float64(), 1, at)
		case 3:
			tr.AddNodeSample(rng.Float64(), 1, at)
		default:
			tr.AddPodSample(id, rng.Float64(), 1, at)
		}
		fresh := tr.Input(at).Pods
		if tr.Generation() != gen {
			kept, gen = slices.Clone(fresh), tr.Generation()
			continue
		}
		if !slices.Equal(kept, fresh) {
			t.Fatalf("step %d: generation %d unchanged, but Input lists %+v, was %+v", step, gen, fresh, kept)
		}
	}
}
