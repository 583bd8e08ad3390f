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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestLoadAwareBurstNotUnderEstimated: node usage is an average over the
// agent's aggregation window (300 s), so pods that started seconds before
// a report are barely in it, even when the report already lists them with
// their usage. LoadAware must keep counting what the average does not hold
// yet; if it took the pods as reflected once they are older than the
// report interval, the node would look cold again and the next burst
// would pile onto it.
//
// bursty-0 runs 1 core and takes six pods (1 core asked, 850m estimated),
// which really use 1500m each. The agent (the test) reports with a 1 s
// interval a few seconds later: node usage 1000m + what 3 s of six pods add
// to a 300 s average, the six pods listed with 1500m each. What LoadAware
// knows bursty-0 carries is then 1000 + 6 × 1500 = 10000m (62.5 %), one
// more 850m pod makes 68 % > 65 %. The other nodes run 6 cores (37.5 %).
// A second burst of six pods, scored by LoadAware alone, must not go to
// bursty-0.
func TestLoadAwareBurstNotUnderEstimated(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	c.CreateNodes(t, "bursty", 4, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}})
	target := "bursty-0"
	policy := &v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](1), AggregateDurationSeconds: ptr.To[int64](300)}
	report := func(node string, milli int64, pods []string, podMilli int64) {
		t.Helper()
		if err := writeNodeMetric(t, c, node, policy, milli, pods, podMilli); err != nil {
			t.Fatal(err)
		}
	}
	report(target, 1000, nil, 0)
	for i := 1; i < 4; i++ {
		report(fmt.Sprintf("bursty-%d", i), 6000, nil, 0)
	}

	profiles := sampleLoadAwareProfiles(t)
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

	var first []string
	for i := range 6 {
		name := fmt.Sprintf("first-%d", i)
		createLAPod(t, c, name, testutil.SchedulerName, target, nil)
		first = append(first, name)
	}
	for name, node := range waitBound(t, c, first...) {
		if node != target {
			t.Fatalf("%s bound to %s, want %s", name, node, target)
		}
	}
	// Seconds later, the agent reports them busy; the 300 s average has
	// barely moved.
	time.Sleep(3 * time.Second)
	report(target, 1000+6*1500*3/300, first, 1500)
	// Let the scheduler's informers see the report before the burst.
	time.Sleep(time.Second)

	var second []string
	for i := range 6 {
		name := fmt.Sprintf("second-%d", i)
		createLAPod(t, c, name, laOnlyScheduler, "", nil)
		second = append(second, name)
	}
	bound := waitBound(t, c, second...)
	perNode := map[string]int{}
	for _, node := range bound {
		perNode[node]++
	}
	t.Logf("second burst per node: %v", perNode)
	if perNode[target] > 0 {
		t.Errorf("%d pods of the second burst went to %s, which carries 10000m (62.5 %%) of known load: one more 850m pod makes 68 %% > 65 %%; "+
			"its six busy pods were taken as fully in a 300 s average they had run 3 s of", perNode[target], target)
	}
}

// writeNodeMetric reports node as waterline-agent would, with the collect
// policy given when it creates the NodeMetric: node usage milli
// millicores (8Gi of memory), each of pods using podMilli and 1Gi.
func writeNodeMetric(t *testing.T, c *testutil.Cluster, node string, policy *v1alpha1.NodeMetricCollectPolicy, milli int64, pods []string, podMilli int64) error {
	ctx := t.Context()
	client := c.Waterline.WaterlineV1alpha1().NodeMetrics()
	nm, err := client.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		nm, err = client.Create(ctx, &v1alpha1.NodeMetric{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec:       v1alpha1.NodeMetricSpec{CollectPolicy: policy},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.NewTime(time.Now())
	nm.Status = v1alpha1.NodeMetricStatus{UpdateTime: &now, NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(milli, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
	}}}
	for _, p := range pods {
		nm.Status.PodsMetric = append(nm.Status.PodsMetric, v1alpha1.PodMetricInfo{Namespace: laNamespace, Name: p, Band: "prod", Usage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(podMilli, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("1Gi"),
		}})
	}
	_, err = client.UpdateStatus(ctx, nm, metav1.UpdateOptions{})
	return err
}

// sampleLoadAwareProfiles returns the profiles of the shipped
// config/scheduler/loadaware.yaml, from "profiles:" on.
func sampleLoadAwareProfiles(t *testing.T) string {
	t.Helper()
	sample, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "scheduler", "loadaware.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(sample), "profiles:")
	if i < 0 {
		t.Fatal("loadaware.yaml has no profiles")
	}
	return string(sample[i:])
}
