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

package collector

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// TestCollectCustomMetrics: a counter custom metric is a rate (divided by
// its divisor), a gauge read from a key is the value, and the node's value
// is the sum over the pods -- absent while a pod has no rate yet.
func TestCollectCustomMetrics(t *testing.T) {
	n := newNode(t, fixtures[0]) // v1-cgroupfs
	c, err := New(Config{ProcRoot: filepath.Join(n.dir, "proc"), ContainerInterval: ptr.To(time.Duration(0)), CustomMetrics: []CustomMetric{
		{Name: "cpu_millicores", Controller: cgroups.ControllerCPUAcct, File: "cpuacct.usage", Kind: CustomCounter, Divisor: 1_000_000},
		{Name: "cache_mib", Controller: cgroups.ControllerMemory, File: "memory.stat", Key: "total_cache", Kind: CustomGauge, Divisor: 1 << 20},
	}}, n.layout, n.clock)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	n.c = c
	n.setCPU(n.podCgroup(podB), 10)
	n.setCPU(n.podCgroup(podE), 10)
	first := n.collect(podB, podE)
	if _, ok := first.Custom["cpu_millicores"]; ok {
		t.Errorf("first cycle: node cpu_millicores = %d, want absent (no rate yet)", first.Custom["cpu_millicores"])
	}
	n.clock.Step(2 * time.Second)
	n.setCPU(n.podCgroup(podB), 11)   // 1 s in 2 s: 500m
	n.setCPU(n.podCgroup(podE), 10.5) // 250m
	got := n.collect(podB, podE)
	pods := map[string]map[string]int64{}
	for _, p := range got.Pods {
		pods[p.Pod.Name] = p.Custom
	}
	want := map[string]map[string]int64{
		"web-7f9c": {"cpu_millicores": 500, "cache_mib": 204}, // total_cache 213811200
		"job-x":    {"cpu_millicores": 250, "cache_mib": 54},  // total_cache 56524800
	}
	if diff := cmp.Diff(want, pods); diff != "" {
		t.Errorf("pod custom metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"cpu_millicores": 750, "cache_mib": 258}, got.Custom); diff != "" {
		t.Errorf("node custom metrics (-want +got):\n%s", diff)
	}
}

func TestCustomMetricsConfigErrors(t *testing.T) {
	n := newNode(t, fixtures[0])
	_, err := New(Config{ProcRoot: filepath.Join(n.dir, "proc"), CustomMetrics: []CustomMetric{
		{Name: "x", Controller: "nosuch", File: "f", Kind: CustomGauge},
	}}, n.layout, n.clock)
	if err == nil || !strings.Contains(err.Error(), `collector.customMetrics[0].controller: Invalid value: "nosuch": no cgroup hierarchy at`) {
		t.Errorf("New with a missing hierarchy: %v, want an error naming collector.customMetrics[0].controller", err)
	}
	_, err = New(Config{ProcRoot: filepath.Join(n.dir, "proc"), CustomMetrics: []CustomMetric{
		{Name: "x", Controller: cgroups.ControllerMemory, File: "memory.usage_in_byte", Kind: CustomGauge},
	}}, n.layout, n.clock)
	if err == nil || !strings.Contains(err.Error(), `collector.customMetrics[0].file: Invalid value: "memory.usage_in_byte": no such file in the kubepods cgroup`) {
		t.Errorf("New with a misspelt file: %v, want an error naming collector.customMetrics[0].file", err)
	}
	errs := ValidateCustomMetrics([]CustomMetric{{Name: "", Controller: "memory", File: "../x", Kind: "rate", Divisor: -2}}, nil)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if diff := cmp.Diff([]string{"[0].name", "[0].file", "[0].type", "[0].divisor"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}
