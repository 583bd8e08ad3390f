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
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/test/bench/colocation/hist"
	"github.com/waterline-dev/waterline/test/bench/colocation/loadgen"
)

// prodResult fakes a load generator result whose latencies are
// lognormal around base (ns) times slow.
func prodResult(seed uint64, base, slow float64) *loadgen.Result {
	r := rand.New(rand.NewPCG(seed, 1))
	h := hist.MustNew(hist.DefaultPrecision)
	res := &loadgen.Result{Offered: 3000, OK: 3000}
	for w := range 30 {
		wh := hist.MustNew(6)
		for range 100 {
			v := int64(base * slow * math.Exp(r.NormFloat64()*0.4))
			h.Record(v)
			wh.Record(v)
		}
		res.Windows = append(res.Windows, loadgen.Window{Start: time.Duration(w) * time.Second, Offered: 100, OK: 100,
			P50: wh.Quantile(0.5), P99: wh.Quantile(0.99), Max: wh.Max()})
	}
	res.Latency, res.LatencyBuckets = h.Summary(), h.Snapshot()
	return res
}

// testResults: two rounds of every scenario under both loads. Batch beside
// Prod slows Prod 3× under plain Kubernetes and 1.2× under Waterline; the
// Waterline runs throttle once at t=10 s to close a 300m gap, and the
// node's use drops by 300m (steady) then stays.
func testResults() *Results {
	r := &Results{Command: "make bench-colocation", Smoke: true, Started: time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC),
		Machine: Machine{CPUs: 2, Kernel: "6.18", CPUModel: "test", Cgroup: "v1", UptimeBefore: "load average: 1.00", UptimeAfter: "load average: 1.10"},
		Prod:    "colobench serve --cpu 1ms", Batch: "2 cpu burners"}
	slow := map[string]float64{Alone: 1, Kubernetes: 3, Waterline: 1.2, WaterlineNoThrottle: 2}
	batchCores := map[string]float64{Alone: 0, Kubernetes: 1.5, Waterline: 1.0, WaterlineNoThrottle: 1.2, BatchAlone: 2}
	for round := 1; round <= 2; round++ {
		for _, load := range []string{Steady, Bursty} {
			for _, sc := range []string{Alone, Kubernetes, Waterline, WaterlineNoThrottle, BatchAlone} {
				if sc == BatchAlone && load == Bursty {
					continue
				}
				// The same draws in every scenario of a round and load: the
				// ratios are exactly the slowdowns.
				seed := uint64(round*10 + len(load))
				run := Run{Scenario: sc, Load: load, Round: round}
				if sc == BatchAlone {
					run.Load = ""
				} else {
					run.Prod = prodResult(seed, 2e6, slow[sc])
				}
				var units int64
				// A warmup sample, before the load: left out of the means.
				run.Samples = append(run.Samples, Sample{T: -1, Node: 3, Batch: 3, Prod: 3, Machine: 3})
				for t := 0.5; t <= 30; t += 0.5 {
					b := batchCores[sc]
					if sc == Waterline && t > 10 {
						b -= 0.3
					}
					prod := 0.7
					if sc == BatchAlone {
						prod = 0
					}
					if load == Bursty && int(t/5)%2 == 1 {
						prod += 0.4
					}
					// Memory differs by scenario, so its chart's lines do not hide each other.
					mem := int64(64+200*b) << 20
					run.Samples = append(run.Samples, Sample{T: t, Node: b + prod + 0.1, Prod: prod, Batch: b, NodeMemory: mem + 32<<20, BatchMemory: mem})
					units += int64(b * 500)
					run.Progress = append(run.Progress, ProgressPoint{T: t, Units: units})
				}
				run.BatchUnits = units
				if sc == Waterline {
					run.Actions = []Action{
						{T: 10, Kind: ActionThrottle, Pod: "batch-0", GapMilli: 300, ReleaseMilli: 200},
						{T: 10.2, Kind: ActionThrottle, Pod: "batch-1", GapMilli: 300, ReleaseMilli: 100},
						{T: 25, Kind: ActionRestore, Pod: "batch-0"},
					}
				}
				r.Runs = append(r.Runs, run)
			}
		}
	}
	// The memory scenario, steady load only: Batch memory grows to 2.4 GiB
	// and the agent evicts one pod at t=12 s (a memory eviction: no CPU
	// gap in its message).
	for round := 1; round <= 2; round++ {
		run := Run{Scenario: WaterlineMemory, Load: Steady, Round: round, Prod: prodResult(uint64(round*10+len(Steady)), 2e6, 1.1)}
		var units int64
		for t := 0.5; t <= 30; t += 0.5 {
			mem := int64(min(t, 12) / 12 * 2.4 * (1 << 30))
			if t > 12 {
				mem = 1288490188 // 1.2 GiB
			}
			run.Samples = append(run.Samples, Sample{T: t, Node: 1.5, Prod: 0.7, Batch: 0.8, BatchMemory: mem, NodeMemory: mem + 64<<20})
			units += 100
			run.Progress = append(run.Progress, ProgressPoint{T: t, Units: units})
		}
		run.BatchUnits = units
		run.Actions = []Action{{T: 12, Kind: ActionEvict, Pod: "batch-mem-1",
			Message: "Evicted by node QoS on n1: memory_usage usage 2500000000 over evict line 2040000000 (x) by 460000000; pod releases 1288490188, 0 left"}}
		r.Runs = append(r.Runs, run)
	}
	r.Loads = map[string][]loadgen.Phase{Steady: {{Duration: 30 * time.Second, Rate: 100}}}
	return r
}

