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
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
)

const (
	benchPods    = 200
	benchSamples = 1800 // 30 min at 1 s
)

// benchSample is the collector's sample of a node with benchPods pods at
// second i.
func benchSample(i int) *collector.Sample {
	s := &collector.Sample{
		Time:   t0.Add(time.Duration(i) * time.Second),
		Node:   collector.Usage{CPU: 10 + float64(i%13), HasCPU: true, Memory: 40<<30 + uint64(i%97)<<20, HasMemory: true},
		System: collector.Usage{CPU: 1, HasCPU: true, Memory: 2 << 30, HasMemory: true},
		Pods:   make([]collector.PodSample, benchPods),
	}
	bands := []extension.Band{extension.BandProd, extension.BandMid, extension.BandBatch, extension.BandFree}
	for p := range s.Pods {
		s.Pods[p] = collector.PodSample{
			Pod:   collector.PodRef{UID: uidOf(p), Band: bands[p%4]},
			Usage: collector.Usage{CPU: benchCPU(p, i), HasCPU: true, Memory: benchMem(p, i), HasMemory: true},
		}
	}
	return s
}

// mix, benchCPU and benchMem give the values the TSDB comparison in the
// README stores too: CPU rates with five significant digits (0..4 cores)
// and memory with page-size jitter, noisy like real usage so that neither
// store is flattered by repeating values.
func mix(p, i int) uint64 {
	x := uint64(p)*0x9E3779B97F4A7C15 ^ uint64(i)*0xC2B2AE3D27D4EB4F
	x ^= x >> 29
	x *= 0xBF58476D1CE4E5B9
	return x ^ x>>32
}

func benchCPU(p, i int) float64 { return float64(mix(p, i)%100000) / 25000 }
func benchMem(p, i int) uint64  { return uint64(p+1)<<20 + mix(p, i)%256*4096 }

// filledCache is a cache holding 30 minutes of benchPods pods, the clock at
// the last sample.
func filledCache(b *testing.B, cfg Config) (*Cache, *clocktesting.FakeClock) {
	b.Helper()
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(b.Context(), cfg, clk)
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchSamples {
		s := benchSample(i)
		clk.SetTime(s.Time)
		if err := c.AppendSample(s); err != nil {
			b.Fatal(err)
		}
	}
	return c, clk
}

// BenchmarkAppendSample appends one sample (node, system, 200 pods, 4
// bands: 412 values) to a cache already holding 30 minutes, so every
// append also expires the oldest sample. The naive baseline is a map of
// []TimedValue per series trimmed by time.
func BenchmarkAppendSample(b *testing.B) {
	samples := make([]*collector.Sample, 600)
	for i := range samples {
		samples[i] = benchSample(benchSamples + i)
	}
	b.Run("ring", func(b *testing.B) {
		c, clk := filledCache(b, Config{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			s := samples[i%len(samples)]
			// Fresh times: the ring only takes newer samples.
			s.Time = t0.Add(time.Duration(benchSamples+i) * time.Second)
			clk.SetTime(s.Time)
			if err := c.AppendSample(s); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/412, "ns/value")
	})
	b.Run("naive", func(b *testing.B) {
		n := filledNaive(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			s := samples[i%len(samples)]
			s.Time = t0.Add(time.Duration(benchSamples+i) * time.Second)
			n.appendSample(s)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/412, "ns/value")
	})
}

// BenchmarkQuery5m answers the 5-minute statistics (count, avg, p50 … p99,
// max) of one pod's CPU, and of every pod's CPU at once.
func BenchmarkQuery5m(b *testing.B) {
	c, _ := filledCache(b, Config{})
	n := filledNaive(b)
	key := PodKey(uidOf(7), ResourceCPU)
	want, _ := c.Aggregate(key, 5*time.Minute)
	b.Run("one-series/ring", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a, _ := c.Aggregate(key, 5*time.Minute); a.Count != 300 {
				b.Fatalf("count %d", a.Count)
			}
		}
	})
	b.Run("one-series/naive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a := n.aggregate(key, t0.Add((benchSamples-1)*time.Second), 5*time.Minute); a.P95 != want.P95 {
				b.Fatalf("p95 %v, ring says %v", a.P95, want.P95)
			}
		}
	})
	b.Run("all-pods/ring", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := c.AggregateKind(KindPod, ResourceCPU, 5*time.Minute); len(got) != benchPods {
				b.Fatalf("%d pods", len(got))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/pod")
	})
	b.Run("all-pods/naive", func(b *testing.B) {
		b.ReportAllocs()
		now := t0.Add((benchSamples - 1) * time.Second)
		for b.Loop() {
			for p := range benchPods {
				n.aggregate(PodKey(uidOf(p), ResourceCPU), now, 5*time.Minute)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/pod")
	})
}

// BenchmarkMemory fills a store with 200 pods × 30 min and reports what it
// holds: accounted bytes (the budget's view), live heap and the process
// RSS growth, for the ring and the naive baseline.
func BenchmarkMemory(b *testing.B) {
	for _, impl := range []string{"ring", "naive"} {
		b.Run(impl, func(b *testing.B) {
			for b.Loop() {
				heap0, rss0 := liveHeap(), rssBytes(b)
				var keep any
				var accounted int64
				if impl == "ring" {
					c, _ := filledCache(b, Config{})
					keep, accounted = c, c.Stats().UsedBytes
				} else {
					keep = filledNaive(b)
				}
				heap, rss := liveHeap()-heap0, rssBytes(b)-rss0
				runtime.KeepAlive(keep)
				b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(rss)/(1<<20), "rss-growth-MiB")
				if accounted > 0 {
					b.ReportMetric(float64(accounted)/(1<<20), "accounted-MiB")
				}
			}
		})
	}
}

