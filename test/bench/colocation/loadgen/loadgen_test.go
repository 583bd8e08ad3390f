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

package loadgen

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestScheduleRatesAndShapes(t *testing.T) {
	phases := []Phase{{Duration: 20 * time.Second, Rate: 500}, {Duration: 5 * time.Second}, {Duration: 10 * time.Second, Rate: 2000}}
	for _, arrival := range []string{Constant, Poisson} {
		t.Run(arrival, func(t *testing.T) {
			s, err := NewSchedule(phases, arrival, 7)
			if err != nil {
				t.Fatal(err)
			}
			var per [3]int
			var gaps []float64
			prev := time.Duration(-1)
			for {
				at, ok := s.Next()
				if !ok {
					break
				}
				if at < prev {
					t.Fatalf("arrival %v before %v", at, prev)
				}
				switch {
				case at < 20*time.Second:
					per[0]++
					if prev >= 0 {
						gaps = append(gaps, (at - prev).Seconds())
					}
				case at < 25*time.Second:
					per[1]++
				case at < 35*time.Second:
					per[2]++
				default:
					t.Fatalf("arrival %v after the schedule's end", at)
				}
				prev = at
			}
			// Counts: exact for constant, within 4 sigma for Poisson.
			for i, want := range []float64{10000, 0, 20000} {
				if tol := 4 * math.Sqrt(want); math.Abs(float64(per[i])-want) > tol+1 {
					t.Errorf("phase %d: %d arrivals, want %v ± %.0f", i, per[i], want, tol)
				}
			}
			mean, sd := meanSD(gaps)
			if math.Abs(mean-0.002) > 0.002*0.03 {
				t.Errorf("mean gap %v, want 2ms", mean)
			}
			cv := sd / mean
			want := map[string]float64{Constant: 0, Poisson: 1}[arrival]
			if math.Abs(cv-want) > 0.05 {
				t.Errorf("coefficient of variation of the gaps %.3f, want %v (%s)", cv, want, arrival)
			}
		})
	}
}

func meanSD(xs []float64) (float64, float64) {
	var s, q float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	for _, x := range xs {
		q += (x - m) * (x - m)
	}
	return m, math.Sqrt(q / float64(len(xs)))
}

func TestBadConfig(t *testing.T) {
	ok := []Phase{{Duration: time.Second, Rate: 10}}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://10.0.0.1:80/work", Phases: ok}, "not a loopback address"},
		{Config{URL: "http://example.invalid/work", Phases: ok}, "not a loopback address"},
		{Config{URL: "http://127.0.0.1:1/", Phases: nil}, "phases: at least one"},
		{Config{URL: "http://127.0.0.1:1/", Phases: []Phase{{Duration: 0, Rate: 1}}}, "phases[0].duration 0s"},
		{Config{URL: "http://127.0.0.1:1/", Phases: []Phase{{Duration: time.Second, Rate: -1}}}, "phases[0].rate -1"},
		{Config{URL: "http://127.0.0.1:1/", Phases: ok, Arrival: "burst"}, `arrival "burst"`},
		{Config{URL: "http://127.0.0.1:1/", Phases: ok, Window: time.Millisecond}, "window 1ms"},
	} {
		if _, err := Run(t.Context(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// TestAgainstAServer offers 200 requests/s for 1.5 s to a server that
// takes 2 ms and checks what a user of the numbers relies on: every due
// request is counted, the achieved rate is the offered one, latency is at
// least the service time, and the timeline covers the run.
func TestAgainstAServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
	}))
	defer srv.Close()
	res, err := Run(t.Context(), Config{URL: srv.URL, Phases: []Phase{{Duration: 1500 * time.Millisecond, Rate: 200}}, Arrival: Constant, Window: 500 * time.Millisecond,
		Timeout: 30 * time.Second}) // a busy test machine must not turn slow answers into errors
	if err != nil {
		t.Fatal(err)
	}
	if res.Offered != 300 || res.OK != 300 || res.Errors != 0 || res.Sent != 300 {
		t.Errorf("offered/sent/ok/errors = %d/%d/%d/%d, want 300/300/300/0 (%v)", res.Offered, res.Sent, res.OK, res.Errors, res.ErrorKinds)
	}
	if math.Abs(res.AchievedRate-200) > 1 || math.Abs(res.OfferedRate-200) > 1 {
		t.Errorf("rates offered %v achieved %v, want 200", res.OfferedRate, res.AchievedRate)
	}
	if res.Latency.P50 < int64(2*time.Millisecond) || res.Latency.Max < res.Latency.P99 {
		t.Errorf("latency %+v: p50 under the 2ms service time, or max under p99", res.Latency)
	}
	if len(res.Windows) != 3 {
		t.Fatalf("%d windows of 500ms over 1.5s, want 3", len(res.Windows))
	}
	for _, w := range res.Windows {
		if w.Offered != 100 || w.OK != 100 || w.P50 < int64(2*time.Millisecond) {
			t.Errorf("window %+v: want 100 offered and OK, p50 over 2ms", w)
		}
	}
	if res.Elapsed > 10*time.Second {
		t.Errorf("the run took %v for a 1.5s schedule", res.Elapsed)
	}
}

