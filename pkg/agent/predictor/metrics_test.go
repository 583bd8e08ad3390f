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

package predictor

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPredictionErrorMetrics: the usage gauge shows the Prod + system usage
// of the latest window, and the error gauge compares the highest usage of
// the windows fed since a prediction with that prediction's peak -- so a
// jump the peak did not foresee reads as a positive error, a steady load as
// the (negative) headroom the peak keeps.
//
// The node has no Prod pods; the system uses 2 cores and 1Gi in the first
// two 30 s windows, then 4 cores and 3Gi.
func TestPredictionErrorMetrics(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	e.load = func(now time.Time) load {
		if window(now) <= 2 {
			return load{nodeCPU: 2, nodeMemory: 1 * gi}
		}
		return load{nodeCPU: 4, nodeMemory: 3 * gi}
	}
	m := e.p.metrics
	read := func() [4]float64 {
		return [4]float64{testutil.ToFloat64(m.usage[cpuIndex]), testutil.ToFloat64(m.usage[memoryIndex]),
			testutil.ToFloat64(m.predictionError[cpuIndex]), testutil.ToFloat64(m.predictionError[memoryIndex])}
	}
	nan := math.NaN()
	opts := []cmp.Option{cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-9)}

	if diff := cmp.Diff([4]float64{nan, nan, nan, nan}, read(), opts...); diff != "" {
		t.Errorf("before any window (-want +got):\n%s", diff)
	}

	// Window 1 is fed at t0+30s: its usage shows; the prediction then in
	// force was made without history (a peak of 0), so no error yet.
	e.run(30 * time.Second)
	if diff := cmp.Diff([4]float64{2, gi, nan, nan}, read(), opts...); diff != "" {
		t.Errorf("after window 1 (-want +got):\n%s", diff)
	}

	// Window 2 (same load) against the peak predicted from window 1.
	peak := latest(t, e.p).ProdPeak
	if peak.MilliCPU <= 0 || peak.Memory <= 0 {
		t.Fatalf("no peak predicted after window 1: %+v", peak)
	}
	e.run(30 * time.Second)
	cpuPeak, memPeak := float64(peak.MilliCPU)/1000, float64(peak.Memory)
	want := [4]float64{2, gi, (2 - cpuPeak) / cpuPeak, (gi - memPeak) / memPeak}
	if diff := cmp.Diff(want, read(), opts...); diff != "" {
		t.Errorf("after window 2 (-want +got):\n%s", diff)
	}
	if want[2] > 0 || want[3] > 0 {
		t.Errorf("a steady load went over the peak predicted from it (%+v): the error should show headroom", peak)
	}

	// Window 3 jumps: the error is measured against the peak made before.
	peak = latest(t, e.p).ProdPeak
	e.run(30 * time.Second)
	cpuPeak, memPeak = float64(peak.MilliCPU)/1000, float64(peak.Memory)
	want = [4]float64{4, 3 * gi, (4 - cpuPeak) / cpuPeak, (3*gi - memPeak) / memPeak}
	if diff := cmp.Diff(want, read(), opts...); diff != "" {
		t.Errorf("after window 3 (-want +got):\n%s", diff)
	}
	if want[2] <= 0 || want[3] <= 0 {
		t.Errorf("the jump to 4 cores and 3Gi stayed under the peak %+v: the test no longer tests a miss", peak)
	}
}
