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
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/waterline-dev/waterline/pkg/check"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestChartOnAMixedCluster installs the chart with its default values, as
// a platform engineer would, into a cluster whose kube-controller-manager
// runs the DaemonSet and ReplicaSet controllers: two Linux nodes and a
// Windows node (tainted, as Windows nodes usually are; the agent
// tolerates every taint), in a namespace whose Pod Security level is
// baseline, as many clusters set for every namespace.
//
//   - The agent DaemonSet covers the Linux nodes only: its images are
//     Linux's, and on the Windows node its pod would never start (nor
//     would a rolling update get past it, nor helm test pass).
//   - The agents' pods are refused (they are privileged, on the host's
//     network, /proc and cgroup tree), and `waterline check` says so in the
//     words of the DaemonSet's events, which is where an operator would
//     otherwise have to look.
//   - Relabelled privileged, the namespace gets an agent pod for each
//     Linux node, none for the Windows node.
func TestChartOnAMixedCluster(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	c.StartControllerManager(t)
	ctx := t.Context()
	linux := c.CreateNodes(t, "linux", 2, testutil.NodeOptions{})
	windows := c.CreateNodes(t, "windows", 1, testutil.NodeOptions{
		Labels: map[string]string{corev1.LabelOSStable: "windows"},
		Taints: []corev1.Taint{{Key: corev1.LabelOSStable, Value: "windows", Effect: corev1.TaintEffectNoSchedule}},
	})[0]
	const (
		ns       = "waterline-system"
		enforce  = "pod-security.kubernetes.io/enforce"
		baseline = "baseline"
	)
	c.CreateNamespace(t, ns, map[string]string{enforce: baseline})

	c.Helm(t, "install", "waterline", testutil.ChartDir(), "-n", ns,
		// No kubelet runs the hook Jobs here; test/e2e's real node does.
		"--set", "agent.uninstallHook.enabled=false",
		"--set", "manager.uninstallHook.enabled=false")

	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		ds, err := c.Kube.AppsV1().DaemonSets(ns).Get(ctx, check.Agent, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if ds.Status.ObservedGeneration < ds.Generation || ds.Status.DesiredNumberScheduled == 0 {
			return false, fmt.Errorf("the DaemonSet controller has not counted the nodes yet: %+v", ds.Status)
		}
		if got := ds.Status.DesiredNumberScheduled; got != int32(len(linux)) {
			t.Fatalf("the agent DaemonSet wants %d pods, want %d: one on each Linux node and none on %s (nodeSelector %v)",
				got, len(linux), windows.Name, ds.Spec.Template.Spec.NodeSelector)
		}
		return true, nil
	}, "waiting for the DaemonSet controller to count the agent's nodes")

	// Refused by Pod Security: the controller's event, and the check.
	var refusal string
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=DaemonSet,reason=FailedCreate"})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if strings.Contains(e.Message, "PodSecurity") {
				refusal = e.Message
				return true, nil
			}
		}
		return false, fmt.Errorf("no FailedCreate event for PodSecurity yet (%d FailedCreate events)", len(events.Items))
	}, "waiting for the DaemonSet controller to be refused")
	t.Logf("the DaemonSet controller: %s", refusal)

	args := checkPodArgs(t, c.Helm(t, "get", "hooks", "waterline", "-n", ns))
	kubeconfig := tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-check"))
	out, err := exec.CommandContext(ctx, testutil.BuildBinary(t, "waterline"), slices.Concat(args, []string{"--kubeconfig", kubeconfig})...).CombinedOutput()
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) {
		t.Fatalf("waterline check with the agents refused: %v, want exit 1\n%s", err, out)
	}
	agentLine := ""
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == check.Agent {
			agentLine = l
		}
	}
	if !strings.HasPrefix(agentLine, "FAIL") || !strings.Contains(agentLine, "2 not created") ||
		!strings.Contains(agentLine, `violates PodSecurity "baseline:latest"`) {
		t.Errorf("waterline check's agent line: %q, want FAIL naming the Pod Security refusal\n%s", agentLine, out)
	}
	t.Logf("waterline check, agents refused:\n%s", out)

	// A privileged namespace: an agent pod for each Linux node.
	nsObj, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[enforce] = "privileged"
	if _, err := c.Kube.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + check.Agent})
		if err != nil {
			return false, err
		}
		var targets []string
		for _, p := range pods.Items {
			targets = append(targets, targetNode(&p))
		}
		slices.Sort(targets)
		want := []string{linux[0].Name, linux[1].Name}
		if !slices.Equal(targets, want) {
			return false, fmt.Errorf("agent pods for nodes %v, want %v", targets, want)
		}
		return true, nil
	}, "waiting for an agent pod on each Linux node")
}

// targetNode is the node a DaemonSet's pod is for: its node, or the one
// its node affinity names before it is bound.
func targetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

// TestChartPodSecurity creates, in dry run, a pod of every pod template
// the chart renders (its workloads, its hook Jobs, its test Pod), with the
// default and the largest values, in a namespace enforcing the Pod
// Security Standards' restricted level: every pod but the agent's meets
// it, and the agent's (privileged: it writes the host's cgroups) is
// refused naming why. The chart's README tells operators the release
// namespace must allow privileged pods; this holds the rest to restricted.
func TestChartPodSecurity(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	const ns = "waterline-system"
	c.CreateNamespace(t, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	chart := testutil.ChartDir()
	for _, values := range []string{"default-values.yaml", "largest-values.yaml"} {
		t.Run(values, func(t *testing.T) {
			manifest := c.Helm(t, "template", "waterline", chart, "-n", ns, "-f", filepath.Join(chart, "ci", values))
			checked := 0
			for _, o := range decodeManifest(t, manifest) {
				path := []string{"spec", "template", "spec"}
				switch o.GetKind() {
				case "Pod":
					path = []string{"spec"}
				case "Deployment", "DaemonSet", "Job":
				default:
					continue
				}
				m, _, err := unstructured.NestedMap(o.Object, path...)
				if err != nil || m == nil {
					t.Fatalf("%s %s: no pod spec at %v: %v", o.GetKind(), o.GetName(), path, err)
				}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(o.GetKind()) + "-" + o.GetName()}}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &pod.Spec); err != nil {
					t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
				_, err = c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				checked++
				if o.GetName() == check.Agent {
					if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) || !strings.Contains(err.Error(), "privileged") {
						t.Errorf("the agent's pod in a restricted namespace: %v, want refused as privileged", err)
					}
					continue
				}
				if err != nil {
					t.Errorf("a pod of %s %s does not meet the restricted Pod Security level: %v", o.GetKind(), o.GetName(), err)
				}
			}
			// The manager, the scheduler, the agent, two hook Jobs, the
			// test Pod.
			if checked < 6 {
				t.Errorf("%d pod templates checked, want at least 6", checked)
			}
		})
	}
}
