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

package controlplane

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/pkg/manager/nodetiers"
	"github.com/waterline-dev/waterline/test/bench/benchutil"
)

// Phase names.
const (
	phaseAgents     = "agents"
	phaseLease      = "lease"
	phaseNodeStatus = "node-status"
	phaseIdle       = "idle"
)

// phase is one measured stretch: run drives the load for d.
type phase struct {
	name string
	run  func(ctx context.Context, d time.Duration) int64
}

// phaseResult is what one phase cost.
type phaseResult struct {
	phase string
	run   int
	wall  time.Duration
	// cpu is CPU seconds per process over the phase ("apiserver+etcd"
	// summed too).
	cpu map[string]float64
	// Writes that reached the API server (its apiserver_request_total).
	nodeMetricWrites, nodeMetricConflicts, leaseWrites, nodeStatusPatches float64
	// The manager: tiers reconciles, their summed time, NodeMetric
	// lifecycle reconciles, the deepest the tiers queue was when sampled.
	reconciles, reconcileSeconds, lifecycleReconciles, maxDepth float64
	// loadavg is /proc/loadavg's one-minute figure at the end.
	loadavg string
}

func (r phaseResult) summary() string {
	w := r.wall.Seconds()
	return fmt.Sprintf("%v: NodeMetric writes %.1f/s (409: %.0f), Lease %.1f/s, Node status patches %.1f/s; apiserver+etcd %.3f cores, manager %.4f cores (%.1f reconciles/s, mean %.2f ms, queue ≤ %.0f), kwok %.3f, agents+test %.3f; load %s",
		r.wall.Round(time.Millisecond), r.nodeMetricWrites/w, r.nodeMetricConflicts, r.leaseWrites/w, r.nodeStatusPatches/w,
		r.cpu["apiserver+etcd"]/w, r.cpu["manager"]/w, r.reconciles/w, 1000*r.reconcileSeconds/max(r.reconciles, 1), r.maxDepth,
		r.cpu["kwok"]/w, r.cpu["self"]/w, r.loadavg)
}

// counters is a reading of everything a phase compares before and after.
type counters struct {
	at                                time.Time
	cpu                               map[string]float64
	nm, nmConflict, lease, nodeStatus float64
	reconciles, reconcileSeconds      float64
	lifecycle                         float64
}

func (f *fleet) read(ctx context.Context) (counters, error) {
	c := counters{at: time.Now(), cpu: map[string]float64{}}
	for name, pid := range f.pids {
		v, err := benchutil.CPUSeconds(pid)
		if err != nil {
			return c, err
		}
		c.cpu[name] = v
	}
	self, err := benchutil.CPUSeconds(os.Getpid())
	if err != nil {
		return c, err
	}
	c.cpu["self"] = self
	c.cpu["apiserver+etcd"] = c.cpu["apiserver"] + c.cpu["etcd"]
	api, err := scrapeAPIServer(ctx, f.c)
	if err != nil {
		return c, err
	}
	const req = "apiserver_request_total"
	c.nm = benchutil.CounterOf(api, req, map[string]string{"resource": "nodemetrics", "subresource": "status", "verb": "PUT"})
	c.nmConflict = benchutil.CounterOf(api, req, map[string]string{"resource": "nodemetrics", "subresource": "status", "verb": "PUT", "code": "409"})
	c.lease = benchutil.CounterOf(api, req, map[string]string{"resource": "leases", "verb": "PUT"})
	c.nodeStatus = benchutil.CounterOf(api, req, map[string]string{"resource": "nodes", "subresource": "status", "verb": "PATCH"})
	mgr, err := scrape(ctx, f.mgrURL)
	if err != nil {
		return c, err
	}
	c.reconciles = benchutil.CounterOf(mgr, "controller_runtime_reconcile_total", map[string]string{"controller": nodetiers.ControllerName})
	c.reconcileSeconds = benchutil.CounterOf(mgr, "controller_runtime_reconcile_time_seconds_sum", map[string]string{"controller": nodetiers.ControllerName})
	c.lifecycle = benchutil.CounterOf(mgr, "controller_runtime_reconcile_total", map[string]string{"controller": "nodemetric-lifecycle"})
	return c, nil
}

