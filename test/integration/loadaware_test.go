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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// The LoadAware arithmetic this test relies on, with the shipped sample
// config/scheduler/loadaware.yaml at a cpu threshold of 65 % (tighter than
// its default 75 %, set by the test):
// nodes have 16 cores (16000m); a test pod asks for 1 core and is estimated
// at 850m until its NodeMetric reports it (never, here: the test is the
// agent and reports node usage only); a node is refused when
// round(100 × (usage + 850m × pods + 850m) / 16000m) > 65, that is when
// usage + 850m × (pods + 1) > 10479m.
const (
	laNodeMilli  = 16000
	laPodMilli   = 850
	laLimitMilli = 10479 // the most that still rounds to 65 %
	laCPU        = "1"
	laMemory     = "1Gi"
	laNamespace  = "loadaware"
	// laOnlyScheduler is a second profile of the same scheduler that scores
	// by LoadAware alone, so that where its pods go shows LoadAware's
	// doing and not NodeResourcesFit's spreading by requests.
	laOnlyScheduler = "loadaware-only"
)

// TestLoadAware runs the real waterline-scheduler with the shipped
// config/scheduler/loadaware.yaml against a real API server and 60 kwok
// nodes whose NodeMetrics the test writes, as waterline-agent would:
//
//	la-0        cold: 800m used
//	la-1..la-4  hot: 12 cores used (75 %), over the threshold already
//	la-5        stale: last report 10 minutes ago
//	la-6        forbid-scheduling: 1600m used, ForbidScheduling=True
//	la-7..la-59 warm: 4800m + (i mod 5) × 400m used (30-40 %)
func TestLoadAware(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()

	const nodes = 60
	c.CreateNodes(t, "la", nodes, testutil.NodeOptions{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	})
	cold, stale, forbid := "la-0", "la-5", "la-6"
	hot := []string{"la-1", "la-2", "la-3", "la-4"}
	r := &reporter{c: c, usage: map[string]int64{}, stale: map[string]bool{stale: true}, forbid: map[string]bool{forbid: true}}
	r.usage[cold] = 800
	for _, n := range hot {
		r.usage[n] = 12000
	}
	r.usage[stale] = 0
	r.usage[forbid] = 1600
	for i := 7; i < nodes; i++ {
		r.usage[fmt.Sprintf("la-%d", i)] = 4800 + int64(i%5)*400
	}
	r.reportAll(t)
	// Keep the fresh NodeMetrics fresh (the expiry is 180 s), as the agent
	// would, until the test ends.
	go r.run(t, 20*time.Second)

	// The arithmetic of this test is written for a 65 % cpu threshold, a
	// tighter one than the sample's default.
	sample := sampleLoadAwareProfiles(t)
	profiles := strings.Replace(sample, "        cpu: 75\n", "        cpu: 65\n", 1)
	if profiles == sample {
		t.Fatal("loadaware.yaml no longer sets usageThresholds cpu: 75; update this test's threshold")
	}
	c.StartScheduler(t, profiles+`
- schedulerName: `+laOnlyScheduler+`
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
    score:
      disabled:
      - name: "*"
      enabled:
      - name: LoadAware
`)
	c.CreateNamespace(t, laNamespace, nil)

	t.Run("a pod goes to the least used node", func(t *testing.T) {
		createLAPod(t, c, "first", laOnlyScheduler, "", nil)
		// la-0: (800 + 850) → cpu score ⌊(16000 − 1650) / 160⌋ = 89; the next
		// best, la-6 (1600 + 850), scores 84; warm nodes 64 or less.
		if got := waitBound(t, c, "first")["first"]; got != cold {
			t.Errorf("first pod bound to %s, want the coldest node %s", got, cold)
		}
	})

	t.Run("a burst of 30 pods does not pile onto the cold node", func(t *testing.T) {
		var names []string
		for i := range 30 {
			name := fmt.Sprintf("burst-%02d", i)
			createLAPod(t, c, name, laOnlyScheduler, "", nil)
			names = append(names, name)
		}
		bound := waitBound(t, c, names...)
		perNode := map[string]int{}
		for _, node := range bound {
			perNode[node]++
		}
		// Each Reserve counts 850m on its node at once. With k pods la-0
		// scores ⌊((16000 − 800 − 850(k+1)) / 160 + (64Gi − 16Gi −
		// 0.7Gi(k+1)) / 0.64Gi) / 2⌋: 68 at k = 4, as a fresh 4800m node,
		// 65 at k = 5. So la-0 holds at most 5 pods with "first", and the
		// rest spread one or two per node.
		onCold := perNode[cold] + 1
		t.Logf("burst pods per node: %v (and %q on %s)", perNode, "first", cold)
		if onCold > 5 {
			t.Errorf("the cold node holds %d pods, want at most 5 (Reserve must make it look busier): %v", onCold, perNode)
		}
		if len(perNode) < 15 {
			t.Errorf("the burst went to %d nodes, want at least 15: %v", len(perNode), perNode)
		}
		for _, n := range append([]string{stale}, hot...) {
			if perNode[n] > 0 {
				t.Errorf("%d burst pods went to %s, which LoadAware must refuse", perNode[n], n)
			}
		}
	})

	t.Run("a node fills up to its threshold and no further", func(t *testing.T) {
		// la-7 has 5600m used: 5600 + 850 × 5 = 9850 (62 %) fits, a sixth pod
		// makes 10700 (67 %). So it ends with exactly 5 of our pods,
		// whatever the burst left there.
		target := "la-7"
		var names []string
		for i := range 8 {
			name := fmt.Sprintf("fill-%d", i)
			createLAPod(t, c, name, testutil.SchedulerName, target, nil)
			names = append(names, name)
		}
		testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
			on := podsOn(t, c)[target]
			if on < 5 {
				return false, fmt.Errorf("%d pods on %s", on, target)
			}
			return true, nil
		}, "waiting for %s to fill up", target)
		for _, name := range names {
			p, err := c.Kube.CoreV1().Pods(laNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName == "" {
				pendingWith(t, c, name, "node(s) cpu usage exceed threshold")
			}
		}
		if on := podsOn(t, c)[target]; on != 5 {
			t.Errorf("%s holds %d pods, want 5 (5600m + 5 × 850m = 62 %%, six would be 67 %%)", target, on)
		}
	})

	t.Run("no pod lands on a hot node", func(t *testing.T) {
		createLAPod(t, c, "to-hot", testutil.SchedulerName, hot[0], nil)
		pendingWith(t, c, "to-hot", "node(s) cpu usage exceed threshold")
		checkNoNodeOverThreshold(t, c, r)
	})

	t.Run("a node with a stale NodeMetric is avoided", func(t *testing.T) {
		if on := podsOn(t, c)[stale]; on != 0 {
			t.Errorf("%d pods on the stale node %s, want none", on, stale)
		}
		createLAPod(t, c, "to-stale", testutil.SchedulerName, stale, nil)
		pendingWith(t, c, "to-stale", "node(s) nodeMetric expired")
	})

	t.Run("a Batch pod avoids a forbid-scheduling node while a Prod pod lands there", func(t *testing.T) {
		batch := map[string]string{extension.LabelBand: string(extension.BandBatch)}
		createLAPod(t, c, "batch-to-forbid", testutil.SchedulerName, forbid, batch)
		pendingWith(t, c, "batch-to-forbid", "node(s) forbid scheduling of batch and free pods")
		createLAPod(t, c, "prod-to-forbid", testutil.SchedulerName, forbid, nil)
		if got := waitBound(t, c, "prod-to-forbid")["prod-to-forbid"]; got != forbid {
			t.Errorf("prod pod bound to %s, want %s", got, forbid)
		}
		createLAPod(t, c, "batch-anywhere", testutil.SchedulerName, "", batch)
		if got := waitBound(t, c, "batch-anywhere")["batch-anywhere"]; got == forbid {
			t.Errorf("batch pod bound to the forbid-scheduling node %s", got)
		}
	})

	t.Run("pending pods go once their node cools down or reports again", func(t *testing.T) {
		// The NodeMetric updates requeue the pods LoadAware refused.
		r.set(hot[0], 2000, false)
		r.report(t, hot[0])
		r.set(stale, 1000, false)
		r.report(t, stale)
		bound := waitBound(t, c, "to-hot", "to-stale")
		if bound["to-hot"] != hot[0] || bound["to-stale"] != stale {
			t.Errorf("pods bound to %v, want to-hot on %s and to-stale on %s", bound, hot[0], stale)
		}
		checkNoNodeOverThreshold(t, c, r)
	})
}

