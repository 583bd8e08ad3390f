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
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
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

	// helm test: waterline check, in the chart's Pod on the node, finds
	// the installation working (the Pod exits 0; this test API server
	// cannot reach the node's kubelet by its name, so helm test --logs
	// cannot read it: the same check, run from here, shows what it saw).
	begin = time.Now()
	if out, err := s.c.HelmE(t, "test", release, "-n", agentNamespace, "--timeout", "2m"); err != nil {
		t.Fatalf("helm test: %v\n%s", err, out)
	}
	bin := testutil.BuildBinary(t, "waterline")
	out, err := exec.CommandContext(t.Context(), bin, "check", "--kubeconfig", s.c.Kubeconfig, "-n", agentNamespace,
		"--expect", "waterline-manager,waterline-agent", "--manager-lease=").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "NodeMetrics") {
		t.Errorf("waterline check after helm test passed: %v\n%s", err, out)
	}
	// Its webhook probe went from the API server to the chart's manager
	// pod, as every webhook call does.
	if !strings.Contains(string(out), "the API server reached the manager's webhook server (waterline-manager-") {
		t.Errorf("waterline check did not reach the manager's webhook server through the API server:\n%s", out)
	}
	t.Logf("helm test passed in %v; waterline check:\n%s", time.Since(begin).Round(100*time.Millisecond), out)

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

	// The manager published tier resources on the node; pods of earlier
	// steps that request them go, so that the post-delete hook must take
	// them all off.
	if published := s.tierResources(t); len(published) == 0 {
		t.Fatal("the node shows no tier resources before the uninstall: the check after it would show nothing")
	}
	s.deleteTierPods(t)

	begin = time.Now()
	uninstalled := s.c.Helm(t, "uninstall", release, "-n", agentNamespace, "--wait", "--timeout", "3m")
	t.Logf("helm uninstall: %s", strings.TrimSpace(uninstalled))
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
	// helm uninstall returns after its post-delete hook; kubelet, which
	// keeps extended resources others put in capacity, has reported since.
	time.Sleep(15 * time.Second)
	if left := s.tierResources(t); len(left) > 0 {
		t.Errorf("after helm uninstall the node still shows tier resources %v", left)
	}
}

// tierResources returns the waterline.dev tier resources in the node's
// capacity or allocatable.
func (s *system) tierResources(t *testing.T) []string {
	t.Helper()
	n, err := s.c.Kube.CoreV1().Nodes().Get(t.Context(), s.node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rl := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		for name := range rl {
			if strings.HasPrefix(string(name), extension.Domain+"/") && !slices.Contains(out, string(name)) {
				out = append(out, string(name))
			}
		}
	}
	slices.Sort(out)
	return out
}

// deleteTierPods deletes the node's pods that request a tier resource and
// waits until they are gone.
func (s *system) deleteTierPods(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	pods, err := s.c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + s.node.Name})
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if !extension.RequestsTierResources(p) {
			continue
		}
		if err := s.c.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Fatal(err)
		}
		deleted = append(deleted, p.Namespace+"/"+p.Name)
	}
	testutil.Eventually(t, 2*time.Minute, time.Second, func() (bool, error) {
		for _, name := range deleted {
			ns, n, _ := strings.Cut(name, "/")
			switch _, err := s.c.Kube.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{}); {
			case err == nil:
				return false, fmt.Errorf("pod %s still there", name)
			case !isNotFound(err):
				return false, err
			}
		}
		return true, nil
	}, "waiting for the pods requesting tier resources to go")
	t.Logf("Deleted the pods requesting tier resources before helm uninstall: %v", deleted)
}
