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

package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/trace"
)

func runPredictCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"predict"}, args...))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func decodeReport(t *testing.T, out string) map[string]predictResult {
	t.Helper()
	var r predictReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	byKey := map[string]predictResult{}
	for _, x := range r.Results {
		byKey[x.Resource+" "+x.Model] = x
	}
	return byKey
}

// writeMachineUsage writes a one-machine machine_usage.csv: 50 % CPU and
// 80 % memory every minute for 3 hours, with one CPU spike to 90 % at
// t = 7000 s.
func writeMachineUsage(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for ts := 0; ts < 3*3600; ts += 60 {
		cpu := 50
		if ts == 7020 {
			cpu = 90
		}
		fmt.Fprintf(&b, "m_1,%d,%d,80,,,1,1,1\n", ts, cpu)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, trace.MachineUsageFile), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPredictSyntheticTrace(t *testing.T) {
	dir := writeMachineUsage(t)
	out, err := runPredictCmd(t, "--path", dir, "-o", "json", "--warmup", "1h", "--step", "5m", "--horizon", "5m",
		"--models", "NSigmaV1,BorgDefault,PercentilePeak", "--n", "5", "--percentile", "99")
	if err != nil {
		t.Fatalf("predict: %v", err)
	}
	got := decodeReport(t, out)
	// Samples t = 0 … 10740 s. Scored: T = 3600 (warm-up) … 10200
	// (T + 300 ≤ 10741), every 300 s: 23 intervals.
	// The spike at 7020 is in [6900, 7200): the one window nobody saw
	// coming (the history was a flat 50 %); afterwards the histograms hold
	// it. Borg-default predicts 100 ÷ 1.1 = 90.9 %: never exceeded, saves
	// 1 − 1/1.1 = 9.09 % every time. Oracle: 22 windows at 50 % and one at
	// 90 %: (22 × 0.5 + 0.1) ÷ 23 = 0.48261.
	want := map[string]predictResult{
		"cpu oracle":                  {Resource: "cpu", Model: "oracle", Nodes: 1, Intervals: 23, Savings: 11.1 / 23},
		"cpu NSigmaV1(n=5)":           {Resource: "cpu", Model: "NSigmaV1(n=5)", Nodes: 1, Intervals: 23, Violations: 1, ViolationRate: 1.0 / 23},
		"cpu PercentilePeak(p=99)":    {Resource: "cpu", Model: "PercentilePeak(p=99)", Nodes: 1, Intervals: 23, Violations: 1, ViolationRate: 1.0 / 23},
		"cpu BorgDefault(a=1.1)":      {Resource: "cpu", Model: "BorgDefault(a=1.1)", Nodes: 1, Intervals: 23, Savings: 1 - 1/1.1},
		"memory oracle":               {Resource: "memory", Model: "oracle", Nodes: 1, Intervals: 23, Savings: 0.2},
		"memory NSigmaV1(n=5)":        {Resource: "memory", Model: "NSigmaV1(n=5)", Nodes: 1, Intervals: 23, Savings: 0.2},
		"memory PercentilePeak(p=99)": {Resource: "memory", Model: "PercentilePeak(p=99)", Nodes: 1, Intervals: 23, Savings: 0.2},
		// 80 % against 90.9 %: no violation, saves 9.09 %.
		"memory BorgDefault(a=1.1)": {Resource: "memory", Model: "BorgDefault(a=1.1)", Nodes: 1, Intervals: 23, Savings: 1 - 1/1.1},
	}
	// Savings of models that learnt the spike are not hand-checkable;
	// they are compared only where the history is flat.
	ignoreSavings := cmpopts.IgnoreFields(predictResult{}, "Savings")
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("no result for %s in %v", key, got)
			continue
		}
		opts := []cmp.Option{cmpopts.EquateApprox(1e-9, 1e-9)}
		if strings.HasPrefix(key, "cpu ") && !strings.Contains(key, "oracle") && !strings.Contains(key, "Borg") {
			opts = append(opts, ignoreSavings)
		}
		if diff := cmp.Diff(w, g, opts...); diff != "" {
			t.Errorf("%s (-want +got):\n%s", key, diff)
		}
	}
	if n := len(got); n != len(want) {
		t.Errorf("got %d results, want %d", n, len(want))
	}

	t.Run("table", func(t *testing.T) {
		out, err := runPredictCmd(t, "--path", filepath.Join(dir, trace.MachineUsageFile), "--warmup", "1h", "--horizon", "5m",
			"--models", "BorgDefault", "--resources", "memory")
		if err != nil {
			t.Fatalf("predict: %v", err)
		}
		for _, want := range []string{"RESOURCE", "VIOLATION RATE", "memory", "BorgDefault(a=1.1)", "0.000%", "9.1%", "oracle", "20.0%"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "cpu") {
			t.Errorf("table has cpu rows though --resources memory:\n%s", out)
		}
	})
}

