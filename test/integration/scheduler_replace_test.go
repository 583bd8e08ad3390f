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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/pkg/check"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// schedulerAuthFlags let the test reach the schedulers' health endpoints.
var schedulerAuthFlags = []string{"--authentication-skip-lookup", "--authorization-always-allow-paths", "/healthz,/readyz,/livez"}

// acquiredLease is what client-go's leader election logs when a process
// becomes the leader.
const acquiredLease = `"Successfully acquired lease"`

// TestReplacingKubeScheduler follows the chart README's "Replacing
// kube-scheduler": with scheduler.name=default-scheduler the chart's
// waterline-scheduler takes part in kube-scheduler's own leader election.
// While the cluster's kube-scheduler (the real binary) leads, the chart's
// scheduler waits and places nothing; once kube-scheduler is stopped, it
// takes over and places the pods that name no scheduler. Two schedulers
// leading at once under one name would double-book nodes.
func TestReplacingKubeScheduler(t *testing.T) {
	t.Parallel()
	stockBin := filepath.Join(testutil.BinDir(), "kube-scheduler")
	if _, err := os.Stat(stockBin); err != nil {
		t.Fatalf("The stock kube-scheduler is missing (%v): run `hack/build-tools.sh kube-scheduler` (or `make test-tools`)", err)
	}
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	c.CreateNodes(t, "node", 2, testutil.NodeOptions{})

	// The cluster's kube-scheduler, leader-elected as kubeadm runs it
	// (the Lease kube-system/kube-scheduler).
	stock, _ := testutil.StartSchedulerBinary(t, "kube-scheduler", stockBin, fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: true}
`, c.Kubeconfig), schedulerAuthFlags...)
	waitLogged(t, stock, acquiredLease, time.Minute)

	// The chart's waterline-scheduler with scheduler.name=default-scheduler:
	// its rendered configuration, with the test's kubeconfig.
	rendered := chartSchedulerConfig(t, c, "scheduler.name=default-scheduler")
	var config map[string]any
	if err := yaml.Unmarshal([]byte(rendered), &config); err != nil || config == nil {
		t.Fatalf("The chart's scheduler configuration (%v):\n%s", err, rendered)
	}
	config["clientConnection"] = map[string]any{"kubeconfig": c.Kubeconfig}
	body, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	chart, _ := c.StartSchedulerWithConfig(t, string(body), schedulerAuthFlags...)

	// Both run: kube-scheduler leads and places a pod; the chart's
	// scheduler is only a candidate.
	bound := func(name string) {
		t.Helper()
		if _, err := c.Kube.CoreV1().Pods("default").Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "fake"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			p, err := c.Kube.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Spec.NodeName != "", fmt.Errorf("pod %s not bound", name)
		}, "waiting for pod %s to be bound", name)
	}
	bound("while-both-run")
	time.Sleep(5 * time.Second) // more than two of the candidates' 2 s retries
	if logged(t, chart, acquiredLease) {
		t.Fatalf("waterline-scheduler (scheduler.name=default-scheduler) became a leader while kube-scheduler led: both schedule default-scheduler's pods (log: %s)", chart.LogPath)
	}
	if !strings.Contains(readLog(t, chart), "kube-system/kube-scheduler") {
		t.Errorf("waterline-scheduler does not try kube-scheduler's Lease kube-system/kube-scheduler (log: %s)", chart.LogPath)
	}

	// kube-scheduler is stopped (its static pod's manifest moved away):
	// the chart's scheduler takes the Lease when it expires and places the
	// pods that name no scheduler.
	stopped := time.Now()
	stock.Kill()
	waitLogged(t, chart, acquiredLease, time.Minute)
	t.Logf("waterline-scheduler took over %v after kube-scheduler stopped", time.Since(stopped).Round(time.Second))
	bound("after-kube-scheduler")

	// waterline check (the chart's helm test passes --scheduler-name)
	// reads the leader from that Lease.
	snap, err := check.Collect(t.Context(), c.Kube, c.Waterline, "waterline-system", check.SchedulerLeaseOf("default-scheduler"))
	if err != nil {
		t.Fatal(err)
	}
	if l := snap.Leases["kube-system/kube-scheduler"]; l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Errorf("waterline check did not read the leader of kube-system/kube-scheduler: %+v", snap.Leases)
	}
}

func readLog(t *testing.T, p *testutil.Process) string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func logged(t *testing.T, p *testutil.Process, s string) bool {
	t.Helper()
	return strings.Contains(readLog(t, p), s)
}

func waitLogged(t *testing.T, p *testutil.Process, s string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, 200*time.Millisecond, func() (bool, error) {
		return logged(t, p, s), fmt.Errorf("%s has not logged %q", p.Name, s)
	}, "waiting for %s to log %q", p.Name, s)
}
