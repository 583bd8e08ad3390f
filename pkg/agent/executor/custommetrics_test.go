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

package executor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waterline-dev/waterline/apis/v1alpha1"

	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "custom.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadCustomMetrics(t *testing.T) {
	cm, err := executor.LoadCustomMetrics(writeFile(t, `
metrics:
- name: page_cache_bytes
  controller: memory
  file: memory.stat
  key: total_cache
  type: gauge
  actionPriority: 2
  sortable: true
  evictable: true
  evictQuantified: true
`))
	if err != nil {
		t.Fatalf("LoadCustomMetrics: %v", err)
	}
	want := []collector.CustomMetric{{Name: "page_cache_bytes", Controller: "memory", File: "memory.stat", Key: "total_cache", Kind: collector.CustomGauge}}
	if diff := cmp.Diff(want, cm.Collector); diff != "" {
		t.Errorf("collector metrics (-want +got):\n%s", diff)
	}
	m, ok := cm.QoSMetrics.Get("page_cache_bytes")
	if !ok || !m.Sortable || !m.Evictable || !m.EvictQuantified || m.Throttleable || m.ActionPriority != 2 {
		t.Errorf("registered metric = %+v (found %v), want sortable, evictable, evict-quantified, priority 2", m, ok)
	}
	if _, ok := cm.QoSMetrics.Get(qos.MetricCPU); !ok {
		t.Errorf("the registry lost cpu_usage")
	}
}

func TestLoadCustomMetricsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown field", "metrics:\n- name: x\n  controller: memory\n  file: memory.stat\n  type: gauge\n  sortabel: true\n", []string{`unknown field "sortabel"`}},
		{"bad fields", `
metrics:
- name: Bad
  controller: ../etc
  file: a/b
  type: rate
  divisor: -1
  actionPriority: 12
  throttleable: true
  evictQuantified: true
`, []string{
			`customMetrics.metrics[0].name: Invalid value: "Bad"`,
			`customMetrics.metrics[0].controller: Invalid value: "../etc"`,
			`customMetrics.metrics[0].file: Invalid value: "a/b"`,
			`customMetrics.metrics[0].type: Unsupported value: "rate"`,
			`customMetrics.metrics[0].divisor: Invalid value: -1`,
			`customMetrics.metrics[0].actionPriority: Invalid value: 12`,
			`customMetrics.metrics[0].throttleable: Invalid value: true`,
			`customMetrics.metrics[0].evictQuantified: Invalid value: true`,
		}},
		{"built-in name", "metrics:\n- name: memory_usage\n  controller: memory\n  file: memory.stat\n  type: gauge\n", []string{`customMetrics.metrics[0].name: Invalid value: "memory_usage": is a built-in metric`}},
		{"duplicate", "metrics:\n- {name: a, controller: memory, file: memory.stat, type: gauge}\n- {name: a, controller: pids, file: pids.current, type: gauge}\n", []string{`customMetrics.metrics[1].name: Duplicate value: "a"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := executor.LoadCustomMetrics(writeFile(t, tc.body))
			if err == nil {
				t.Fatal("LoadCustomMetrics succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := executor.LoadCustomMetrics(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: error = %v, want one naming the file", err)
	}
}

// TestUnknownMetricRuleRefused: a NodeQOS rule on a metric the agent does
// not know (no --custom-metrics entry) is refused with a Warning event
// naming the metric, never ignored silently.
func TestUnknownMetricRuleRefused(t *testing.T) {
	nq := nodeQOS("custom", func(s *v1alpha1.NodeQOSSpec) {
		s.Rules = []v1alpha1.WaterlineRule{{Name: "r", Metric: "page_cache_bytes", Threshold: resource.MustParse("1Gi"), Action: v1alpha1.ActionEvict}}
	})
	w := newWorld(t, nq)
	w.cycle()
	var found bool
	for _, e := range w.events() {
		if strings.Contains(e, "InvalidNodeQOS") && strings.Contains(e, `Unsupported value: "page_cache_bytes"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no InvalidNodeQOS Warning naming page_cache_bytes")
	}
}
