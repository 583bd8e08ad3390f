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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestColocationProfilePodLevelResources: a pod with pod-level cpu and
// memory (spec.resources, on by default since Kubernetes 1.34) cannot be
// made Batch -- pod-level resources take no extended resources, so the
// scheduler would count its native cpu against Prod's allocatable while
// its band says Batch. The webhook refuses it, naming the field.
func TestColocationProfilePodLevelResources(t *testing.T) {
	t.Parallel()
	c := startWithWebhooks(t, false)
	ctx := t.Context()
	c.CreateNamespace(t, "data", map[string]string{"team": "data"})
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{{
			Name:              "data-batch",
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}},
			Band:              "batch",
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, podLevel bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "data"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "work", Image: "busybox",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				},
			}}},
		}
		if podLevel {
			p.Spec.Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
		}
		return p
	}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods("data").Create(ctx, pod("probe", false), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Labels[extension.LabelBand] == "batch", fmt.Errorf("not mutated yet")
	}, "waiting for the colocation profile webhook to apply")

	got, err := c.Kube.CoreV1().Pods("data").Create(ctx, pod("pod-level", true), metav1.CreateOptions{})
	if err == nil {
		t.Fatalf("a pod with pod-level cpu and memory was admitted as band %q with spec.resources %v: the scheduler counts that cpu against Prod's allocatable",
			got.Labels[extension.LabelBand], got.Spec.Resources)
	}
	if !strings.Contains(err.Error(), "spec.resources") || !strings.Contains(err.Error(), `profile "data-batch"`) {
		t.Errorf("Creating a pod with pod-level resources: error = %v, want a refusal naming spec.resources and the profile", err)
	}

	// Fractional bytes of memory, which the API server admits as memory
	// but not as batch-memory, are refused by the webhook with the reason.
	odd := pod("fractional-memory", false)
	odd.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("0.3Gi")
	_, err = c.Kube.CoreV1().Pods("data").Create(ctx, odd, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `container "work": memory 322122547200m is not a whole number of bytes`) {
		t.Errorf("Creating a pod with a memory limit of 0.3Gi: error = %v, want the webhook's refusal naming the container and the value", err)
	}
}
