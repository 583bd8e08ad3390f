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

	"github.com/waterline-dev/waterline/test/bench/benchutil"
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
// deployed profile and with default plugins only, and the stock
// kube-scheduler of the same Kubernetes version with default plugins, in
// rotating order, against a real API server with N Ready nodes that have
// fresh NodeMetrics, M pods of a Prod/Mid/Batch mix per run. Without
// SCHEDBENCH_FULL it is a smoke (50 nodes, 200 pods, one run each) that
// checks the harness measures what it says; `make bench-scheduler` runs the
// full size and writes the report.
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

	bins := schedulerBins{stock: filepath.Join(testutil.BinDir(), "kube-scheduler")}
	if _, err := os.Stat(bins.stock); err != nil {
		t.Fatalf("The stock kube-scheduler is missing (%v): run `hack/build-tools.sh kube-scheduler` (or `make tools`) first", err)
	}
	c := testutil.StartCluster(t, testutil.Options{})
	bins.waterline = testutil.BuildBinary(t, "waterline-scheduler")
	cp := [2]int{}
	var err error
	if cp[0], cp[1], err = benchutil.ControlPlanePIDs(c); err != nil {
		t.Logf("The control plane's CPU is not reported: %v", err)
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
	order := []variant{deployed, defaults, stock}
	for run := range repeats {
		for _, v := range order {
			// Fresh NodeMetrics before every run, so none expires (180 s)
			// during one and neither variant sees NodeMetric updates while
			// it is measured.
			if err := metrics.reportAll(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := runOnce(t, c, bins, v, run, pods, cp, pprofSeconds)
			t.Logf("%-8s run %d: %6.1f pods/s, CPU %.2f ms/pod, control plane CPU %.2f ms/pod, p99 create→bound %.2f s, attempts unschedulable %v",
				v.name, run, r.podsPerSec(), 1000*r.cpuPerPod(), 1000*r.apiCPU/float64(r.pods), benchutil.Percentile(r.latencies, 99), r.unschedAtt)
			results = append(results, r)
		}
		// Rotate the order, so that no variant always runs first or
		// after the same one.
		order = append(order[1:], order[0])
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
		case defaults.name, stock.name:
			if !math.IsNaN(la) {
				t.Errorf("%s: LoadAware Filter ran (%v s per call); the baseline is not default plugins only", r.variant, la)
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

// buildReport renders medians, spreads and the ratios deployed/default
// (what LoadAware costs) and default/stock (what the out-of-tree build
// costs), of the medians and of each repeat's runs.
func buildReport(nodes, pods, repeats int, results []result) string {
	var b strings.Builder
	up, _ := exec.Command("uptime").Output()
	fmt.Fprintf(&b, "# Live scheduler: %d nodes, %d pods per run, %d runs per variant (rotating order)\n\n", nodes, pods, repeats)
	fmt.Fprintf(&b, "uptime at the end: %s\n", strings.TrimSpace(string(up)))
	fmt.Fprintf(&b, "Medians over the runs, [min–max] in brackets; ratios of the medians.\n\n")
	fmt.Fprintf(&b, "| metric | deployed (LoadAware) | default plugins | stock kube-scheduler | deployed / default | default / stock |\n|---|---|---|---|---|---|\n")
	row := func(label string, scale float64, format string, f func(result) float64) {
		var cells [3]string
		var medians [3]float64
		for i, v := range []variant{deployed, defaults, stock} {
			xs := byVariant(results, v.name, f)
			m := benchutil.Median(xs)
			lo, hi := benchutil.Spread(xs)
			medians[i] = m
			cells[i] = "—"
			if !math.IsNaN(m) {
				cells[i] = fmt.Sprintf(format+" ["+format+"–"+format+"]", m*scale, lo*scale, hi*scale)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", label, cells[0], cells[1], cells[2],
			ratioCell(medians[0], medians[1]), ratioCell(medians[1], medians[2]))
	}
	row("throughput, pods/s", 1, "%.1f", result.podsPerSec)
	row("scheduler CPU per pod, ms", 1000, "%.2f", result.cpuPerPod)
	row("apiserver+etcd CPU per pod, ms", 1000, "%.2f", func(r result) float64 { return r.apiCPU / float64(r.pods) })
	row("wall, s (first create → last bound)", 1, "%.1f", func(r result) float64 { return r.wall.Seconds() })
	row("p50 create → bound, s", 1, "%.2f", func(r result) float64 { return benchutil.Percentile(r.latencies, 50) })
	row("p99 create → bound, s", 1, "%.2f", func(r result) float64 { return benchutil.Percentile(r.latencies, 99) })
	row("p99 pod_scheduling_sli_duration, s", 1, "%.2f", func(r result) float64 { return r.sliP99 })
	row("mean scheduling_attempt_duration, ms", 1000, "%.2f", func(r result) float64 { return r.attemptMean })
	row("p99 scheduling_attempt_duration, ms", 1000, "%.2f", func(r result) float64 { return r.attemptP99 })
	for _, p := range phaseKeys {
		row("phase "+p+" per cycle, µs", 1e6, "%.0f", func(r result) float64 { return r.phase[p] })
	}
	fmt.Fprintf(&b, "\nScheduler CPU per pod, ratio within each repeat (runs of a repeat are back to back):\n\n")
	fmt.Fprintf(&b, "| repeat | deployed / default | default / stock |\n|---|---|---|\n")
	for run := range repeats {
		cpu := func(v variant) float64 {
			for _, r := range results {
				if r.run == run && r.variant == v.name {
					return r.cpuPerPod()
				}
			}
			return math.NaN()
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", run, ratioCell(cpu(deployed), cpu(defaults)), ratioCell(cpu(defaults), cpu(stock)))
	}
	fmt.Fprintf(&b, "\nPer call (sampled scheduler_plugin_execution_duration_seconds, mean; Filter/Score are per node), µs:\n\n")
	fmt.Fprintf(&b, "| plugin / point | deployed | default | stock |\n|---|---|---|---|\n")
	for _, k := range pluginKeys {
		key := k.plugin + "/" + k.point
		f := func(r result) float64 { return r.plugin[key] }
		cell := func(v variant) string {
			x := benchutil.Median(byVariant(results, v.name, f))
			if math.IsNaN(x) {
				return "—"
			}
			return fmt.Sprintf("%.2f", x*1e6)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", key, cell(deployed), cell(defaults), cell(stock))
	}
	f := func(key string) float64 {
		return benchutil.Median(byVariant(results, deployed.name, func(r result) float64 { return r.plugin[key] }))
	}
	fmt.Fprintf(&b, "\nIn the deployed runs: LoadAware/Fit per call: Filter %.2f×, Score %.2f×.\n",
		f("LoadAware/Filter")/f("NodeResourcesFit/Filter"), f("LoadAware/Score")/f("NodeResourcesFit/Score"))
	return b.String()
}

// ratioCell is a / b as "1.23×", or "—" when either is missing.
func ratioCell(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
