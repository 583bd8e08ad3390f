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

package scheduler

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// envInt reads a positive integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestSchedulerThroughput runs the same waterline-scheduler binary with the
// deployed profile and with default plugins only, alternating, against a
// real API server with N Ready nodes that have fresh NodeMetrics, M pods of
// a Prod/Mid/Batch mix per run. Without SCHEDBENCH_FULL it is a smoke (50
// nodes, 200 pods, one run each) that checks the harness measures what it
// says; `make bench-scheduler` runs the full size and writes the report.
func TestSchedulerThroughput(t *testing.T) {
	full := os.Getenv("SCHEDBENCH_FULL") != ""
	nodes, pods, repeats := 50, 200, 1
	if full {
		nodes, pods, repeats = 1000, 4000, 3
	}
	nodes = envInt(t, "SCHEDBENCH_NODES", nodes)
	pods = envInt(t, "SCHEDBENCH_PODS", pods)
	repeats = envInt(t, "SCHEDBENCH_REPEATS", repeats)
	pprofSeconds := 0
	if v := os.Getenv("SCHEDBENCH_PPROF_SECONDS"); v != "" {
		pprofSeconds = envInt(t, "SCHEDBENCH_PPROF_SECONDS", 0)
	}

	c := testutil.StartCluster(t, testutil.Options{})
	bin := testutil.BuildBinary(t, "waterline-scheduler")
	cp := [2]int{}
	cp[0], cp[1] = controlPlanePIDs(c)
	if cp[0] == 0 {
		t.Logf("kube-apiserver's process not found: its CPU is not reported")
	}

	t0 := time.Now()
	names := createNodes(t, c, nodes)
	metrics := newNodeMetrics(c, names)
	if err := metrics.reportAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	priorityClasses(t, c)
	t.Logf("%d nodes and NodeMetrics in %v", nodes, time.Since(t0).Round(time.Millisecond))

	var results []result
	order := []variant{deployed, defaults}
	for run := range repeats {
		for _, v := range order {
			// Fresh NodeMetrics before every run, so none expires (180 s)
			// during one and neither variant sees NodeMetric updates while
			// it is measured.
			if err := metrics.reportAll(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := runOnce(t, c, bin, v, run, pods, cp, pprofSeconds)
			t.Logf("%-8s run %d: %6.1f pods/s, CPU %.2f ms/pod, control plane CPU %.2f ms/pod, p99 create→bound %.2f s, attempts unschedulable %v",
				v.name, run, r.podsPerSec(), 1000*r.cpuPerPod(), 1000*r.apiCPU/float64(r.pods), percentile(r.latencies, 99), r.unschedAtt)
			results = append(results, r)
		}
		// Alternate which variant goes first.
		order[0], order[1] = order[1], order[0]
	}

	report := buildReport(nodes, pods, repeats, results)
	t.Log("\n" + report)
	if full {
		path := filepath.Join(outDir(t), fmt.Sprintf("report-%dnodes.md", nodes))
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("Writing %s: %v", path, err)
		} else {
			t.Logf("Report: %s", path)
		}
	}

	// What the smoke (and every run) must show for the figures to mean
	// anything.
	for _, r := range results {
		if r.cpu <= 0 {
			t.Errorf("%s: scheduler CPU time %v s over a run that scheduled %d pods: /proc accounting is not measuring the scheduler", r.variant, r.cpu, r.pods)
		}
		la := r.plugin["LoadAware/Filter"]
		fit := r.plugin["NodeResourcesFit/Filter"]
		if math.IsNaN(fit) {
			t.Errorf("%s: no sampled NodeResourcesFit Filter timings in the scheduler's metrics", r.variant)
		}
		switch r.variant {
		case deployed.name:
			if math.IsNaN(la) {
				t.Errorf("deployed profile: no sampled LoadAware Filter timings: LoadAware did not run")
			}
		case defaults.name:
			if !math.IsNaN(la) {
				t.Errorf("default profile: LoadAware Filter ran (%v s per call); the baseline is not default plugins only", la)
			}
		}
		if r.unschedAtt > 0 {
			t.Logf("%s: %v scheduling attempts ended unschedulable (nodes too full for the mix?)", r.variant, r.unschedAtt)
		}
	}
}

