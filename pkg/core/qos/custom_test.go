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

package qos

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func customRegistry(t *testing.T, a CustomMetricAttributes) *Registry {
	t.Helper()
	reg := DefaultRegistry()
	m, err := CustomMetric(a)
	if err != nil {
		t.Fatalf("CustomMetric: %v", err)
	}
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	return reg
}

var one int32 = 1

func customRule(metric, action, threshold string) *v1alpha1.NodeQOS {
	return nodeQOS("custom", func(s *v1alpha1.NodeQOSSpec) {
		s.Rules = []v1alpha1.WaterlineRule{{Name: "r", Metric: v1alpha1.QOSMetric(metric),
			Threshold: resource.MustParse(threshold), Action: v1alpha1.QOSAction(action), AvoidanceCount: &one}}
	})
}

// TestCustomMetricPlan: a rule on a registered custom metric becomes a line
// in the metric's unit, pods are ordered by their usage of it, and only as
// many are evicted as the gap needs.
func TestCustomMetricPlan(t *testing.T) {
	reg := customRegistry(t, CustomMetricAttributes{Name: "io_wait", ActionPriority: 3, Sortable: true, Evictable: true, EvictQuantified: true})
	waterlines, errs := BuildWaterlinesWithRegistry([]*v1alpha1.NodeQOS{customRule("io_wait", "Evict", "1k")}, node10, reg)
	if len(errs) > 0 {
		t.Fatalf("BuildWaterlinesWithRegistry: %v", errs)
	}
	if diff := cmp.Diff([]lineKey{{ActionEvict, "io_wait", 1000, 1, 3}}, keys(waterlines)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	p, err := NewPlanner(reg, waterlines)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, v int64) Candidate {
		c := cand(makePod(name).band(extension.BandBatch), usage{cpu: 100})
		c.Metrics = map[MetricName]int64{"io_wait": v}
		return c
	}
	// 1600 against a 1000 line: a gap of 600, closed by big (500) and mid
	// (300); small (100) and the rest stay.
	cands := []Candidate{mk("a-small", 100), mk("d-big", 500), mk("c-mid", 300), mk("b-tiny", 50)}
	node := NodeState{Usage: NodeUsage{MetricCPU: 400, "io_wait": 1600}}
	plan := p.Plan(node, cands, Hysteresis{})
	if diff := cmp.Diff([]string{"d-big", "c-mid"}, evicted(plan)); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
}

func TestCustomMetricRuleErrors(t *testing.T) {
	reg := customRegistry(t, CustomMetricAttributes{Name: "gauge_only", Sortable: true})
	for _, tc := range []struct {
		name string
		nq   *v1alpha1.NodeQOS
		reg  *Registry
		want string
	}{
		{"unknown metric", customRule("nope", "Evict", "10"), reg, `spec.rules[0].metric: Unsupported value: "nope"`},
		{"registry not given", customRule("gauge_only", "ForbidScheduling", "10"), nil, `spec.rules[0].metric: Unsupported value: "gauge_only"`},
		{"not evictable", customRule("gauge_only", "Evict", "10"), reg, `spec.rules[0].action: Invalid value: "Evict": metric gauge_only is not evictable`},
		{"not throttleable", customRule("gauge_only", "Throttle", "10"), reg, `spec.rules[0].action: Invalid value: "Throttle": metric gauge_only is not throttleable`},
		{"threshold too high", customRule("gauge_only", "ForbidScheduling", "2E"), reg, `spec.rules[0].threshold: Invalid value: "2E": must not be above 1E`},
		{"threshold zero", customRule("gauge_only", "ForbidScheduling", "0"), reg, `spec.rules[0].threshold: Invalid value: "0": must be greater than 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waterlines, errs := BuildWaterlinesWithRegistry([]*v1alpha1.NodeQOS{tc.nq}, node10, tc.reg)
			if len(waterlines.Lines) != 0 {
				t.Errorf("lines = %v, want none", waterlines.Lines)
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Errorf("errors = %v, want one containing %q", errs, tc.want)
			}
		})
	}
	// A registered sortable-only metric may carry a ForbidScheduling line.
	waterlines, errs := BuildWaterlinesWithRegistry([]*v1alpha1.NodeQOS{customRule("gauge_only", "ForbidScheduling", "1.5")}, node10, reg)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]lineKey{{ActionForbidScheduling, "gauge_only", 2, 1, 3}}, keys(waterlines)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestCustomMetricAttributes(t *testing.T) {
	for _, tc := range []struct {
		a    CustomMetricAttributes
		want string
	}{
		{CustomMetricAttributes{Name: "cpu_usage"}, `name: Invalid value: "cpu_usage": is a built-in metric`},
		{CustomMetricAttributes{Name: "Bad-Name"}, `name: Invalid value: "Bad-Name": must be 1-63`},
		{CustomMetricAttributes{Name: "x", EvictQuantified: true}, `only an evictable metric can be evict-quantified`},
		{CustomMetricAttributes{Name: "x", ActionPriority: 11}, `actionPriority: Invalid value: 11`},
	} {
		_, err := CustomMetric(tc.a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CustomMetric(%+v) = %v, want an error containing %q", tc.a, err, tc.want)
		}
	}
}
