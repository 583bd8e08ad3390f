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

package benchutil

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const page = `# HELP scheduler_plugin_execution_duration_seconds x
# TYPE scheduler_plugin_execution_duration_seconds histogram
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="LoadAware",status="Success",le="1e-05"} 10
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="LoadAware",status="Success",le="2e-05"} 90
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="LoadAware",status="Success",le="+Inf"} 100
scheduler_plugin_execution_duration_seconds_sum{extension_point="Filter",plugin="LoadAware",status="Success"} 0.0015
scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="LoadAware",status="Success"} 100
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="LoadAware",status="Unschedulable",le="1e-05"} 0
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="LoadAware",status="Unschedulable",le="2e-05"} 100
scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",plugin="LoadAware",status="Unschedulable",le="+Inf"} 100
scheduler_plugin_execution_duration_seconds_sum{extension_point="Filter",plugin="LoadAware",status="Unschedulable"} 0.0015
scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="LoadAware",status="Unschedulable"} 100
scheduler_plugin_execution_duration_seconds_count{extension_point="Score",plugin="LoadAware",status="Success"} 7
scheduler_schedule_attempts_total{profile="waterline-scheduler",result="scheduled"} 40
scheduler_schedule_attempts_total{profile="waterline-scheduler",result="unschedulable"} 3
scheduler_pending_pods{queue="active"} 5
`

func TestParseMetrics(t *testing.T) {
	s := ParseMetrics(page)
	filter := HistogramOf(s, "scheduler_plugin_execution_duration_seconds", map[string]string{"plugin": "LoadAware", "extension_point": "Filter"})
	type got struct {
		Count, Mean, P50, P99, P100 float64
		Unschedulable, Pending      float64
	}
	// Both statuses are summed: 200 calls, 10 under 10 µs, 190 under 20 µs.
	// p50: rank 100 in the (10 µs, 20 µs] bucket holding 180 → 10 + 10 × 90/180 = 15 µs.
	// p99: rank 198 is past the 20 µs bucket (190), in +Inf: reported as the
	// highest finite bound, 20 µs.
	want := got{Count: 200, Mean: 15e-6, P50: 15e-6, P99: 20e-6, P100: 20e-6, Unschedulable: 3, Pending: 5}
	g := got{
		Count: filter.count, Mean: filter.Mean(), P50: filter.Quantile(0.5), P99: filter.Quantile(0.99), P100: filter.Quantile(1),
		Unschedulable: CounterOf(s, "scheduler_schedule_attempts_total", map[string]string{"result": "unschedulable"}),
		Pending:       CounterOf(s, "scheduler_pending_pods", nil),
	}
	if diff := cmp.Diff(want, g, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
		t.Errorf("parsed metrics (-want +got):\n%s", diff)
	}
	if m := HistogramOf(s, "scheduler_plugin_execution_duration_seconds", map[string]string{"plugin": "NodeResourcesFit"}).Mean(); !math.IsNaN(m) {
		t.Errorf("mean of a plugin absent from the page = %v, want NaN (absent, not 0)", m)
	}
}

func TestMedianPercentileSpread(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 100}
	lo, hi := Spread(xs)
	got := []float64{Median(xs), Percentile(xs, 50), Percentile(xs, 99), lo, hi}
	want := []float64{3.5, 3, 100, 1, 100}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("median, p50, p99, min, max (-want +got):\n%s", diff)
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("median of nothing = %v, want NaN", Median(nil))
	}
}