// TestQueueingIsNotHidden: a server that can only answer one request at
// a time, 5 ms each, offered 400/s (twice what it can do). A closed-loop
// client would report ~5 ms; measured from the intended send times the
// latency grows with the queue, while the service time stays ~5 ms.
func TestQueueingIsNotHidden(t *testing.T) {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}))
	defer srv.Close()
	res, err := Run(t.Context(), Config{URL: srv.URL, Phases: []Phase{{Duration: 500 * time.Millisecond, Rate: 400}}, Arrival: Constant, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 200 {
		t.Fatalf("%d OK of %d (%v)", res.OK, res.Offered, res.ErrorKinds)
	}
	// 200 requests × 5 ms = 1 s of work offered in 0.5 s: the last waits
	// ~0.5 s.
	if res.Latency.P99 < int64(300*time.Millisecond) {
		t.Errorf("latency p99 %v, want over 300ms: queueing is hidden", time.Duration(res.Latency.P99))
	}
	if res.Latency.P50 < int64(100*time.Millisecond) {
		t.Errorf("latency p50 %v, want over 100ms", time.Duration(res.Latency.P50))
	}
}

// TestBoundedAgainstAStuckServer: a server that never answers. The run
// still ends about Timeout after the schedule, every request an error.
func TestBoundedAgainstAStuckServer(t *testing.T) {
	release := make(chan struct{})
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	begin := time.Now()
	res, err := Run(t.Context(), Config{URL: srv.URL, Phases: []Phase{{Duration: 300 * time.Millisecond, Rate: 100}}, Timeout: 200 * time.Millisecond, MaxInFlight: 10})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("the run took %v, want about 500ms", took)
	}
	if res.OK != 0 || res.Errors != res.Offered || res.Offered == 0 {
		t.Errorf("ok %d errors %d offered %d: want every request an error", res.OK, res.Errors, res.Offered)
	}
	if res.ErrorKinds["timeout"] == 0 || res.Dropped == 0 || res.ErrorKinds["dropped"] != res.Dropped {
		t.Errorf("error kinds %v, dropped %d: want timeouts and drops beyond 10 in flight", res.ErrorKinds, res.Dropped)
	}
	// Timed-out requests count in the latency at their timeout: a stuck
	// server must not look fast.
	if res.Latency.Count != res.ErrorKinds["timeout"] || res.Latency.P50 < int64(200*time.Millisecond) {
		t.Errorf("latency %+v: want the %d timeouts in it, at 200ms or more", res.Latency, res.ErrorKinds["timeout"])
	}
}

func TestErrorsCounted(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			http.Error(w, "no", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res, err := Run(t.Context(), Config{URL: srv.URL, Phases: []Phase{{Duration: 400 * time.Millisecond, Rate: 100}}, Arrival: Constant, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKinds["status 503"] != 10 || res.OK != 30 {
		t.Errorf("ok %d, errors %v: want 30 OK and 10 of status 503", res.OK, res.ErrorKinds)
	}
	// Nothing listens on a closed server's port.
	srv.Close()
	res, err = Run(t.Context(), Config{URL: srv.URL, Phases: []Phase{{Duration: 100 * time.Millisecond, Rate: 100}}, Arrival: Constant})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKinds["net dial"] != 10 {
		t.Errorf("errors %v against a closed port, want 10 net dial", res.ErrorKinds)
	}
}

// TestLateGeneratorIsNotHidden stalls the generator itself for 200 ms (as
// a CPU-starved or GC-paused client would be): the requests due meanwhile
// leave late, in a burst, to a fast server. Their latency counts from
// when they were due, so the stall shows; their service time does not.
func TestLateGeneratorIsNotHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Phases: []Phase{{Duration: 600 * time.Millisecond, Rate: 200}}, Arrival: Constant, Timeout: 30 * time.Second}
	cfg.stall = func(n int64) {
		if n == 20 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 120 {
		t.Fatalf("%d OK of %d (%v)", res.OK, res.Offered, res.ErrorKinds)
	}
	// 40 of 120 requests were due during the stall, late by 0-200 ms.
	if res.Latency.P90 < int64(50*time.Millisecond) || res.Latency.Max < int64(150*time.Millisecond) {
		t.Errorf("latency p90 %v max %v: the generator's stall is hidden", time.Duration(res.Latency.P90), time.Duration(res.Latency.Max))
	}
	if res.SendLag.Max < int64(150*time.Millisecond) {
		t.Errorf("send lag max %v, want the 200ms stall", time.Duration(res.SendLag.Max))
	}
	// Leaked, the p90 would be the top tenth of 0-200 ms lags: over 140 ms.
	if res.Service.P90 > int64(100*time.Millisecond) {
		t.Errorf("service p90 %v: the stall leaked into the service time", time.Duration(res.Service.P90))
	}
}
