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
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/sim"
	testutil "github.com/waterline-dev/waterline/test/util"
)

const (
	fidScheduler = "sim-fidelity"
	fidNamespace = "sim-fidelity"
	fidPods      = 72
)

// fidProfile is the scheduler profile the chart deploys
// (charts/waterline/templates/scheduler.yaml rendered with the chart's
// default values: the default plugins, LoadAware at scheduler.loadAwareWeight,
// DefaultPreemption off and BandPreemption with preemption disabled), under
// the test's scheduler name. It also returns LoadAware's weight in it.
func fidProfile(t *testing.T, c *testutil.Cluster) (string, int64) {
	t.Helper()
	rendered := chartSchedulerConfig(t, c)
	var config struct {
		Profiles []map[string]any `json:"profiles"`
	}
	if err := yaml.Unmarshal([]byte(rendered), &config); err != nil || len(config.Profiles) != 1 {
		t.Fatalf("The chart's scheduler config has %d profiles (%v), want 1:\n%s", len(config.Profiles), err, rendered)
	}
	profile := config.Profiles[0]
	profile["schedulerName"] = fidScheduler
	body, err := yaml.Marshal(map[string]any{"profiles": []any{profile}})
	if err != nil {
		t.Fatal(err)
	}
	// The weight the chart gave LoadAware, to score the simulation alike.
	var plugins struct {
		Plugins struct {
			MultiPoint struct {
				Enabled []struct {
					Name   string `json:"name"`
					Weight int64  `json:"weight"`
				} `json:"enabled"`
			} `json:"multiPoint"`
		} `json:"plugins"`
	}
	raw, _ := yaml.Marshal(profile)
	if err := yaml.Unmarshal(raw, &plugins); err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins.Plugins.MultiPoint.Enabled {
		if p.Name == "LoadAware" {
			return string(body), p.Weight
		}
	}
	t.Fatalf("The chart's scheduler profile does not enable LoadAware:\n%s", body)
	return "", 0
}

// chartSchedulerConfig is the scheduler configuration the chart deploys
// (scheduler-config.yaml of its ConfigMap) with the --set values given.
func chartSchedulerConfig(t *testing.T, c *testutil.Cluster, set ...string) string {
	t.Helper()
	args := []string{"template", "waterline", testutil.ChartDir(), "--show-only", "templates/scheduler.yaml"}
	for _, v := range set {
		args = append(args, "--set", v)
	}
	out := c.Helm(t, args...)
	for _, doc := range strings.Split(out, "\n---") {
		var cm corev1.ConfigMap
		if yaml.Unmarshal([]byte(doc), &cm) == nil && cm.Kind == "ConfigMap" {
			if config, ok := cm.Data["scheduler-config.yaml"]; ok {
				return config
			}
		}
	}
	t.Fatalf("The chart renders no scheduler ConfigMap with scheduler-config.yaml:\n%s", out)
	return ""
}

// fidNodes creates the fake nodes the fidelity tests place pods on: eight
// each of three shapes, the first two with Batch tier allocatable.
func fidNodes(t *testing.T, c *testutil.Cluster) []*corev1.Node {
	t.Helper()
	shape := func(cpu, mem, batchCPU, batchMem string) testutil.NodeOptions {
		rl := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		if batchCPU != "" {
			rl[extension.ResourceBatchCPU] = resource.MustParse(batchCPU)
			rl[extension.ResourceBatchMemory] = resource.MustParse(batchMem)
		}
		return testutil.NodeOptions{Capacity: rl}
	}
	c.CreateNodes(t, "fa", 8, shape("16", "64Gi", "6000", "24Gi"))
	c.CreateNodes(t, "fb", 8, shape("32", "128Gi", "12000", "48Gi"))
	c.CreateNodes(t, "fc", 8, shape("8", "32Gi", "", ""))
	list, err := c.Kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: testutil.LabelFakeNode + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*corev1.Node
	for i := range list.Items {
		n := &list.Items[i]
		if _, ok := n.Status.Allocatable[extension.ResourceBatchCPU]; strings.HasPrefix(n.Name, "fc") == ok {
			t.Fatalf("node %s allocatable %v: the Batch tier resources the test gave it were not kept", n.Name, n.Status.Allocatable)
		}
		nodes = append(nodes, n)
	}
	if len(nodes) != 24 {
		t.Fatalf("%d fake nodes, want 24", len(nodes))
	}
	return nodes
}

