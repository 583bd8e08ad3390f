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
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// BenchmarkBuildWaterlines builds the waterlines of a node selected by
// three NodeQOS: every first-class line, and six rules. The manager runs
// this per node and NodeQOS for the status (ReportNodeQOS); the agent when
// a NodeQOS or the capacity changes.
func BenchmarkBuildWaterlines(b *testing.B) {
	r := func(name string, m v1alpha1.QOSMetric, a v1alpha1.QOSAction, th string) v1alpha1.WaterlineRule {
		return v1alpha1.WaterlineRule{Name: name, Metric: m, Action: a, Threshold: resource.MustParse(th)}
	}
	nqs := []*v1alpha1.NodeQOS{
		nodeQOS("lines", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](70),
				RestorePercent: ptr.To[int32](50), EvictPercent: ptr.To[int32](90)}
			s.Memory = &v1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](80), EvictPercent: ptr.To[int32](85)}
		}),
		nodeQOS("rules", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{
				r("cpu-forbid", v1alpha1.MetricCPUUtilization, v1alpha1.ActionForbidScheduling, "55"),
				r("cpu-throttle", v1alpha1.MetricCPUUtilization, v1alpha1.ActionThrottle, "65"),
				r("cpu-evict", v1alpha1.MetricCPUUtilization, v1alpha1.ActionEvict, "95"),
				r("cpu-cores", v1alpha1.MetricCPUUsage, v1alpha1.ActionThrottle, "40"),
				r("mem-bytes", v1alpha1.MetricMemoryUsage, v1alpha1.ActionEvict, "240Gi"),
				r("mem-forbid", v1alpha1.MetricMemoryUtilization, v1alpha1.ActionForbidScheduling, "75"),
			}
		}),
		nodeQOS("tuning", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](75)}
			s.ProtectedNamespaces = []string{"waterline-system", "monitoring"}
		}),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := BuildWaterlines(nqs, benchNode); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
