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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestNodeMetricLifecycle: the manager gives every node a NodeMetric whose
// spec follows the ColocationPolicy that governs the node, moves it when the
// policy or the node's labels change, and deletes it with the node.
func TestNodeMetricLifecycle(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	wlClient := c.Waterline.WaterlineV1alpha1()

	mustCreate(t, func() error {
		_, err := wlClient.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha1.ColocationPolicySpec{
				CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](30)},
			},
		}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := wlClient.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "pool-a"},
			Spec: v1alpha1.ColocationPolicySpec{
				NodeSelector:  &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": "a"}},
				PredictPolicy: &v1alpha1.PredictPolicy{Model: v1alpha1.PredictBorgDefault},
			},
		}, metav1.CreateOptions{})
		return err
	})
	for _, n := range []struct{ name, pool string }{{"n1", "a"}, {"n2", "b"}, {"n3", ""}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}}}
		if n.pool != "" {
			node.Labels["pool"] = n.pool
		}
		mustCreate(t, func() error { _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); return err })
	}

	c.StartManager(t)

	// wantSpec waits until the node's NodeMetric has the given report interval and model.
	wantSpec := func(node string, report int64, model v1alpha1.PredictModel) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
			nm, err := wlClient.NodeMetrics().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got := fmt.Sprintf("report=%d model=%s", ptr.Deref(nm.Spec.CollectPolicy.ReportIntervalSeconds, 0), nm.Spec.PredictPolicy.Model)
			want := fmt.Sprintf("report=%d model=%s", report, model)
			if got != want {
				return false, fmt.Errorf("spec is %s, want %s", got, want)
			}
			if len(nm.OwnerReferences) != 1 || nm.OwnerReferences[0].Kind != "Node" || nm.OwnerReferences[0].Name != node {
				return false, fmt.Errorf("owner references %v, want the node", nm.OwnerReferences)
			}
			return true, nil
		}, "NodeMetric %s spec", node)
	}
	wantSpec("n1", 30, v1alpha1.PredictBorgDefault)
	wantSpec("n2", 30, v1alpha1.DefaultPredictModel)
	wantSpec("n3", 30, v1alpha1.DefaultPredictModel)

	// A policy change reaches every NodeMetric it selects.
	def, err := wlClient.ColocationPolicies().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def.Spec.CollectPolicy.ReportIntervalSeconds = ptr.To[int64](45)
	if _, err := wlClient.ColocationPolicies().Update(ctx, def, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantSpec("n1", 45, v1alpha1.PredictBorgDefault)
	wantSpec("n2", 45, v1alpha1.DefaultPredictModel)
	wantSpec("n3", 45, v1alpha1.DefaultPredictModel)

	// Relabelling moves a node into the pool.
	n2, err := c.Kube.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n2.Labels["pool"] = "a"
	if _, err := c.Kube.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantSpec("n2", 45, v1alpha1.PredictBorgDefault)

	// A NodeMetric deleted by hand comes back.
	if err := wlClient.NodeMetrics().Delete(ctx, "n3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantSpec("n3", 45, v1alpha1.DefaultPredictModel)

	// Deleting the node deletes its NodeMetric (no garbage collector runs here).
	if err := c.Kube.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		_, err := wlClient.NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}, "NodeMetric n1 deleted with its node")
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatalf("Create: %v", err)
	}
}
