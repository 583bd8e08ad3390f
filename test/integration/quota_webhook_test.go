package integration

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestQuotaWebhook runs waterline-manager with the priority-class quota
// webhook on, against a real API server that calls it through the shipped
// config/webhook/priority-quota manifest: a pod of a limited class is
// refused in a namespace without a ResourceQuota scoped to its class and
// admitted once there is one.
func TestQuotaWebhook(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{Webhooks: &envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(testutil.RepoRoot(), "config", "webhook", "priority-quota")},
	}})
	ctx := t.Context()
	c.Kubectl(t, "apply", "-f", filepath.Join(testutil.RepoRoot(), "config", "priorityclasses", "priorityclasses.yaml"))
	c.StartManager(t, append(c.WebhookArgs(), "--priority-quota-classes=waterline-mid-nonpreemptible,waterline-prod")...)

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