func TestPredictRejectsBadFlags(t *testing.T) {
	_, err := runPredictCmd(t, "--trace", "google", "--models", "NSigmaV1,Prophet", "--n", "-1", "--percentile", "0",
		"--step", "1500ms", "--horizon", "0s", "--warmup", "-1h", "--safety-margin", "-5", "--bucket-ratio", "1",
		"--resources", "disk", "--max-of", "Max", "--vms-per-node", "0", "-o", "yaml", "--peak-window", "-1s")
	if err == nil {
		t.Fatal("predict accepted bad flags")
	}
	for _, f := range []string{"--trace", "--models[1]", "--n[0]", "--percentile[0]", "--step", "--horizon", "--warmup",
		"--safety-margin", "--bucket-ratio", "--resources[0]", "--max-of[0]", "--vms-per-node", "--output", "--peak-window"} {
		if !strings.Contains(err.Error(), f+":") {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

func TestPredictMissingTrace(t *testing.T) {
	_, err := runPredictCmd(t, "--path", filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("error = %v, want one naming the missing path", err)
	}
}

// TestPredictSharedTraces runs the defaults on the shared samples and
// checks what the issue asks of them.
func TestPredictSharedTraces(t *testing.T) {
	for _, tc := range []struct {
		trace, folder string
		nodes         int
	}{
		{traceAlibabaV2018, trace.AlibabaV2018Folder, 16},
		{traceBitbrains, trace.BitbrainsFolder, 5},
	} {
		t.Run(tc.trace, func(t *testing.T) {
			if _, err := trace.FindShared(".", tc.folder); err != nil {
				t.Skipf("SKIP: shared trace %s not available (%v)", tc.folder, err)
			}
			out, err := runPredictCmd(t, "--trace", tc.trace, "-o", "json")
			if err != nil {
				t.Fatalf("predict: %v", err)
			}
			got := decodeReport(t, out)
			n := strconv.Itoa(int(v1alpha1.DefaultPredictNSigma))
			for _, res := range []string{"cpu", "memory"} {
				oracle := got[res+" oracle"]
				if oracle.Nodes != tc.nodes || oracle.Intervals == 0 {
					t.Errorf("%s oracle: %+v, want %d nodes and some intervals", res, oracle, tc.nodes)
				}
				for _, n := range []string{"3", n} {
					v1, v2 := got[res+" NSigmaV1(n="+n+")"], got[res+" NSigmaV2(n="+n+")"]
					// v2 = max(v1, pod sum): never more violations, never more savings.
					if v2.Violations > v1.Violations || v2.Savings > v1.Savings+1e-12 {
						t.Errorf("%s n=%s: NSigmaV2 %+v is less conservative than NSigmaV1 %+v", res, n, v2, v1)
					}
				}
			}
			if tc.trace != traceAlibabaV2018 {
				return
			}
			// The agent's default policy (N-sigma with its default N,
			// half-life and safety margin) keeps the violation rate of
			// the next hour's peak on the Alibaba sample under 1 %.
			out, err = runPredictCmd(t, "--trace", tc.trace, "-o", "json", "--models", "NSigmaV2", "--n", n,
				"--safety-margin", strconv.Itoa(int(v1alpha1.DefaultSafetyMarginPercent)))
			if err != nil {
				t.Fatalf("predict: %v", err)
			}
			got = decodeReport(t, out)
			for _, res := range []string{"cpu", "memory"} {
				if r := got[res+" NSigmaV2(n="+n+")"]; r.Intervals == 0 || r.ViolationRate >= 0.01 {
					t.Errorf("%s NSigmaV2(n=%s) with a %d%% margin: %+v, want a violation rate under 1%%", res, n, v1alpha1.DefaultSafetyMarginPercent, r)
				}
			}
		})
	}
}

// TestPredictEmptyTrace: an empty trace (no file content, or only a header
// row of nothing) must fail naming the file, not print a table of blank
// model names and exit 0.
func TestPredictEmptyTrace(t *testing.T) {
	for name, args := range map[string]func(dir string) []string{
		"alibaba-v2018 empty file": func(dir string) []string {
			p := filepath.Join(dir, "machine_usage.csv")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"--path", p}
		},
		"alibaba-v2018 folder with an empty file": func(dir string) []string {
			if err := os.WriteFile(filepath.Join(dir, "machine_usage.csv"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"--path", dir}
		},
		"bitbrains empty folder": func(dir string) []string {
			return []string{"--trace", "bitbrains", "--path", dir}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out, err := runPredictCmd(t, args(dir)...)
			if err == nil {
				t.Fatalf("predict on an empty trace succeeded; output:\n%s", out)
			}
			if !strings.Contains(err.Error(), dir) || strings.HasPrefix(name, "alibaba") && !strings.Contains(err.Error(), "machine_usage.csv") {
				t.Errorf("error %q does not name the trace %s", err, dir)
			}
		})
	}
}

// TestPredictNothingScored: flags that leave no interval or bucket of the
// trace to score (a warm-up or horizon longer than the trace, buckets
// wider than it) must fail saying so, not print 0 % violations and exit 0.
func TestPredictNothingScored(t *testing.T) {
	dir := writeMachineUsage(t) // 3 hours
	for name, args := range map[string][]string{
		"warm-up longer than the trace":    {"--warmup", "10h"},
		"horizon longer than the trace":    {"--warmup", "0s", "--horizon", "4h"},
		"step longer than the trace":       {"--warmup", "0s", "--step", "4h"},
		"next-bucket, buckets too wide":    {"--eval", "next-bucket", "--bucket", "2h"},
		"next-bucket, window too long":     {"--eval", "next-bucket", "--window", "100"},
		"memory only, warm-up too long":    {"--warmup", "10h", "--resources", "memory"},
		"next-bucket, contiguous too long": {"--eval", "next-bucket", "--contiguous", "1000"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runPredictCmd(t, append([]string{"--path", dir, "--curve="}, args...)...)
			if err == nil {
				t.Fatalf("predict scored nothing and succeeded; output:\n%s", out)
			}
			if !strings.Contains(err.Error(), "was scored") || !strings.Contains(err.Error(), "2h59m0s") {
				t.Errorf("error %q does not say nothing was scored over the trace's 2h59m0s", err)
			}
		})
	}
}

// TestPredictTraceSpanBounded: a machine whose samples span years -- one
// time stamp out of place -- is refused naming it, instead of evaluating
// every --step of the span (hours to days of work).
func TestPredictTraceSpanBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, trace.MachineUsageFile), []byte("m_1,0,50,50,,,1,1,1\nm_1,100000000000000,50,50,,,1,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := runPredictCmd(t, "--path", dir, "--models", "NSigmaV2", "--resources", "cpu")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "machine m_1: samples from 0 s to 100000000000000 s span more than") {
			t.Errorf("error %v, want one naming machine m_1 and its span", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("predict still running after 20 s on a two-row trace")
	}
}

