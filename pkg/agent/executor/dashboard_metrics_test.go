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
	"testing"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// TestNodeUsageAndWaterlineMetrics: the dashboard draws the node's usage
// beside its waterlines, in the units the executor compares them in.
func TestNodeUsageAndWaterlineMetrics(t *testing.T) {
	w := newWorld(t, nodeQOS("lines", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: i32(40), ThrottlePercent: i32(50), EvictPercent: i32(90)}
		s.DryRun = true
	}))
	w.nodeCPU, w.nodeMem = 1.5, 2
	w.cycle()

	fams, err := w.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			key := fam.GetName()
			for _, lp := range m.GetLabel() {
				key += " " + lp.GetName() + "=" + lp.GetValue()
			}
			got[key] = m.GetGauge().GetValue()
		}
	}
	// A 4-CPU node: 40 %, 50 % and 90 % are 1600, 2000 and 3600 millicores.
	for key, want := range map[string]float64{
		"waterline_agent_qos_node_usage metric=cpu_usage":                        1500,
		"waterline_agent_qos_node_usage metric=memory_usage":                     2 << 30,
		"waterline_agent_qos_waterline action=ForbidScheduling metric=cpu_usage": 1600,
		"waterline_agent_qos_waterline action=ThrottleDown metric=cpu_usage":     2000,
		"waterline_agent_qos_waterline action=Evict metric=cpu_usage":            3600,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
}
