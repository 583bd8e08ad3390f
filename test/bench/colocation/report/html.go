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

package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/test/bench/colocation/hist"
)

// Page layout: charts are absolutely placed, one under the other, so a
// screenshot test knows where each one is.
const (
	PageWidth  = ChartWidth + 2*pageMargin
	pageMargin = 20
	headerH    = 200
	chartGap   = 24
)

// ChartRect is the page rectangle of chart i: (x0, y0, x1, y1).
func ChartRect(i int) [4]int {
	y := headerH + i*(ChartHeight+chartGap)
	return [4]int{pageMargin, y, pageMargin + ChartWidth, y + ChartHeight}
}

// loadsOf returns the load shapes that ran, steady first.
func loadsOf(r *Results) []string {
	seen := map[string]bool{}
	for _, run := range r.Runs {
		seen[run.Load] = true
	}
	var out []string
	for _, l := range []string{Steady, Bursty} {
		if seen[l] {
			out = append(out, l)
		}
	}
	return out
}

// charts builds the page's charts from the results.
func charts(r *Results) []*plot {
	var out []*plot
	for _, load := range loadsOf(r) {
		cdf := &plot{id: "cdf-" + load, title: "Prod latency from intended send time, " + load + " load (all rounds)",
			xLabel: "latency (ms, log)", yLabel: "percentile", logX: true, nines: true}
		cpu := &plot{id: "cpu-" + load, title: "Node CPU, " + load + " load (round 1; ticks: agent actions)",
			xLabel: "seconds", yLabel: "cores"}
		batch := &plot{id: "batch-" + load, title: "Batch progress, " + load + " load (round 1)",
			xLabel: "seconds", yLabel: "units/s"}
		p99 := &plot{id: "p99-" + load, title: "Prod p99 per second, " + load + " load (round 1)",
			xLabel: "seconds (intended send time)", yLabel: "ms"}
		mem := &plot{id: "mem-" + load, title: "Node pods' memory, " + load + " load (round 1; ticks: evictions)",
			xLabel: "seconds", yLabel: "GiB"}
		memUsed := false
		for _, sc := range Scenarios {
			color := scenarioColor[sc]
			var merged *hist.Histogram
			var first *Run
			for i := range r.Runs {
				run := &r.Runs[i]
				if run.Scenario != sc || (run.Load != load && sc != BatchAlone) {
					continue
				}
				if first == nil || run.Round < first.Round {
					first = run
				}
				if run.Prod == nil {
					continue
				}
				h, err := run.Prod.LatencyHistogram()
				if err != nil || h.Count() == 0 {
					continue
				}
				if merged == nil {
					merged = h
				} else if err := merged.Merge(h); err != nil {
					continue
				}
			}
			if merged != nil {
				l := line{name: sc, color: color}
				for _, p := range merged.CDF() {
					l.xs = append(l.xs, float64(p.Value)/1e6)
					l.ys = append(l.ys, p.Fraction)
				}
				cdf.lines = append(cdf.lines, l)
			}
			if first == nil {
				continue
			}
			l := line{name: sc, color: color}
			for _, s := range first.Samples {
				l.xs, l.ys = append(l.xs, s.T), append(l.ys, s.Node)
			}
			cpu.lines = append(cpu.lines, l)
			for _, a := range first.Actions {
				if c, ok := actionColor[a.Kind]; ok && a.Kind != ActionRestore {
					cpu.markers = append(cpu.markers, marker{x: a.T, color: c})
				}
				if a.Kind == ActionEvict {
					mem.markers = append(mem.markers, marker{x: a.T, color: actionColor[a.Kind]})
				}
			}
			ml := line{name: sc, color: color}
			for _, s := range first.Samples {
				ml.xs, ml.ys = append(ml.xs, s.T), append(ml.ys, float64(s.NodeMemory)/(1<<30))
				memUsed = memUsed || s.NodeMemory > 0
			}
			mem.lines = append(mem.lines, ml)
			if sc != Alone && len(first.Progress) > 1 {
				l := line{name: sc, color: color}
				for i := 1; i < len(first.Progress); i++ {
					a, b := first.Progress[i-1], first.Progress[i]
					if dt := b.T - a.T; dt > 0 {
						l.xs, l.ys = append(l.xs, b.T), append(l.ys, float64(b.Units-a.Units)/dt)
					}
				}
				batch.lines = append(batch.lines, l)
			}
			if first.Prod != nil {
				l := line{name: sc, color: color}
				for _, w := range first.Prod.Windows {
					if w.OK > 0 {
						l.xs, l.ys = append(l.xs, w.Start.Seconds()), append(l.ys, float64(w.P99)/1e6)
					}
				}
				p99.lines = append(p99.lines, l)
			}
		}
		out = append(out, cdf, cpu, batch, p99)
		if memUsed {
			// Results from before memory was sampled have no memory chart.
			out = append(out, mem)
		}
	}
	return out
}

