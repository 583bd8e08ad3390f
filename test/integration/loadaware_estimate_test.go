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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestLoadAwareEstimateGivesWay runs the real waterline-scheduler with the
// shipped config/scheduler/loadaware.yaml (cpu threshold 75 %) on one
// 16-core kwok node whose usage stays flat at 9 cores plus 100m for each
// of three pods just placed there. Reported every 2 s, averaged over
// 30 s: until the reports cover a whole window of them, most of each
// pod's 850m estimate still stands in for its usage, and a fourth pod
// does not fit (9300m + ≈ 2550m + 850m > 12 000m). Once they do, it fits
// (9300m + 850m). Nothing else changes -- no usage goes down, no pod
// comes or goes -- so only the plugin seeing the excess shrink requeues
// it; without that it waits for the scheduler's five-minute flush.
func TestLoadAwareEstimateGivesWay(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	const node = "ee-0"
	c.CreateNodes(t, "ee", 1, testutil.NodeOptions{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	})
	profiles := sampleLoadAwareProfiles(t)
	if !strings.Contains(profiles, "        cpu: 75\n") {
		t.Fatal("loadaware.yaml no longer sets usageThresholds cpu: 75; update this test's arithmetic")
	}
	policy := &v1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To[int64](30), ReportIntervalSeconds: ptr.To[int64](2)}

	// reported lists the pods placed so far, each using 100m.
	var reported []string
	write := func() error {
		return writeNodeMetric(t, c, node, policy, 9000+100*int64(len(reported)), reported, 100)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	c.StartScheduler(t, profiles)
	c.CreateNamespace(t, laNamespace, nil)

	// 9000m + 3 × 850m = 11 550m (72 %): the three fit.
	placed := []string{"placed-0", "placed-1", "placed-2"}
	for _, name := range placed {
		createLAPod(t, c, name, testutil.SchedulerName, node, nil)
	}
	waitBound(t, c, placed...)
	reported = placed
	if err := write(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	go reportEvery(t, 2*time.Second, write)

	createLAPod(t, c, "waiting", testutil.SchedulerName, node, nil)
	// Refused while the placed pods are young in the average.
	pendingWith(t, c, "waiting", "node(s) cpu usage exceed threshold")
	refusedAfter := time.Since(start)
	waitOnNode(t, c, "waiting", node, 90*time.Second, "waiting for the pod to go once the reports cover the placed pods (refused %s after the first report listing them)", refusedAfter.Round(time.Second))
	t.Logf("refused %s and bound %s after the first report listing the placed pods", refusedAfter.Round(time.Second), time.Since(start).Round(time.Second))
}

// TestLoadAwareForcedWindowEnds runs the real waterline-scheduler with
// the shipped config/scheduler/loadaware.yaml and a forced estimation
// window of 30 s after scheduling, on one 16-core kwok node at a flat 9
// cores plus 100m for each of three pods just placed there. The reports
// (every 2 s, averaged over 2 s) soon show the three, but inside their
// window each pod's 850m estimate stands in for its 100m: a fourth pod
// does not fit (9300m + 3 × 750m + 850m > 12 000m). When the windows end
// it fits (9300m + 850m), and nothing happens then -- no report differs,
// no pod comes or goes -- so only the plugin's timer for the window's end
// requeues it; without that it waits for the scheduler's five-minute
// flush.
func TestLoadAwareForcedWindowEnds(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	const node = "fw-0"
	c.CreateNodes(t, "fw", 1, testutil.NodeOptions{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	})
	const off = "      estimatedSecondsAfterPodScheduled: 0\n"
	profiles := sampleLoadAwareProfiles(t)
	if !strings.Contains(profiles, "        cpu: 75\n") || !strings.Contains(profiles, off) {
		t.Fatal("loadaware.yaml no longer sets usageThresholds cpu: 75 and estimatedSecondsAfterPodScheduled: 0; update this test")
	}
	const window = 30 * time.Second
	profiles = strings.Replace(profiles, off, "      estimatedSecondsAfterPodScheduled: 30\n", 1)
	policy := &v1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To[int64](2), ReportIntervalSeconds: ptr.To[int64](2)}

	// reported lists the pods placed so far, each using 100m.
	var (
		mu       sync.Mutex
		reported []string
	)
	write := func() error {
		mu.Lock()
		defer mu.Unlock()
		return writeNodeMetric(t, c, node, policy, 9000+100*int64(len(reported)), reported, 100)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	go reportEvery(t, 2*time.Second, write)
	c.StartScheduler(t, profiles)
	c.CreateNamespace(t, laNamespace, nil)

	// 9000m + 3 × 850m = 11 550m (72 %): the three fit.
	placed := []string{"placed-0", "placed-1", "placed-2"}
	for _, name := range placed {
		createLAPod(t, c, name, testutil.SchedulerName, node, nil)
	}
	waitBound(t, c, placed...)
	start := time.Now()
	mu.Lock()
	reported = placed
	mu.Unlock()

	createLAPod(t, c, "waiting", testutil.SchedulerName, node, nil)
	pendingWith(t, c, "waiting", "node(s) cpu usage exceed threshold")
	refusedAfter := time.Since(start)
	waitOnNode(t, c, "waiting", node, window+90*time.Second, "waiting for the pod to go once the placed pods' %s windows end (refused %s after they were bound)", window, refusedAfter.Round(time.Second))
	t.Logf("refused %s and bound %s after the placed pods were bound (window %s)", refusedAfter.Round(time.Second), time.Since(start).Round(time.Second), window)
}

// reportEvery calls write every interval until the test ends, as an
// agent reports.
func reportEvery(t *testing.T, interval time.Duration, write func() error) {
	ctx := t.Context()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := write(); err != nil && ctx.Err() == nil {
			t.Errorf("Reporting the NodeMetric: %v", err)
		}
	}
}

// waitOnNode waits up to timeout for the test's pod name to be bound to
// node; msg and args say what the test waits for.
func waitOnNode(t *testing.T, c *testutil.Cluster, name, node string, timeout time.Duration, msg string, args ...any) {
	t.Helper()
	testutil.Eventually(t, timeout, 250*time.Millisecond, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(laNamespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.NodeName == node, fmt.Errorf("pod %s is on %q", name, p.Spec.NodeName)
	}, msg, args...)
}
