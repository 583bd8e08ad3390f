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

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestLoadAwareWithoutAgents: a cluster where the manager created
// NodeMetrics but no agent reports them yet must not be trapped: LoadAware
// treats a NodeMetric never reported as no NodeMetric. And when an operator
// deletes the stale NodeMetrics of nodes whose agents are gone, the pods
// LoadAware refused there go at once, not after the scheduler's periodic
// flush of unschedulable pods (five minutes). And a node whose clock is
// behind is not refused while its agent reports, nor by a scheduler
// started since its last report.
func TestLoadAwareWithoutAgents(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	c.CreateNodes(t, "agentless", 2, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}})
	neverReported, stale := "agentless-0", "agentless-1"
	metrics := c.Waterline.WaterlineV1alpha1().NodeMetrics()
	// What the manager creates for every node: spec, no status.
	if _, err := metrics.Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: neverReported}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An agent that reported once, 10 minutes ago, and is gone.
	nm, err := metrics.Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: stale}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	nm.Status = v1alpha1.NodeMetricStatus{UpdateTime: &old, NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	}}}
	if _, err := metrics.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.BackdateReport(ctx, stale, old.Time); err != nil {
		t.Fatal(err)
	}

	scheduler := c.StartScheduler(t, sampleLoadAwareProfiles(t))
	c.CreateNamespace(t, laNamespace, nil)

	t.Run("a NodeMetric never reported does not refuse its node", func(t *testing.T) {
		createLAPod(t, c, "to-never-reported", testutil.SchedulerName, neverReported, nil)
		if got := waitBound(t, c, "to-never-reported")["to-never-reported"]; got != neverReported {
			t.Errorf("pod bound to %s, want %s", got, neverReported)
		}
	})

	t.Run("deleting a stale NodeMetric frees the pods it held at once", func(t *testing.T) {
		createLAPod(t, c, "to-stale", testutil.SchedulerName, stale, nil)
		pendingWith(t, c, "to-stale", "node(s) nodeMetric expired")
		start := time.Now()
		if err := metrics.Delete(ctx, stale, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
			p, err := c.Kube.CoreV1().Pods(laNamespace).Get(ctx, "to-stale", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Spec.NodeName == stale, nil
		}, "waiting for to-stale to be bound to %s after its NodeMetric was deleted (the periodic flush comes only after 5 minutes)", stale)
		t.Logf("to-stale bound %s after the deletion", time.Since(start).Round(10*time.Millisecond))
	})

	// An agent whose node's clock is 5 minutes behind reports on time:
	// LoadAware ages each report from when it sees it, so the node is
	// not refused as expired (by its updateTime it would be).
	t.Run("a node whose clock is behind is not refused while it reports", func(t *testing.T) {
		skewed := c.CreateNodes(t, "skewed", 1, testutil.NodeOptions{})[0].Name
		nm, err := metrics.Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: skewed}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		behind := metav1.NewTime(time.Now().Add(-5 * time.Minute))
		nm.Status = v1alpha1.NodeMetricStatus{UpdateTime: &behind, NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}}}
		if _, err := metrics.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		createLAPod(t, c, "to-skewed", testutil.SchedulerName, skewed, nil)
		if got := waitBound(t, c, "to-skewed")["to-skewed"]; got != skewed {
			t.Errorf("pod bound to %s, want %s", got, skewed)
		}

		// A scheduler started now lists the report: it goes by when the
		// API server stored it, seconds ago, not by its updateTime, and
		// admits the node without waiting for the next report.
		scheduler.Stop()
		c.StartScheduler(t, sampleLoadAwareProfiles(t))
		createLAPod(t, c, "to-skewed-after-restart", testutil.SchedulerName, skewed, nil)
		if got := waitBound(t, c, "to-skewed-after-restart")["to-skewed-after-restart"]; got != skewed {
			t.Errorf("after a scheduler restart, pod bound to %s, want %s", got, skewed)
		}
	})
}