// TestSimSchedulerFidelity holds the waterline policies' simulated
// scheduler to a real waterline-scheduler running the chart's profile.
func TestSimSchedulerFidelity(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	nodes := fidNodes(t, c)

	// The NodeMetrics, as the agents would report them. The simulator
	// judges them at simNow, a second after they were written; the real
	// scheduler sees them kept fresh by the refresher below (same usage,
	// newer updateTime).
	written := time.Now().Truncate(time.Second)
	simNow := written.Add(time.Second)
	metrics := map[string]*v1alpha1.NodeMetric{}
	for i, n := range nodes {
		if n.Name == "fc-6" {
			continue // no agent: LoadAware steps aside
		}
		cpu := n.Status.Allocatable.Cpu().MilliValue() * int64(i*11%90) / 100
		mem := n.Status.Allocatable.Memory().Value() * int64(i*13%80) / 100
		nm := fidMetric(n.Name, cpu, mem, written, n.Name == "fa-3", n.Name == "fb-5")
		metrics[n.Name] = nm
	}
	var mu sync.Mutex
	writeAll := func(updated time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		for _, nm := range metrics {
			fresh := nm.DeepCopy()
			if fresh.Name != "fa-3" {
				fresh.Status.UpdateTime = &metav1.Time{Time: updated}
			}
			if err := fidWriteMetric(t, c, fresh); err != nil {
				return err
			}
		}
		return nil
	}
	if err := writeAll(written); err != nil {
		t.Fatalf("Writing NodeMetrics: %v", err)
	}
	go func() {
		ticker := time.NewTicker(30 * time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := writeAll(time.Now()); err != nil && ctx.Err() == nil {
					t.Errorf("Refreshing NodeMetrics: %v", err)
				}
			}
		}
	}()

	profile, laWeight := fidProfile(t, c)
	if laWeight != sim.DefaultLoadAwareWeight {
		t.Errorf("the chart weighs LoadAware %d, the simulator's default is %d", laWeight, sim.DefaultLoadAwareWeight)
	}
	simulated, err := sim.NewScheduler(sim.DefaultLoadAwareSpec(), laWeight, nodes, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, nm := range metrics {
		if err := simulated.SetNodeMetric(nm); err != nil {
			t.Fatal(err)
		}
	}

	c.StartScheduler(t, profile)
	fidCompare(t, c, simulated, simNow, fidPod)
}

// TestSimBaselineSchedulerFidelity holds the plain-Kubernetes policies'
// simulated scheduler (k8s-default, k8s-besteffort) to a real
// kube-scheduler running the default profile, with the pods those
// policies make: Prod pods with requests, Batch pods with CPU requests
// equal to their limits, and BestEffort pods.
func TestSimBaselineSchedulerFidelity(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	nodes := fidNodes(t, c)
	simulated := sim.NewDefaultScheduler(nodes, 1)
	// The default profile (waterline-scheduler registers LoadAware and
	// BandPreemption but enables neither unless configured), without
	// DefaultPreemption: a preemption would take a pod the simulated
	// Scheduler keeps off its node (the simulation's preemption is held to
	// the core by TestPreemptionAgreesWithCore).
	c.StartScheduler(t, fmt.Sprintf(`profiles:
- schedulerName: %s
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
`, fidScheduler))
	fidCompare(t, c, simulated, time.Now(), fidBaselinePod)
}

