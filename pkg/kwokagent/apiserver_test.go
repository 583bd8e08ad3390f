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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/predictor"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestSimulatedAgentsReport runs the simulator against a real API server:
// a selected (kwok) node gets a NodeMetric whose node and pod usage are
// its running (Batch) pods' requests times the factors plus the system's,
// a pending pod counts for nothing, and an unselected node (one with a
// real agent) gets no report.
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
			ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: p.name, Labels: map[string]string{extension.LabelBand: string(extension.BandBatch)}},
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

// TestSimulatedAgentsPredictMid runs the simulator and waterline-manager
// against a real API server: a kwok node with two Prod pods (4 cores and
// 8 GiB requested each) whose modelled usage swings over a compressed
// 20-second day gets a Prod peak from the agent's predictor, above what
// the Prod pods use on average but under what they request, and the
// manager turns the difference into Mid allocatable on the node (and the
// idle rest into Batch).
func TestSimulatedAgentsPredictMid(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: starts etcd, kube-apiserver and waterline-manager (-short)")
	}
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	// The manager writes this policy into the node's NodeMetric spec:
	// short windows, a cold start of 5 s, tiers on.
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{
			CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To[int64](5), ReportIntervalSeconds: ptr.To[int64](1)},
			PredictPolicy: &v1alpha1.PredictPolicy{ColdStartSeconds: ptr.To[int64](5)},
			Tiers:         &v1alpha1.TierPolicy{Enabled: ptr.To(true)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-0", Labels: map[string]string{"type": "kwok"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity = rl("32", "128Gi")
	node.Status.Allocatable = rl("32", "128Gi")
	if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.CreateNamespace(t, "work", nil)
	for _, name := range []string{"prod-a", "prod-b"} {
		created, err := c.Kube.CoreV1().Pods("work").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: name},
			Spec: corev1.PodSpec{NodeName: "kwok-0", Containers: []corev1.Container{{Name: "c", Image: "fake",
				Resources: corev1.ResourceRequirements{Requests: rl("4", "8Gi")}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := extension.BandOf(created); got != extension.BandProd {
			t.Fatalf("pod %s is in band %s, want prod", name, got)
		}
		created.Status.Phase = corev1.PodRunning
		created.Status.StartTime = &metav1.Time{Time: time.Now()}
		if _, err := c.Kube.CoreV1().Pods("work").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.StartManager(t)

	model := Model{Period: 20 * time.Second}
	sim, err := New(Config{Nodes: labels.SelectorFromSet(labels.Set{"type": "kwok"}), Model: model, Interval: 200 * time.Millisecond,
		Predictor: predictor.Config{UpdateInterval: time.Second, CheckInterval: time.Second}},
		c.Kube, c.Waterline, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, klog.Background()))
	done := make(chan error, 1)
	simStart := time.Now()
	go func() { done <- sim.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	// Averages of the Prod pods plus the system, and their requests.
	model.SetDefaults()
	meanCPU := 8*model.ProdCPUFactor + model.SystemCPU
	meanMem := 16*float64(1<<30)*model.ProdMemoryFactor + model.SystemMemory
	var nm *v1alpha1.NodeMetric
	testutil.Eventually(t, 2*time.Minute, time.Second, func() (bool, error) {
		nm, err = c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, "kwok-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.ConditionPredictionReady)
		if cond == nil || cond.Status != metav1.ConditionTrue || nm.Status.ProdPeak == nil {
			return false, fmt.Errorf("no ready prediction yet: condition %+v, prodPeak %v", cond, nm.Status.ProdPeak)
		}
		// A prediction from a whole day and a half of history: less may
		// have seen only the night.
		if nm.Status.PredictionTime == nil || nm.Status.PredictionTime.Time.Before(simStart.Add(model.Period*3/2)) {
			return false, fmt.Errorf("prediction of %v, from less than a day and a half of history", nm.Status.PredictionTime)
		}
		return true, nil
	}, "waiting for the simulated agent's Prod peak prediction on kwok-0 after a day and a half")
	peakCPU := nm.Status.ProdPeak.Cpu().AsApproximateFloat64()
	peakMem := nm.Status.ProdPeak.Memory().AsApproximateFloat64()
	t.Logf("Prod peak cpu %.2f (mean use %.2f, requests 8), memory %.2f GiB (mean use %.2f, requests 16); reclaimable %v",
		peakCPU, meanCPU, peakMem/(1<<30), meanMem/(1<<30), nm.Status.ProdReclaimable)
	if peakCPU <= meanCPU || peakCPU >= 8 {
		t.Errorf("Prod peak cpu %.2f cores: want above the Prod pods' mean use %.2f and under their requests 8", peakCPU, meanCPU)
	}
	if peakMem <= meanMem || peakMem >= 16*(1<<30) {
		t.Errorf("Prod peak memory %.2f GiB: want above the mean use %.2f GiB and under the requests 16 GiB", peakMem/(1<<30), meanMem/(1<<30))
	}
	if r := nm.Status.ProdReclaimable.Cpu(); r.MilliValue() <= 0 {
		t.Errorf("prodReclaimable cpu %v, want above 0", r)
	}

	var alloc corev1.ResourceList
	testutil.Eventually(t, time.Minute, time.Second, func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, "kwok-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		alloc = n.Status.Allocatable
		mid, batch := alloc[extension.ResourceMidCPU], alloc[extension.ResourceBatchCPU]
		return mid.Value() > 0 && batch.Value() > 0, fmt.Errorf("allocatable %v", alloc)
	}, "waiting for waterline-manager to write Mid and Batch allocatable on kwok-0")
	mid := alloc[extension.ResourceMidCPU]
	t.Logf("kwok-0 allocatable: mid-cpu %s, mid-memory %s, batch-cpu %s, batch-memory %s", mid.String(),
		ptr.To(alloc[extension.ResourceMidMemory]).String(), ptr.To(alloc[extension.ResourceBatchCPU]).String(), ptr.To(alloc[extension.ResourceBatchMemory]).String())
	// Mid is sold from what the Prod pods requested but are predicted not
	// to use: never more than requests minus the peak, give or take the
	// manager's update threshold (it rewrites a value only when it moves
	// by more than 5 % of the node's 32 cores, and the peak grew as the
	// history did).
	if got, most := mid.Value(), int64(math.Round(1000*(8-peakCPU)))+1600; got > most {
		t.Errorf("mid-cpu %dm, more than the Prod requests minus the reported peak plus the update threshold (%dm)", got, most)
	}
}
