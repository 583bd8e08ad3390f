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
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// ServerConfig says what one request costs. Exactly one of CPU and Steps
// is set.
type ServerConfig struct {
	// CPU is the thread CPU time each request burns (e.g. 1ms): a fixed
	// cost in CPU, whatever the cache does.
	CPU time.Duration
	// Steps is a fixed amount of work each request does (see Spin): its
	// CPU cost grows when a neighbour slows the core's caches down, as a
	// real service's does.
	Steps int
}

// Validate names the bad field.
func (c ServerConfig) Validate() error {
	switch {
	case c.CPU < 0:
		return fmt.Errorf("cpu %v: must not be negative", c.CPU)
	case c.Steps < 0:
		return fmt.Errorf("steps %d: must not be negative", c.Steps)
	case c.CPU == 0 && c.Steps == 0:
		return fmt.Errorf("cpu and steps are both 0: set one, the cost of a request")
	case c.CPU > 0 && c.Steps > 0:
		return fmt.Errorf("cpu %v and steps %d are both set: set one", c.CPU, c.Steps)
	case c.CPU > time.Second:
		return fmt.Errorf("cpu %v: at most 1s a request", c.CPU)
	}
	return nil
}

// Server is the Prod workload's handler:
//
//	GET /work          burns the configured cost, answers "ok <cpu-ns> <steps>"
//	GET /work?cpu=2ms  burns 2ms of CPU instead (?steps=N: N steps)
//	GET /healthz       answers "ok" at once
//	GET /stats         requests served and CPU burnt, as "requests <n> cpu_ns <n>"
type Server struct {
	cfg      ServerConfig
	requests atomic.Int64
	cpuNanos atomic.Int64
	seed     atomic.Uint64
}

// NewServer validates cfg.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg}, nil
}

// ServeHTTP routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		_, _ = fmt.Fprintln(w, "ok")
	case "/stats":
		_, _ = fmt.Fprintf(w, "requests %d cpu_ns %d\n", s.requests.Load(), s.cpuNanos.Load())
	case "/work":
		cfg := s.cfg
		q := r.URL.Query()
		if v := q.Get("cpu"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				http.Error(w, fmt.Sprintf("cpu %q: %v", v, err), http.StatusBadRequest)
				return
			}
			cfg = ServerConfig{CPU: d}
		}
		if v := q.Get("steps"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				http.Error(w, fmt.Sprintf("steps %q: %v", v, err), http.StatusBadRequest)
				return
			}
			cfg = ServerConfig{Steps: n}
		}
		if err := cfg.Validate(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		used, steps, sink := s.burn(cfg)
		s.requests.Add(1)
		s.cpuNanos.Add(int64(used))
		_, _ = fmt.Fprintf(w, "ok %d %d %d\n", used.Nanoseconds(), steps, sink&0xff)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) burn(cfg ServerConfig) (time.Duration, int, uint64) {
	seed := s.seed.Add(0x9e3779b97f4a7c15)
	if cfg.CPU > 0 {
		return BurnCPU(cfg.CPU, seed)
	}
	used, sink := SpinMeasured(cfg.Steps, seed)
	return used, cfg.Steps, sink
}
