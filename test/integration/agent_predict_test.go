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
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/predictor"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// The load the fixture node reports: two Prod pods, busy for the first
// predHighFor, then quiet; the system beside them is steady.
const (
	predHighFor       = 40 * time.Second
	predHighCPU       = 1.5 // cores per pod
	predLowCPU        = 0.5
	predHighMemory    = 3 << 30 // bytes per pod
	predLowMemory     = 1 << 30
	predSystemCPU     = 0.25
	predSystemMemory  = 512 << 20
	predNodeCPU       = 32
	predNodeMemory    = 128 << 30
	predUpdateWindow  = predictor.DefaultUpdateInterval
	predMetricsSeries = "waterline_agent_predictor_windows_total"
	// predRetention is the metric cache's retention: long enough to feed
	// again, after the restart, the (at most two) windows fed between the
	// predictor's checkpoint and the kill; too short to reach back to the
	// busy phase by then (the first checkpoint comes 2 minutes in).
	predRetention = 90 * time.Second
)

// predFixture drives a fixture cgroup tree and proc directory the way a
// node's kernel would: cumulative CPU counters that advance at the
// phase's rates, and memory that follows the phase, rewritten every
// 100 ms until the test ends.
type predFixture struct {
	tree    cgroupstest.Tree
	procDir string
	cgroups []string
}

func (f *predFixture) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	start := time.Now()
	podNanos := make([]float64, len(f.cgroups))
	var busy, idle float64
	write := func() error {
		mem := uint64(predLowMemory)
		if time.Since(start) < predHighFor {
			mem = predHighMemory
		}
		for i, cg := range f.cgroups {
			if err := f.tree.SetCPU(cg, uint64(podNanos[i])); err != nil {
				return err
			}
			if err := f.tree.SetMemory(cg, mem, 0); err != nil {
				return err
			}
		}
		used := uint64(len(f.cgroups))*mem + predSystemMemory
		if err := cgroupstest.Proc(f.procDir, uint64(busy), uint64(idle), predNodeMemory, predNodeMemory-used); err != nil {
			return err
		}
		return nil
	}
	advance := func(dt time.Duration) {
		cpu := float64(predLowCPU)
		if time.Since(start) < predHighFor {
			cpu = predHighCPU
		}
		for i := range podNanos {
			podNanos[i] += cpu * float64(dt.Nanoseconds())
		}
		total := cpu*float64(len(podNanos)) + predSystemCPU
		busy += total * dt.Seconds() * 100 // USER_HZ
		idle += (predNodeCPU - total) * dt.Seconds() * 100
	}
	if err := write(); err != nil {
		t.Fatalf("Writing the fixture: %v", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-ticker.C:
				advance(now.Sub(last))
				last = now
				if err := write(); err != nil {
					t.Errorf("Writing the fixture: %v", err)
					return
				}
			}
		}
	}()
}

// predStatus waits for the node's NodeMetric status to satisfy ok and
// returns it.
func predStatus(t *testing.T, c *testutil.Cluster, node, what string, ok func(*v1alpha1.NodeMetricStatus) error) *v1alpha1.NodeMetricStatus {
	t.Helper()
	var st *v1alpha1.NodeMetricStatus
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if err := ok(&nm.Status); err != nil {
			return false, err
		}
		st = &nm.Status
		return true, nil
	}, "waiting for %s", what)
	return st
}

// writtenSince accepts a status written at or after the second after t
// (API times have whole seconds). Used with t = when StartAgent returned:
// the agent is ready only after a full collect cycle, so the predictor
// has made its first prediction by then, and every status the agent
// writes from then on carries it, not the previous agent's.
func writtenSince(t time.Time) func(*v1alpha1.NodeMetricStatus) error {
	after := t.Truncate(time.Second).Add(time.Second)
	return func(st *v1alpha1.NodeMetricStatus) error {
		if st.UpdateTime == nil || st.UpdateTime.Time.Before(after) {
			return fmt.Errorf("updateTime %v, want at or after %s", st.UpdateTime, after.Format(time.RFC3339))
		}
		if st.PredictionTime == nil {
			return fmt.Errorf("no predictionTime")
		}
		return nil
	}
}

