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

package kwokagent

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestSimulatedAgentsReport runs the simulator against a real API server:
// a selected (kwok) node gets a NodeMetric whose node and pod usage are
// its running pods' requests times the factors plus the system's, a
// pending pod counts for nothing, and an unselected node (one with a real
// agent) gets no report.
func TestSimulatedAgentsReport(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: starts etcd and kube-apiserver (-short)")
	}
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	for _, n := range []struct {
		name string
		lbls map[string]string
	}{{"kwok-0", map[string]string{"type": "kwok"}}, {"real", nil}} {
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.lbls}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Short windows, as the manager would write from the policy.
		if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(ctx, &v1alpha1.NodeMetric{
			ObjectMeta: metav1.ObjectMeta{Name: n.name},
			Spec: v1alpha1.NodeMetricSpec{CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{
				AggregateDurationSeconds: ptr.To[int64](5), ReportIntervalSeconds: ptr.To[int64](1)}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.CreateNamespace(t, "work", nil)
	for _, p := range []struct {
		name, node string
		phase      corev1.PodPhase
	}{{"running", "kwok-0", corev1.PodRunning}, {"pending", "kwok-0", corev1.PodPending}, {"elsewhere", "real", corev1.PodRunning}} {
		created, err := c.Kube.CoreV1().Pods("work").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: p.name},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "fake",
				Resources: corev1.ResourceRequirements{Requests: rl("2", "1Gi")}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Phase = p.phase
		if _, err := c.Kube.CoreV1().Pods("work").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	sim, err := New(Config{Nodes: labels.SelectorFromSet(labels.Set{"type": "kwok"}), Model: flat(), Interval: 200 * time.Millisecond},
		c.Kube, c.Waterline, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, klog.Background()))
	done := make(chan error, 1)
	go func() { done <- sim.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.01*want+1e-3 }
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, "kwok-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if nm.Status.NodeMetric == nil {
			return false, fmt.Errorf("no report yet")
		}
		cpu := nm.Status.NodeMetric.NodeUsage.Cpu().AsApproximateFloat64()
		mem := nm.Status.NodeMetric.NodeUsage.Memory().AsApproximateFloat64()
		// 2 cores × 0.5 + 0.1 system; 1Gi × 0.25 + 100 bytes.
		if !near(cpu, 1.1) || !near(mem, (1<<30)*0.25+100) {
			return false, fmt.Errorf("node usage cpu %.3f memory %.0f, want 1.1 and %.0f", cpu, mem, (1<<30)*0.25+100)
		}
		if len(nm.Status.PodsMetric) != 1 || nm.Status.PodsMetric[0].Name != "running" || !near(nm.Status.PodsMetric[0].Usage.Cpu().AsApproximateFloat64(), 1) {
			return false, fmt.Errorf("pods metric %+v, want only pod running at 1 core", nm.Status.PodsMetric)
		}
		return true, nil
	}, "waiting for the simulated agent's report of kwok-0")

	nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, "real", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nm.Status.UpdateTime != nil {
		t.Errorf("the unselected node real got a simulated report at %v; only selected nodes may", nm.Status.UpdateTime)
	}
}
