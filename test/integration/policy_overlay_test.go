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
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestPoolPolicyOverridesFieldByField: a pool ColocationPolicy overrides
// the default policy only in the fields it sets (docs/design/tiers.md),
// also once the API server has stored it: the fields it leaves unset keep
// the default policy's values, not the built-in defaults.
func TestPoolPolicyOverridesFieldByField(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	wl := c.Waterline.WaterlineV1alpha1()
	mustCreate(t, func() error {
		_, err := wl.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha1.ColocationPolicySpec{
				Tiers:         &v1alpha1.TierPolicy{BatchCPUThresholdPercent: ptr.To[int32](50)},
				PredictPolicy: &v1alpha1.PredictPolicy{Model: v1alpha1.PredictModel("PercentilePeak")},
			},
		}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := wl.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
			Spec: v1alpha1.ColocationPolicySpec{
				NodeSelector:  &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": "gpu"}},
				Tiers:         &v1alpha1.TierPolicy{ReclaimRatioPercent: ptr.To[int32](80)},
				PredictPolicy: &v1alpha1.PredictPolicy{NSigma: ptr.To[int32](5)},
			},
		}, metav1.CreateOptions{})
		return err
	})
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi")}
	node, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"pool": "gpu"}}}, metav1.CreateOptions{})
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
		if err != nil {
			return false, err
		}
		s := nm.Spec
		if s.Tiers == nil || s.PredictPolicy == nil || s.Tiers.ReclaimRatioPercent == nil || s.PredictPolicy.NSigma == nil {
			return false, fmt.Errorf("spec %+v not written yet", s)
		}
		if *s.Tiers.ReclaimRatioPercent != 80 || *s.PredictPolicy.NSigma != 5 || s.PredictPolicy.Model != "PercentilePeak" {
			return false, fmt.Errorf("NodeMetric spec: reclaimRatioPercent %d, n %d, model %s; want 80 and 5 from the pool, PercentilePeak from the default",
				*s.Tiers.ReclaimRatioPercent, *s.PredictPolicy.NSigma, s.PredictPolicy.Model)
		}
		return true, nil
	}, "NodeMetric n1 with the pool's and the default's fields")

	now := metav1.NewTime(time.Now())
	nm.Status = v1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &v1alpha1.NodeMetricInfo{
			NodeUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
	}
	if _, err := wl.NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Batch CPU at the default policy's 50 %: 32 × 50 % − 4 = 12 CPU (the
	// built-in 75 % would give 20); batch memory at the built-in 65 %.
	wantTiers(t, c, "n1", 0, 0, 12000, int64(128<<30)*65/100-8<<30)
}
