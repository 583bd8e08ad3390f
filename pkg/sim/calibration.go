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
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Calibration is what the real-node colocation benchmark measured of Prod
// latency beside Batch work (test/bench/colocation, make
// bench-colocation writes it as calibration.json): one point per second
// of a steady Prod load with Batch pods beside it. The simulator reads
// the fields below and ignores the rest of the file.
type Calibration struct {
	// NodeCPUs is the benchmark node's CPU count.
	NodeCPUs int `json:"nodeCPUs"`
	// Points are the measured windows.
	Points []CalibrationPoint `json:"points"`
}

// CalibrationPoint is one window: the CPU the Batch and Prod pods used
// (cores, from their cgroups) and Prod's p99 over its p99 alone.
type CalibrationPoint struct {
	Scenario   string  `json:"scenario"`
	BatchCores float64 `json:"batchCores"`
	ProdCores  float64 `json:"prodCores"`
	P99Ratio   float64 `json:"p99Ratio"`
}

// InterferenceFit is κ of the harm model fitted to a Calibration.
type InterferenceFit struct {
	// InterferencePercent is κ × 100, the least-squares fit through the
	// origin of (L − 1) = κ·b·ρ over the points used, clamped to the
	// harm model's range [0, 10000].
	InterferencePercent float64 `json:"interferencePercent"`
	// MedianPointPercent is the median of the per-window estimates
	// (L − 1) ÷ (b·ρ) × 100: far from InterferencePercent, the linear
	// model fits the measurement badly.
	MedianPointPercent float64 `json:"medianPointPercent"`
	// Points is how many windows the fit used; Skipped how many it left
	// out (no Batch or no Prod CPU: they say nothing of κ).
	Points  int `json:"points"`
	Skipped int `json:"skipped"`
	// RMSE is the root mean square error of the fitted L over the points.
	RMSE float64 `json:"rmse"`
}

// MinCalibrationPoints is the fewest usable windows a fit accepts: one
// smoke run of the benchmark has about 5, a full run over 100.
const MinCalibrationPoints = 10

// ReadCalibration parses a calibration file and checks every point.
func ReadCalibration(r io.Reader) (*Calibration, error) {
	var c Calibration
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding the calibration: %w", err)
	}
	if c.NodeCPUs < 1 {
		return nil, fmt.Errorf("calibration nodeCPUs %d: must be at least 1", c.NodeCPUs)
	}
	for i, p := range c.Points {
		for _, f := range []struct {
			name string
			v    float64
		}{{"batchCores", p.BatchCores}, {"prodCores", p.ProdCores}, {"p99Ratio", p.P99Ratio}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				return nil, fmt.Errorf("calibration points[%d].%s %v: must be a finite number at least 0", i, f.name, f.v)
			}
		}
	}
	return &c, nil
}

// LoadCalibration reads the calibration file at path.
func LoadCalibration(path string) (*Calibration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading calibration %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	c, err := ReadCalibration(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// FitInterference fits κ of the harm model's interference term
// L = 1 + κ·b·ρ (harm.go) to the points: b is the Batch CPU ÷ the node's
// CPUs, ρ the Prod CPU ÷ the node's CPUs (the benchmark's node has no
// other pods, so the CPU pods can use is the node's). The queueing term
// is left out: the benchmark's Batch pods sit at two CPU shares, which
// the model does not count as competing with Prod.
func (c *Calibration) FitInterference() (InterferenceFit, error) {
	var fit InterferenceFit
	var sxy, sxx float64
	var xs, ys, perPoint []float64
	n := float64(c.NodeCPUs)
	for _, p := range c.Points {
		x := p.BatchCores / n * p.ProdCores / n
		if x <= 0 || p.P99Ratio <= 0 {
			fit.Skipped++
			continue
		}
		y := p.P99Ratio - 1
		sxy += x * y
		sxx += x * x
		xs, ys = append(xs, x), append(ys, y)
		perPoint = append(perPoint, y/x*100)
	}
	fit.Points = len(xs)
	if fit.Points < MinCalibrationPoints {
		return fit, fmt.Errorf("calibration has %d usable points (Batch and Prod both using CPU), need at least %d: run the full benchmark (make bench-colocation)", fit.Points, MinCalibrationPoints)
	}
	kappa := min(max(sxy/sxx, 0), 100)
	fit.InterferencePercent = kappa * 100
	sort.Float64s(perPoint)
	if m := len(perPoint); m%2 == 1 {
		fit.MedianPointPercent = perPoint[m/2]
	} else {
		fit.MedianPointPercent = (perPoint[m/2-1] + perPoint[m/2]) / 2
	}
	var se float64
	for i := range xs {
		d := ys[i] - kappa*xs[i]
		se += d * d
	}
	fit.RMSE = math.Sqrt(se / float64(len(xs)))
	return fit, nil
}

// Calibrate sets the harm model's κ from a benchmark's calibration and
// returns the fit; on error h is unchanged.
func (h *Harm) Calibrate(c *Calibration) (InterferenceFit, error) {
	fit, err := c.FitInterference()
	if err != nil {
		return fit, err
	}
	h.InterferencePercent = fit.InterferencePercent
	return fit, nil
}

// String describes the fit for logs and reports.
func (f InterferenceFit) String() string {
	return fmt.Sprintf("κ %.0f %% (least squares over %d windows; median per window %.0f %%; RMSE of L %.2f)",
		f.InterferencePercent, f.Points, f.MedianPointPercent, f.RMSE)
}
