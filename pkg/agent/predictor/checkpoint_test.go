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

package predictor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// restartEnv is a node with three Prod pods whose usage changes every
// window (so every histogram has a spread), a Batch pod, and a checkpoint
// file; the default policy except cold start 0 (the pods are young). The
// metric cache keeps 3 minutes, so that what the predictor knows from
// before cannot come from the cache.
func restartEnv(t *testing.T) *env {
	t.Helper()
	policy := &v1alpha1.PredictPolicy{ColdStartSeconds: ptr.To[int64](0)}
	e := newEnvWithCache(t, Config{CheckpointPath: filepath.Join(t.TempDir(), "predictor.json")}, policy,
		metriccache.Config{Retention: 3 * time.Minute})
	var pods []*corev1.Pod
	for _, n := range []string{"a", "b", "c"} {
		pods = append(pods, makePod(n).priority(9500).req("2", "4Gi").started(t0).obj())
	}
	batch := makePod("batch").priority(5500).obj()
	e.pods = append(pods, batch)
	e.load = func(now time.Time) load {
		w := float64(window(now))
		l := load{nodeCPU: 0.3, nodeMemory: 512 * mi}
		for i, p := range pods {
			cpu := 0.2 + 0.1*float64(i) + 0.05*float64(int(w)%(5+i))
			mem := uint64(gi + (int(w)%(3+i))*64*mi)
			l.pods = append(l.pods, podLoad{p, cpu, mem})
			l.nodeCPU += cpu
			l.nodeMemory += mem
		}
		l.pods = append(l.pods, podLoad{batch, 1.5, 2 * gi})
		l.nodeCPU += 1.5
		l.nodeMemory += 2 * gi
		return l
	}
	return e
}

// state returns what p has learned, as its checkpoint holds it.
func state(p *Predictor, now time.Time) *checkpointState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateLocked(now)
}

// predictNow recomputes p's prediction at the clock's time.
func predictNow(e *env, p *Predictor) Result {
	p.mu.Lock()
	p.predictLocked(e.clock.Now())
	p.mu.Unlock()
	return latest(e.t, p)
}

// TestRestartMidRun: an agent killed (no final checkpoint) two minutes
// after its last checkpoint and started again predicts exactly what one
// that never stopped predicts: the checkpoint brings back the 10 minutes
// of histograms (the cache keeps only 3), and the windows fed after it are
// fed again from the metric cache (which the agent restores from its own
// checkpoint; here it is the same cache).
func TestRestartMidRun(t *testing.T) {
	e := restartEnv(t)
	e.run(10 * time.Minute)
	if wrote, err := e.p.Checkpoint(); err != nil || !wrote {
		t.Fatalf("Checkpoint: wrote %t, %v", wrote, err)
	}
	e.run(2*time.Minute + 10*time.Second) // 4 more windows, then kill -9

	restarted := e.newPredictor(e.p.cfg)
	withoutCheckpoint := e.newPredictor(Config{})
	e.run(time.Second, e.p, restarted, withoutCheckpoint) // the restarted agent's first cycle
	now := e.clock.Now()
	if cmp.Equal(state(e.p, now), state(withoutCheckpoint, now)) {
		t.Fatal("A predictor without the checkpoint learned everything from the cache: the test shows nothing")
	}
	if diff := cmp.Diff(state(e.p, now), state(restarted, now)); diff != "" {
		t.Fatalf("Histograms after the restart (-never stopped +restarted):\n%s", diff)
	}
	if diff := cmp.Diff(predictNow(e, e.p), predictNow(e, restarted)); diff != "" {
		t.Errorf("Prediction after the restart (-never stopped +restarted):\n%s", diff)
	}
	// And they stay the same.
	e.run(5*time.Minute, e.p, restarted)
	if diff := cmp.Diff(predictNow(e, e.p), predictNow(e, restarted)); diff != "" {
		t.Errorf("Prediction 5 min after the restart (-never stopped +restarted):\n%s", diff)
	}
	if got := latest(t, restarted); !got.Ready || got.ProdPods != 3 {
		t.Errorf("Restarted prediction: ready %t, %d Prod pods; want ready, 3", got.Ready, got.ProdPods)
	}
}

