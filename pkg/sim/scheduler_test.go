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

package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// TestDeployedScoreProfile holds the simulated scheduler's score against
// the profile the chart deploys, computed by hand: 2 × LoadAware +
// NodeResourcesFit's LeastAllocated + NodeResourcesBalancedAllocation (not
// for a pod requesting no cpu or memory) on a 4-core, 8 GiB node with 2
// cores and 4 GiB of Batch tier and an idle NodeMetric.
func TestDeployedScoreProfile(t *testing.T) {
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:           resource.MustParse("110"),
			extension.ResourceBatchCPU:    resource.MustParse("2000"),
			extension.ResourceBatchMemory: resource.MustParse("4Gi"),
		}},
	}
	s, err := NewScheduler(DefaultLoadAwareSpec(), DefaultLoadAwareWeight, []*corev1.Node{node}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeMetric(&v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Status: v1alpha1.NodeMetricStatus{
			UpdateTime: &metav1.Time{Time: now},
			NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0"),
			}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, requests corev1.ResourceList, band extension.Band) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{extension.LabelBand: string(band)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: requests, Limits: requests,
			}}}},
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want int64
	}{{
		// LoadAware: estimate 850m and 0.7 × 4Gi: cpu 78, memory 65 → 71,
		// × 2 = 142. LeastAllocated: cpu 75, memory 50 → 62. Balanced:
		// fractions 0.25 and 0.5 (std 0.125: 87) against 0 and 0 (100):
		// 50 + (50 + 87 − 100) / 2 = 68. 142 + 62 + 68 = 272.
		name: "prod pod, 1 core and 4Gi",
		pod:  pod("prod", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}, extension.BandProd),
		want: 272,
	}, {
		// LoadAware counts the tier request: cpu 78, memory 0.7 × 1Gi:
		// 91 → 84, × 2 = 168. LeastAllocated counts kube-scheduler's
		// 100m and 200Mi for a pod without requests: 97 and 97 → 97.
		// Balanced skips a pod requesting no cpu or memory. 168 + 97 = 265.
		name: "batch tier pod, 1000 batch-cpu and 1Gi batch-memory",
		pod:  pod("batch", corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse("1000"), extension.ResourceBatchMemory: resource.MustParse("1Gi")}, extension.BandBatch),
		want: 265,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Evaluate(tc.pod, now.Add(time.Second))
			if diff := cmp.Diff([]NodeScore{{Node: "a", Fits: true, Score: tc.want}}, got); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultScoreProfile holds the baselines' simulated scheduler to
// kube-scheduler's default profile, computed by hand: NodeResourcesFit's
// LeastAllocated + NodeResourcesBalancedAllocation (not for a pod
// requesting no cpu or memory) on a 4-core, 8 GiB node, and checks that it
// takes no NodeMetric.
func TestDefaultScoreProfile(t *testing.T) {
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	s := NewDefaultScheduler([]*corev1.Node{node}, 1)
	if err := s.SetNodeMetric(&v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); err == nil {
		t.Error("SetNodeMetric on the default profile: no error, want one (it has no LoadAware)")
	}
	pod := func(name string, requests corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: requests, Limits: requests,
			}}}},
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want int64
	}{{
		// LeastAllocated: cpu 75, memory 50 → 62. Balanced: fractions 0.25
		// and 0.5 (std 0.125: 87) against 0 and 0 (100):
		// 50 + (50 + 87 − 100) / 2 = 68. 62 + 68 = 130.
		name: "1 core and 4Gi",
		pod:  pod("burstable", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}),
		want: 130,
	}, {
		// LeastAllocated counts kube-scheduler's 100m and 200Mi for a pod
		// without requests: 97 and 97 → 97. Balanced skips it.
		name: "BestEffort",
		pod:  pod("besteffort", nil),
		want: 97,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Evaluate(tc.pod, now)
			if diff := cmp.Diff([]NodeScore{{Node: "a", Fits: true, Score: tc.want}}, got); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchedulerViewsMatchNodes checks that the scheduler's fitViews are the
// nodes' own, in the nodes' order, and that the nodes keep the scheduler's
// fitSets: pick reads views[i] and bit i of a fitSet for nodes[i].
func TestSchedulerViewsMatchNodes(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 1, Nodes: 20, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Seed: 1}.WithDefaults()
	r, err := newRun(&cfg, w, PolicyWaterline)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.sched.index.views) != len(r.nodes) {
		t.Fatalf("%d fitViews for %d nodes", len(r.sched.index.views), len(r.nodes))
	}
	for i, n := range r.nodes {
		if n.idx != i || n.fit != &r.sched.index.views[i] || n.fitIndex != &r.sched.index {
			t.Fatalf("node %d (%s) does not own the scheduler's fitView %d", i, n.spec.Name, i)
		}
	}
}
