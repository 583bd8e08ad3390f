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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestAgentIsNodeScoped applies the chart's RBAC, ValidatingAdmissionPolicy
// and eviction webhook, runs the manager serving the webhook, and acts as
// waterline-agent with a real ServiceAccount token bound to a Node
// (TokenRequest): the API server refuses another node's NodeMetric and the
// eviction or deletion of another node's pod, and allows its own.
func TestAgentIsNodeScoped(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	c.CreateNamespace(t, "waterline-system", nil)
	port := testutil.FreePort(t)
	rendered := c.Helm(t, "template", "waterline", testutil.ChartDir(), "-n", "waterline-system",
		"--set", "webhooks.url=https://127.0.0.1:"+strconv.Itoa(port),
		"--show-only", "templates/rbac.yaml", "--show-only", "templates/agent-node-scope.yaml")
	manifest := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(manifest, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", manifest)

	for _, n := range []string{"node-a", "node-b"} {
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := c.Kube.CoreV1().ServiceAccounts("waterline-system").CreateToken(ctx, "waterline-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptrTo(int64(3600)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-a"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("minting a node-bound token for waterline-agent: %v", err)
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = tok.Status.Token
	agent := versioned.NewForConfigOrDie(cfg)

	nm := func(name string) *v1alpha1.NodeMetric {
		return &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	// The policy takes a moment to be loaded by the API server.
	testutil.Eventually(t, 30*time.Second, 250*time.Millisecond, func() (bool, error) {
		_, err := agent.WaterlineV1alpha1().NodeMetrics().Create(ctx, nm("node-b"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "may write only NodeMetric node-a"), err
	}, "waiting for the policy to refuse node-b's NodeMetric to node-a's agent")

	if _, err := agent.WaterlineV1alpha1().NodeMetrics().Create(ctx, nm("node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the agent of node-a could not create its own NodeMetric: %v", err)
	}
	own, err := agent.WaterlineV1alpha1().NodeMetrics().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own.Status.UpdateTime = &metav1.Time{Time: time.Now()}
	if _, err := agent.WaterlineV1alpha1().NodeMetrics().UpdateStatus(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the agent of node-a could not report its own NodeMetric status: %v", err)
	}

	// node-b's NodeMetric, made by the manager (admin here).
	other, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(ctx, nm("node-b"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Status.UpdateTime = &metav1.Time{Time: time.Now()}
	if _, err := agent.WaterlineV1alpha1().NodeMetrics().UpdateStatus(ctx, other, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "may write only NodeMetric node-a") {
		t.Errorf("the agent of node-a reporting node-b's status: error = %v, want a refusal", err)
	}

	// Evictions: the manager checks the pod's node.
	c.StartManager(t,
		"--webhooks=true", "--webhook-host=127.0.0.1", "--webhook-port="+strconv.Itoa(port),
		"--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"), "--webhook-cert-mode=secret",
		"--webhook-namespace=waterline-system", "--webhook-url=https://127.0.0.1:"+strconv.Itoa(port),
		"--agent-eviction-webhook", "--ca-bundle-configurations=validating/waterline-agent-eviction")
	c.CreateNamespace(t, "apps", nil)
	for _, n := range []string{"node-a", "node-b"} {
		if _, err := c.Kube.CoreV1().Pods("apps").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-" + n, Namespace: "apps"},
			Spec:       corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	agentKube := kubernetes.NewForConfigOrDie(cfg)
	evict := func(pod string) error {
		return agentKube.PolicyV1().Evictions("apps").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "apps"}})
	}
	testutil.Eventually(t, 30*time.Second, 250*time.Millisecond, func() (bool, error) {
		err := evict("on-node-b")
		return err != nil && strings.Contains(err.Error(), "may evict only pods of node node-a"), err
	}, "waiting for the manager to refuse node-a's agent evicting a pod of node-b")
	if err := evict("on-node-a"); err != nil {
		t.Errorf("the agent of node-a could not evict a pod of its own node: %v", err)
	}
	if p, err := c.Kube.CoreV1().Pods("apps").Get(ctx, "on-node-b", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod on node-b was evicted (err %v)", err)
	}

	// Memory relief deletes pods past a PDB: only pods of its own node.
	for _, n := range []string{"node-a", "node-b"} {
		if _, err := c.Kube.CoreV1().Pods("apps").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "del-" + n, Namespace: "apps"},
			Spec:       corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := agentKube.CoreV1().Pods("apps").Delete(ctx, "del-node-b", metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "may delete only pods of its own node") {
		t.Errorf("the agent of node-a deleting a pod of node-b: error = %v, want a refusal", err)
	}
	if err := agentKube.CoreV1().Pods("apps").Delete(ctx, "del-node-a", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the agent of node-a could not delete a pod of its own node: %v", err)
	}

	// A token without a node binding is refused outright.
	plain, err := c.Kube.CoreV1().ServiceAccounts("waterline-system").CreateToken(ctx, "waterline-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := rest.AnonymousClientConfig(c.Config)
	cfg2.BearerToken = plain.Status.Token
	if _, err := versioned.NewForConfigOrDie(cfg2).WaterlineV1alpha1().NodeMetrics().Create(ctx, nm("node-c"), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "node-bound ServiceAccount token") {
		t.Errorf("an unbound agent token creating a NodeMetric: error = %v, want a refusal", err)
	}
}

func ptrTo[T any](v T) *T { return &v }
