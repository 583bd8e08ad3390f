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
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// startWithWebhooks starts a cluster and the manager serving its
// webhooks as the chart installs it: the manager makes its own
// certificate and fills the colocation-profile webhook configuration.
func startWithWebhooks(t *testing.T, kwok bool) *testutil.Cluster {
	t.Helper()
	c := testutil.StartCluster(t, testutil.Options{KWOK: kwok})
	c.CreateNamespace(t, "waterline-system", nil)
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: colocationMWC},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startManagedWebhooks(t, c, testutil.FreePort(t), "Fail")
	return c
}

func TestColocationProfileWebhook(t *testing.T) {
	t.Parallel()
	c := startWithWebhooks(t, false)
	ctx := t.Context()

	if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-batch"}, Value: 5500,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.CreateNamespace(t, "data", map[string]string{"team": "data"})
	c.CreateNamespace(t, "web", map[string]string{"team": "web"})
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{{
			Name:              "data-batch",
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}},
			Band:              "batch",
			PriorityClassName: "waterline-batch",
			SchedulerName:     "waterline-scheduler",
			Labels:            map[string]string{"colocated": "true"},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	pod := func(ns, name, cpuLimit string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "work", Image: "busybox",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit), corev1.ResourceMemory: resource.MustParse("2Gi")},
				},
			}}},
		}
	}

	// The manager's cache needs a moment to see the policy: dry-run until
	// the profile applies.
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods("data").Create(ctx, pod("data", "probe", "1"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Labels[extension.LabelBand] == "batch", fmt.Errorf("not mutated yet")
	}, "waiting for the colocation profile webhook to apply")

	got, err := c.Kube.CoreV1().Pods("data").Create(ctx, pod("data", "job", "1500m"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Creating a pod the Batch profile selects: %v", err)
	}
	res := got.Spec.Containers[0].Resources
	for _, rl := range []corev1.ResourceList{res.Requests, res.Limits} {
		if _, ok := rl[corev1.ResourceCPU]; ok {
			t.Errorf("cpu left in %v", rl)
		}
		if q := rl[extension.ResourceBatchCPU]; q.Value() != 1500 {
			t.Errorf("%s = %s, want 1500 (the 1500m limit in millicores)", extension.ResourceBatchCPU, q.String())
		}
		if q := rl[extension.ResourceBatchMemory]; q.Cmp(resource.MustParse("2Gi")) != 0 {
			t.Errorf("%s = %s, want 2Gi (the memory limit)", extension.ResourceBatchMemory, q.String())
		}
	}
	if got.Labels[extension.LabelBand] != "batch" || got.Labels["colocated"] != "true" || got.Labels[extension.LabelColocationProfile] != "data-batch" {
		t.Errorf("labels = %v", got.Labels)
	}
	if got.Spec.PriorityClassName != "waterline-batch" || got.Spec.Priority == nil || *got.Spec.Priority != 5500 {
		t.Errorf("priority = %q %v, want waterline-batch 5500", got.Spec.PriorityClassName, got.Spec.Priority)
	}
	if got.Spec.SchedulerName != "waterline-scheduler" {
		t.Errorf("schedulerName = %q", got.Spec.SchedulerName)
	}
	if !strings.Contains(got.Annotations[extension.AnnotationOriginalResources], `"cpu":"1500m"`) {
		t.Errorf("original-resources annotation = %q, want the original 1500m limit", got.Annotations[extension.AnnotationOriginalResources])
	}

	// A pod no profile selects is untouched.
	plain, err := c.Kube.CoreV1().Pods("web").Create(ctx, pod("web", "site", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; !ok || len(plain.Labels) != 0 || plain.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("an unselected pod was changed: labels %v, resources %v, scheduler %q", plain.Labels, plain.Spec.Containers[0].Resources, plain.Spec.SchedulerName)
	}

	// A pod the profile cannot translate is refused with the reason: this
	// one already asks for Mid tier resources, and the profile makes it Batch.
	odd := pod("data", "odd", "1")
	odd.Spec.Containers = append(odd.Spec.Containers, corev1.Container{
		Name: "mid-sidecar", Image: "busybox",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{extension.ResourceMidCPU: resource.MustParse("100")},
			Limits:   corev1.ResourceList{extension.ResourceMidCPU: resource.MustParse("100")},
		},
	})
	_, err = c.Kube.CoreV1().Pods("data").Create(ctx, odd, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "requests mid tier resources but the profile puts it in band batch") || !strings.Contains(err.Error(), `profile "data-batch"`) {
		t.Errorf("Creating an untranslatable pod: error = %v, want a refusal naming the profile and the reason", err)
	}
}
