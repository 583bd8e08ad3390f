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

package tiers

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// BenchmarkTiers is the manager's work for one node with 200 pods on every
// NodeMetric update: gather the state from the objects, apply the formulas,
// decide whether to write. The formulas alone are the baseline: the cost is
// in walking the objects.
func BenchmarkTiers(b *testing.B) {
	const pods = 200
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: rl("96", "384Gi")}}
	var list []*corev1.Pod
	updated := metav1.NewTime(now)
	nm := &v1alpha1.NodeMetric{Status: v1alpha1.NodeMetricStatus{
		UpdateTime: &updated,
		ProdPeak:   rl("30", "100Gi"),
		NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: rl("40", "200Gi"), SystemUsage: rl("2", "8Gi")},
	}}
	for i := range pods {
		name := "p" + strconv.Itoa(i)
		prio := int32(9500)
		band := "prod"
		if i%2 == 1 {
			prio, band = 5500, "batch"
		}
		list = append(list, pod(name, "n1", containers(rl("400m", "1Gi")), func(p *corev1.Pod) { p.Spec.Priority = ptr.To(prio) }))
		nm.Status.PodsMetric = append(nm.Status.PodsMetric, v1alpha1.PodMetricInfo{Namespace: "default", Name: name, Band: band, Usage: rl("150m", "700Mi")})
	}
	current := Allocatable{}.ResourceList()
	b.Run("BuildInput+Calculate+ShouldUpdate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in := BuildInput(node, list, nm)
			r := Calculate(nil, in, now.Add(time.Minute))
			_, _ = ShouldUpdate(nil, in.CPU.Allocatable, in.Memory.Allocatable, current, r.Allocatable)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/pod")
	})
	b.Run("baseline-Calculate-only", func(b *testing.B) {
		in := BuildInput(node, list, nm)
		b.ReportAllocs()
		for b.Loop() {
			_ = Calculate(nil, in, now.Add(time.Minute))
		}
	})
}