// TestRestoreWithoutMetricCache: when the metric cache's checkpoint is
// lost too, the predictor's own checkpoint still brings back everything
// up to when it was written.
func TestRestoreWithoutMetricCache(t *testing.T) {
	e := restartEnv(t)
	e.run(5 * time.Minute)
	if _, err := e.p.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	saved := state(e.p, e.clock.Now())
	want := predictNow(e, e.p)

	cache, err := metriccache.New(e.ctx, metriccache.Config{}, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	e.cache = cache // empty
	restarted := e.newPredictor(e.p.cfg)
	if err := restarted.Cycle(e.ctx, e.snapshot()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(saved, state(restarted, e.clock.Now())); diff != "" {
		t.Errorf("Restored histograms (-checkpointed +restored):\n%s", diff)
	}
	if diff := cmp.Diff(want, latest(t, restarted)); diff != "" {
		t.Errorf("Restored prediction (-before +after):\n%s", diff)
	}
	// The restored state really has history: a predictor without the
	// checkpoint, on the empty cache, has none.
	if cold := predictNow(e, e.newPredictorCycled(Config{})); cold.Reason != ReasonNoHistory {
		t.Errorf("A predictor without checkpoint on an empty cache: %s, want %s", cold.Reason, ReasonNoHistory)
	}
}

func (e *env) newPredictorCycled(cfg Config) *Predictor {
	p := e.newPredictor(cfg)
	if err := p.Cycle(e.ctx, e.snapshot()); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// TestUnusableCheckpoint: a checkpoint that cannot be used -- corrupt,
// truncated, of another version, written with another half-life, missing
// a part -- is logged and ignored, never fatal: the histograms start from
// the metric cache, exactly like an agent that never had a checkpoint.
func TestUnusableCheckpoint(t *testing.T) {
	// rewrite decodes the state, lets edit change it and re-encodes it
	// with a valid checksum.
	rewrite := func(edit func(*checkpointState)) func(*testing.T, []byte) []byte {
		return func(t *testing.T, data []byte) []byte {
			st, err := decodeCheckpoint(data)
			if err != nil {
				t.Fatal(err)
			}
			edit(st)
			out, err := encodeCheckpoint(st)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	for _, tc := range []struct {
		name   string
		mangle func(*testing.T, []byte) []byte
	}{
		{"empty", func(*testing.T, []byte) []byte { return nil }},
		{"not JSON", func(*testing.T, []byte) []byte { return []byte("\x00\x01garbage") }},
		{"truncated", func(_ *testing.T, b []byte) []byte { return b[:len(b)/2] }},
		{"a digit changed", func(t *testing.T, b []byte) []byte {
			i := bytes.Index(b, []byte(`"totalWeight":`))
			if i < 0 {
				t.Fatal("No totalWeight in the checkpoint")
			}
			i += len(`"totalWeight":`)
			out := bytes.Clone(b)
			out[i] = '0' + (out[i]-'0'+1)%10 // another digit
			return out
		}},
		{"other version", func(t *testing.T, b []byte) []byte {
			var f checkpointFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			f.Version++
			out, _ := json.Marshal(f)
			return out
		}},
		{"other half-life", rewrite(func(st *checkpointState) {
			rc := st.Resources[corev1.ResourceCPU]
			rc.Prod.Node.HalfLifeSeconds = 3600
			st.Resources[corev1.ResourceCPU] = rc
		})},
		{"no memory", rewrite(func(st *checkpointState) { delete(st.Resources, corev1.ResourceMemory) })},
		{"a band missing", rewrite(func(st *checkpointState) { delete(st.Resources[corev1.ResourceCPU].Bands, extension.BandMid) })},
		{"a pod only in cpu", rewrite(func(st *checkpointState) {
			rc := st.Resources[corev1.ResourceMemory]
			rc.Prod.Pods = rc.Prod.Pods[:len(rc.Prod.Pods)-1]
			st.Resources[corev1.ResourceMemory] = rc
		})},
		{"negative bucket weight", rewrite(func(st *checkpointState) {
			rc := st.Resources[corev1.ResourceCPU]
			rc.Prod.Node.Buckets[0].Weight = -1
			st.Resources[corev1.ResourceCPU] = rc
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := restartEnv(t)
			e.run(3 * time.Minute)
			if _, err := e.p.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			path := e.p.cfg.CheckpointPath
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.mangle(t, data), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := decodeCheckpoint(tc.mangle(t, data)); err != nil && !errors.Is(err, ErrCorruptCheckpoint) {
				t.Errorf("Decode error %v does not wrap ErrCorruptCheckpoint", err)
			}

			restarted := e.newPredictorCycled(e.p.cfg)
			fresh := e.newPredictorCycled(Config{}) // never had a checkpoint
			now := e.clock.Now()
			if diff := cmp.Diff(state(fresh, now), state(restarted, now)); diff != "" {
				t.Errorf("Histograms after an unusable checkpoint (-fresh start +restarted):\n%s", diff)
			}
			// Filled from the cache's 3 minutes, not empty.
			if got := latest(t, restarted); !got.Ready {
				t.Errorf("After an unusable checkpoint: %s (%s), want the history of the metric cache", got.Reason, got.Message)
			}
		})
	}
}

// TestCheckpointRoundTrip: decode(encode(state)) restores histograms that
// answer exactly as the originals (JSON keeps float64 exactly).
func TestCheckpointRoundTrip(t *testing.T) {
	e := restartEnv(t)
	e.run(4 * time.Minute)
	now := e.clock.Now()
	st := state(e.p, now)
	data, err := encodeCheckpoint(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Fatalf("Decoded checkpoint (-encoded +decoded):\n%s", diff)
	}
	layouts, err := newLayouts(e.p.halfLife)
	if err != nil {
		t.Fatal(err)
	}
	r := &Predictor{params: e.p.params, model: e.p.model, modelName: e.p.modelName, bandModel: e.p.bandModel, metrics: e.p.metrics, tracked: map[string]time.Time{}, reclaimRatio: e.p.reclaimRatio}
	if err := r.restoreLocked(got, layouts); err != nil {
		t.Fatal(err)
	}
	r.requests, r.prodPods = e.p.requests, e.p.prodPods
	r.predictLocked(now)
	if diff := cmp.Diff(predictNow(e, e.p), r.result); diff != "" {
		t.Errorf("Prediction of the restored histograms (-original +restored):\n%s", diff)
	}
}

// TestRunCheckpoints: Run writes the checkpoint every CheckpointInterval
// and once more when its context ends; before the first cycle it writes
// nothing, so an agent stopped at once keeps the previous checkpoint.
func TestRunCheckpoints(t *testing.T) {
	e := restartEnv(t)
	path := e.p.cfg.CheckpointPath
	savedAt := func() time.Time {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := decodeCheckpoint(data)
		if err != nil {
			t.Fatal(err)
		}
		return st.SavedAt
	}
	start := func(p *Predictor) (context.CancelFunc, chan struct{}) {
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		return cancel, done
	}

	// Stopped before its first cycle: no file.
	cancel, done := start(e.p)
	cancel()
	<-done
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Checkpoint file after a stop before the first cycle: %v, want none", err)
	}

	e.run(time.Minute)
	// The fake clock keeps stopped tickers: wait for one more.
	waiters := e.clock.Waiters()
	cancel, done = start(e.p)
	defer func() { cancel(); <-done }()
	for e.clock.Waiters() == waiters {
		time.Sleep(time.Millisecond)
	}
	e.clock.Step(DefaultCheckpointInterval)
	tick := e.clock.Now()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("No checkpoint 10 s after the checkpoint interval passed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := savedAt(); !got.Equal(tick) {
		t.Errorf("Periodic checkpoint saved at t0+%s, want t0+%s", got.Sub(t0), tick.Sub(t0))
	}
	e.clock.Step(10 * time.Second)
	cancel()
	<-done
	if got, want := savedAt(), tick.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("Final checkpoint saved at t0+%s, want t0+%s", got.Sub(t0), want.Sub(t0))
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("%d files in the state directory, want only the checkpoint (no temporary left)", len(entries))
	}
}