func TestParseAction(t *testing.T) {
	for _, c := range []struct {
		msg          string
		gap, release int64
	}{
		// As the agent wrote it on the real node (the probe run).
		{"CPU quota none -> 100m: cpu_usage usage 410 over throttle line 40 (nodeQOS[colobench].spec.cpu.throttlePercent=2) by 370: quota none -> 100m releases 73, 297 left", 370, 73},
		{"Evicted by node QoS on n1: memory_usage usage 9000 over evict line 8000 (x) by 1000; pod releases 5000, 0 left", 0, 5000},
		{"CPU quota none -> 300m: cpu usage 1800 over throttle line 1500 (NodeQOS default) by 300: quota none -> 300m releases 200, 100 left", 300, 200},
		{"Evicted by node QoS on n1: cpu usage 1900 over evict line 1700 (NodeQOS default/cpu) by 200; pod releases 450, 0 left", 200, 450},
		{"Evicted by node QoS on n1: memory usage 9000 over evict line 8000 (x) by 1000; pod releases 5000, 0 left", 0, 5000},
		{"CPU quota 300m -> none: usage under every restore line: quota 300m -> none (one step)", 0, 0},
	} {
		gap, rel := ParseAction(c.msg)
		if gap != c.gap || rel != c.release {
			t.Errorf("ParseAction(%q) = %d, %d; want %d, %d", c.msg, gap, rel, c.gap, c.release)
		}
	}
}

