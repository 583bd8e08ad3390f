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
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// measured makes n calibration windows of a 2-CPU node whose Prod p99
// follows L = 1 + κ·b·ρ, with multiplicative noise of ±noise.
func measured(kappa float64, n int, noise float64, seed uint64) *Calibration {
	r := rand.New(rand.NewPCG(seed, 1))
	c := &Calibration{NodeCPUs: 2}
	for i := range n {
		batch := 0.2 + 1.6*float64(i)/float64(n)
		prod := 0.4 + 0.6*r.Float64()
		l := 1 + kappa*(batch/2)*(prod/2)
		l *= 1 + noise*(2*r.Float64()-1)
		c.Points = append(c.Points, CalibrationPoint{Scenario: "kubernetes", BatchCores: batch, ProdCores: prod, P99Ratio: l})
	}
	return c
}

func TestFitInterference(t *testing.T) {
	for _, tc := range []struct {
		name         string
		kappa, noise float64
		tolerance    float64
	}{
		{"exact", 3, 0, 0.001},
		{"noisy", 5, 0.1, 0.6},
		{"no interference", 0, 0, 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fit, err := measured(tc.kappa, 60, tc.noise, 7).FitInterference()
			if err != nil {
				t.Fatal(err)
			}
			if got := fit.InterferencePercent / 100; math.Abs(got-tc.kappa) > tc.tolerance {
				t.Errorf("κ = %.3f, want %.3f ± %.3f (%v)", got, tc.kappa, tc.tolerance, fit)
			}
			if fit.Points != 60 || fit.Skipped != 0 {
				t.Errorf("used %d points, skipped %d; want 60 and 0", fit.Points, fit.Skipped)
			}
			if tc.noise == 0 && fit.RMSE > 1e-9 {
				t.Errorf("RMSE %v on exact points", fit.RMSE)
			}
		})
	}
}

// Windows without Batch or Prod CPU say nothing of κ, and a slowdown
// below alone (noise) pulls the fit down but never under 0.
func TestFitInterferenceSkipsAndClamps(t *testing.T) {
	c := measured(2, 20, 0, 3)
	c.Points = append(c.Points, CalibrationPoint{BatchCores: 0, ProdCores: 0.5, P99Ratio: 3}, CalibrationPoint{BatchCores: 1, ProdCores: 0, P99Ratio: 3})
	fit, err := c.FitInterference()
	if err != nil {
		t.Fatal(err)
	}
	if fit.Skipped != 2 || math.Abs(fit.InterferencePercent-200) > 0.1 {
		t.Errorf("fit %v skipped %d, want κ 200 %% with 2 skipped", fit, fit.Skipped)
	}
	faster := measured(0, 20, 0, 3)
	for i := range faster.Points {
		faster.Points[i].P99Ratio = 0.9
	}
	if fit, err := faster.FitInterference(); err != nil || fit.InterferencePercent != 0 {
		t.Errorf("Prod faster beside Batch: κ %v (%v), want 0", fit.InterferencePercent, err)
	}
}

func TestCalibrateSetsHarm(t *testing.T) {
	h := DefaultHarm()
	if _, err := h.Calibrate(measured(2.5, 30, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if math.Abs(h.InterferencePercent-250) > 0.1 {
		t.Errorf("InterferencePercent = %v, want 250", h.InterferencePercent)
	}
	// The calibrated model predicts what was measured: Batch at 1 core and
	// Prod at 0.8 of a 2-core node slow Prod's p99 by 1 + 2.5·0.5·0.4.
	if got := h.latencyFactor(800, 1000, 0, 2000, 2000); math.Abs(got-1.5) > 1e-9 {
		t.Errorf("latency factor %v, want 1.5", got)
	}
	if errs := h.validate(nil); len(errs) > 0 {
		t.Errorf("calibrated harm invalid: %v", errs)
	}

	// Too few windows (a smoke run) leave the model alone.
	before := h
	if _, err := h.Calibrate(measured(9, MinCalibrationPoints-1, 0, 1)); err == nil || !strings.Contains(err.Error(), "usable points") {
		t.Errorf("Calibrate with %d points: error %v, want one naming the usable points", MinCalibrationPoints-1, err)
	}
	if h != before {
		t.Errorf("a failed calibration changed the model: %+v -> %+v", before, h)
	}
}

func TestLoadCalibration(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"nodeCPUs": 2, "points": [{"scenario": "kubernetes", "batchCores": 1.2, "prodCores": 0.6, "p99Ratio": 1.4}],
		"bins": [{"Lo": 1, "Hi": 1.25, "windows": 1, "medianRatio": 1.4}]}`)
	c, err := LoadCalibration(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeCPUs != 2 || len(c.Points) != 1 || c.Points[0].P99Ratio != 1.4 || c.Points[0].BatchCores != 1.2 {
		t.Errorf("read %+v", c)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"not json", `{"nodeCPUs": 2,`, "decoding"},
		{"no cpus", `{"points": []}`, "nodeCPUs 0"},
		{"negative", `{"nodeCPUs": 2, "points": [{"batchCores": -1, "prodCores": 1, "p99Ratio": 1}]}`, "points[0].batchCores -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name+".json", tc.body)
			_, err := LoadCalibration(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v, want one naming %q and the file", err, tc.want)
			}
		})
	}
	if _, err := LoadCalibration(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file: no error")
	}
}