// reporter writes NodeMetrics the way waterline-agent does: node usage,
// a fresh updateTime, the forbid-scheduling condition.
type reporter struct {
	c      *testutil.Cluster
	mu     sync.Mutex
	usage  map[string]int64 // millicores per node
	stale  map[string]bool  // reported 10 minutes in the past, never refreshed
	forbid map[string]bool
}

func (r *reporter) set(node string, milli int64, stale bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usage[node] = milli
	r.stale[node] = stale
}

func (r *reporter) get(node string) (milli int64, stale, forbid bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage[node], r.stale[node], r.forbid[node]
}

func (r *reporter) nodes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.usage {
		out = append(out, n)
	}
	return out
}

func (r *reporter) reportAll(t *testing.T) {
	for _, n := range r.nodes() {
		r.report(t, n)
	}
}

// run refreshes the fresh NodeMetrics every interval until the test ends.
func (r *reporter) run(t *testing.T, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-t.Context().Done():
			return
		case <-ticker.C:
		}
		for _, n := range r.nodes() {
			if _, stale, _ := r.get(n); !stale {
				if err := r.write(t, n); err != nil && t.Context().Err() == nil {
					t.Errorf("Refreshing the NodeMetric of %s: %v", n, err)
				}
			}
		}
	}
}

func (r *reporter) report(t *testing.T, node string) {
	t.Helper()
	if err := r.write(t, node); err != nil {
		t.Fatalf("Reporting the NodeMetric of %s: %v", node, err)
	}
}

