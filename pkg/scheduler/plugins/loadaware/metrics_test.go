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

package loadaware

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// refusalSeries reads every waterline_loadaware_filter_refusals_total series
// from the scheduler's registry, keyed "reason/resource".
func refusalSeries(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, reason := range []string{refusalUsage, refusalProdUsage, refusalAggregatedUsage, refusalForbid, refusalMetricExpired} {
		got, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "waterline_loadaware_filter_refusals_total",
			map[string]string{"reason": reason}, "resource")
		if err != nil {
			t.Fatalf("reading the refusals metric: %v", err)
		}
		for res, v := range got {
			out[reason+"/"+res] = v
		}
	}
	return out
}

// TestFilterCountsRefusals: each refusal Filter returns adds one to the
// series of its reason (and, for usage, of each resource over its
// threshold); a fit adds nothing.
func TestFilterCountsRefusals(t *testing.T) {
	tests := []struct {
		name   string
		metric *v1alpha1.NodeMetric
		pod    *corev1.Pod
		want   map[string]float64 // increments, "reason/resource"
	}{{
		name:   "a fit counts nothing",
		metric: metric("n", t0).usage("8", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		want:   map[string]float64{},
	}, {
		name:   "cpu usage",
		metric: metric("n", t0).usage("13", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		want:   map[string]float64{"usage/cpu": 1},
	}, {
		name:   "cpu and memory usage count once each",
		metric: metric("n", t0).usage("15", "63Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		want:   map[string]float64{"usage/cpu": 1, "usage/memory": 1},
	}, {
		name:   "expired NodeMetric",
		metric: metric("n", t0.Add(-3*time.Minute)).usage("1", "1Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		want:   map[string]float64{"metric_expired/": 1},
	}, {
		name:   "forbid scheduling",
		metric: metric("n", t0).usage("1", "1Gi").forbid().obj(),
		pod:    batchPod("p").Obj(),
		want:   map[string]float64{"forbid_scheduling/": 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, tt.metric)
			before := refusalSeries(t)
			e.filter(tt.pod, "n")
			after := refusalSeries(t)
			got := map[string]float64{}
			for k, v := range after {
				if d := v - before[k]; d != 0 {
					got[k] = d
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("refusal counters moved (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCountingARefusalAllocatesNothing: the series are resolved up front.
func TestCountingARefusalAllocatesNothing(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0).usage("1", "1Gi").obj())
	v := nodeload.Verdict{Reason: nodeload.ReasonUsage, Over: 0b11} // cpu and memory
	if n := testing.AllocsPerRun(100, func() { e.pl.refusals.count(v) }); n != 0 {
		t.Errorf("counting a refusal allocated %.1f times, want 0", n)
	}
}

// TestCountLabelsEveryReason: each verdict reason lands on its own series.
func TestCountLabelsEveryReason(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil)
	tests := []struct {
		v    nodeload.Verdict
		want map[string]float64
	}{
		{nodeload.Verdict{Reason: nodeload.ReasonProdUsage, Over: 0b10}, map[string]float64{"prod_usage/memory": 1}},
		{nodeload.Verdict{Reason: nodeload.ReasonAggregatedUsage, Over: 0b01}, map[string]float64{"aggregated_usage/cpu": 1}},
		{nodeload.Verdict{Reason: nodeload.ReasonUsage, Over: 0b11}, map[string]float64{"usage/cpu": 1, "usage/memory": 1}},
		{nodeload.Verdict{Reason: nodeload.Fit}, map[string]float64{}},
	}
	for _, tt := range tests {
		before := refusalSeries(t)
		e.pl.refusals.count(tt.v)
		got := map[string]float64{}
		for k, v := range refusalSeries(t) {
			if d := v - before[k]; d != 0 {
				got[k] = d
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("count(%+v) moved (-want +got):\n%s", tt.v, diff)
		}
	}
}
