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

// Scratch benchmark (outside the Waterline repo, so its go.mod stays clean):
// the metric cache workload -- node, system, 4 bands and 200 pods, cpu and
// memory, one sample a second for 30 minutes -- on an embedded Prometheus
// TSDB, as Koordinator's koordlet stores it. Prints append cost, 5-minute
// query cost (one series; all pods) and memory after the fill.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const (
	pods    = 200
	samples = 1800
)

func rss() int64 { return status("VmRSS:") }

func status(key string) int64 {
	f, _ := os.Open("/proc/self/status")
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(key)); ok {
			kb, _ := strconv.ParseInt(string(bytes.Fields(rest)[0]), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The same values as Waterline's BenchmarkMemory: CPU rates with five
// significant digits (0..4 cores), memory with page-size jitter -- noisy
// like real usage, so compression is not flattered.
func mix(p, i int) uint64 {
	x := uint64(p)*0x9E3779B97F4A7C15 ^ uint64(i)*0xC2B2AE3D27D4EB4F
	x ^= x >> 29
	x *= 0xBF58476D1CE4E5B9
	return x ^ x>>32
}
func benchCPU(p, i int) float64 { return float64(mix(p, i)%100000) / 25000 }
func benchMem(p, i int) float64 { return float64(uint64(p+1)<<20 + mix(p, i)%256*4096) }

func main() {
	wal := flag.Bool("wal", true, "keep the write-ahead log (koordlet does)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "tsdbbench")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	rss0, heap0 := rss(), heap()

	opts := tsdb.DefaultOptions()
	// koordlet-like settings, scaled to our 30 min retention.
	opts.RetentionDuration = int64(30 * time.Minute / time.Millisecond)
	opts.MinBlockDuration = int64(10 * time.Minute / time.Millisecond)
	opts.MaxBlockDuration = int64(10 * time.Minute / time.Millisecond)
	opts.StripeSize = 16384
	opts.WALSegmentSize = 1 << 20
	if !*wal {
		opts.WALSegmentSize = -1
	}
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()

	type ser struct {
		lbls labels.Labels
		ref  storage.SeriesRef
		mem  bool
	}
	var series []*ser
	add := func(kind, id, res string) {
		series = append(series, &ser{lbls: labels.FromStrings("__name__", "usage", "kind", kind, "id", id, "resource", res), mem: res == "memory"})
	}
	for _, res := range []string{"cpu", "memory"} {
		add("node", "", res)
		add("system", "", res)
		for _, b := range []string{"prod", "mid", "batch", "free"} {
			add("band", b, res)
		}
		for p := range pods {
			add("pod", fmt.Sprintf("%08x-0000-4000-8000-%012x", p, p), res)
		}
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	ctx := context.Background()
	start, cpu0 := time.Now(), cpuTime()
	for i := range samples {
		app := db.Appender(ctx)
		ts := t0 + int64(i)*1000
		for j, s := range series {
			v := benchCPU(j, i)
			if s.mem {
				v = benchMem(j, i)
			}
			s.ref, err = app.Append(s.ref, s.lbls, ts, v)
			if err != nil {
				panic(err)
			}
		}
		if err := app.Commit(); err != nil {
			panic(err)
		}
	}
	appendWall, appendCPU := time.Since(start), cpuTime()-cpu0
	fmt.Printf("append: %d samples of %d values: %.1f µs/sample wall, %.1f µs/sample CPU, %.0f ns/value\n",
		samples, len(series), float64(appendWall.Microseconds())/samples, float64(appendCPU.Microseconds())/samples,
		float64(appendWall.Nanoseconds())/samples/float64(len(series)))

	now := t0 + (samples-1)*1000
	query := func(ms ...*labels.Matcher) int {
		q, err := db.Querier(now-5*60*1000+1, now)
		if err != nil {
			panic(err)
		}
		defer q.Close()
		set := q.Select(ctx, false, nil, ms...)
		n := 0
		var vals []float64
		var it chunkenc.Iterator
		for set.Next() {
			vals = vals[:0]
			it = set.At().Iterator(it)
			for it.Next() == chunkenc.ValFloat {
				_, v := it.At()
				vals = append(vals, v)
			}
			slices.Sort(vals)
			_ = vals[int(math.Ceil(0.95*float64(len(vals))))-1]
			n++
		}
		if set.Err() != nil {
			panic(set.Err())
		}
		return n
	}
	one := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "kind", "pod"),
		labels.MustNewMatcher(labels.MatchEqual, "id", "00000007-0000-4000-8000-000000000007"),
		labels.MustNewMatcher(labels.MatchEqual, "resource", "cpu")}
	all := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "kind", "pod"),
		labels.MustNewMatcher(labels.MatchEqual, "resource", "cpu")}
	for _, tc := range []struct {
		name string
		ms   []*labels.Matcher
		want int
		n    int
	}{{"5m p95, one series", one, 1, 3000}, {"5m p95, all pods", all, pods, 200}} {
		start := time.Now()
		for range tc.n {
			if got := query(tc.ms...); got != tc.want {
				panic(fmt.Sprintf("%s: %d series", tc.name, got))
			}
		}
		fmt.Printf("query %s: %.1f µs\n", tc.name, float64(time.Since(start).Microseconds())/float64(tc.n))
	}
	h, r := heap()-heap0, rss()-rss0
	defer func() {
		// Restart: close and reopen, replaying the WAL / loading blocks.
		db.Close()
		start := time.Now()
		db2, err := tsdb.Open(dir, nil, nil, opts, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("reopen (restart): %.1f ms\n", float64(time.Since(start).Microseconds())/1000)
		db2.Close()
	}()
	var du int64
	_ = filepathWalk(dir, &du)
	fmt.Printf("memory after 200 pods × 30 min: heap growth %.1f MiB, RSS growth %.1f MiB (baseline %.1f MiB, now %.1f MiB, peak %.1f MiB), on disk %.1f MiB\n",
		float64(h)/(1<<20), float64(r)/(1<<20), float64(rss0)/(1<<20), float64(rss())/(1<<20), float64(status("VmHWM:"))/(1<<20), float64(du)/(1<<20))
}

func filepathWalk(dir string, total *int64) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			filepathWalk(p, total)
			continue
		}
		if info, err := e.Info(); err == nil {
			*total += info.Size()
		}
	}
	return nil
}