// fidCompare creates fidPods pods made by newPod one at a time, waits for
// the real scheduler's verdict on each and holds it to the simulated
// Scheduler's at simNow: a pod the real one binds must fit the node it
// chose in the simulation and score there as high as on the simulation's
// best node; a pod it refuses must fit no simulated node. The simulation
// then counts the pod where it really went.
func fidCompare(t *testing.T, c *testutil.Cluster, simulated *sim.Scheduler, simNow time.Time, newPod func(*rand.Rand, int) *corev1.Pod) {
	t.Helper()
	c.CreateNamespace(t, fidNamespace, nil)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(42, 7))
	var exact, tied, unschedulable int
	for i := range fidPods {
		pod := newPod(rng, i)
		created, err := c.Kube.CoreV1().Pods(fidNamespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("Creating pod %s: %v", pod.Name, err)
		}
		bound := fidOutcome(t, c, created.Name)
		verdicts := simulated.Evaluate(created, simNow)
		best, bestScore := []string{}, int64(-1)
		var realVerdict *sim.NodeScore
		for j := range verdicts {
			v := &verdicts[j]
			if v.Node == bound {
				realVerdict = v
			}
			if !v.Fits {
				continue
			}
			switch {
			case v.Score > bestScore:
				best, bestScore = []string{v.Node}, v.Score
			case v.Score == bestScore:
				best = append(best, v.Node)
			}
		}
		if bound == "" {
			unschedulable++
			if len(best) > 0 {
				t.Errorf("pod %d %s: the real scheduler found no node, the simulator would place it on %v (score %d)", i, fidDescribe(created), best, bestScore)
			}
			if err := c.Kube.CoreV1().Pods(fidNamespace).Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		switch {
		case realVerdict == nil || !realVerdict.Fits:
			t.Errorf("pod %d %s: the real scheduler bound it to %s, where the simulator finds it does not fit (simulator's best: %v, score %d)",
				i, fidDescribe(created), bound, best, bestScore)
		case realVerdict.Score != bestScore:
			t.Errorf("pod %d %s: the real scheduler bound it to %s (simulated score %d), the simulator's best nodes are %v (score %d)",
				i, fidDescribe(created), bound, realVerdict.Score, best, bestScore)
		case len(best) == 1:
			exact++
		default:
			tied++
		}
		if pick := simulated.Schedule(created, simNow); pick == "" || !fidContains(best, pick) {
			t.Errorf("pod %d: the simulator's own pick %q is not among its best nodes %v", i, pick, best)
		}
		created.Spec.NodeName = bound
		if err := simulated.Bind(created, bound, simNow); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d pods: %d on the simulator's only best node, %d on one of its equally scored best nodes, %d unschedulable in both",
		fidPods, exact, tied, unschedulable)
	if unschedulable == 0 || exact == 0 {
		t.Errorf("the sequence never exercised a refusal (%d) or a unique best node (%d): it tests too little", unschedulable, exact)
	}
}

func fidContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func fidDescribe(p *corev1.Pod) string {
	var parts []string
	for name, q := range p.Spec.Containers[0].Resources.Requests {
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	return fmt.Sprintf("%s (band %s, %s)", p.Name, extension.BandOf(p), strings.Join(parts, ","))
}

// fidPodShell is pod i of a sequence before its resources: one container,
// for the test's scheduler.
func fidPodShell(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: fidNamespace, Name: fmt.Sprintf("p%02d", i)},
		Spec: corev1.PodSpec{
			SchedulerName: fidScheduler,
			Containers:    []corev1.Container{{Name: "c", Image: "fake"}},
		},
	}
}

// fidPod is pod i of the sequence: half Prod pods asking for cpu and
// memory, half Batch pods (waterline.dev/band=batch) asking for the Batch
// tier resources, of a few sizes each.
func fidPod(rng *rand.Rand, i int) *corev1.Pod {
	pod := fidPodShell(i)
	r := &pod.Spec.Containers[0].Resources
	if rng.IntN(2) == 0 {
		cpu := []string{"500m", "1", "2", "4"}[rng.IntN(4)]
		mem := []string{"1Gi", "2Gi", "4Gi", "8Gi"}[rng.IntN(4)]
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return pod
	}
	pod.Labels = map[string]string{extension.LabelBand: string(extension.BandBatch)}
	cpu := []string{"1000", "2000", "4000"}[rng.IntN(3)]
	mem := []string{"1Gi", "2Gi", "4Gi"}[rng.IntN(3)]
	r.Requests = corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse(cpu), extension.ResourceBatchMemory: resource.MustParse(mem)}
	r.Limits = r.Requests.DeepCopy()
	return pod
}

