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
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/configuration"
	testutil "github.com/waterline-dev/waterline/test/util"
)

const colocationMWC = "waterline-colocation-profiles"

// startManagedWebhooks runs the manager the way the chart does on a local
// cluster: it generates its own certificate (valid for 127.0.0.1) into a
// Secret, and fills the colocation-profile webhook configuration the chart
// creates with one entry per profile, pointing at https://127.0.0.1:<port>.
func startManagedWebhooks(t *testing.T, c *testutil.Cluster, port int, failurePolicy string) *testutil.Process {
	t.Helper()
	return c.StartManager(t,
		"--webhooks=true",
		"--webhook-host=127.0.0.1",
		"--webhook-port="+strconv.Itoa(port),
		"--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"),
		"--webhook-cert-mode=secret",
		"--webhook-namespace=waterline-system",
		"--webhook-url=https://127.0.0.1:"+strconv.Itoa(port),
		"--colocation-webhook-configuration="+colocationMWC,
		"--colocation-webhook-failure-policy="+failurePolicy,
	)
}

// TestColocationWebhookFailsSafe: with the manager down, pods no profile
// selects are still created; pods a profile selects get what the failure
// policy chose -- refused with Fail, admitted unchanged with Ignore.
func TestColocationWebhookFailsSafe(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	c.CreateNamespace(t, "waterline-system", nil)
	c.CreateNamespace(t, "data", map[string]string{"team": "data"})
	c.CreateNamespace(t, "web", map[string]string{"team": "web"})
	if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-batch"}, Value: 5500,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{{
			Name:              "data-batch",
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}},
			Band:              "batch",
			PriorityClassName: "waterline-batch",
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the chart installs: the configuration, without entries.
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: colocationMWC},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	port := testutil.FreePort(t)
	waitProfileApplies := func() {
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			got, err := c.Kube.CoreV1().Pods("data").Create(ctx, pod("data", "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return false, err
			}
			return got.Labels[extension.LabelBand] == "batch", fmt.Errorf("not mutated yet")
		}, "waiting for the manager's colocation-profile webhook to apply")
	}

	mgr := startManagedWebhooks(t, c, port, "Fail")
	waitProfileApplies()

	// The server speaks HTTP/1.1 only, offered HTTP/2 first.
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{
		NextProtos: []string{"h2", "http/1.1"}, InsecureSkipVerify: true, //nolint:gosec // the test reads the negotiated protocol only
	})
	if err != nil {
		t.Fatalf("TLS to the webhook server: %v", err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("the webhook server negotiated %q with a client offering h2, want http/1.1", p)
	}
	conn.Close()

	mwc, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, colocationMWC, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("configuration has %d entries, want one per profile (1): %+v", len(mwc.Webhooks), mwc.Webhooks)
	}
	w := mwc.Webhooks[0]
	if w.NamespaceSelector == nil || w.NamespaceSelector.MatchLabels["team"] != "data" {
		t.Errorf("entry's namespaceSelector = %v, want the profile's team=data", w.NamespaceSelector)
	}
	if w.ClientConfig.URL == nil || !strings.HasPrefix(*w.ClientConfig.URL, "https://127.0.0.1:") || len(w.ClientConfig.CABundle) == 0 {
		t.Errorf("entry's clientConfig = %+v, want a 127.0.0.1 URL and a CA bundle", w.ClientConfig)
	}
	// What the API server stored is what the manager computes, or every
	// pass would rewrite the configuration.
	policy, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := configuration.Colocation{
		Client: configuration.ClientConfig{URL: "https://127.0.0.1:" + strconv.Itoa(port)}, Path: "/mutate-v1-pod-colocation-profile",
		FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 5, ExcludedNamespaces: []string{"waterline-system", "kube-system"},
	}.Webhooks(policy.Spec.Profiles, w.ClientConfig.CABundle)
	if diff := cmp.Diff(want, mwc.Webhooks); diff != "" {
		t.Errorf("the stored configuration differs from the manager's (-want +got), so each pass rewrites it:\n%s", diff)
	}
	secret, err := c.Kube.CoreV1().Secrets("waterline-system").Get(ctx, "waterline-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the manager kept no certificate Secret: %v", err)
	}

	mgr.Kill()
	if _, err := c.Kube.CoreV1().Pods("web").Create(ctx, pod("web", "site"), metav1.CreateOptions{}); err != nil {
		t.Errorf("manager down: a pod no profile selects was refused: %v", err)
	}
	if _, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod("default", "plain"), metav1.CreateOptions{}); err != nil {
		t.Errorf("manager down: a pod in default was refused: %v", err)
	}
	_, err = c.Kube.CoreV1().Pods("data").Create(ctx, pod("data", "job-fail"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "colocation-profile.waterline.dev") {
		t.Errorf("manager down, failurePolicy Fail: creating a pod the profile selects: error = %v, want a refusal by the webhook", err)
	}

	// The same with Ignore: the restarted manager reuses the Secret.
	startManagedWebhooks(t, c, port, "Ignore")
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		m, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, colocationMWC, metav1.GetOptions{})
		if err != nil || len(m.Webhooks) != 1 || m.Webhooks[0].FailurePolicy == nil {
			return false, err
		}
		return *m.Webhooks[0].FailurePolicy == admissionregistrationv1.Ignore, nil
	}, "waiting for failurePolicy Ignore")
	waitProfileApplies()
	again, err := c.Kube.CoreV1().Secrets("waterline-system").Get(ctx, "waterline-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Data["tls.crt"]) != string(secret.Data["tls.crt"]) {
		t.Errorf("a restarted manager replaced a valid certificate")
	}
}

// TestColocationWebhookIgnoreAdmitsWhenDown checks the Ignore half with the
// manager killed (split from the test above to keep each one readable).
func TestColocationWebhookIgnoreAdmitsWhenDown(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	c.CreateNamespace(t, "waterline-system", nil)
	c.CreateNamespace(t, "data", map[string]string{"team": "data"})
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{{
			Name: "data-batch", NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}}, Band: "batch",
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: colocationMWC},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mgr := startManagedWebhooks(t, c, testutil.FreePort(t), "Ignore")
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		m, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, colocationMWC, metav1.GetOptions{})
		return err == nil && len(m.Webhooks) == 1 && len(m.Webhooks[0].ClientConfig.CABundle) > 0, err
	}, "waiting for the manager to fill in the configuration")
	mgr.Kill()
	got, err := c.Kube.CoreV1().Pods("data").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "data"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("manager down, failurePolicy Ignore: a pod the profile selects was refused: %v", err)
	}
	if got.Labels[extension.LabelBand] != "" {
		t.Errorf("the pod was changed by a webhook that is down: labels %v", got.Labels)
	}
}
