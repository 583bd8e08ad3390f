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
	"os"
	"path/filepath"
	"strings"
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

// TestTiersBatchPodsLandOnlyWhereBatchFits runs the whole tier path on the
// real API server: the manager's tiers controller turns each kwok node's
// NodeMetric into Batch allocatable, the colocation profile webhook turns
// a plain pod of the "data" namespace into a Batch pod (batch-cpu,
// priority class, schedulerName), and the real waterline-scheduler, with
// the local-up profile (LoadAware + BandPreemption), places it.
//
// Three 32-CPU nodes, Batch threshold 50 %: Batch CPU = 16 − node usage,
// so usage 14, 15 and 15.8 CPU give 2000, 1000 and 200 millicores. Six
// pods of 600m each: three fit on the first node, one on the second, none
// on the third; the last two stay Pending for want of batch-cpu. When the
// third node's usage falls to 14 CPU, its Batch allocatable grows to 2000
// and the two pending pods land there.
func TestTiersBatchPodsLandOnlyWhereBatchFits(t *testing.T) {
	t.Parallel()
	c := startWithWebhooks(t, true)
	ctx := t.Context()
	wlClient := c.Waterline.WaterlineV1alpha1()

	if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-batch"}, Value: 5500}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Batch threshold 50 %: the Batch tier then ends well under
	// LoadAware's 75 % CPU line, so what keeps a pod off a node here is
	// batch-cpu, not load.
	if _, err := wlClient.ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{
			Tiers: &v1alpha1.TierPolicy{BatchCPUThresholdPercent: ptr.To[int32](50), BatchMemoryThresholdPercent: ptr.To[int32](50)},
			Profiles: []v1alpha1.ColocationProfile{{
				Name:              "data-batch",
				NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}},
				Band:              "batch",
				PriorityClassName: "waterline-batch",
				SchedulerName:     testutil.SchedulerName,
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.CreateNamespace(t, "data", map[string]string{"team": "data"})
	nodes := c.CreateNodes(t, "tier", 3, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})
	names := []string{nodes[0].Name, nodes[1].Name, nodes[2].Name}

	// What the nodes' agents would report: node usage (CPU cores), no
	// system usage, 20 GiB of memory used.
	report := func(node string, cpu string) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
			nm, err := wlClient.NodeMetrics().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			now := metav1.NewTime(time.Now())
			nm.Status = v1alpha1.NodeMetricStatus{
				UpdateTime: &now,
				NodeMetric: &v1alpha1.NodeMetricInfo{
					NodeUsage:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("20Gi")},
					SystemUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")},
				},
			}
			_, err = wlClient.NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{})
			return err == nil, err
		}, "reporting usage %s for node %s", cpu, node)
	}
	batchCPU := func(node string) int64 {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q, ok := n.Status.Allocatable[extension.ResourceBatchCPU]
		if !ok {
			return -1
		}
		return q.Value()
	}
	waitBatch := func(node string, want int64) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
			got := batchCPU(node)
			return got == want, fmt.Errorf("batch-cpu %d", got)
		}, "node %s batch-cpu %d", node, want)
	}
	// Batch = 32 × 50 % − usage: 16 − 14 = 2, 16 − 15 = 1, 16 − 15.8 = 0.2 CPU.
	for i, u := range []string{"14", "15", "15.8"} {
		report(names[i], u)
	}
	for i, want := range []int64{2000, 1000, 200} {
		waitBatch(names[i], want)
	}

	body, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "scheduler", "local-up.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, profiles, ok := strings.Cut(string(body), "\nprofiles:")
	if !ok {
		t.Fatal("config/scheduler/local-up.yaml has no profiles")
	}
	c.StartScheduler(t, "profiles:"+profiles)

	// The webhook's cache needs a moment to see the policy.
	plain := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "work", Image: "busybox",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				}}}},
		}
	}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods("data").Create(ctx, plain("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Spec.SchedulerName == testutil.SchedulerName, fmt.Errorf("not mutated yet")
	}, "waiting for the colocation profile webhook to apply")

	var pods []string
	for i := range 6 {
		name := fmt.Sprintf("job-%d", i)
		got, err := c.Kube.CoreV1().Pods("data").Create(ctx, plain(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q := got.Spec.Containers[0].Resources.Requests[extension.ResourceBatchCPU]; q.Value() != 600 {
			t.Fatalf("pod %s asks batch-cpu %s, want 600 (the webhook's translation of 600m)", name, q.String())
		}
		pods = append(pods, name)
	}

	placement := func() (map[string]string, []string) {
		t.Helper()
		bound := map[string]string{}
		var pending []string
		for _, name := range pods {
			p, err := c.Kube.CoreV1().Pods("data").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName != "" {
				bound[name] = p.Spec.NodeName
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse &&
					strings.Contains(cond.Message, "Insufficient "+string(extension.ResourceBatchCPU)) {
					pending = append(pending, name)
				}
			}
		}
		return bound, pending
	}
	perNode := func(bound map[string]string) map[string]int {
		out := map[string]int{}
		for _, n := range bound {
			out[n]++
		}
		return out
	}
	var bound map[string]string
	testutil.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		var pending []string
		bound, pending = placement()
		return len(bound) == 4 && len(pending) == 2, fmt.Errorf("bound %v, pending for want of batch-cpu %v", bound, pending)
	}, "waiting for 4 pods to land and 2 to stay pending for want of batch-cpu")
	// 3 × 600 = 1800 ≤ 2000; 1 × 600 ≤ 1000; 600 > 200.
	want := map[string]int{names[0]: 3, names[1]: 1}
	if got := perNode(bound); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pods per node = %v, want %v", got, want)
	}
	// They stay pending: Batch is used up.
	time.Sleep(3 * time.Second)
	if b, _ := placement(); len(b) != 4 {
		t.Errorf("bound pods after waiting = %v, want still 4", b)
	}

	// The third node's Prod load falls: its Batch allocatable grows and
	// the pending pods land there.
	report(names[2], "14")
	waitBatch(names[2], 2000)
	testutil.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		bound, _ = placement()
		return len(bound) == 6, fmt.Errorf("bound %v", bound)
	}, "waiting for the pending pods to land on the node whose Batch tier grew")
	want[names[2]] = 2
	if got := perNode(bound); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pods per node = %v, want %v", got, want)
	}
}