func TestMeasureOverAction(t *testing.T) {
	// Node at 1.8 cores until t=10, then at 1.8-drop.
	// Batch at 1.0, Prod at 0.8 with a 0.2 step up at t=11 that the
	// node's drop includes and the Batch drop does not.
	flat := func(drop float64) []Sample {
		var s []Sample
		for t := 1.0; t <= 20; t++ {
			b, p := 1.0, 0.8
			if t > 10.5 {
				b -= drop
				p += 0.2
			}
			s = append(s, Sample{T: t, Node: b + p, Batch: b, Prod: p})
		}
		return s
	}
	for _, c := range []struct {
		name    string
		samples []Sample
		actions []Action
		want    []Effect
	}{
		{"two throttles of one cycle close a 300m gap exactly", flat(0.3),
			[]Action{{T: 10, Kind: ActionThrottle, GapMilli: 300, ReleaseMilli: 200}, {T: 10.3, Kind: ActionThrottle, GapMilli: 300, ReleaseMilli: 100}},
			[]Effect{{T: 10, Kind: ActionThrottle, Pods: 2, GapMilli: 300, BookedMilli: 300, ObservedMilli: 300, NodeDropMilli: 100, Ratio: 1}}},
		{"an eviction releasing twice the gap", flat(0.6),
			[]Action{{T: 10, Kind: ActionEvict, GapMilli: 300, ReleaseMilli: 450}},
			[]Effect{{T: 10, Kind: ActionEvict, Pods: 1, GapMilli: 300, BookedMilli: 450, ObservedMilli: 600, NodeDropMilli: 400, Ratio: 2}}},
		{"restores and actions without a gap are not measured", flat(0),
			[]Action{{T: 10, Kind: ActionRestore}, {T: 12, Kind: ActionThrottle}}, nil},
		{"two cycles 2 s apart, inside each other's windows: neither measured", flat(0.3),
			[]Action{{T: 8, Kind: ActionThrottle, GapMilli: 100}, {T: 10, Kind: ActionThrottle, GapMilli: 300}}, nil},
		{"two cycles a second apart are one episode: the largest gap, the summed booking", flat(0.3),
			[]Action{{T: 9.5, Kind: ActionThrottle, GapMilli: 200, ReleaseMilli: 150}, {T: 10.5, Kind: ActionThrottle, GapMilli: 300, ReleaseMilli: 150}},
			[]Effect{{T: 9.5, Kind: ActionThrottle, Pods: 2, GapMilli: 300, BookedMilli: 300, ObservedMilli: 300, NodeDropMilli: 100, Ratio: 1}}},
		{"a restore right after the throttle", flat(0.3),
			[]Action{{T: 10, Kind: ActionThrottle, GapMilli: 300}, {T: 13, Kind: ActionRestore}}, nil},
		{"no samples after the action", flat(0.3)[:10],
			[]Action{{T: 10, Kind: ActionThrottle, GapMilli: 300}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := MeasureOverAction(c.samples, c.actions, DefaultOverActionWindows)
			if diff := cmp.Diff(c.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	rows := Summarize(testResults())
	type brief struct {
		Scenario, Load       string
		Rounds               int
		P99Ratio, BatchShare float64
		BatchCores           float64
		Throttles            int
		OverAction           float64
		OverActionCycles     int
	}
	var got []brief
	for _, r := range rows {
		got = append(got, brief{r.Scenario, r.Load, r.Rounds, math.Round(float64(r.P99Ratio)*10) / 10, math.Round(float64(r.BatchShare)*100) / 100,
			math.Round(r.BatchCores*100) / 100, r.Throttles, math.Round(float64(r.OverAction)*100) / 100, r.OverActionCycles})
	}
	nan := math.NaN()
	want := []brief{
		{Alone, Steady, 2, 1, nan, 0, 0, nan, 0},
		{Alone, Bursty, 2, 1, nan, 0, 0, nan, 0},
		{Kubernetes, Steady, 2, 3, 0.75, 1.5, 0, nan, 0},
		{Kubernetes, Bursty, 2, 3, 0.75, 1.5, 0, nan, 0},
		// 1.0 core for 10 s then 0.7 for 20 s: 0.8 core, 0.4 of batch-alone's 2.
		{Waterline, Steady, 2, 1.2, 0.4, 0.8, 4, 1, 2},
		{Waterline, Bursty, 2, 1.2, 0.4, 0.8, 4, 1, 2},
		{WaterlineNoThrottle, Steady, 2, 2, 0.6, 1.2, 0, nan, 0},
		{WaterlineNoThrottle, Bursty, 2, 2, 0.6, 1.2, 0, nan, 0},
		// Other Batch pods than batch-alone's: no share.
		{WaterlineMemory, Steady, 2, 1.1, nan, 0.8, 0, nan, 0},
		{BatchAlone, "", 2, nan, 1, 2, 0, nan, 0},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	for _, r := range rows {
		if want := map[string]int{WaterlineMemory: 2}[r.Scenario]; r.Evictions != want {
			t.Errorf("%s/%s: %d evictions, want %d", r.Scenario, r.Load, r.Evictions, want)
		}
	}
}

func TestCalibrate(t *testing.T) {
	cal := Calibrate(testResults(), 0.25)
	if cal.NodeCPUs != 2 || len(cal.Points) != 3*2*30 {
		t.Fatalf("%d CPUs, %d points; want 2 and 180 (3 scenarios × 2 rounds × 30 windows)", cal.NodeCPUs, len(cal.Points))
	}
	// Batch at 1.5 cores (Kubernetes) is the 3× slowdown bin.
	for _, b := range cal.Bins {
		if b.Lo <= 1.5 && 1.5 < b.Hi && math.Abs(b.MedianRatio-3) > 0.3 {
			t.Errorf("bin [%v, %v): median ratio %v, want about 3", b.Lo, b.Hi, b.MedianRatio)
		}
	}
	if cal.CensoredWindows != 0 {
		t.Errorf("%d windows censored in runs without errors", cal.CensoredWindows)
	}

	// A window with a failed or timed-out request has a p99 that is a
	// lower bound: it is no point of the calibration.
	res := testResults()
	var censored int
	for i := range res.Runs {
		if p := res.Runs[i].Prod; p != nil && res.Runs[i].Load == Steady && res.Runs[i].Scenario == Kubernetes {
			for j := 0; j < len(p.Windows); j += 3 {
				p.Windows[j].Errors = 1
				censored++
			}
		}
	}
	cal = Calibrate(res, 0.25)
	if cal.CensoredWindows != censored || len(cal.Points) != 3*2*30-censored {
		t.Errorf("%d windows censored, %d points; want %d and %d", cal.CensoredWindows, len(cal.Points), censored, 3*2*30-censored)
	}
	// Every alone window censored: no baseline, no point, and the fit says why.
	for i := range res.Runs {
		if p := res.Runs[i].Prod; p != nil && res.Runs[i].Scenario == Alone {
			for j := range p.Windows {
				p.Windows[j].Errors = 1
			}
		}
	}
	cal = Calibrate(res, 0.25)
	if len(cal.Points) != 0 || cal.Interference != nil || !strings.Contains(cal.InterferenceError, "timed-out") {
		t.Errorf("no clean alone window: %d points, fit %v, error %q; want none, none and one naming the timed-out windows", len(cal.Points), cal.Interference, cal.InterferenceError)
	}
}

func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	index, err := WriteDir(dir, testResults())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Smoke run", "make bench-colocation", "load average: 1.00", `id="cdf-steady"`, `id="p99-bursty"`, "<table>", "busy 0.00 cores on average, the node's pods 1.78", `id="mem-steady"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	var back struct {
		Results
		Summary []Row `json:"summary"`
	}
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("results.json does not read back: %v", err)
	}
	if len(back.Runs) != 20 || len(back.Summary) != 10 || !math.IsNaN(float64(back.Summary[0].BatchShare)) {
		t.Errorf("read back %d runs, %d rows, alone's batch share %v; want 20, 10, null", len(back.Runs), len(back.Summary), back.Summary[0].BatchShare)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(md), "| kubernetes | steady | 2 |") || !strings.Contains(string(md), "| batch-alone | - | 2 | - (-) | - (-) | - |") || strings.Contains(string(md), "≥") {
		t.Errorf("summary.md:\n%s", md)
	}
	// Errors make the latencies lower bounds, and the table says so.
	withErrors := testResults()
	withErrors.Runs[1].Prod.Errors = 5
	table := Markdown(Summarize(withErrors))
	if !strings.Contains(table, "| kubernetes | steady | 2 | ≥ ") || !strings.Contains(table, "lower bound") {
		t.Errorf("a run with errors is not marked:\n%s", table)
	}
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SKIPPING the Chromium rendering test: chromium is not installed (hack/install-test-deps.sh installs it as root)")
	return ""
}

// TestReportRendersInChromium renders the page in headless Chromium and
// checks on the screenshot that each chart drew, with each scenario's
// line in its colour and the action ticks on the Node CPU charts.
func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	res := testResults()
	dir := t.TempDir()
	index, err := WriteDir(filepath.Join(dir, "report"), res)
	if err != nil {
		t.Fatal(err)
	}
	cs := charts(res)
	shot := filepath.Join(dir, "shot.png")
	height := ChartRect(len(cs) - 1)[3] + 40
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", PageWidth, height), "file://"+index).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < PageWidth || b.Dy() < height {
		t.Fatalf("screenshot is %v, want at least %dx%d", b, PageWidth, height)
	}
	for i, c := range cs {
		r := ChartRect(i)
		plotArea := image.Rect(r[0]+marginLeft+1, r[1]+marginTop+1, r[2]-marginRight-1, r[3]-marginBottom-1)
		if len(c.lines) == 0 {
			t.Errorf("chart %s has no line", c.id)
		}
		for _, l := range c.lines {
			if n := countColor(img, plotArea, l.color); n < 30 {
				t.Errorf("chart %s: the %s line (%s) drew %d pixels, want at least 30", c.id, l.name, l.color, n)
			}
		}
		ticks := map[string]bool{}
		for _, m := range c.markers {
			ticks[m.color] = true
		}
		for color := range ticks {
			if n := countColor(img, plotArea, color); n < 20 {
				t.Errorf("chart %s: action ticks (%s) drew %d pixels", c.id, color, n)
			}
		}
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "colobench-report-shot.png")
		_ = os.Rename(shot, keep)
		t.Logf("screenshot kept at %s", keep)
	}
}

