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
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestTierAllocatable: the manager turns a node's NodeMetric into Mid and
// Batch allocatable on its status, and resets both to zero once the
// NodeMetric is older than degradeSeconds -- with no event to trigger it.
func TestTierAllocatable(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	wlClient := c.Waterline.WaterlineV1alpha1()

	// degradeSeconds 15: soon enough for the test to see the reset, long
	// enough that a loaded machine still sees the tiers before it.
	mustCreate(t, func() error {
		_, err := wlClient.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec:       v1alpha1.ColocationPolicySpec{Tiers: &v1alpha1.TierPolicy{DegradeSeconds: ptr.To[int64](15)}},
		}, metav1.CreateOptions{})
		return err
	})
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, func() error {
		_, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: "test-prod"}, Value: 9500}, metav1.CreateOptions{})
		return err
	})
	// Prod pods bound to the node request 20 CPU and 64Gi in all.
	for i, req := range []string{"12", "8"} {
		mustCreate(t, func() error {
			_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("prod-%d", i), Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: "n1", PriorityClassName: "test-prod", Containers: []corev1.Container{{
					Name: "c", Image: "x",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(req), corev1.ResourceMemory: resource.MustParse("32Gi")}},
				}}},
			}, metav1.CreateOptions{})
			return err
		})
	}

	c.StartManager(t)

	// The manager creates the NodeMetric; the agent would write its status.
	var nm *v1alpha1.NodeMetric
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		var err error
		nm, err = wlClient.NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil, err
	}, "NodeMetric n1 created")
	// Before the agent reports, nothing is sold (degraded).
	wantTiers(t, c, "n1", 0, 0, 0, 0)

	now := metav1.NewTime(time.Now())
	nm.Status = v1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &v1alpha1.NodeMetricInfo{
			NodeUsage:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("40Gi")},
			SystemUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		},
		PodsMetric: []v1alpha1.PodMetricInfo{
			{Namespace: "default", Name: "prod-0", Band: "prod", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5"), corev1.ResourceMemory: resource.MustParse("20Gi")}},
			{Namespace: "default", Name: "prod-1", Band: "prod", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("10Gi")}},
		},
		ProdPeak: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("48Gi")},
	}
	if _, err := wlClient.NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Mid CPU    = min(Reclaimable 20 − 8 = 12, 32 × 30 % = 9.6) = 9.6 CPU = 9600 millicores.
	// Mid memory = min(64Gi − 48Gi = 16Gi, 128Gi × 30 % = 38.4Gi) = 16Gi.
	// Prod+Mid CPU use = max(Σ pods 5 + 2 = 7, node 10 − system 1 − batch 0 = 9) = 9.
	// Batch CPU  = 32 × 75 % − 9 − 1 = 24 − 10 = 14 CPU = 14000 millicores.
	// Prod+Mid memory = max(30Gi, 40Gi − 4Gi = 36Gi) = 36Gi.
	// Batch mem  = 128Gi × 65 % − 36Gi − 4Gi = 83.2Gi − 40Gi = 43.2Gi = 46385646796 bytes (floored).
	batchMem := int64(128<<30*65/100 - 40<<30)
	wantTiers(t, c, "n1", 9600, 16<<30, 14000, batchMem)

	// The agent reports prodReclaimable with the peak, over the Prod pods
	// it knew: 12 CPU and 16Gi, as above.
	nm, err = wlClient.NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nm.Status.ProdReclaimable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	if _, err := wlClient.NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Prod pod of 4 CPU and 8Gi is bound before the agent's next report.
	// The manager counts its request at once and the reported peak does
	// not hold it yet: 72Gi − 48Gi would sell its 8Gi as Mid memory (a move
	// of more than the 5 % update threshold) until the agent counts it,
	// cold, at its request. The reported 16Gi holds instead.
	mustCreate(t, func() error {
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "prod-new", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "n1", PriorityClassName: "test-prod", Containers: []corev1.Container{{
				Name: "c", Image: "x",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}},
			}}},
		}, metav1.CreateOptions{})
		return err
	})
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Status.Allocatable[extension.ResourceMidMemory]; got.Value() != 16<<30 {
			t.Fatalf("mid-memory is %s after a Prod pod was bound and before the agent reported it, want 16Gi: its request sold as Mid", got.String())
		}
	}
	// A Prod pod of 12 CPU and 32Gi goes: what it reclaimed goes at once,
	// though the report still says 12 CPU and 16Gi. Left: 8 + 4 CPU and
	// 32Gi + 8Gi requested under the peak of 8 CPU and 48Gi.
	if err := c.Kube.CoreV1().Pods("default").Delete(ctx, "prod-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	wantTiers(t, c, "n1", 4000, 0, 14000, batchMem)

	// The agent falls silent: after degradeSeconds the tiers drop to zero.
	start := time.Now()
	wantTiers(t, c, "n1", 0, 0, 0, 0)
	if waited := time.Since(start); waited < 8*time.Second {
		t.Errorf("tiers dropped after %v, before the NodeMetric was 15 s old", waited)
	}
}

func wantTiers(t *testing.T, c *testutil.Cluster, node string, midCPU, midMem, batchCPU, batchMem int64) {
	t.Helper()
	want := fmt.Sprintf("mid-cpu=%d mid-memory=%d batch-cpu=%d batch-memory=%d", midCPU, midMem, batchCPU, batchMem)
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		a := n.Status.Allocatable
		q := func(name corev1.ResourceName) int64 {
			v, ok := a[name]
			if !ok {
				return -1
			}
			return v.Value()
		}
		got := fmt.Sprintf("mid-cpu=%d mid-memory=%d batch-cpu=%d batch-memory=%d",
			q(extension.ResourceMidCPU), q(extension.ResourceMidMemory), q(extension.ResourceBatchCPU), q(extension.ResourceBatchMemory))
		if got != want {
			return false, fmt.Errorf("allocatable %s", got)
		}
		if cap := n.Status.Capacity[extension.ResourceBatchCPU]; cap.Value() != batchCPU {
			return false, fmt.Errorf("capacity batch-cpu %s, want %d", cap.String(), batchCPU)
		}
		return true, nil
	}, "node %s tiers %s", node, want)
}
