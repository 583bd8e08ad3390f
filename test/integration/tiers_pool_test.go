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

package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestTierPoolPolicyChanges: a node's tiers follow the pool policy that
// governs it -- when the node is relabelled out of and back into the pool,
// and when the pool policy is deleted -- with no other event.
func TestTierPoolPolicyChanges(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	wl := c.Waterline.WaterlineV1alpha1()
	mustCreate(t, func() error {
		_, err := wl.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
			Spec: v1alpha1.ColocationPolicySpec{
				NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": "gpu"}},
				Tiers:        &v1alpha1.TierPolicy{Enabled: ptr.To(false)},
			},
		}, metav1.CreateOptions{})
		return err
	})
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi")}
	node, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.StartManager(t)
	var nm *v1alpha1.NodeMetric
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		nm, err = wl.NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil, err
	}, "NodeMetric n1 created")
	now := metav1.NewTime(time.Now())
	nm.Status = v1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &v1alpha1.NodeMetricInfo{
			NodeUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
		ProdPeak: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")},
	}
	if _, err := wl.NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No Prod pods: Mid 0. Batch = 32 × 75 % − 4 = 20 CPU; 128Gi × 65 % − 8Gi.
	batchMem := int64(128<<30)*65/100 - 8<<30
	wantTiers(t, c, "n1", 0, 0, 20000, batchMem)

	setPool := func(pool string) {
		t.Helper()
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels = map[string]string{"pool": pool}
		if _, err := c.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPool("gpu")
	wantTiers(t, c, "n1", 0, 0, 0, 0)
	setPool("cpu")
	wantTiers(t, c, "n1", 0, 0, 20000, batchMem)
	setPool("gpu")
	wantTiers(t, c, "n1", 0, 0, 0, 0)
	if err := wl.ColocationPolicies().Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTiers(t, c, "n1", 0, 0, 20000, batchMem)
}
