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

package metriccache

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

// podCPU is the value of pod p at second i: it varies, so that a window
// restored at the wrong offset would change the statistics.
func podCPU(p, i int) float64 { return float64((i*7+p*13)%50) / 10 }

func fillPods(t testing.TB, c *Cache, clk *clocktesting.FakeClock, pods, seconds int) {
	t.Helper()
	pts := make([]Point, 0, 2*pods+2)
	fill(t, c, clk, seconds, func(i int) []Point {
		pts = append(pts[:0], Point{nodeCPU, float64(i%97) / 10}, Point{NodeKey(ResourceMemory), float64(1<<30 + i*4096)})
		for p := range pods {
			pts = append(pts, Point{PodKey(uidOf(p), ResourceCPU), podCPU(p, i)})
			if i%3 != 0 { // gaps survive the round trip as gaps
				pts = append(pts, Point{PodKey(uidOf(p), ResourceMemory), float64(p * 1000)})
			}
		}
		return pts
	})
}

func TestRestartKeepsWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metriccache.ckpt")
	cfg := Config{CheckpointPath: path}
	c, clk := newCache(t, cfg)
	fillPods(t, c, clk, 20, 600) // 10 minutes of 20 pods
	if err := c.Checkpoint(); err != nil {
		t.Fatal(err)
	}

	// A new process, same moment: every window is there at once.
	_, ctx := ktesting.NewTestContext(t)
	restored, err := New(ctx, cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []SeriesKey{nodeCPU, NodeKey(ResourceMemory), PodKey(uidOf(3), ResourceCPU), PodKey(uidOf(3), ResourceMemory)} {
		for _, w := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
			want, _ := c.Aggregate(k, w)
			got, ok := restored.Aggregate(k, w)
			if !ok {
				t.Fatalf("Restored cache has no %s/%s over %s", k.ID, k.Resource, w)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s/%s over %s after restart (-before +after):\n%s", k.Kind, k.ID, k.Resource, w, diff)
			}
		}
	}
	if diff := cmp.Diff(c.AggregateKind(KindPod, ResourceCPU, 5*time.Minute), restored.AggregateKind(KindPod, ResourceCPU, 5*time.Minute)); diff != "" {
		t.Errorf("All pods' 5m CPU after restart (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(c.Values(nil, nodeCPU, time.Hour), restored.Values(nil, nodeCPU, time.Hour)); diff != "" {
		t.Errorf("Node CPU values after restart (-before +after):\n%s", diff)
	}
	// Appending goes on after the restored samples.
	clk.Step(time.Second)
	if err := restored.Append(clk.Now(), []Point{{nodeCPU, 42}}); err != nil {
		t.Fatalf("Append after restore: %v", err)
	}
}

func TestRestoreDropsSamplesOlderThanRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metriccache.ckpt")
	cfg := Config{CheckpointPath: path, Retention: 30 * time.Minute}
	c, clk := newCache(t, cfg)
	fill(t, c, clk, 600, func(i int) []Point { return []Point{{nodeCPU, float64(i)}, {PodKey("old", ResourceCPU), 1}} })
	if err := c.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Down for 25 minutes: now = t0 + 599 s + 1500 s = t0 + 2099 s; only
	// samples after t0 + 299 s are within 30 minutes: i = 300..599.
	clk.Step(25 * time.Minute)
	_, ctx := ktesting.NewTestContext(t)
	restored, err := New(ctx, cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	st := restored.Stats()
	if st.Samples != 300 || !st.Oldest.Equal(t0.Add(300*time.Second)) {
		t.Errorf("Restored %d samples from %s, want 300 from %s", st.Samples, st.Oldest, t0.Add(300*time.Second))
	}
	// 5 more minutes and they are all gone, pod series included.
	clk.Step(5 * time.Minute)
	if err := restored.Append(clk.Now(), []Point{{nodeCPU, 1}}); err != nil {
		t.Fatal(err)
	}
	if keys := restored.Keys(KindPod); len(keys) != 0 || restored.Stats().Samples != 1 {
		t.Errorf("After the retention: pod series %v, %d samples; want none and 1", keys, restored.Stats().Samples)
	}
}

