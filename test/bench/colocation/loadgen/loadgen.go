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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/waterline-dev/waterline/test/bench/colocation/hist"
)

// Config is one run of the generator.
type Config struct {
	// URL is requested with GET; its host must be a loopback address.
	URL string
	// Phases is the offered load over time.
	Phases []Phase
	// Arrival is Constant or Poisson (default Poisson).
	Arrival string
	// Seed makes Poisson arrivals repeatable.
	Seed uint64
	// Timeout bounds each request (default 2s); a request that times out
	// is an error.
	Timeout time.Duration
	// MaxInFlight bounds the requests outstanding at once (default
	// 4096); a send beyond it is not made and counts as dropped, an error.
	MaxInFlight int
	// Window is the length of the timeline's windows (default 1s).
	Window time.Duration
	// Client overrides the HTTP client (tests); by default one with a
	// connection pool as large as MaxInFlight.
	Client *http.Client

	// stall, when set, runs in the dispatch loop before the n-th request
	// (tests: a generator starved of CPU).
	stall func(n int64)
}

func (c *Config) defaults() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("url %q: %w", c.URL, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("url %q: host %q is not a loopback address; the generator only dials loopback", c.URL, host)
	}
	if c.Arrival == "" {
		c.Arrival = Poisson
	}
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Second
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout %v: must be positive", c.Timeout)
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 4096
	}
	if c.MaxInFlight < 0 {
		return fmt.Errorf("maxInFlight %d: must be positive", c.MaxInFlight)
	}
	if c.Window == 0 {
		c.Window = time.Second
	}
	if c.Window < 10*time.Millisecond {
		return fmt.Errorf("window %v: at least 10ms", c.Window)
	}
	return nil
}

