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

package workload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRequestsCostTheirCPU serves 40 requests of 3 ms each and checks the
// process spent 120 ms of CPU on them, give or take the HTTP overhead:
// what a request costs does not depend on how loaded the machine is.
func TestRequestsCostTheirCPU(t *testing.T) {
	s, err := NewServer(ServerConfig{CPU: 3 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	get("/healthz")
	before := processCPU(t)
	const n = 40
	for range n {
		get("/work")
	}
	spent := processCPU(t) - before
	if want := n * 3 * time.Millisecond; spent < want || spent > want+want/2 {
		t.Errorf("%d requests of 3ms spent %v of process CPU, want in [%v, %v]", n, spent, want, want+want/2)
	}
	if got := get("/stats"); !strings.HasPrefix(got, "requests 40 cpu_ns ") {
		t.Errorf("stats = %q, want 40 requests", got)
	}
	// A per-request override.
	var cpuNs, steps, sink int64
	if _, err := fmtSscan(get("/work?cpu=10ms"), &cpuNs, &steps, &sink); err != nil || cpuNs < int64(10*time.Millisecond) {
		t.Errorf("?cpu=10ms burnt %v ns (%v)", cpuNs, err)
	}
	if _, err := fmtSscan(get("/work?steps=1000"), &cpuNs, &steps, &sink); err != nil || steps != 1000 {
		t.Errorf("?steps=1000 did %d steps (%v)", steps, err)
	}
	for path, want := range map[string]string{
		"/work?cpu=abc":   `cpu "abc"`,
		"/work?cpu=-1ms":  "must not be negative",
		"/work?steps=x":   `steps "x"`,
		"/work?cpu=2s":    "at most 1s",
		"/work?steps=-10": "steps -10",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %s %q, want 400 naming %q", path, resp.Status, b, want)
		}
	}
}

// fmtSscan parses a /work answer: "ok <cpu-ns> <steps> <sink>".
func fmtSscan(s string, cpu, steps, sink *int64) (int, error) {
	var ok string
	return fmt.Sscan(s, &ok, cpu, steps, sink)
}

func TestServerConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{}, "set one"},
		{ServerConfig{CPU: time.Millisecond, Steps: 5}, "both set"},
		{ServerConfig{CPU: -time.Millisecond}, "cpu -1ms"},
		{ServerConfig{Steps: -1}, "steps -1"},
	} {
		if _, err := NewServer(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewServer(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// TestBurnersReportProgress runs both burner kinds for a while and reads
// their progress files as the harness does: counts grow, the last line is
// final and carries the units the burner returned.
func TestBurnersReportProgress(t *testing.T) {
	for _, kind := range []string{KindCPU, KindMem} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "progress.jsonl")
			ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
			defer cancel()
			units, err := RunBurner(ctx, BurnerConfig{Kind: kind, Threads: 1, MemBytes: 8 << 20, Progress: path, Interval: 50 * time.Millisecond, Name: "b1"})
			if err != nil {
				t.Fatal(err)
			}
			if units == 0 {
				t.Fatal("no unit done in 600ms")
			}
			lines, err := ReadProgress(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) < 5 {
				t.Fatalf("%d progress lines in 600ms at 50ms, want at least 5", len(lines))
			}
			last := lines[len(lines)-1]
			if !last.Final || last.Units != units || last.Kind != kind || last.Name != "b1" {
				t.Errorf("last line %+v, want final with %d units of %s", last, units, kind)
			}
			for i := 1; i < len(lines); i++ {
				if lines[i].Units < lines[i-1].Units || lines[i].Time.Before(lines[i-1].Time) {
					t.Fatalf("progress went back: %+v then %+v", lines[i-1], lines[i])
				}
			}
		})
	}
}

// TestMemBurnerGrows: with a ramp the mem burner's memory grows from one
// chunk to its buffer size, as a job whose memory grows (the memory
// pressure scenario's Batch pods): resident, as the node's cgroups see
// it, on the clock; its units count the same work whatever the buffer's
// size; and it gives the memory back when it stops.
func TestMemBurnerGrows(t *testing.T) {
	resident := func() int64 {
		b, err := os.ReadFile("/proc/self/statm")
		if err != nil {
			t.Skipf("SKIP: resident memory not readable here (%v)", err)
		}
		f := strings.Fields(string(b))
		pages, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("/proc/self/statm %q: %v", b, err)
		}
		return pages * int64(os.Getpagesize())
	}
	base := resident()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int64)
	began := time.Now()
	go func() {
		units, _ := RunBurner(ctx, BurnerConfig{Kind: KindMem, Threads: 1, MemBytes: 128 << 20, Ramp: 400 * time.Millisecond})
		done <- units
	}()
	time.Sleep(50 * time.Millisecond)
	early := resident() - base
	// Generous: the machine may be busy.
	deadline := time.Now().Add(10 * time.Second)
	var late int64
	for time.Now().Before(deadline) {
		if late = resident() - base; late >= 120<<20 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	grown := time.Since(began)
	cancel()
	units := <-done
	after := resident() - base
	if early > 48<<20 {
		t.Errorf("%d MiB resident 50ms into a 400ms ramp to 128 MiB, want at most 3 chunks of 16", early>>20)
	}
	if late < 120<<20 {
		t.Errorf("%d MiB resident after the ramp, want about the whole 128 MiB", late>>20)
	}
	t.Logf("128 MiB resident after %v of a 400ms ramp", grown.Round(time.Millisecond))
	if units == 0 {
		t.Error("no unit done")
	}
	if after > 64<<20 {
		t.Errorf("%d MiB still resident after the burner stopped, want its buffer given back", after>>20)
	}
}

func TestBurnerConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  BurnerConfig
		want string
	}{
		{BurnerConfig{Kind: "gpu", Threads: 1}, `kind "gpu"`},
		{BurnerConfig{Kind: KindCPU}, "threads 0"},
		{BurnerConfig{Kind: KindMem, Threads: 1, MemBytes: 10}, "mem-bytes 10"},
		{BurnerConfig{Kind: KindCPU, Threads: 1, Interval: time.Millisecond}, "interval 1ms"},
		{BurnerConfig{Kind: KindMem, Threads: 1, Ramp: -time.Second}, "ramp -1s"},
	} {
		if _, err := RunBurner(t.Context(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RunBurner(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}