// bufferedLogger returns a context whose logger keeps what is logged.
func bufferedLogger(t *testing.T) (context.Context, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return klog.NewContext(t.Context(), logger), func() string {
		return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
}

func TestUnusableCheckpointStartsEmpty(t *testing.T) {
	valid := func(t *testing.T) []byte {
		path := filepath.Join(t.TempDir(), "ckpt")
		c, clk := newCache(t, Config{CheckpointPath: path})
		fill(t, c, clk, 300, func(i int) []Point { return []Point{{nodeCPU, 1}, {PodKey("p", ResourceCPU), 2}} })
		if err := c.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// reseal recomputes the checksum, for damage the checksum would not
	// catch.
	reseal := func(b []byte) []byte {
		body := b[:len(b)-4]
		return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, crcTable))
	}
	tests := []struct {
		name    string
		damage  func([]byte) []byte
		wantLog string
	}{
		{"one flipped bit", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, "checksum"},
		{"truncated", func(b []byte) []byte { return b[:len(b)/3] }, "checksum"},
		{"empty file", func(b []byte) []byte { return nil }, "header"},
		{"another format", func(b []byte) []byte { return []byte("{\"samples\": []}") }, "header"},
		{"another version", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 99); return reseal(b) }, "another version"},
		{"series past the samples", func(b []byte) []byte {
			// The first series' count field, after magic, version, savedAt,
			// nTimes, times, nSeries, kind, res, idLen, id, first.
			off := 4 + 4 + 8 + 4 + 300*8 + 4 + 1 + 1
			off += 2 + int(binary.LittleEndian.Uint16(b[off:])) + 4
			binary.LittleEndian.PutUint32(b[off:], 1<<30)
			return reseal(b)
		}, "covers samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ckpt")
			if err := os.WriteFile(path, tc.damage(valid(t)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, logs := bufferedLogger(t)
			c, err := New(ctx, Config{CheckpointPath: path}, clocktesting.NewFakeClock(t0.Add(5*time.Minute)))
			if err != nil {
				t.Fatalf("New failed on an unusable checkpoint: %v", err)
			}
			if st := c.Stats(); st.Samples != 0 || st.Series != 0 {
				t.Errorf("Started with %d samples, %d series; want empty", st.Samples, st.Series)
			}
			if got := logs(); !strings.Contains(got, "Ignoring the metric cache checkpoint") || !strings.Contains(got, tc.wantLog) {
				t.Errorf("Log does not say the checkpoint was ignored because of %q:\n%s", tc.wantLog, got)
			}
		})
	}
}

func TestCheckpointIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt")
	c, clk := newCache(t, Config{CheckpointPath: path})
	fill(t, c, clk, 10, func(i int) []Point { return []Point{{nodeCPU, 1}} })
	for range 3 {
		if err := c.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"ckpt"}, names); diff != "" {
		t.Errorf("Files after checkpoints, no temporary left behind (-want +got):\n%s", diff)
	}

	// A checkpoint that cannot be written leaves the old one intact.
	before, _ := os.ReadFile(path)
	c.cfg.CheckpointPath = filepath.Join(dir, "missing-dir", "ckpt")
	if err := c.Checkpoint(); err == nil {
		t.Errorf("Checkpoint into a missing directory succeeded")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Errorf("A failed checkpoint changed the previous one")
	}
}

func TestRunCheckpointsPeriodicallyAndOnShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt")
	c, clk := newCache(t, Config{CheckpointPath: path, CheckpointInterval: 30 * time.Second})
	if err := c.Append(clk.Now(), []Point{{nodeCPU, 1}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		c.Run(ctx)
		close(done)
	}()

	samplesIn := func() int {
		b, err := os.ReadFile(path)
		if err != nil {
			return -1
		}
		cp, err := decodeCheckpoint(b)
		if err != nil {
			t.Fatalf("Checkpoint written by Run is unreadable: %v", err)
		}
		return len(cp.times)
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("Timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Nothing before the interval.
	waitFor("the ticker", func() bool { return clk.HasWaiters() })
	if n := samplesIn(); n != -1 {
		t.Fatalf("Checkpoint written before the interval (%d samples)", n)
	}
	clk.Step(30 * time.Second)
	waitFor("the periodic checkpoint", func() bool { return samplesIn() == 1 })

	clk.Step(time.Second)
	if err := c.Append(clk.Now(), []Point{{nodeCPU, 2}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if n := samplesIn(); n != 2 {
		t.Errorf("Final checkpoint holds %d samples, want 2", n)
	}
}

func TestDecodeCheckpointErrorsAreTyped(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("WLMC"), []byte("WLMC\x01\x00\x00\x00\x00\x00\x00\x00")} {
		if _, err := decodeCheckpoint(b); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("decodeCheckpoint(%q): %v, want ErrCorruptCheckpoint", b, err)
		}
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	c, clk := newCache(f, Config{CheckpointPath: filepath.Join(f.TempDir(), "ckpt")})
	fill(f, c, clk, 150, func(i int) []Point { return []Point{{nodeCPU, 1}, {PodKey("p", ResourceMemory), float64(i)}} })
	c.mu.RLock()
	f.Add(c.encodeLocked(nil))
	c.mu.RUnlock()
	f.Add([]byte("WLMC\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		// Whatever decodes must load without panicking.
		fresh, clk := newCache(t, Config{})
		clk.SetTime(time.Unix(0, cp.savedAt))
		fresh.mu.Lock()
		fresh.loadLocked(cp)
		fresh.mu.Unlock()
	})
}

// encodeValueByValue is the checkpoint encoder as first written: every
// value looked up and appended one by one. The encoder copies runs of
// chunks instead; both must write the same bytes.
func encodeValueByValue(c *Cache, b []byte) []byte {
	b = append(b, checkpointMagic...)
	b = binary.LittleEndian.AppendUint32(b, checkpointVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.clock.Now().UnixNano()))
	n := uint64(len(c.times))
	b = binary.LittleEndian.AppendUint32(b, uint32(c.head-c.tail))
	for seq := c.tail; seq < c.head; seq++ {
		b = binary.LittleEndian.AppendUint64(b, uint64(c.times[seq%n]))
	}
	countAt := len(b)
	b = binary.LittleEndian.AppendUint32(b, 0)
	var written uint32
	for k, s := range c.series {
		first, last, ok := uint64(0), uint64(0), false
		c.eachValueLocked(s, c.tail, c.head, func(seq uint64, _ float32) {
			if !ok {
				first, ok = seq, true
			}
			last = seq
		})
		if !ok {
			continue
		}
		b = append(b, byte(k.Kind), byte(k.Resource))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k.ID)))
		b = append(b, k.ID...)
		b = binary.LittleEndian.AppendUint32(b, uint32(first-c.tail))
		b = binary.LittleEndian.AppendUint32(b, uint32(last-first+1))
		ci := 0
		for seq := first; seq <= last; seq++ {
			for ci < len(s.chunks) && s.chunks[ci].base+chunkSlots <= seq {
				ci++
			}
			bits := nanBits
			if ci < len(s.chunks) && s.chunks[ci].base <= seq {
				bits = math.Float32bits(s.chunks[ci].values[seq-s.chunks[ci].base])
			}
			b = binary.LittleEndian.AppendUint32(b, bits)
		}
		written++
	}
	binary.LittleEndian.PutUint32(b[countAt:], written)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// TestCheckpointEncodingValueByValue: the run-copying encoder writes the
