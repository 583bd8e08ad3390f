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
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

var (
	resultOnce sync.Once
	result     *sim.Result
	resultErr  error
)

// testResult is a real simulation, small enough to run in a test: 12
// nodes for 6 hours, every policy but the oracle.
func testResult(t *testing.T) *sim.Result {
	t.Helper()
	resultOnce.Do(func() {
		w, err := workload.Synthetic(workload.SyntheticParams{Seed: 5, Nodes: 12, Duration: 6 * time.Hour})
		if err != nil {
			resultErr = err
			return
		}
		// Every policy but the oracle, a reference the report shows like
		// any other non-baseline policy.
		result, resultErr = sim.Run(context.Background(), sim.Config{Seed: 5, Policies: []sim.Policy{
			sim.PolicyK8sDefault, sim.PolicyK8sBestEffort, sim.PolicyWaterline, sim.PolicyEvictAll,
		}}, w)
	})
	if resultErr != nil {
		t.Fatal(resultErr)
	}
	return result
}

func TestWriteTable(t *testing.T) {
	res := testResult(t)
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	// The workload line, a blank line, the header, one line per metric, a
	// blank line and a comparison per colocated policy.
	if want := 3 + len(rows) + 1 + 2; len(lines) != want {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), want, b.String())
	}
	header := strings.Fields(lines[2])
	if diff := cmp.Diff([]string{"METRIC", "K8S-DEFAULT", "K8S-BESTEFFORT", "WATERLINE", "EVICT-ALL"}, header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	// Each row's figures are the result's, formatted.
	waterlinePolicy := res.Policies[2].Summary
	for _, want := range []string{
		fmt.Sprintf("%.1f %%", waterlinePolicy.MeanCPUPercent),
		fmt.Sprintf("%d / %d", waterlinePolicy.Batch.Completed, waterlinePolicy.Batch.Submitted),
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table does not show %q:\n%s", want, b.String())
		}
	}
	// k8s-default predicts nothing and has no over-action to show.
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "prediction violations") && !strings.Contains(strings.Fields(l)[2], "-") {
			t.Errorf("k8s-default shows a prediction violation rate: %q", l)
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, testResult(t)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if lines[0] != "| metric | `k8s-default` | `k8s-besteffort` | `waterline` | `evict-all` |" || lines[1] != "|---|---:|---:|---:|---:|" {
		t.Errorf("header lines %q", lines[:2])
	}
	if len(lines) != 2+len(rows)+1+2 {
		t.Errorf("%d lines, want %d", len(lines), 2+len(rows)+1+2)
	}
}