// Window is one stretch of the timeline, by intended send time.
type Window struct {
	// Start is the window's offset from the run's start.
	Start time.Duration `json:"start"`
	// Offered requests were due in the window; OK answered 200; Errors
	// failed, timed out or were dropped.
	Offered int64 `json:"offered"`
	OK      int64 `json:"ok"`
	Errors  int64 `json:"errors"`
	// P50, P99 and Max latency of the window's OK and timed-out
	// requests, ns.
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// Result is what a run measured. Latencies are nanoseconds.
type Result struct {
	Phases  []Phase `json:"phases"`
	Arrival string  `json:"arrival"`
	// Start is when the schedule began; Elapsed is until the last answer.
	Start   time.Time     `json:"start"`
	Elapsed time.Duration `json:"elapsed"`
	// Offered requests were due; Sent left; OK answered 200; Errors
	// failed (Dropped of them were never sent: too many in flight).
	Offered int64 `json:"offered"`
	Sent    int64 `json:"sent"`
	OK      int64 `json:"ok"`
	Errors  int64 `json:"errors"`
	Dropped int64 `json:"dropped"`
	// OfferedRate and AchievedRate are requests per second of schedule:
	// due, and answered OK.
	OfferedRate  float64 `json:"offeredRate"`
	AchievedRate float64 `json:"achievedRate"`
	// Latency is from the intended send time to the answer's last byte,
	// of the OK requests and of the timed-out ones (at the time they were
	// given up: a lower bound, their user waited at least that long).
	Latency        hist.Summary  `json:"latency"`
	LatencyBuckets hist.Snapshot `json:"latencyBuckets"`
	// Service is from the moment the request had a connection to the
	// answer: Latency minus client-side waiting.
	Service hist.Summary `json:"service"`
	// SendLag is how late the generator sent requests against their
	// intended time: its own health (a busy machine delays it).
	SendLag hist.Summary `json:"sendLag"`
	// ErrorKinds counts errors by kind.
	ErrorKinds map[string]int64 `json:"errorKinds,omitempty"`
	Windows    []Window         `json:"windows"`
}

// LatencyHistogram rebuilds the latency histogram.
func (r *Result) LatencyHistogram() (*hist.Histogram, error) {
	return hist.FromSnapshot(r.LatencyBuckets)
}

type recorder struct {
	mu                        sync.Mutex
	latency, service, sendLag *hist.Histogram
	windows                   []*hist.Histogram
	win                       []Window
	ok, errs, dropped, sent   int64
	kinds                     map[string]int64
	window                    time.Duration
}

func (r *recorder) windowOf(intended time.Duration) int {
	return min(int(intended/r.window), len(r.win)-1)
}

func (r *recorder) done(intended, lat, svc time.Duration, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.windowOf(intended)
	if kind != "" {
		r.errs++
		r.win[w].Errors++
		r.kinds[kind]++
		if kind == "dropped" {
			r.dropped++
		}
		if kind == kindTimeout {
			// Its user waited this long at least: leaving it out would make
			// an overloaded server look fast.
			r.latency.Record(int64(lat))
			r.windows[w].Record(int64(lat))
		}
		return
	}
	r.ok++
	r.win[w].OK++
	r.latency.Record(int64(lat))
	r.service.Record(int64(svc))
	r.windows[w].Record(int64(lat))
}

// Run offers the load and returns when every request has answered or
// timed out: at most the schedule's length plus Timeout (plus the
// machine's delays). Cancelling ctx stops sending; what was measured is
// returned with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	sched, err := NewSchedule(cfg.Phases, cfg.Arrival, cfg.Seed)
	if err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		tr := &http.Transport{
			MaxIdleConns: cfg.MaxInFlight, MaxIdleConnsPerHost: cfg.MaxInFlight,
			DisableCompression: true, IdleConnTimeout: time.Minute,
		}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	total := sched.Total()
	nwin := int((total + cfg.Window - 1) / cfg.Window)
	rec := &recorder{
		latency: hist.MustNew(hist.DefaultPrecision), service: hist.MustNew(hist.DefaultPrecision),
		sendLag: hist.MustNew(hist.DefaultPrecision), windows: make([]*hist.Histogram, nwin),
		win: make([]Window, nwin), kinds: map[string]int64{}, window: cfg.Window,
	}
	for i := range rec.windows {
		rec.windows[i] = hist.MustNew(6)
		rec.win[i].Start = time.Duration(i) * cfg.Window
	}
	slots := make(chan struct{}, cfg.MaxInFlight)
	var wg sync.WaitGroup
	var offered int64
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	var runErr error
loop:
	for {
		at, ok := sched.Next()
		if !ok {
			break
		}
		if cfg.stall != nil {
			cfg.stall(offered)
		}
		if d := time.Until(start.Add(at)); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				runErr = ctx.Err()
				break loop
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
		offered++
		rec.win[rec.windowOf(at)].Offered++
		select {
		case slots <- struct{}{}:
		default:
			rec.done(at, 0, 0, "dropped")
			continue
		}
		wg.Add(1)
		go func(at time.Duration) {
			defer wg.Done()
			defer func() { <-slots }()
			rec.send(client, cfg, start, at)
		}(at)
	}
	wg.Wait()
	res := &Result{
		Phases: cfg.Phases, Arrival: cfg.Arrival, Start: start, Elapsed: time.Since(start),
		Offered: offered, Sent: rec.sent, OK: rec.ok, Errors: rec.errs, Dropped: rec.dropped,
		OfferedRate: float64(offered) / total.Seconds(), AchievedRate: float64(rec.ok) / total.Seconds(),
		Latency: rec.latency.Summary(), LatencyBuckets: rec.latency.Snapshot(),
		Service: rec.service.Summary(), SendLag: rec.sendLag.Summary(), Windows: rec.win,
	}
	if len(rec.kinds) > 0 {
		res.ErrorKinds = rec.kinds
	}
	for i, h := range rec.windows {
		res.Windows[i].P50, res.Windows[i].P99, res.Windows[i].Max = h.Quantile(0.5), h.Quantile(0.99), h.Max()
	}
	return res, runErr
}

func (r *recorder) send(client *http.Client, cfg Config, start time.Time, at time.Duration) {
	intended := start.Add(at)
	sent := time.Now()
	r.mu.Lock()
	r.sent++
	r.sendLag.Record(int64(sent.Sub(intended)))
	r.mu.Unlock()
	// The request's deadline counts from its intended time: a request the
	// generator sent late does not get longer.
	ctx, cancel := context.WithDeadline(context.Background(), intended.Add(cfg.Timeout))
	defer cancel()
	var gotConn time.Time
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { gotConn = time.Now() }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL, nil)
	if err != nil {
		r.done(at, 0, 0, "request")
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		r.done(at, time.Since(intended), 0, errorKind(err))
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	end := time.Now()
	switch {
	case err != nil:
		r.done(at, end.Sub(intended), 0, errorKind(err))
	case resp.StatusCode != http.StatusOK:
		r.done(at, 0, 0, fmt.Sprintf("status %d", resp.StatusCode))
	default:
		if gotConn.IsZero() {
			gotConn = sent
		}
		r.done(at, end.Sub(intended), end.Sub(gotConn), "")
	}
}

const kindTimeout = "timeout"

func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return kindTimeout
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "net " + op.Op
	}
	return "transport"
}

// Kinds returns the error kinds sorted, for stable output.
func (r *Result) Kinds() []string {
	out := make([]string, 0, len(r.ErrorKinds))
	for k := range r.ErrorKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
