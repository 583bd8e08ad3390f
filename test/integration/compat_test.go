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
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestOldestSupportedAPIServer runs Waterline's whole path against the
// kube-apiserver of the oldest Kubernetes release the chart supports
// (testutil.OldestAPIServer; every other test runs the release Waterline
// is built with): the CRDs and every object of the chart admitted by
// helm install, the manager with the chart's arguments and RBAC making
// NodeMetrics and its webhooks, an agent reporting its node's usage, the
// manager publishing that node's Batch tier resources, the colocation
// webhook turning a plain pod into a Batch pod, and waterline-scheduler
// with the chart's configuration and RBAC binding it to the node. A
// scheduler, manager or agent that lists or watches an API the older
// server does not serve never gets past its informers' sync, and the pod
// stays Pending: with resource.k8s.io/v1 turned off (--runtime-config),
// as on a 1.33 server, which serves only its betas, waterline-scheduler
// (kube-scheduler 1.36's framework, whose DRA plugin lists DeviceClasses,
// ResourceClaims and ResourceSlices) never binds it, and the test fails.
// Hence the chart's kubeVersion, >=1.34, which helm checks first.
func TestOldestSupportedAPIServer(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true, APIServer: testutil.OldestAPIServer})
	if out, err := c.HelmE(t, "template", "waterline", testutil.ChartDir(), "--kube-version", "v1.33.9"); err == nil ||
		!strings.Contains(out, "chart requires kubeVersion: >=1.34.0-0") {
		t.Errorf("helm template for Kubernetes 1.33: %v, want refused for the chart's kubeVersion\n%s", err, out)
	}
	ctx := t.Context()
	v, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != "1" || v.Minor != "34" {
		t.Fatalf("%s serves Kubernetes %s.%s (%s), want 1.34", testutil.OldestAPIServer, v.Major, v.Minor, v.GitVersion)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
	nodes := c.CreateNodes(t, "old", 2, testutil.NodeOptions{})
	reporting := nodes[0].Name

	const ns = "waterline-system"
	chart := testutil.ChartDir()
	webhookPort := testutil.FreePort(t)
	c.Helm(t, "install", "waterline", chart, "-n", ns, "--create-namespace",
		"-f", filepath.Join(chart, "ci", "local-values.yaml"),
		"--set", "manager.ports.webhook="+strconv.Itoa(webhookPort),
		"--set", "agent.uninstallHook.enabled=false",
		"--set", "manager.uninstallHook.enabled=false",
		"--set-json", `colocationPolicy.spec.collectPolicy={"reportIntervalSeconds":2,"aggregateDurationSeconds":10}`,
		"--set-json", `colocationPolicy.spec.profiles=[{"name":"batch-namespaces","namespaceSelector":{"matchLabels":{"waterline.dev/colocation":"batch"}},"band":"batch","priorityClassName":"waterline-batch","schedulerName":"waterline-scheduler"}]`,
	)

	// The manager, with the chart's arguments, as its ServiceAccount.
	dep, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "waterline-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.StartManager(t, append(chartArgs(t, dep),
		"--kubeconfig", impersonatingKubeconfig(t, c.Kubeconfig, "system:serviceaccount:"+ns+":waterline-manager"))...)
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		m, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "waterline-colocation-profiles", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(m.Webhooks) != 1 || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, fmt.Errorf("the colocation webhook is not served yet: %d entries", len(m.Webhooks))
		}
		for _, n := range nodes {
			if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
				return false, err
			}
		}
		return true, nil
	}, "waiting for the manager's webhook and NodeMetrics")

	// An agent for one node, on a fixture cgroup tree: 4 of the node's 32
	// CPUs in use, Prod pods none.
	startFixtureAgent(t, c, testutil.AgentOptions{NodeName: reporting})
	testutil.Eventually(t, 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, reporting, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		q, ok := n.Status.Allocatable[extension.ResourceBatchCPU]
		return ok && q.Sign() > 0, fmt.Errorf("node %s has batch-cpu %v", reporting, q.String())
	}, "waiting for the agent's report and the manager's Batch tier resources")

	// waterline-scheduler, with the chart's configuration, as its
	// ServiceAccount.
	kubeconfig := tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-scheduler"))
	c.StartSchedulerWithConfig(t, schedulerConfigOf(t, decodeManifest(t, c.Helm(t, "get", "manifest", "waterline", "-n", ns)), kubeconfig),
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig)

	// A plain pod of a colocated namespace: the webhook makes it a Batch
	// pod of waterline-scheduler, which binds it where Batch fits.
	c.CreateNamespace(t, "jobs", map[string]string{"waterline.dev/colocation": "batch"})
	pod, err := c.Kube.CoreV1().Pods("jobs").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "work", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
			}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.SchedulerName != "waterline-scheduler" || pod.Spec.PriorityClassName != "waterline-batch" {
		t.Fatalf("the colocation webhook left the pod with scheduler %q and class %q", pod.Spec.SchedulerName, pod.Spec.PriorityClassName)
	}
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods("jobs").Get(ctx, "job-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName == "" {
			return false, fmt.Errorf("pod not bound; conditions %v", p.Status.Conditions)
		}
		if p.Spec.NodeName != reporting {
			t.Fatalf("the Batch pod was bound to %s, want %s, the only node with Batch resources", p.Spec.NodeName, reporting)
		}
		return true, nil
	}, "waiting for waterline-scheduler to bind the Batch pod")
}
