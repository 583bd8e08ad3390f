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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestQuotaWebhook runs waterline-manager with the priority-class quota
// webhook on, against a real API server that calls it through the chart's
// webhook configuration (the manager makes the certificate and sets its CA
// bundle): a pod of a limited class is refused in a namespace without a
// ResourceQuota scoped to its class and admitted once there is one.
func TestQuotaWebhook(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	c.Kubectl(t, "apply", "-f", filepath.Join(testutil.RepoRoot(), "config", "priorityclasses", "priorityclasses.yaml"))
	c.CreateNamespace(t, "waterline-system", nil)
	port := strconv.Itoa(testutil.FreePort(t))
	rendered := c.Helm(t, "template", "waterline", testutil.ChartDir(), "-n", "waterline-system",
		"--set", "webhooks.url=https://127.0.0.1:"+port, "--set", "webhooks.colocation.enabled=false",
		"--set", "webhooks.priorityQuota.enabled=true",
		"--set-json", `webhooks.priorityQuota.priorityClasses=["waterline-mid-nonpreemptible","waterline-prod"]`,
		"--show-only", "templates/webhooks.yaml")
	manifest := filepath.Join(t.TempDir(), "quota.yaml")
	if err := os.WriteFile(manifest, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", manifest)
	c.StartManager(t, "--webhooks=true", "--webhook-host=127.0.0.1", "--webhook-port="+port,
		"--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"), "--webhook-cert-mode=secret",
		"--webhook-namespace=waterline-system", "--webhook-url=https://127.0.0.1:"+port,
		"--ca-bundle-configurations=validating/waterline-priority-quota",
		"--priority-quota-classes=waterline-mid-nonpreemptible,waterline-prod")
	// The manager sets the CA bundle right after it starts.
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		v, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "waterline-priority-quota", metav1.GetOptions{})
		return err == nil && len(v.Webhooks) == 1 && len(v.Webhooks[0].ClientConfig.CABundle) > 0, err
	}, "waiting for the manager to set the quota webhook's CA bundle")

	createPod := func(ns, name, class string) error {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "fake",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		}, metav1.CreateOptions{})
		return err
	}
	createQuota := func(ns, name string, op corev1.ScopeSelectorOperator, values ...string) {
		t.Helper()
		if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ResourceQuotaSpec{
				Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
				ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
					ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating ResourceQuota %s/%s: %v", ns, name, err)
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		c.CreateNamespace(t, ns, nil)
	}

	// Denied without a quota, naming the class and the namespace.
	err := createPod("team-a", "np-1", "waterline-mid-nonpreemptible")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(),
		`pods of PriorityClass "waterline-mid-nonpreemptible" may only be created in namespaces with a ResourceQuota scoped to it, and namespace "team-a" has none`) {
		t.Fatalf("Creating a NonPreemptible pod without a quota: err = %v, want the webhook's denial", err)
	}
	// Other classes, and pods without a class, are untouched.
	if err := createPod("team-a", "batch-1", "waterline-batch"); err != nil {
		t.Errorf("Creating a Batch pod: %v, want admitted (not a limited class)", err)
	}
	if err := createPod("team-a", "plain-1", ""); err != nil {
		t.Errorf("Creating a pod without a class: %v, want admitted", err)
	}
	// A quota of another class does not help; one In the class does.
	createQuota("team-a", "prod-only", corev1.ScopeSelectorOpIn, "waterline-prod")
	if err := createPod("team-a", "np-2", "waterline-mid-nonpreemptible"); !apierrors.IsForbidden(err) {
		t.Errorf("Creating a NonPreemptible pod with only a Prod quota: err = %v, want forbidden", err)
	}
	if err := createPod("team-a", "prod-1", "waterline-prod"); err != nil {
		t.Errorf("Creating a Prod pod with a Prod quota: %v, want admitted", err)
	}
	createQuota("team-a", "np", corev1.ScopeSelectorOpIn, "waterline-mid-nonpreemptible")
	if err := createPod("team-a", "np-3", "waterline-mid-nonpreemptible"); err != nil {
		t.Errorf("Creating a NonPreemptible pod with its quota: %v, want admitted", err)
	}
	// Exists covers every class.
	createQuota("team-b", "all-classes", corev1.ScopeSelectorOpExists)
	if err := createPod("team-b", "np-1", "waterline-mid-nonpreemptible"); err != nil {
		t.Errorf("Creating a NonPreemptible pod under an Exists quota: %v, want admitted", err)
	}
}