// countColor counts the pixels within 40 of hex in every channel.
func countColor(img image.Image, r image.Rectangle, hex string) int {
	var want [3]int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &want[0], &want[1], &want[2]); err != nil {
		return 0
	}
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			got := [3]int{int(cr >> 8), int(cg >> 8), int(cb >> 8)}
			ok := true
			for k := range got {
				if d := got[k] - want[k]; d > 40 || d < -40 {
					ok = false
				}
			}
			if ok {
				n++
			}
		}
	}
	return n
}

// TestCalibrationReadsInTheSimulator: the calibration.json the report
// writes is what the simulator reads (waterline sim --calibration), with
// the fit it would make, and it leaves out the memory scenario.
func TestCalibrationReadsInTheSimulator(t *testing.T) {
	dir := t.TempDir()
	res := testResults()
	if _, err := WriteDir(dir, res); err != nil {
		t.Fatal(err)
	}
	cal, err := sim.LoadCalibration(filepath.Join(dir, "calibration.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cal.Points {
		if !CPUScenarios[p.Scenario] {
			t.Fatalf("calibration point of scenario %q: only the CPU scenarios calibrate", p.Scenario)
		}
	}
	fit, err := cal.FitInterference()
	if err != nil {
		t.Fatal(err)
	}
	written := Calibrate(res, 0.25)
	if written.Interference == nil || *written.Interference != fit {
		t.Errorf("calibration.json's fit %+v, the simulator's %+v", written.Interference, fit)
	}
	// Kubernetes: 3× at 1.5 Batch and 0.7 Prod cores of 2: κ = 2 ÷ (0.75 × 0.35) ≈ 7.6;
	// Waterline and no-throttle lower: the fit lies between their κs.
	if k := fit.InterferencePercent / 100; k < 1 || k > 7.7 {
		t.Errorf("κ %v, want within the scenarios' own (1 to 7.6)", k)
	}

	// A smoke run is too short to fit, and the file says so.
	short := &Results{Machine: res.Machine, Runs: []Run{res.Runs[0], res.Runs[1]}}
	short.Runs[1].Prod.Windows = short.Runs[1].Prod.Windows[:3]
	if c := Calibrate(short, 0.25); c.Interference != nil || !strings.Contains(c.InterferenceError, "usable points") {
		t.Errorf("a 3-window calibration: fit %v, error %q", c.Interference, c.InterferenceError)
	}
}