// measure runs p once and returns what it cost.
func (f *fleet) measure(ctx context.Context, t *testing.T, p phase, run int) phaseResult {
	t.Helper()
	before, err := f.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Sample the manager's queue depth while the phase runs.
	var maxDepth float64
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
			if s, err := scrape(sctx, f.mgrURL); err == nil {
				maxDepth = math.Max(maxDepth, benchutil.CounterOf(s, "workqueue_depth", map[string]string{"name": nodetiers.ControllerName}))
			}
		}
	}()
	p.run(ctx, f.cfg.window)
	// The tail of the phase's work: the last writes' watch events and
	// the reconciles they trigger.
	time.Sleep(time.Second)
	stop()
	wg.Wait()
	after, err := f.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := phaseResult{
		phase: p.name, run: run, wall: after.at.Sub(before.at), cpu: map[string]float64{},
		nodeMetricWrites:    after.nm - before.nm,
		nodeMetricConflicts: after.nmConflict - before.nmConflict,
		leaseWrites:         after.lease - before.lease,
		nodeStatusPatches:   after.nodeStatus - before.nodeStatus,
		reconciles:          after.reconciles - before.reconciles,
		reconcileSeconds:    after.reconcileSeconds - before.reconcileSeconds,
		lifecycleReconciles: after.lifecycle - before.lifecycle,
		maxDepth:            maxDepth,
		loadavg:             loadavg(),
	}
	for k, v := range after.cpu {
		r.cpu[k] = v - before.cpu[k]
	}
	return r
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// buildReport is the Markdown report of a run: each phase's median and
// range over the repeats, and what they imply at the run's node count.
func buildReport(cfg fleetConfig, results []phaseResult, nodeMetricsReady, tiersReady time.Duration) string {
	by := func(name string, f func(r phaseResult) float64) []float64 {
		var out []float64
		for _, r := range results {
			if r.phase == name {
				out = append(out, f(r))
			}
		}
		return out
	}
	perSec := func(v func(phaseResult) float64) func(phaseResult) float64 {
		return func(r phaseResult) float64 { return v(r) / r.wall.Seconds() }
	}
	med := func(xs []float64) string {
		lo, hi := benchutil.Spread(xs)
		if len(xs) == 1 {
			return fmt.Sprintf("%.3g", xs[0])
		}
		return fmt.Sprintf("%.3g [%.3g–%.3g]", benchutil.Median(xs), lo, hi)
	}
	var loads []string
	for _, r := range results {
		loads = append(loads, r.loadavg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Control plane at %d nodes: simulated agents + waterline-manager vs kubelet's writes\n\n", cfg.nodes)
	fmt.Fprintf(&b, "%d nodes, %d pods each, report interval %v (%.1f NodeMetric writes/s expected), %v phases, %d repeats in rotating order. Load average (1 min) at the end of each phase: %s.\n\n",
		cfg.nodes, cfg.podsPerNode, cfg.reportInterval(), cfg.expectedRate(), cfg.window, cfg.repeats, strings.Join(loads, "; "))
	fmt.Fprintf(&b, "Bootstrap: the manager created the %d NodeMetrics (and kwok ran the pods) %v after it started; every node sold Batch %v after the last agent started (its first report).\n\n",
		cfg.nodes, nodeMetricsReady.Round(time.Second), tiersReady.Round(time.Second))
	idle := benchutil.Median(by(phaseIdle, perSec(func(r phaseResult) float64 { return r.cpu["apiserver+etcd"] })))
	idleMgr := benchutil.Median(by(phaseIdle, perSec(func(r phaseResult) float64 { return r.cpu["manager"] })))
	fmt.Fprintf(&b, "Writes per second are over the %v a phase drives load; CPU over the phase's wall time, which adds about 1 s for the last writes' work to drain and the scrapes.\n\n", cfg.window)
	fmt.Fprintf(&b, "| phase | writes reaching the API server, /s | apiserver+etcd, cores | above idle, ms per write | manager, cores | manager tiers reconciles /s (mean ms) | manager Node status writes /s | tiers queue depth ≤ |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range []string{phaseAgents, phaseLease, phaseNodeStatus, phaseIdle} {
		writes := func(r phaseResult) float64 {
			switch name {
			case phaseAgents:
				return r.nodeMetricWrites
			case phaseLease:
				return r.leaseWrites
			case phaseNodeStatus:
				return r.nodeStatusPatches
			}
			return 0
		}
		perWrite := "—"
		if name != phaseIdle {
			perWrite = med(by(name, func(r phaseResult) float64 {
				return 1000 * (r.cpu["apiserver+etcd"] - idle*r.wall.Seconds()) / max(writes(r), 1)
			}))
		}
		mgrWrites := "—"
		if name == phaseAgents {
			// Only the manager patches Node status while the agents run.
			mgrWrites = med(by(name, perSec(func(r phaseResult) float64 { return r.nodeStatusPatches })))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s (%s) | %s | %s |\n", name,
			med(by(name, func(r phaseResult) float64 { return writes(r) / cfg.window.Seconds() })),
			med(by(name, perSec(func(r phaseResult) float64 { return r.cpu["apiserver+etcd"] }))),
			perWrite,
			med(by(name, perSec(func(r phaseResult) float64 { return r.cpu["manager"] }))),
			med(by(name, perSec(func(r phaseResult) float64 { return r.reconciles }))),
			med(by(name, func(r phaseResult) float64 { return 1000 * r.reconcileSeconds / max(r.reconciles, 1) })),
			mgrWrites,
			med(by(name, func(r phaseResult) float64 { return r.maxDepth })))
	}
	nm := benchutil.Median(by(phaseAgents, func(r phaseResult) float64 {
		return (r.cpu["apiserver+etcd"] - idle*r.wall.Seconds()) / max(r.nodeMetricWrites, 1)
	}))
	lease := benchutil.Median(by(phaseLease, func(r phaseResult) float64 {
		return (r.cpu["apiserver+etcd"] - idle*r.wall.Seconds()) / max(r.leaseWrites, 1)
	}))
	patch := benchutil.Median(by(phaseNodeStatus, func(r phaseResult) float64 {
		return (r.cpu["apiserver+etcd"] - idle*r.wall.Seconds()) / max(r.nodeStatusPatches, 1)
	}))
	mgr := benchutil.Median(by(phaseAgents, func(r phaseResult) float64 {
		return (r.cpu["manager"] - idleMgr*r.wall.Seconds()) / max(r.nodeMetricWrites, 1)
	}))
	agentsCPU := benchutil.Median(by(phaseAgents, func(r phaseResult) float64 { return r.cpu["self"] / max(r.nodeMetricWrites, 1) }))
	n := float64(cfg.nodes)
	fmt.Fprintf(&b, "\nPer write above idle (apiserver+etcd idle %.3f cores, manager idle %.4f cores): NodeMetric report %.2f ms (+ manager %.3f ms), Lease renew %.2f ms, Node status patch %.2f ms; ratio NodeMetric / Node status patch %.2f×, NodeMetric / Lease %.2f×. The test process (%d simulated agents and the harness) spent %.2f ms per report.\n\n",
		idle, idleMgr, 1000*nm, 1000*mgr, 1000*lease, 1000*patch, nm/patch, nm/lease, cfg.nodes, 1000*agentsCPU)
	fmt.Fprintf(&b, "At %d nodes, steady state:\n\n| stream | rate | apiserver+etcd cores (rate × per-write cost) |\n|---|---|---|\n", cfg.nodes)
	fmt.Fprintf(&b, "| NodeMetric reports every %v (+ the manager's reconciles and Node writes) | %.1f/s | %.2f (+ manager %.3f) |\n", cfg.reportInterval(), n/cfg.reportInterval().Seconds(), n/cfg.reportInterval().Seconds()*nm, n/cfg.reportInterval().Seconds()*mgr)
	fmt.Fprintf(&b, "| kubelet Lease renew every 10 s | %.1f/s | %.2f |\n", n/10, n/10*lease)
	fmt.Fprintf(&b, "| kubelet Node status every 5 min | %.1f/s | %.2f |\n", n/300, n/300*patch)
	return b.String()
}
