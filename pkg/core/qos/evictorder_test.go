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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// TestEvictionOrderOfTheWaterlines: the memory and CPU evict lines of
// spec.memory and spec.cpu evict the lowest priority first, then the pod
// whose eviction releases the most, measured by usage (docs/design/
// node-qos.md, after the Alibaba waterline article). A rule's evict line
// keeps the generic order of Crane's sorters, QoS class first.
func TestEvictionOrderOfTheWaterlines(t *testing.T) {
	memPods := func() []Candidate {
		return []Candidate{
			cand(makePod("be-big").priority(5100).qos(corev1.PodQOSBestEffort), usage{mem: 3 * gib}),
			cand(makePod("g-small").priority(5000).qos(corev1.PodQOSGuaranteed), usage{mem: 1 * gib}),
			cand(makePod("b-mid").priority(5000).qos(corev1.PodQOSBurstable), usage{mem: 2 * gib}),
		}
	}
	// 5.5 GiB used, the line at 5 GiB: one eviction closes it.
	memUsage := NodeUsage{MetricMemory: 5*gib + gib/2}
	t.Run("memory waterline: lowest priority, then most memory used", func(t *testing.T) {
		p := mustPlanner(t, nodeQOS("mem", func(s *v1alpha1.NodeQOSSpec) {
			s.Memory = &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](50)}
		}))
		plan := p.Plan(NodeState{Usage: memUsage}, memPods(), Hysteresis{})
		if diff := cmp.Diff([]string{"b-mid"}, evicted(plan)); diff != "" {
			t.Errorf("evicted (-want +got):\n%s", diff)
		}
	})
	t.Run("memory rule: QoS class first", func(t *testing.T) {
		p := mustPlanner(t, nodeQOS("rule", func(s *v1alpha1.NodeQOSSpec) {
			s.Rules = []v1alpha1.WaterlineRule{{Name: "mem", Metric: v1alpha1.MetricMemoryUtilization,
				Action: v1alpha1.ActionEvict, Threshold: resource.MustParse("50"), AvoidanceCount: ptr.To[int32](1)}}
		}))
		plan := p.Plan(NodeState{Usage: memUsage}, memPods(), Hysteresis{})
		if diff := cmp.Diff([]string{"be-big"}, evicted(plan)); diff != "" {
			t.Errorf("evicted (-want +got):\n%s", diff)
		}
	})
	t.Run("CPU waterline: lowest priority, then most CPU used, not the biggest request", func(t *testing.T) {
		p := mustPlanner(t, nodeQOS("cpu", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](90)}
		}))
		// Held at their usage: C = 1300m of R = 6000m, allowance 1310m.
		// What must go: 6000 − 1300 × 100 ÷ 80 = 4375m of request.
		uses := [4]int64{300, 200, 600, 200}
		window := CPUWindow{NodeCPUMilli: 9400, BE: BECPU{UsageMilli: 1300, RequestMilli: 6000, AllowanceMilli: 1310}}
		plan := p.Plan(NodeState{Usage: NodeUsage{MetricCPU: 9500}, CPUWindow: &window}, bePods(uses, uses), Hysteresis{})
		// p3 uses the most of the priority-5000 pods, then p1, then p2;
		// p4 (5900) stays. By request it was p1, p2, then p3.
		if diff := cmp.Diff([]string{"p3", "p1", "p2"}, evicted(plan)); diff != "" {
			t.Errorf("evicted (-want +got):\n%s\nreasons: %q", diff, plan.Reasons)
		}
	})
}