// same bytes as the value-by-value one, on series that start and end
// mid-chunk, vanish for longer than a chunk and come back, lose chunks to
// the budget, and are cut by the retention.
func TestCheckpointEncodingValueByValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		secs int
	}{
		{"partial chunks", Config{}, 500},
		{"past the retention", Config{Retention: 5 * time.Minute}, 1000},
		{"evicted by the budget", Config{Retention: 30 * time.Minute, MemoryBudgetBytes: 1 << 20}, 1800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := newCache(t, tc.cfg)
			pts := []Point{}
			fill(t, c, clk, tc.secs, func(i int) []Point {
				pts = append(pts[:0], Point{nodeCPU, float64(i)})
				for p := range 300 {
					switch {
					case p%5 == 1 && i >= 130 && i < 400: // gone for 270 s
					case p%5 == 2 && i < 77+p: // starts late
					case p%5 == 3 && i > 333: // ends early
					case p%5 == 4 && i%7 == 0: // holes
					default:
						pts = append(pts, Point{PodKey(uidOf(p), ResourceCPU), podCPU(p, i)})
					}
				}
				return pts
			})
			c.mu.RLock()
			got := c.encodeLocked(nil)
			want := encodeValueByValue(c, nil)
			evicted := c.stats.EvictedChunks
			c.mu.RUnlock()
			// Series come in map order, which differs between two
			// walks: compare them by key, value bits included.
			type run struct {
				first uint32
				bits  []uint32
			}
			byKey := func(b []byte) (map[SeriesKey]run, []int64) {
				cp, err := decodeCheckpoint(b)
				if err != nil {
					t.Fatal(err)
				}
				out := map[SeriesKey]run{}
				for _, s := range cp.series {
					r := run{first: s.first}
					for _, v := range s.values {
						r.bits = append(r.bits, math.Float32bits(v))
					}
					out[s.key] = r
				}
				return out, cp.times
			}
			gotSeries, gotTimes := byKey(got)
			wantSeries, wantTimes := byKey(want)
			if len(got) != len(want) || len(gotSeries) < 100 {
				t.Fatalf("Checkpoint of %d bytes and %d series, value by value %d bytes", len(got), len(gotSeries), len(want))
			}
			if diff := cmp.Diff(wantTimes, gotTimes); diff != "" {
				t.Errorf("Timestamps (-value by value +runs):\n%s", diff)
			}
			if diff := cmp.Diff(wantSeries, gotSeries, cmp.AllowUnexported(run{})); diff != "" {
				t.Errorf("Series (-value by value +runs):\n%s", diff)
			}
			if tc.cfg.MemoryBudgetBytes > 0 && evicted == 0 {
				t.Fatalf("The budget case evicted nothing: it tests nothing")
			}
		})
	}
}