func predDescribe(st *v1alpha1.NodeMetricStatus) string {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPredictionReady)
	cond := "no PredictionReady"
	if c != nil {
		cond = fmt.Sprintf("PredictionReady=%s (%s: %s)", c.Status, c.Reason, c.Message)
	}
	return fmt.Sprintf("prodPeak cpu %s memory %s, prodReclaimable cpu %s memory %s, predicted at %v, %s",
		st.ProdPeak.Cpu(), st.ProdPeak.Memory(), st.ProdReclaimable.Cpu(), st.ProdReclaimable.Memory(), st.PredictionTime, cond)
}

// TestAgentPredictionSurvivesKill: the agent (the real binary) killed
// with SIGKILL mid-run and started again reports the same Prod peak as
// before, because its predictor restores its histograms from its
// checkpoint; started again without that checkpoint it reports a very
// different one, learned from the metric cache's last minute only.
//
// The node is a fixture tree (no root needed): two Prod pods that use
// 1.5 cores and 3Gi each for the first 40 s, then 0.5 core and 1Gi, and a
// system using 0.25 core and 512Mi. The metric cache keeps 90 s
// (--metric-retention), so by the kill it only holds the quiet phase: the
// busy phase survives only in the predictor's histograms.
//
// Tolerance: none. The restarted agent restores the histograms as they
// were at the predictor's last checkpoint (bit-exact: JSON round-trips
// float64) and feeds the windows that ended after it again from the metric
// cache, which it restores from its own checkpoint (every second) -- the
// same float32 values, averaged the same way. The kill comes early in an
// update window (just after one was fed), so the restarted agent's first
// prediction sees exactly the windows the last one before the kill saw;
// the test checks that it was made before the next window could end.
// N-sigma's mean and deviation do not depend on when they are evaluated,
// and the rounding to millicores and bytes is the same.
func TestAgentPredictionSurvivesKill(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	node := c.CreateNodes(t, "predict", 1, testutil.NodeOptions{})[0].Name
	// As the manager would write it: report every second (so the status
	// before the kill and after the restart is fresh); cold start 0 so
	// that the test's young pods are predicted from their history.
	if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(ctx, &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: v1alpha1.NodeMetricSpec{
			CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](1), AggregateDurationSeconds: ptr.To[int64](30)},
			PredictPolicy: &v1alpha1.PredictPolicy{ColdStartSeconds: ptr.To[int64](0)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.CreateNamespace(t, "online", nil)

	root := t.TempDir()
	layout, err := cgroups.NewLayout(filepath.Join(root, "cgroup"), cgroups.V1, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	fx := &predFixture{tree: cgroupstest.Tree{Layout: layout}, procDir: filepath.Join(root, "proc")}
	if err := fx.tree.Init(); err != nil {
		t.Fatal(err)
	}
	// Requests 8 cores and 32Gi each, far above any prediction below, so
	// a peak that fell back to requests would show.
	for i := range 2 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "online", Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{extension.LabelBand: string(extension.BandProd)}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
				Name: "web", Image: "web",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}},
			}}},
		}
		if _, err := c.Kube.CoreV1().Pods("online").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod = c.WaitPodRunning(t, "online", pod.Name, time.Minute)
		cg := layout.PodCgroup(pod.UID, pod.Status.QOSClass)
		if err := fx.tree.Cgroup(cg, cgroupstest.Usage{}); err != nil {
			t.Fatal(err)
		}
		fx.cgroups = append(fx.cgroups, cg)
	}
	fx.run(t)

	opts := testutil.AgentOptions{
		NodeName:      node,
		CgroupRoot:    layout.Root(),
		CgroupVersion: string(cgroups.V1),
		CgroupDriver:  string(cgroups.DriverCgroupfs),
		ProcRoot:      fx.procDir,
		Args:          []string{"--metric-retention", predRetention.String(), "--checkpoint-interval", "1s"},
	}
	first := c.StartAgent(t, opts)
	checkpoint := filepath.Join(first.Options.StateDir, predictor.CheckpointFile)
	windows := func(a *testutil.Agent) float64 {
		v, _ := testutil.MetricValue(a.Metrics(t), predMetricsSeries)
		return v
	}

	// The predictor checkpoints every 2 minutes (its default).
	testutil.Eventually(t, predictor.DefaultCheckpointInterval+time.Minute, time.Second, func() (bool, error) {
		_, err := os.Stat(checkpoint)
		return err == nil, err
	}, "waiting for the predictor's first checkpoint")
	// Build now what the restart will run, so that a change in the tree
	// meanwhile does not make the restart slow.
	testutil.BuildBinary(t, "waterline-agent")
	// Then the next window: the kill lands early in the one after.
	fedBefore := windows(first)
	testutil.Eventually(t, predUpdateWindow+10*time.Second, 100*time.Millisecond, func() (bool, error) {
		return windows(first) > fedBefore, nil
	}, "waiting for the predictor to feed a window")
	fed := time.Now()
	before := predStatus(t, c, node, "a status written after the window was fed", func(st *v1alpha1.NodeMetricStatus) error {
		if st.UpdateTime == nil || st.UpdateTime.Time.Before(fed.Truncate(time.Second).Add(time.Second)) {
			return fmt.Errorf("updateTime %v", st.UpdateTime)
		}
		return nil
	})
	first.Kill()
	killed := time.Now()
	t.Logf("Before the kill (%s after the window was fed): %s", killed.Sub(fed).Round(time.Millisecond), predDescribe(before))
	if cond := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionPredictionReady); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("Before the kill the prediction is not ready: %s", predDescribe(before))
	}

	second := c.StartAgent(t, first.Options) // the same --state-dir
	ready := time.Now()
	t.Logf("Restarted and ready %s after the kill", ready.Sub(killed).Round(time.Millisecond))
	after := predStatus(t, c, node, "a status of the restarted agent", writtenSince(ready))
	if after.PredictionTime.Time.Before(killed.Truncate(time.Second)) {
		t.Fatalf("The restarted agent reported a prediction made at %s, before the kill", after.PredictionTime.Format(time.RFC3339))
	}
	t.Logf("After the restart: %s", predDescribe(after))
	if deadline := fed.Add(predUpdateWindow - 2*time.Second); !after.PredictionTime.Time.Before(deadline) {
		t.Fatalf("The restarted agent predicted at %s, %s after the last window before the kill was fed: "+
			"the next window may have entered its histograms, so the two predictions are not comparable (machine too slow?)",
			after.PredictionTime.Format(time.RFC3339), after.PredictionTime.Sub(fed))
	}
	same := func(name string, a, b corev1.ResourceList) {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			qa, qb := a[r], b[r]
			if qa.Cmp(qb) != 0 {
				t.Errorf("%s %s: %s before the kill, %s after the restart; want the same", name, r, &qa, &qb)
			}
		}
	}
	same("prodPeak", before.ProdPeak, after.ProdPeak)
	same("prodReclaimable", before.ProdReclaimable, after.ProdReclaimable)
	if cond := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionPredictionReady); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("After the restart the prediction is not ready: %s", predDescribe(after))
	}

	second.Kill()
	if log, err := os.ReadFile(second.LogPath); err != nil || !strings.Contains(string(log), "Restored the usage histograms from the predictor checkpoint") {
		t.Errorf("The restarted agent's log (%s) does not say it restored the predictor checkpoint (%v)", second.LogPath, err)
	}

	// Control: the same restart without the predictor's checkpoint. The
	// metric cache's 90 s hold only the quiet phase: 1Gi per pod +
	// 512Mi of system = 2.5Gi in every window, no spread, so NSigmaV2
	// predicts 2.5Gi × 1.1 (safety margin) = 2.75Gi, where the restored
	// busy history gave several times that.
	killedAgain := time.Now()
	if err := os.Remove(checkpoint); err != nil {
		t.Fatal(err)
	}
	third := c.StartAgent(t, first.Options)
	cold := predStatus(t, c, node, "a status of the agent without its checkpoint", writtenSince(time.Now()))
	if cold.PredictionTime.Time.Before(killedAgain.Truncate(time.Second)) {
		t.Fatalf("The agent without its checkpoint reported a prediction made at %s, before it started", cold.PredictionTime.Format(time.RFC3339))
	}
	t.Logf("Restarted without the predictor checkpoint: %s", predDescribe(cold))
	coldMem, restoredMem := float64(cold.ProdPeak.Memory().Value()), float64(after.ProdPeak.Memory().Value())
	if want := 2.75 * (1 << 30); math.Abs(coldMem-want) > 0.01*want {
		t.Errorf("Without the checkpoint prodPeak memory is %.0f, want 2.75Gi = %.0f (±1%%)", coldMem, want)
	}
	if restoredMem < 3*coldMem {
		t.Errorf("The restored prodPeak memory %.0f is not well above the one learned from the cache alone (%.0f): the busy history did not survive", restoredMem, coldMem)
	}
	third.Stop()
}
