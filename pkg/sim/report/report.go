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

// Package report turns a simulation result into what people read: a
// summary table for the terminal, the numbers as JSON, and a
// self-contained HTML page whose charts are inline SVG (no scripts, no
// network), plus each chart as its own SVG file.
//
// It only formats: it never changes or recomputes a figure of the result,
// so the table, the JSON and the page always agree.
package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/waterline-dev/waterline/pkg/sim"
)

// Files WriteDir writes.
const (
	IndexFile  = "index.html"
	ResultFile = "result.json"
)

// Page layout of the HTML report: charts stacked at fixed places below a
// header, so that a screenshot of the page can be checked chart by chart
// (ChartRect).
const (
	PageWidth    = ChartWidth + 2*pageMargin
	pageMargin   = 20
	headerHeight = 96
	chartGap     = 16
)

// ChartIDs are the charts of the report, in page order; each is also
// written as <id>.svg.
var ChartIDs = []string{"cpu", "harm", "qos", "evictions", "tiers"}

// ChartRect is where chart i of ChartIDs sits on the HTML page, in CSS
// pixels from the top-left corner.
func ChartRect(i int) image.Rectangle {
	top := headerHeight + i*(ChartHeight+chartGap)
	return image.Rect(pageMargin, top, pageMargin+ChartWidth, top+ChartHeight)
}

// Options add context to a report.
type Options struct {
	// Command is the command line that produced the result, shown on the
	// page.
	Command string
}

// WriteDir writes the report into dir (created if needed): index.html,
// result.json and one SVG per chart. It returns the path of index.html.
func WriteDir(dir string, res *sim.Result, opts Options) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating report directory: %w", err)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, res, opts); err != nil {
		return "", err
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, res); err != nil {
		return "", err
	}
	files := map[string][]byte{IndexFile: page.Bytes(), ResultFile: js.Bytes()}
	for _, c := range charts(res) {
		files[c.id+".svg"] = []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + c.svg() + "\n")
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", fmt.Errorf("writing report: %w", err)
		}
	}
	return filepath.Join(dir, IndexFile), nil
}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, res *sim.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	return nil
}

// row is one line of the summary: a figure for every policy.
type row struct {
	name  string
	value func(s *sim.Summary) string
}

func pct(v float64) string { return fmt.Sprintf("%.1f %%", v) }