// TestPredictNodesOfOneResource: --nodes naming a machine that has CPU
// samples but no memory ones evaluates its CPU, rather than failing as if
// the machine were not in the trace.
func TestPredictNodesOfOneResource(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for ts := 0; ts < 4*3600; ts += 60 {
		fmt.Fprintf(&b, "m_1,%d,50,,,,1,1,1\n", ts) // no memory
	}
	for ts := 0; ts < 4*3600; ts += 60 {
		fmt.Fprintf(&b, "m_2,%d,50,80,,,1,1,1\n", ts)
	}
	if err := os.WriteFile(filepath.Join(dir, trace.MachineUsageFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runPredictCmd(t, "--path", dir, "--resources", "cpu", "--nodes", "m_1", "--warmup", "1h", "--models", "NSigmaV2", "-o", "json")
	if err != nil {
		t.Fatalf("predict: %v", err)
	}
	if got := decodeReport(t, out)["cpu oracle"]; got.Nodes != 1 || got.Intervals == 0 {
		t.Errorf("cpu oracle %+v, want m_1's CPU scored", got)
	}
	// Asked for, its memory is missing, and that is said.
	if _, err := runPredictCmd(t, "--path", dir, "--resources", "memory", "--nodes", "m_1"); err == nil || !strings.Contains(err.Error(), "memory: --nodes: no node m_1") {
		t.Errorf("memory of m_1: error %v, want one saying it has none", err)
	}
}

// writeSpikyMachine writes a one-machine machine_usage.csv in dir: 50 %
// CPU every minute for 4 hours, with one spike to 90 % at t = 9000 s (in
// the 5-minute bucket 30).
func writeSpikyMachine(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	for ts := 0; ts < 4*3600; ts += 60 {
		cpu := 50
		if ts == 9000 {
			cpu = 90
		}
		fmt.Fprintf(&b, "m_1,%d,%d,80,,,1,1,1\n", ts, cpu)
	}
	if err := os.WriteFile(filepath.Join(dir, trace.MachineUsageFile), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPredictNextBucket(t *testing.T) {
	dir := t.TempDir()
	writeSpikyMachine(t, dir)
	out, err := runPredictCmd(t, "--eval", "next-bucket", "--path", dir, "-o", "json", "--curve", "80")
	if err != nil {
		t.Fatalf("predict: %v", err)
	}
	var r bucketReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	// 48 buckets of 5 minutes; with 24 before each, buckets 24–47 are
	// predicted. Bucket 30's spike follows a flat 50 %: the baseline
	// (mean 50, sd 0) and the agent's default (mean 50, sd 0, + 10 %
	// margin = 55) both miss it, and nothing after it (the spike is in
	// both histories, the usage is back at 50).
	if len(r.Results) < 3 {
		t.Fatalf("results %+v: want the baseline, the default model and its matched row", r.Results)
	}
	n := strconv.Itoa(int(v1alpha1.DefaultPredictNSigma))
	base, own, matched := r.Results[0], r.Results[1], r.Results[2]
	if base.Model != "window(w=24,n=5)" || base.At != "own" || base.Predictions != 24 || base.Violations != 1 {
		t.Errorf("baseline row %+v, want window(w=24,n=5) with 1 violation in 24 predictions", base)
	}
	if own.Model != string(v1alpha1.DefaultPredictModel)+"(n="+n+")" || own.Predictions != 24 || own.Violations != 1 {
		t.Errorf("default model row %+v, want %s(n=%s) with 1 violation in 24 predictions", own, v1alpha1.DefaultPredictModel, n)
	}
	if matched.At != "matched" || matched.Knob != knobN || matched.Unreached || matched.MeanPeak < base.MeanPeak || matched.MeanPeak > base.MeanPeak+1e-3 {
		t.Errorf("matched row %+v, want N set so that the mean peak is the baseline's %.4f", matched, base.MeanPeak)
	}
	if len(r.Curve) != 2 || r.Curve[0].TargetMeanPeak != 0.8 || r.Curve[0].MeanPeak < 0.8 || r.Curve[1].MeanPeak < 0.8 {
		t.Errorf("curve %+v, want the baseline and the model at an 80 %% mean peak", r.Curve)
	}
	if r.Config.SafetyMarginPercent != float64(v1alpha1.DefaultSafetyMarginPercent) || r.Config.HalfLife != (time.Duration(v1alpha1.DefaultHalfLifeSeconds)*time.Second).String() {
		t.Errorf("config %+v: want the predict policy's defaults", r.Config)
	}

	t.Run("the trace path is printed as given", func(t *testing.T) {
		t.Chdir(dir)
		out, err := runPredictCmd(t, "--eval", "next-bucket", "--path", trace.MachineUsageFile, "--curve=")
		if err != nil {
			t.Fatalf("predict: %v", err)
		}
		if first := strings.SplitN(out, "\n", 2)[0]; first != "trace alibaba-v2018 (machine_usage.csv)" {
			t.Errorf("first line %q, want the path as given", first)
		}
	})
	t.Run("--peak-window", func(t *testing.T) {
		out, err := runPredictCmd(t, "--eval", "next-bucket", "--path", dir, "--curve=", "--peak-window", "5m")
		if err != nil {
			t.Fatalf("predict: %v", err)
		}
		if !strings.Contains(out, "bucket ratio 1.05, histograms fed 5m0s maxima\n") {
			t.Errorf("output %q does not say the histograms were fed 5-minute maxima", out)
		}
		out, err = runPredictCmd(t, "--eval", "next-bucket", "--path", dir, "--curve=", "-o", "json", "--peak-window", "5m")
		if err != nil {
			t.Fatalf("predict: %v", err)
		}
		var r bucketReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("decoding %q: %v", out, err)
		}
		if r.Config.PeakWindow != "5m0s" {
			t.Errorf("config %+v, want peakWindow 5m0s", r.Config)
		}
	})
	t.Run("--nodes names a missing node", func(t *testing.T) {
		_, err := runPredictCmd(t, "--eval", "next-bucket", "--path", dir, "--nodes", "m_1,m_9")
		if err == nil || !strings.Contains(err.Error(), "m_9") || strings.Contains(err.Error(), "m_1,") {
			t.Errorf("error = %v, want one naming m_9 only", err)
		}
	})
	t.Run("bad flags", func(t *testing.T) {
		_, err := runPredictCmd(t, "--eval", "next-bucket", "--path", dir, "--bucket", "90500ms", "--window", "0",
			"--baseline-n", "-1", "--contiguous", "-3", "--curve", "0,x", "--peak-window", "1500ms")
		for _, f := range []string{"--bucket", "--window", "--baseline-n", "--contiguous", "--curve[0]", "--curve[1]", "--peak-window"} {
			if err == nil || !strings.Contains(err.Error(), f+":") {
				t.Errorf("error does not name %s: %v", f, err)
			}
		}
	})
}

// TestPredictNextBucketSharedSample reproduces the sliding-window baseline
// on the Alibaba sample and compares the agent's default predictor with
// it at the same mean peak.
func TestPredictNextBucketSharedSample(t *testing.T) {
	if _, err := trace.FindShared(".", trace.AlibabaV2018Folder); err != nil {
		t.Skipf("SKIP: shared trace %s not available (%v)", trace.AlibabaV2018Folder, err)
	}
	run := func(args ...string) bucketReport {
		t.Helper()
		out, err := runPredictCmd(t, append([]string{"--eval", "next-bucket", "-o", "json", "--curve="}, args...)...)
		if err != nil {
			t.Fatalf("predict: %v", err)
		}
		var r bucketReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("decoding %q: %v", out, err)
		}
		if !strings.HasPrefix(r.Path, "..") || filepath.IsAbs(r.Path) {
			t.Errorf("path %q, want the shared sample relative to the working directory", r.Path)
		}
		return r
	}
	// The baseline's figures as the issue states them (12,011 predictions,
	// 16 violations, 72.7 % mean peak) come from requiring one bucket more
	// than its window before each prediction (--contiguous 25); with the
	// stated rule (the 24 buckets of the window) there are 12,436.
	for _, tc := range []struct {
		contiguous  string
		predictions int
	}{{"25", 12011}, {"24", 12436}} {
		base := run("--contiguous", tc.contiguous).Results[0]
		if base.Predictions != tc.predictions || base.Violations != 16 || base.MeanPeak < 0.726 || base.MeanPeak >= 0.7275 {
			t.Errorf("--contiguous %s: baseline %+v, want %d predictions, 16 violations, mean peak 72.7 %%", tc.contiguous, base, tc.predictions)
		}
	}
	// The default predictor at the baseline's mean peak: its violations
	// are within the baseline's counting noise (√16 = 4), where the old
	// 12 h half-life had 4.6 times as many (73).
	r := run()
	base, matched := r.Results[0], r.Results[2]
	if matched.At != "matched" || matched.Predictions != base.Predictions || matched.MeanPeak < base.MeanPeak-1e-4 {
		t.Fatalf("matched row %+v, want the baseline's %d predictions at its mean peak %.4f", matched, base.Predictions, base.MeanPeak)
	}
	if matched.Violations > base.Violations+4 {
		t.Errorf("default predictor at the baseline's mean peak %.2f %%: %d violations, baseline %d: want at most 4 more",
			100*base.MeanPeak, matched.Violations, base.Violations)
	}
	// Histograms fed 5-minute maxima with the half-life chosen on the
	// even machines (docs/design/prediction.md#histograms-fed-5-minute-peaks):
	// better than the baseline over all 16 machines and on the even ones,
	// worse on the odd (held-out) ones, which is why it is not the default.
	for _, tc := range []struct {
		half            string
		nodes           string
		model, baseline int
	}{
		{"all", "", 15, 16},
		{"A", "m_1932,m_1934,m_1936,m_1938,m_1940,m_1942,m_1944,m_1946", 5, 8},
		{"B", "m_1933,m_1935,m_1937,m_1939,m_1941,m_1943,m_1945,m_1947", 10, 8},
	} {
		args := []string{"--models", "NSigmaV2", "--peak-window", "5m", "--half-life", "30m"}
		if tc.nodes != "" {
			args = append(args, "--nodes", tc.nodes)
		}
		r := run(args...)
		base, matched := r.Results[0], r.Results[2]
		if matched.At != "matched" || matched.Violations != tc.model || base.Violations != tc.baseline {
			t.Errorf("%s, 5-minute maxima: model %+v, baseline %+v: want %d and %d violations as documented",
				tc.half, matched, base, tc.model, tc.baseline)
		}
	}
}
