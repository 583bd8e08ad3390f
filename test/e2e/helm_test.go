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

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// testHelmUpgradeAndUninstall: `helm upgrade` of the e2e's release rolls
// the agent (a new pod, with the new flag, reports again); `helm uninstall`
// removes the agent while it throttles Batch pods under a Prod load that
// stays, and leaves no pod throttled: every Batch pod's kubelet-made
// cgroup has its limit's quota back. It runs last: the system is gone
// after it.
func (s *system) testHelmUpgradeAndUninstall(t *testing.T) {
	old := s.agentPod(t)
	if old == nil {
		t.Fatal("no agent pod before the upgrade")
	}
	begin := time.Now()
	s.c.Helm(t, "upgrade", release, testutil.ChartDir(), "-n", agentNamespace, "-f", s.valuesFile, "--set", "agent.logLevel=3")
	fresh := s.waitAgentReady(t, string(old.UID))
	if !slices.Contains(fresh.Spec.Containers[0].Args, "--v=3") {
		t.Errorf("agent pod %s after helm upgrade has args %v, want --v=3", fresh.Name, fresh.Spec.Containers[0].Args)
	}
	t.Logf("helm upgrade: agent pod %s replaced %s and reports, in %v", fresh.Name, old.Name, time.Since(begin).Round(100*time.Millisecond))

	ns := s.namespace(t, "uninstall")
	s.nodeQOS(t, "uninstall", v1alpha1.NodeQOSSpec{
		CPU:            &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70), RestorePercent: ptr.To[int32](60)},
		AvoidanceCount: ptr.To[int32](2), RestoreCount: ptr.To[int32](2),
	})
	s.createPod(t, ns, podSpec{name: "prod", class: "waterline-prod", burners: 2, cpuRequest: "500m"})
	batch := []string{"batch-1", "batch-2"}
	for _, b := range batch {
		s.createPod(t, ns, podSpec{name: b, class: "waterline-batch", burners: 1, cpuRequest: "100m", cpuLimit: "300m"})
	}
	pods := s.waitRunning(t, ns, append([]string{"prod"}, batch...)...)
	batchPods, limits := map[string]*corev1.Pod{}, map[string]int64{}
	for _, b := range batch {
		batchPods[b], limits[b] = pods[b], 300
	}
	var got []string
	testutil.Eventually(t, 90*time.Second, time.Second, func() (bool, error) {
		got = s.throttled(t, batchPods, limits)
		return len(got) > 0, fmt.Errorf("no Batch pod throttled; node at %.0f %%", 100*s.nodeCPUFraction(t))
	}, "waiting for the agent to throttle a Batch pod before the uninstall")
	t.Logf("Throttled before helm uninstall: %v", got)

	begin = time.Now()
	out := s.c.Helm(t, "uninstall", release, "-n", agentNamespace, "--wait", "--timeout", "3m")
	t.Logf("helm uninstall: %s", strings.TrimSpace(out))
	testutil.Eventually(t, 2*time.Minute, time.Second, func() (bool, error) {
		p := s.agentPod(t)
		if p != nil {
			return false, fmt.Errorf("agent pod %s still there", p.Name)
		}
		pods, err := s.c.Kube.CoreV1().Pods(agentNamespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods left in %s", len(pods.Items), agentNamespace)
	}, "waiting for the agent and manager pods to go after helm uninstall")
	t.Logf("helm uninstall: every Waterline pod gone in %v", time.Since(begin).Round(100*time.Millisecond))
	// The Prod load stays: only a release by the leaving agent can have
	// given the quotas back.
	if left := s.throttled(t, batchPods, limits); len(left) > 0 {
		t.Errorf("after helm uninstall these Batch pods stay throttled in their kubelet-made cgroups: %v", left)
	}
	if _, err := s.c.Kube.AppsV1().DaemonSets(agentNamespace).Get(t.Context(), agentName, metav1.GetOptions{}); !isNotFound(err) {
		t.Errorf("the agent DaemonSet after helm uninstall: %v, want not found", err)
	}
}
