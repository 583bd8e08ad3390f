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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestNodeMetricCarriesTheReclaimRatio: the manager writes the reclaim
// ratio of the ColocationPolicy that governs a node (a pool's over the
// default's) into the node's NodeMetric spec.tiers.reclaimRatioPercent,
// where the agent reads it to report status.prodReclaimable at the ratio
// Mid is sold at; a policy change reaches it. The API server refuses a
// ratio above 100.
func TestNodeMetricCarriesTheReclaimRatio(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	wlClient := c.Waterline.WaterlineV1alpha1()

	mustCreate(t, func() error {
		_, err := wlClient.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec:       v1alpha1.ColocationPolicySpec{Tiers: &v1alpha1.TierPolicy{ReclaimRatioPercent: ptr.To[int32](80)}},
		}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := wlClient.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "pool-a"},
			Spec: v1alpha1.ColocationPolicySpec{
				NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": "a"}},
				Tiers:        &v1alpha1.TierPolicy{ReclaimRatioPercent: ptr.To[int32](60)},
			},
		}, metav1.CreateOptions{})
		return err
	})
	for _, n := range []struct{ name, pool string }{{"ra-1", "a"}, {"ra-2", ""}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}}}
		if n.pool != "" {
			node.Labels["pool"] = n.pool
		}
		mustCreate(t, func() error { _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); return err })
	}
	c.StartManager(t, "--controllers=nodemetric")

	wantRatio := func(node string, ratio int32) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
			nm, err := wlClient.NodeMetrics().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if nm.Spec.Tiers == nil || nm.Spec.Tiers.ReclaimRatioPercent == nil {
				return false, fmt.Errorf("spec.tiers.reclaimRatioPercent not set: %+v", nm.Spec.Tiers)
			}
			got := *nm.Spec.Tiers.ReclaimRatioPercent
			return got == ratio, fmt.Errorf("spec.tiers.reclaimRatioPercent = %d, want %d", got, ratio)
		}, "NodeMetric %s reclaim ratio %d", node, ratio)
	}
	wantRatio("ra-1", 60)
	wantRatio("ra-2", 80)

	def, err := wlClient.ColocationPolicies().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def.Spec.Tiers.ReclaimRatioPercent = ptr.To[int32](70)
	if _, err := wlClient.ColocationPolicies().Update(ctx, def, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantRatio("ra-2", 70)
	wantRatio("ra-1", 60)

	// kubectl get nodemetric shows the reclaimable CPU the agent reports.
	if out, err := c.KubectlE("get", "nodemetric", "ra-2"); err != nil || !strings.Contains(out, "RECLAIMABLE-CPU") {
		t.Errorf("kubectl get nodemetric: %v\n%s\nwant a RECLAIMABLE-CPU column", err, out)
	}

	// The CRD bounds the field.
	nm, err := wlClient.NodeMetrics().Get(ctx, "ra-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nm.Spec.Tiers.ReclaimRatioPercent = ptr.To[int32](101)
	_, err = wlClient.NodeMetrics().Update(ctx, nm, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.tiers.reclaimRatioPercent") {
		t.Errorf("Updating spec.tiers.reclaimRatioPercent to 101: err %v, want a refusal naming the field", err)
	}
}