// byVariant collects f over the runs of variant name.
func byVariant(results []result, name string, f func(result) float64) []float64 {
	var out []float64
	for _, r := range results {
		if r.variant == name {
			out = append(out, f(r))
		}
	}
	return out
}

// buildReport renders medians, spreads and deployed/default ratios.
func buildReport(nodes, pods, repeats int, results []result) string {
	var b strings.Builder
	up, _ := exec.Command("uptime").Output()
	fmt.Fprintf(&b, "# Live scheduler: %d nodes, %d pods per run, %d runs per variant (alternating)\n\n", nodes, pods, repeats)
	fmt.Fprintf(&b, "uptime at the end: %s\n", strings.TrimSpace(string(up)))
	fmt.Fprintf(&b, "Medians over the runs, [min–max] in brackets; ratio = median deployed / median default.\n\n")
	fmt.Fprintf(&b, "| metric | deployed (LoadAware) | default plugins | ratio |\n|---|---|---|---|\n")
	row := func(label string, scale float64, format string, f func(result) float64) {
		d := byVariant(results, deployed.name, f)
		o := byVariant(results, defaults.name, f)
		dm, om := median(d), median(o)
		dlo, dhi := spread(d)
		olo, ohi := spread(o)
		cell := func(m, lo, hi float64) string {
			if math.IsNaN(m) {
				return "—"
			}
			return fmt.Sprintf(format+" ["+format+"–"+format+"]", m*scale, lo*scale, hi*scale)
		}
		ratio := "—"
		if !math.IsNaN(dm) && !math.IsNaN(om) && om != 0 {
			ratio = fmt.Sprintf("%.2f×", dm/om)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", label, cell(dm, dlo, dhi), cell(om, olo, ohi), ratio)
	}
	row("throughput, pods/s", 1, "%.1f", result.podsPerSec)
	row("scheduler CPU per pod, ms", 1000, "%.2f", result.cpuPerPod)
	row("apiserver+etcd CPU per pod, ms", 1000, "%.2f", func(r result) float64 { return r.apiCPU / float64(r.pods) })
	row("wall, s (first create → last bound)", 1, "%.1f", func(r result) float64 { return r.wall.Seconds() })
	row("p50 create → bound, s", 1, "%.2f", func(r result) float64 { return percentile(r.latencies, 50) })
	row("p99 create → bound, s", 1, "%.2f", func(r result) float64 { return percentile(r.latencies, 99) })
	row("p99 pod_scheduling_sli_duration, s", 1, "%.2f", func(r result) float64 { return r.sliP99 })
	row("mean scheduling_attempt_duration, ms", 1000, "%.2f", func(r result) float64 { return r.attemptMean })
	row("p99 scheduling_attempt_duration, ms", 1000, "%.2f", func(r result) float64 { return r.attemptP99 })
	for _, p := range phaseKeys {
		row("phase "+p+" per cycle, µs", 1e6, "%.0f", func(r result) float64 { return r.phase[p] })
	}
	fmt.Fprintf(&b, "\nPer call (sampled scheduler_plugin_execution_duration_seconds, mean; Filter/Score are per node), µs:\n\n")
	fmt.Fprintf(&b, "| plugin / point | deployed | default |\n|---|---|---|\n")
	for _, k := range pluginKeys {
		key := k.plugin + "/" + k.point
		f := func(r result) float64 { return r.plugin[key] }
		d, o := median(byVariant(results, deployed.name, f)), median(byVariant(results, defaults.name, f))
		cell := func(x float64) string {
			if math.IsNaN(x) {
				return "—"
			}
			return fmt.Sprintf("%.2f", x*1e6)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", key, cell(d), cell(o))
	}
	f := func(key string) float64 {
		return median(byVariant(results, deployed.name, func(r result) float64 { return r.plugin[key] }))
	}
	fmt.Fprintf(&b, "\nIn the deployed runs: LoadAware/Fit per call: Filter %.2f×, Score %.2f×.\n",
		f("LoadAware/Filter")/f("NodeResourcesFit/Filter"), f("LoadAware/Score")/f("NodeResourcesFit/Score"))
	return b.String()
}