// Markdown writes the summary table.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| scenario | Prod load | rounds | Prod p99 (× alone) | Prod p99.9 (× alone) | Prod errors | Batch units (share of batch-alone) | Batch CPU (cores) | throttles | evictions | over-action (observed ÷ gap) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %s%s (%s) | %s%s (%s) | %s | %s | %.2f | %d | %d | %s |\n",
			r.Scenario, dash(r.Load), r.Rounds, atLeast(r), ms(r.P99), ratio(r.P99Ratio), atLeast(r), ms(r.P999), ratio(r.P999Ratio),
			errs(r), units(r), r.BatchCores, r.Throttles, r.Evictions, over(r))
	}
	for _, r := range rows {
		if r.Errors > 0 {
			b.WriteString("\n≥: some requests failed or timed out; timed-out ones count at their timeout, failed ones not at all, so the latency is a lower bound.\n")
			break
		}
	}
	return b.String()
}

// atLeast marks latencies of runs with errors: timed-out requests count
// at their timeout, failed ones not at all, so the figure is a lower bound.
func atLeast(r Row) string {
	if r.Errors > 0 {
		return "≥ "
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ms(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", float64(ns)/1e6)
}

func ratio(n Num) string {
	if math.IsNaN(float64(n)) {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(n))
}

func errs(r Row) string {
	if r.Offered == 0 {
		return "-"
	}
	return fmt.Sprintf("%d / %d", r.Errors, r.Offered)
}

func units(r Row) string {
	if r.Scenario == Alone {
		return "-"
	}
	if math.IsNaN(float64(r.BatchShare)) {
		return fmt.Sprintf("%d", r.BatchUnits)
	}
	return fmt.Sprintf("%d (%.0f %%)", r.BatchUnits, 100*float64(r.BatchShare))
}

func over(r Row) string {
	if r.OverActionCycles == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%d cycles)", float64(r.OverAction), r.OverActionCycles)
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{"ms": ms, "ratio": ratio}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Waterline colocation benchmark</title>
<style>
body { margin: 0; font-family: sans-serif; font-size: 13px; background: #ffffff; width: {{.Width}}px; }
.abs { position: absolute; left: {{.Margin}}px; }
table { border-collapse: collapse; font-size: 12px; } td, th { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.smoke { color: #b00; font-weight: bold; }
</style></head><body>
<div class="abs" style="top: 8px; width: {{.ChartWidth}}px; height: {{.HeaderH}}px; overflow: hidden">
<h1 style="font-size: 20px; margin: 4px 0">Waterline colocation benchmark: Prod latency against Batch work</h1>
{{if .R.Smoke}}<div class="smoke">Smoke run: too short, on a machine shared with other work; not a result.</div>{{end}}
<div>Command: <code>{{.R.Command}}</code>; started {{.Started}}</div>
<div>Machine: {{.R.Machine.CPUs}} CPUs {{.R.Machine.CPUModel}}, kernel {{.R.Machine.Kernel}}, {{.R.Machine.Cgroup}}</div>
<div>Load before: <code>{{.R.Machine.UptimeBefore}}</code>; after: <code>{{.R.Machine.UptimeAfter}}</code></div>
<div>Prod: {{.R.Prod}}. Batch: {{.R.Batch}}.</div>
<div>Waterline: {{.R.Waterline}}.</div>
<div>CPU over all runs: the machine was busy {{printf "%.2f" .MachineCores}} cores on average, the node's pods {{printf "%.2f" .NodeCores}}: the rest is the load generator, the control plane and other work on the machine.</div>
</div>
{{range $i, $c := .Charts}}<div class="abs" style="top: {{index $.Tops $i}}px">{{$c}}</div>
{{end}}
<div class="abs" style="top: {{.TableTop}}px; width: {{.ChartWidth}}px">
<h2 style="font-size: 16px">Summary (medians over rounds; ratios against the same round's Prod alone)</h2>
<table><tr><th>scenario</th><th>load</th><th>rounds</th><th>p99</th><th>p99 × alone</th><th>p99.9</th><th>p99.9 × alone</th><th>errors</th><th>Batch units</th><th>share of batch-alone</th><th>Batch cores</th><th>throttles</th><th>evictions</th><th>over-action</th></tr>
{{range .Rows}}<tr><td>{{.Scenario}}</td><td>{{.Load}}</td><td>{{.Rounds}}</td><td>{{ms .P99}}</td><td>{{ratio .P99Ratio}}</td><td>{{ms .P999}}</td><td>{{ratio .P999Ratio}}</td><td>{{.Errors}}</td><td>{{.BatchUnits}}</td><td>{{ratio .BatchShare}}</td><td>{{printf "%.2f" .BatchCores}}</td><td>{{.Throttles}}</td><td>{{.Evictions}}</td><td>{{ratio .OverAction}}</td></tr>
{{end}}</table>
<p>Over-action: for each agent cycle that throttled or evicted, the drop of node CPU use seen in the cgroups
({{.W.Before}} s before against {{.W.After}} s starting {{.W.Settle}} s after) divided by the gap to the line the planner meant to close; 1 closes it exactly.</p>
</div>
</body></html>
`))

// WriteDir writes results.json, summary.md, calibration.json and
// index.html into dir and returns the index's path.
func WriteDir(dir string, r *Results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rows := Summarize(r)
	js, err := json.MarshalIndent(struct {
		*Results
		Summary []Row `json:"summary"`
	}{r, rows}, "", " ")
	if err != nil {
		return "", fmt.Errorf("encoding results: %w", err)
	}
	cal, err := json.MarshalIndent(Calibrate(r, 0.25), "", " ")
	if err != nil {
		return "", fmt.Errorf("encoding calibration: %w", err)
	}
	machineCores, nodeCores := MeanCores(r)
	cs := charts(r)
	var svgs []template.HTML
	var tops []int
	for i, c := range cs {
		svgs = append(svgs, template.HTML(c.svg())) //nolint:gosec // built from numbers and escaped names
		tops = append(tops, ChartRect(i)[1])
	}
	var b strings.Builder
	err = page.Execute(&b, map[string]any{
		"R": r, "Rows": rows, "Charts": svgs, "Tops": tops, "Width": PageWidth, "Margin": pageMargin,
		"ChartWidth": ChartWidth, "HeaderH": headerH - 16, "TableTop": ChartRect(len(cs))[1],
		"Started": r.Started.UTC().Format(time.RFC3339), "W": DefaultOverActionWindows,
		"MachineCores": machineCores, "NodeCores": nodeCores,
	})
	if err != nil {
		return "", fmt.Errorf("rendering the report: %w", err)
	}
	index := filepath.Join(dir, "index.html")
	for name, content := range map[string][]byte{
		"results.json": js, "calibration.json": cal, "summary.md": []byte(Markdown(rows)), "index.html": []byte(b.String()),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			return "", err
		}
	}
	return index, nil
}

// MeanCores is the mean busy CPU of the machine and of the node's pods
// over every sample of every run.
func MeanCores(r *Results) (machine, node float64) {
	n := 0
	for _, run := range r.Runs {
		for _, s := range run.Samples {
			if s.T <= 0 {
				continue
			}
			machine += s.Machine
			node += s.Node
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return machine / float64(n), node / float64(n)
}