// BenchmarkCheckpoint writes and restores the checkpoint of 200 pods × 30
// min (atomic write with fsync, and decode + load).
func BenchmarkCheckpoint(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ckpt")
	c, clk := filledCache(b, Config{CheckpointPath: path})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		start := processCPU()
		for b.Loop() {
			c.mu.RLock()
			buf = c.encodeLocked(buf[:0])
			c.mu.RUnlock()
		}
		b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
	})
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		start := processCPU()
		for b.Loop() {
			if err := c.Checkpoint(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
		st, _ := os.Stat(path)
		b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
	})
	b.Run("restore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := New(b.Context(), Config{CheckpointPath: path}, clk)
			if err != nil || r.Stats().Samples != benchSamples {
				b.Fatalf("Restored %d samples, err %v", r.Stats().Samples, err)
			}
		}
	})
}

// processCPU is the CPU (user + system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func rssBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.Fields(rest)[0]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// naiveStore is the baseline: what one writes first, a slice of
// (time, float64) per series, trimmed by time on append, sorted copies for
// percentiles.
type naiveStore struct {
	retention time.Duration
	series    map[SeriesKey][]TimedValue
}

func filledNaive(b *testing.B) *naiveStore {
	n := &naiveStore{retention: DefaultRetention, series: map[SeriesKey][]TimedValue{}}
	for i := range benchSamples {
		n.appendSample(benchSample(i))
	}
	return n
}

func (n *naiveStore) add(k SeriesKey, t time.Time, v float64) {
	s := append(n.series[k], TimedValue{t, v})
	cut := 0
	for cut < len(s) && !s[cut].Time.After(t.Add(-n.retention)) {
		cut++
	}
	n.series[k] = s[cut:]
}

func (n *naiveStore) appendSample(s *collector.Sample) {
	n.add(NodeKey(ResourceCPU), s.Time, s.Node.CPU)
	n.add(NodeKey(ResourceMemory), s.Time, float64(s.Node.Memory))
	n.add(SystemKey(ResourceCPU), s.Time, s.System.CPU)
	n.add(SystemKey(ResourceMemory), s.Time, float64(s.System.Memory))
	var bands [4][2]float64
	for _, p := range s.Pods {
		n.add(PodKey(p.Pod.UID, ResourceCPU), s.Time, p.CPU)
		n.add(PodKey(p.Pod.UID, ResourceMemory), s.Time, float64(p.Memory))
		bands[bandIndex(p.Pod.Band)][0] += p.CPU
		bands[bandIndex(p.Pod.Band)][1] += float64(p.Memory)
	}
	for i, b := range bandOrder {
		n.add(BandKey(b, ResourceCPU), s.Time, bands[i][0])
		n.add(BandKey(b, ResourceMemory), s.Time, bands[i][1])
	}
}

func (n *naiveStore) aggregate(k SeriesKey, now time.Time, window time.Duration) Aggregate {
	var vals []float32
	for _, tv := range n.series[k] {
		if tv.Time.After(now.Add(-window)) && !tv.Time.After(now) {
			vals = append(vals, float32(tv.Value))
		}
	}
	a, _ := aggregate(slices.Clone(vals))
	return a
}