func (r *reporter) write(t *testing.T, node string) error {
	ctx := t.Context()
	milli, stale, forbid := r.get(node)
	client := r.c.Waterline.WaterlineV1alpha1().NodeMetrics()
	nm, err := client.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		nm, err = client.Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	now := time.Now()
	if stale {
		now = now.Add(-10 * time.Minute)
	}
	updated := metav1.NewTime(now)
	nm.Status = v1alpha1.NodeMetricStatus{
		UpdateTime: &updated,
		NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(milli, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
		}},
	}
	if forbid {
		nm.Status.Conditions = []metav1.Condition{{
			Type: v1alpha1.ConditionForbidScheduling, Status: metav1.ConditionTrue,
			Reason: "OverWaterline", Message: "cpu over the forbid-scheduling waterline", LastTransitionTime: updated,
		}}
	}
	if _, err = client.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil || !stale {
		return err
	}
	// Stored then too, as an agent gone since would have left it.
	return r.c.BackdateReport(ctx, node, now)
}

// createLAPod creates a 1-core, 1Gi pod for scheduler, pinned to node when
// given.
func createLAPod(t *testing.T, c *testutil.Cluster, name, scheduler, node string, labels map[string]string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: laNamespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			Containers: []corev1.Container{{Name: "c", Image: "fake", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(laCPU), corev1.ResourceMemory: resource.MustParse(laMemory)},
			}}},
		},
	}
	if node != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	if _, err := c.Kube.CoreV1().Pods(laNamespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating pod %s: %v", name, err)
	}
}

// waitBound waits until every named pod is bound and returns pod → node.
func waitBound(t *testing.T, c *testutil.Cluster, names ...string) map[string]string {
	t.Helper()
	bound := map[string]string{}
	testutil.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		for _, name := range names {
			if bound[name] != "" {
				continue
			}
			p, err := c.Kube.CoreV1().Pods(laNamespace).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName == "" {
				return false, fmt.Errorf("pod %s not bound yet", name)
			}
			bound[name] = p.Spec.NodeName
		}
		return true, nil
	}, "waiting for %d pods to be bound", len(names))
	return bound
}

// pendingWith waits until the pod's PodScheduled condition gives reason,
// and checks it is still unbound.
func pendingWith(t *testing.T, c *testutil.Cluster, name, reason string) {
	t.Helper()
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(laNamespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s bound to %s, want it pending because %q", name, p.Spec.NodeName, reason)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && strings.Contains(cond.Message, reason) {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	}, "waiting for pod %s to be pending because %q", name, reason)
}

// podsOn counts the test's bound pods per node.
func podsOn(t *testing.T, c *testutil.Cluster) map[string]int {
	t.Helper()
	list, err := c.Kube.CoreV1().Pods(laNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for i := range list.Items {
		if n := list.Items[i].Spec.NodeName; n != "" {
			out[n]++
		}
	}
	return out
}

// checkNoNodeOverThreshold checks LoadAware's promise on every node: its
// reported usage plus 850m per pod bound there stays at or under 65 %.
func checkNoNodeOverThreshold(t *testing.T, c *testutil.Cluster, r *reporter) {
	t.Helper()
	for node, pods := range podsOn(t, c) {
		usage, _, _ := r.get(node)
		if est := usage + laPodMilli*int64(pods); est > laLimitMilli {
			t.Errorf("%s: %dm used + %d pods × %dm = %dm = %.1f %% of %dm, over the 65 %% threshold",
				node, usage, pods, laPodMilli, est, 100*float64(est)/laNodeMilli, laNodeMilli)
		}
	}
}