func optional(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func jobs(j sim.JobStats) string {
	return fmt.Sprintf("%d / %d (%.0f %%)", j.Completed, j.Submitted, j.CompletionPercent)
}

func slowdown(j sim.JobStats) string {
	if j.Completed == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f", j.MeanSlowdown, j.P95Slowdown)
}

var rows = []row{
	{"prod SLO-violation time (harm)", func(s *sim.Summary) string { return fmt.Sprintf("%.3f %%", s.ProdSLOViolationPercent) }},
	{"prod work not served (core-s)", func(s *sim.Summary) string { return fmt.Sprintf("%.0f", s.ProdShortfallCoreSeconds) }},
	{"prod SLO-violation time at 1.25 / 2 / 3× p99", func(s *sim.Summary) string {
		if len(s.ProdSLOCurve) != 4 {
			return "-"
		}
		c := s.ProdSLOCurve
		return fmt.Sprintf("%.2f / %.2f / %.2f %%", c[0].ViolationPercent, c[2].ViolationPercent, c[3].ViolationPercent)
	}},
	{"prod p99 latency ÷ alone, mean", func(s *sim.Summary) string { return fmt.Sprintf("%.2f", s.ProdLatencyFactorMean) }},
	{"batch+mid CPU used (core-h)", func(s *sim.Summary) string { return fmt.Sprintf("%.0f", s.Batch.CoreHours+s.Mid.CoreHours) }},
	{"node CPU, mean", func(s *sim.Summary) string { return pct(s.MeanCPUPercent) }},
	{"node CPU, p95", func(s *sim.Summary) string { return pct(s.P95CPUPercent) }},
	{"node time over evict line (not harm)", func(s *sim.Summary) string { return fmt.Sprintf("%.3f %%", s.ProdContentionPercent) }},
	{"BE evictions per node-hour", func(s *sim.Summary) string {
		return fmt.Sprintf("%.3f (%d)", s.EvictionsPerNodeHour, s.Evictions)
	}},
	{"OOM kills", func(s *sim.Summary) string { return fmt.Sprint(s.OOMKills) }},
	{"preemptions (pods preempted)", func(s *sim.Summary) string { return fmt.Sprint(s.Preemptions) }},
	{"evictions refused by a PDB", func(s *sim.Summary) string { return fmt.Sprint(s.EvictionsRefused) }},
	{"throttled BE CPU (core-s)", func(s *sim.Summary) string { return fmt.Sprintf("%.0f", s.ThrottledCoreSeconds) }},
	{"QoS breaches acted on / pods acted on", func(s *sim.Summary) string { return fmt.Sprintf("%d / %d", s.QoSBreaches, s.PodsActed) }},
	{"CPU over-action, as planned (released ÷ needed)", func(s *sim.Summary) string { return optional(s.OverActionRatio, "%.2f") }},
	{"memory over-action, as planned (released ÷ needed)", func(s *sim.Summary) string { return optional(s.MemoryOverActionRatio, "%.2f") }},
	{"prediction violations", func(s *sim.Summary) string { return optional(s.PredictionViolationPercent, "%.2f %%") }},
	{"batch jobs completed", func(s *sim.Summary) string { return jobs(s.Batch) }},
	{"batch slowdown, mean / p95", func(s *sim.Summary) string { return slowdown(s.Batch) }},
	{"batch CPU used (core-h)", func(s *sim.Summary) string { return fmt.Sprintf("%.0f", s.Batch.CoreHours) }},
	{"mid jobs completed", func(s *sim.Summary) string { return jobs(s.Mid) }},
	{"mid slowdown, mean / p95", func(s *sim.Summary) string { return slowdown(s.Mid) }},
	{"mid CPU used (core-h)", func(s *sim.Summary) string { return fmt.Sprintf("%.0f", s.Mid.CoreHours) }},
	{"pods pending at the end", func(s *sim.Summary) string { return fmt.Sprint(s.PendingAtEnd) }},
}

// table returns the summary as a header and rows of cells.
func table(res *sim.Result) (header []string, cells [][]string) {
	header = []string{"METRIC"}
	for _, p := range res.Policies {
		header = append(header, strings.ToUpper(string(p.Policy)))
	}
	for _, r := range rows {
		line := []string{r.name}
		for i := range res.Policies {
			line = append(line, r.value(&res.Policies[i].Summary))
		}
		cells = append(cells, line)
	}
	return header, cells
}

// WriteTable writes the summary as an aligned text table, one column per
// policy, after a line describing the workload.
func WriteTable(w io.Writer, res *sim.Result) error {
	fmt.Fprintln(w, describe(res))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header, cells := table(res)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, line := range cells {
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cmp := Comparisons(res); len(cmp) > 0 {
		fmt.Fprintln(w)
		for _, c := range cmp {
			fmt.Fprintln(w, c)
		}
	}
	return nil
}

// Comparisons holds each colocated policy of res against the stronger
// plain-Kubernetes baseline of the run -- the one that used more Batch and
// Mid CPU -- one sentence each; none without a baseline.
func Comparisons(res *sim.Result) []string {
	var base *sim.PolicyResult
	for i := range res.Policies {
		p := &res.Policies[i]
		if p.Policy.Baseline() && (base == nil || work(&p.Summary) > work(&base.Summary)) {
			base = p
		}
	}
	if base == nil {
		return nil
	}
	var out []string
	for i := range res.Policies {
		p := &res.Policies[i]
		if p.Policy.Baseline() {
			continue
		}
		b, s := &base.Summary, &p.Summary
		out = append(out, fmt.Sprintf("%s vs %s (the stronger baseline: more batch+mid CPU): batch+mid core-hours %s (%.0f vs %.0f), Prod SLO-violation time %.3f %% vs %.3f %%, Prod work not served %.0f vs %.0f core-s",
			p.Policy, base.Policy, change(work(s), work(b)), work(s), work(b),
			s.ProdSLOViolationPercent, b.ProdSLOViolationPercent, s.ProdShortfallCoreSeconds, b.ProdShortfallCoreSeconds))
	}
	return out
}

func work(s *sim.Summary) float64 { return s.Batch.CoreHours + s.Mid.CoreHours }

func change(v, base float64) string {
	if base == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f %%", 100*(v-base)/base)
}

// WriteMarkdown writes the summary as a Markdown table, for READMEs.
func WriteMarkdown(w io.Writer, res *sim.Result) error {
	header, cells := table(res)
	header[0] = "metric"
	for i := 1; i < len(header); i++ {
		header[i] = "`" + strings.ToLower(header[i]) + "`"
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	fmt.Fprintf(w, "|---%s|\n", strings.Repeat("|---:", len(header)-1))
	for _, line := range cells {
		_, err := fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
		if err != nil {
			return err
		}
	}
	if cmp := Comparisons(res); len(cmp) > 0 {
		fmt.Fprintln(w)
		for _, c := range cmp {
			fmt.Fprintln(w, "- "+c)
		}
	}
	return nil
}

func describe(res *sim.Result) string {
	workload := res.Workload
	return fmt.Sprintf("workload %s: %d nodes (%.0f cores, %.0f GiB), %d services requesting %.0f %% of CPU, %d batch and %d mid jobs; %s at %ds steps, seed %d",
		workload.Name, workload.Nodes, workload.CPUCores, workload.MemoryGiB, workload.Services, workload.ProdRequestPercent, workload.BatchJobs, workload.MidJobs,
		hours(workload.DurationSeconds), res.StepSeconds, res.Seed)
}

func hours(sec int64) string {
	if sec%3600 == 0 {
		return fmt.Sprintf("%dh", sec/3600)
	}
	return fmt.Sprintf("%.1fh", float64(sec)/3600)
}

// charts builds the report's charts, in ChartIDs order.
func charts(res *sim.Result) []*chart {
	var xs []float64
	if len(res.Policies) > 0 {
		xs = res.Policies[0].Series.Hours
	}
	color := func(i int) string { return palette[i%len(palette)] }
	cpu := &chart{id: "cpu", title: "Cluster CPU utilisation", yLabel: "% of CPU capacity", xs: xs, yMax: 100}
	cont := &chart{id: "harm", title: "Harm: Prod pods over their latency SLO", yLabel: "% of Prod pods", xs: xs}
	qos := &chart{id: "qos", title: "Node QoS: Batch pods held by a CPU quota (mean)", yLabel: "pods", xs: xs}
	evictions := &chart{id: "evictions", title: "Pods evicted by node QoS or OOM-killed" + per(xs), yLabel: "pods", xs: xs}
	tiers := &chart{id: "tiers", title: "Batch tier: allocatable vs requested vs used", yLabel: "cores", xs: xs}
	for i, p := range res.Policies {
		s := &p.Series
		name := string(p.Policy)
		style := policyStyle(i, len(res.Policies))
		cpu.lines = append(cpu.lines, series{name: name, color: color(i), style: style, ys: s.CPUPercent})
		cont.lines = append(cont.lines, series{name: name, color: color(i), style: style, ys: s.ProdSLOViolationPercent})
		qos.lines = append(qos.lines, series{name: name, color: color(i), style: style, ys: s.ThrottledPods})
		evictions.lines = append(evictions.lines, series{name: name, color: color(i), style: style, ys: s.Evictions})
	}
	// The tier chart follows the first colocated policy (the first that
	// publishes tiers), with plain Kubernetes' Batch use for comparison.
	for i, p := range res.Policies {
		if p.Policy.Baseline() {
			continue
		}
		s := &p.Series
		tiers.title = "Batch tier (" + string(p.Policy) + "): allocatable vs requested vs used"
		tiers.lines = append(tiers.lines,
			series{name: "allocatable", color: color(3), ys: s.BatchAllocatableCores},
			series{name: "requested", color: color(4), ys: s.BatchRequestedCores},
			series{name: "used", color: color(i), ys: s.BatchCores})
		break
	}
	for i, p := range res.Policies {
		if p.Policy.Baseline() {
			tiers.lines = append(tiers.lines, series{name: "used, " + string(p.Policy), color: color(i), dash: true, ys: p.Series.BatchCores})
		}
	}
	// A chart of zeros still needs an axis.
	if maxOf(cont.lines) < 1 {
		cont.yMax = 1
	}
	for _, c := range []*chart{qos, evictions} {
		if maxOf(c.lines) < 1 {
			c.yMax = 1
		}
	}
	return []*chart{cpu, cont, qos, evictions, tiers}
}

// per names the interval a point of xs (hours) counts, " per 5 min";
// empty with fewer than two points.
func per(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	d := time.Duration(math.Round((xs[1]-xs[0])*float64(time.Hour)/float64(time.Second))) * time.Second
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf(" per %d h", d/time.Hour)
	case d > time.Hour:
		return fmt.Sprintf(" per %.1f h", d.Hours())
	case d%time.Minute == 0:
		return fmt.Sprintf(" per %d min", d/time.Minute)
	default:
		return fmt.Sprintf(" per %d s", d/time.Second)
	}
}

func maxOf(lines []series) float64 {
	m := 0.0
	for _, l := range lines {
		for _, v := range l.ys {
			if !math.IsNaN(v) {
				m = math.Max(m, v)
			}
		}
	}
	return m
}

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Parse(pageTemplate))

type pageChart struct {
	ID   string
	Top  int
	Left int
	SVG  template.HTML
}

// WriteHTML writes the self-contained HTML report: the charts, then the
// summary table and what each figure means.
func WriteHTML(w io.Writer, res *sim.Result, opts Options) error {
	header, cells := table(res)
	data := struct {
		Title, Describe, Command string
		Width, HeaderHeight      int
		NarrowWidth              int
		ChartsHeight             int
		ChartWidth, ChartHeight  int
		Charts                   []pageChart
		Header                   []string
		Rows                     [][]string
	}{
		Title:        "Waterline simulation: " + res.Workload.Name,
		Describe:     describe(res),
		Command:      opts.Command,
		Width:        PageWidth,
		NarrowWidth:  PageWidth - 1,
		HeaderHeight: headerHeight,
		ChartWidth:   ChartWidth,
		ChartHeight:  ChartHeight,
		Header:       header,
		Rows:         cells,
	}
	cs := charts(res)
	for i, c := range cs {
		r := ChartRect(i)
		// The SVG is built from numbers and escaped names only.
		data.Charts = append(data.Charts, pageChart{ID: c.id, Top: r.Min.Y, Left: r.Min.X, SVG: template.HTML(c.svg())}) //nolint:gosec // see above
	}
	data.ChartsHeight = ChartRect(len(cs)-1).Max.Y + chartGap
	if err := page.Execute(w, data); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	return nil
}
