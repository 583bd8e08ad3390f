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

package sim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Run simulates every policy of cfg (defaulted and validated here) on the
// workload w, each policy in its own goroutine, at most cfg.Parallel at a
// time, and returns the results in cfg.Policies order. It stops, with an
// error, when ctx ends.
func Run(ctx context.Context, cfg Config, w *workload.Workload) (*Result, error) {
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid simulation config: %w", errs.ToAggregate())
	}
	if errs := w.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid workload %s: %w", w.Name, errs.ToAggregate())
	}
	if w.Duration < cfg.Step {
		return nil, fmt.Errorf("invalid simulation config: workload %s lasts %s, less than one step (%s)", w.Name, w.Duration, cfg.Step)
	}
	if w.Duration%cfg.Step != 0 {
		// The run steps ⌊duration ÷ step⌋ times while per-hour figures
		// divide by the whole duration: a remainder would go unsimulated
		// yet counted.
		return nil, fmt.Errorf("invalid simulation config: workload %s lasts %s, not a whole number of steps (%s)", w.Name, w.Duration, cfg.Step)
	}
	logger := klog.FromContext(ctx)
	// A policy's cluster is built when its turn comes and dropped as soon
	// as its result is taken, so that at most cfg.Parallel clusters are in
	// memory at a time.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]PolicyResult, len(cfg.Policies))
	// setupErrs are bad configs; errs what stopped a run (the others stop
	// when one fails, so a setup error is the one to report).
	setupErrs := make([]error, len(cfg.Policies))
	errs := make([]error, len(cfg.Policies))
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for i, p := range cfg.Policies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			r, err := newRun(&cfg, w, p)
			if err != nil {
				setupErrs[i] = fmt.Errorf("setting up policy %s: %w", p, err)
				cancel()
				return
			}
			start := time.Now()
			logger.V(2).Info("Simulating policy", "policy", r.policy, "nodes", len(r.nodes), "steps", r.steps)
			if err := r.Run(ctx); err != nil {
				errs[i] = err
				cancel()
				return
			}
			results[i] = r.result()
			logger.V(2).Info("Simulated policy", "policy", r.policy, "elapsed", time.Since(start))
		}()
	}
	wg.Wait()
	for _, err := range append(setupErrs, errs...) {
		if err != nil {
			return nil, err
		}
	}
	res := &Result{Workload: summarize(w), Seed: cfg.Seed, StepSeconds: int64(cfg.Step / time.Second)}
	res.Policies = results
	return res, nil
}

func summarize(w *workload.Workload) WorkloadSummary {
	s := WorkloadSummary{
		Name:            w.Name,
		Start:           w.Start,
		DurationSeconds: int64(w.Duration / time.Second),
		Nodes:           len(w.Nodes),
		Services:        len(w.Services),
	}
	var cpu, mem, prod float64
	for i := range w.Nodes {
		cpu += float64(w.Nodes[i].CPUMilli)
		mem += float64(w.Nodes[i].MemoryBytes)
	}
	for i := range w.Services {
		prod += float64(w.Services[i].CPURequestMilli)
	}
	s.CPUCores, s.MemoryGiB = cpu/1000, mem/gib
	if cpu > 0 {
		s.ProdRequestPercent = 100 * prod / cpu
	}
	for i := range w.Jobs {
		if w.Jobs[i].Class == workload.ClassMid {
			s.MidJobs++
		} else {
			s.BatchJobs++
		}
	}
	return s
}