// fidBaselinePod is pod i of the plain-Kubernetes sequence: a quarter
// each of Prod pods asking for cpu and memory, Batch pods as k8s-default
// makes them (requests equal to limits), Batch pods as k8s-besteffort
// makes them (memory only: LeastAllocated counts the scheduler's non-zero
// cpu default) and BestEffort pods (no requests: BalancedAllocation skips
// them). One in five cpu sizes is 30 cores, which only an emptyish 32-core
// node takes, so that the sequence meets refusals.
func fidBaselinePod(rng *rand.Rand, i int) *corev1.Pod {
	pod := fidPodShell(i)
	r := &pod.Spec.Containers[0].Resources
	cpu := []string{"500m", "1", "2", "4", "30"}[rng.IntN(5)]
	mem := []string{"1Gi", "2Gi", "4Gi", "16Gi"}[rng.IntN(4)]
	switch rng.IntN(4) {
	case 0:
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	case 1:
		pod.Labels = map[string]string{extension.LabelBand: string(extension.BandBatch)}
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		r.Limits = r.Requests.DeepCopy()
	case 2:
		pod.Labels = map[string]string{extension.LabelBand: string(extension.BandBatch)}
		r.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
	default:
		pod.Labels = map[string]string{extension.LabelBand: string(extension.BandBatch)}
	}
	return pod
}

// fidMetric is a node's NodeMetric: node usage only (no pod has reported
// yet, so LoadAware estimates every pod it placed), reported at updated,
// or ten minutes before it when stale.
func fidMetric(node string, cpuMilli, memBytes int64, updated time.Time, stale, forbid bool) *v1alpha1.NodeMetric {
	if stale {
		updated = updated.Add(-10 * time.Minute)
	}
	nm := &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status: v1alpha1.NodeMetricStatus{
			UpdateTime: &metav1.Time{Time: updated},
			NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memBytes, resource.BinarySI),
			}},
		},
	}
	if forbid {
		nm.Status.Conditions = []metav1.Condition{{
			Type: v1alpha1.ConditionForbidScheduling, Status: metav1.ConditionTrue, Reason: "OverWaterline",
			Message: "cpu over the forbid-scheduling waterline", LastTransitionTime: metav1.Time{Time: updated},
		}}
	}
	return nm
}

func fidWriteMetric(t *testing.T, c *testutil.Cluster, want *v1alpha1.NodeMetric) error {
	ctx := t.Context()
	client := c.Waterline.WaterlineV1alpha1().NodeMetrics()
	nm, err := client.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		nm, err = client.Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	nm.Status = want.Status
	if _, err = client.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	// A stale report was stored when it was made, as an agent gone since
	// would have left it (the simulator judges it by its updateTime).
	if updated := want.Status.UpdateTime; updated != nil && time.Since(updated.Time) > time.Minute {
		return c.BackdateReport(ctx, want.Name, updated.Time)
	}
	return nil
}

// fidOutcome waits until the real scheduler bound the pod (returning the
// node) or marked it unschedulable (returning "").
func fidOutcome(t *testing.T, c *testutil.Cluster, name string) string {
	t.Helper()
	var node string
	testutil.Eventually(t, time.Minute, 100*time.Millisecond, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(fidNamespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			node = p.Spec.NodeName
			return true, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, fmt.Errorf("pod %s neither bound nor unschedulable: %+v", name, p.Status.Conditions)
	}, "waiting for the scheduler to decide on pod %s", name)
	return node
}