func TestWriteDir(t *testing.T) {
	res := testResult(t)
	dir := filepath.Join(t.TempDir(), "report")
	index, err := WriteDir(dir, res, Options{Command: "waterline sim --nodes=12"})
	if err != nil {
		t.Fatal(err)
	}
	if index != filepath.Join(dir, IndexFile) {
		t.Errorf("index %s", index)
	}
	// result.json is the result, exactly.
	data, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var back sim.Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*res, back); diff != "" {
		t.Errorf("result.json does not round-trip (-want +got):\n%s", diff)
	}
	// Every chart is well-formed XML, alone and inside the page, and has
	// one polyline per series.
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range charts(res) {
		svg, err := os.ReadFile(filepath.Join(dir, ChartIDs[i]+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		if err := wellFormed(svg); err != nil {
			t.Errorf("%s.svg: %v", ChartIDs[i], err)
		}
		if got := strings.Count(string(svg), "<polyline"); got != len(c.lines) {
			t.Errorf("%s.svg has %d polylines, want %d", ChartIDs[i], got, len(c.lines))
		}
		// A reader tells the lines apart by the legend alone: each is
		// named there, drawn as on the plot, and no two look alike.
		drawn := map[string]string{}
		for _, l := range c.lines {
			width, dash := l.stroke()
			look := fmt.Sprintf("%s %.1f%s", l.color, width, dash)
			if other, ok := drawn[look]; ok {
				t.Errorf("%s.svg draws %q and %q alike (%s)", ChartIDs[i], other, l.name, look)
			}
			drawn[look] = l.name
			entry := fmt.Sprintf(`stroke="%s" stroke-width="3"%s/><text x="`, l.color, dash)
			if !strings.Contains(string(svg), entry) || !strings.Contains(string(svg), ">"+html.EscapeString(l.name)+"</text>") {
				t.Errorf("%s.svg: the %q line is not in the legend as it is drawn", ChartIDs[i], l.name)
			}
		}
		if !bytes.Contains(page, []byte(`id="chart-`+ChartIDs[i]+`"`)) {
			t.Errorf("the page has no chart %s", ChartIDs[i])
		}
	}
	for _, want := range []string{"waterline sim --nodes=12", "<table>", "prod SLO-violation time"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page does not contain %q", want)
		}
	}
	for _, banned := range []string{"<script", "http://", "https://"} {
		// The SVG namespace is the one URL a self-contained page needs.
		if strings.Count(string(page), banned) > strings.Count(string(page), `xmlns="http://www.w3.org/2000/svg"`)*boolInt(banned == "http://") {
			t.Errorf("the page is not self-contained: it contains %q", banned)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func wellFormed(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestPer: the evictions chart's title names the interval a point counts,
// from the series' hours.
func TestPer(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want string
	}{
		{nil, ""},
		{[]float64{0}, ""},
		{[]float64{0, 5.0 / 60}, " per 5 min"},
		{[]float64{0, 20.0 / 3600}, " per 20 s"},
		{[]float64{0, 1}, " per 1 h"},
		{[]float64{0, 7.5}, " per 7.5 h"},
	} {
		if got := per(tt.xs); got != tt.want {
			t.Errorf("per(%v) = %q, want %q", tt.xs, got, tt.want)
		}
	}
}

func TestNice(t *testing.T) {
	tests := []struct {
		v, ceil, step float64
	}{
		{0, 1, 1},
		{0.3, 0.5, 0.3},
		{7, 10, 12}, // 7 h between ticks reads better as 12
		{13, 20, 20},
		{2.9, 5, 3},
		{48, 50, 60},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.v), func(t *testing.T) {
			if got := niceCeil(tt.v); math.Abs(got-tt.ceil) > 1e-9 {
				t.Errorf("niceCeil(%g) = %g, want %g", tt.v, got, tt.ceil)
			}
			if got := niceStep(tt.v); math.Abs(got-tt.step) > 1e-9 {
				t.Errorf("niceStep(%g) = %g, want %g", tt.v, got, tt.step)
			}
		})
	}
}

// chromium finds Debian's chromium (make test installs it with
// hack/install-test-deps.sh where it can). It skips the test, loudly, when
// chromium is not there.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SKIPPING the Chromium screenshot test: chromium is not installed (hack/install-test-deps.sh installs it as root)")
	return ""
}

// TestReportRendersInChromium renders the HTML report in headless
// Chromium and checks, on the screenshot, that every chart drew: its area
// is not blank, and the lines of the policies appear in their colours.
func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	res := testResult(t)
	dir := t.TempDir()
	index, err := WriteDir(filepath.Join(dir, "report"), res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	height := ChartRect(len(ChartIDs)-1).Max.Y + 40
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars",
		"--force-device-scale-factor=1",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot,
		fmt.Sprintf("--window-size=%d,%d", PageWidth, height),
		"file://"+index)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < PageWidth || b.Dy() < height {
		t.Fatalf("screenshot is %v, want at least %dx%d", b, PageWidth, height)
	}

	// The method must tell blank from drawn: the page background right of
	// the charts is uniform.
	margin := image.Rect(PageWidth-pageMargin+4, ChartRect(0).Min.Y, PageWidth-4, ChartRect(len(ChartIDs)-1).Max.Y)
	if v := variance(img, margin); v > 1 {
		t.Fatalf("the page margin is not blank (variance %.1f): the layout moved, ChartRect is wrong", v)
	}
	for i, id := range ChartIDs {
		r := ChartRect(i)
		plot := image.Rect(r.Min.X+marginLeft+2, r.Min.Y+marginTop+2, r.Max.X-marginRight-2, r.Max.Y-marginBottom-2)
		if v := variance(img, r); v < 100 {
			t.Errorf("chart %s looks blank: luminance variance %.1f over %v", id, v, r)
		}
		// Inside the plot area, the line colours must show up.
		c := charts(res)[i]
		for _, l := range c.lines {
			if maxOf([]series{l}) == 0 {
				continue // a line of zeros sits on the axis
			}
			if n := countColor(img, plot, l.color); n < 20 {
				t.Errorf("chart %s: the %q line (%s) drew %d pixels, want at least 20", id, l.name, l.color, n)
			}
		}
	}
	if t.Failed() {
		t.Logf("screenshot kept at %s", shot)
	}
}

func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	return (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 257
}

func variance(img image.Image, r image.Rectangle) float64 {
	var sum, sq, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			l := luminance(img.At(x, y))
			sum += l
			sq += l * l
			n++
		}
	}
	if n == 0 {
		return 0
	}
	mean := sum / n
	return sq/n - mean*mean
}

// countColor counts the pixels within 40 of hex (#rrggbb) in every
// channel: anti-aliasing blends line edges, but a line's core keeps its
// colour.
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
