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

package profile

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/colocation"
)

// The configuration has one entry per profile, so a pod two profiles
// select is sent twice: the second call must leave the first profile's
// work alone.
func TestHandlerLeavesAppliedProfileAlone(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"team": "data"}}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "waterline-batch"}, Value: 5500},
		&v1alpha1.ColocationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{
			{Name: "first", NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}}, Band: "batch", PriorityClassName: "waterline-batch"},
			{Name: "second", Band: "batch", PriorityClassName: "waterline-batch"},
		}}},
	).Build()
	h := &Handler{Reader: reader, Decoder: admission.NewDecoder(scheme)}
	request := func(pod *corev1.Pod) admission.Request {
		raw, _ := json.Marshal(pod)
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "data", Name: pod.Name,
			Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Object: runtime.RawExtension{Raw: raw},
		}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "data"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	first := h.Handle(context.Background(), request(pod))
	if !first.Allowed || len(first.Patches) == 0 {
		t.Fatalf("first call: allowed %v, %d patches; want the profile applied", first.Allowed, len(first.Patches))
	}
	applied := pod.DeepCopy()
	if err := colocation.Apply(applied, &v1alpha1.ColocationProfile{Name: "first", Band: "batch", PriorityClassName: "waterline-batch"},
		&colocation.PriorityClass{Name: "waterline-batch", Value: 5500}); err != nil {
		t.Fatal(err)
	}
	second := h.Handle(context.Background(), request(applied))
	if !second.Allowed || len(second.Patches) != 0 {
		t.Errorf("second call on the applied pod: allowed %v, patches %v; want it admitted unchanged", second.Allowed, second.Patches)
	}
}

// TestHandlerTranslatesWhatALaterWebhookAdded: the configuration asks to
// be called again when a later webhook changed the pod; a sidecar that
// webhook injected must get the profile's tier resources too, not keep
// native cpu and memory on a Batch pod.
func TestHandlerTranslatesWhatALaterWebhookAdded(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	profile := v1alpha1.ColocationProfile{Name: "first", Band: "batch", PriorityClassName: "waterline-batch"}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "data"}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "waterline-batch"}, Value: 5500},
		&v1alpha1.ColocationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha1.ColocationPolicySpec{
			Profiles: []v1alpha1.ColocationProfile{profile}}},
	).Build()
	h := &Handler{Reader: reader, Decoder: admission.NewDecoder(scheme)}
	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "data"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: cpu("1")}}},
	}
	// What the first invocation made of it, then a later webhook's sidecar.
	if err := colocation.Apply(pod, &profile, &colocation.PriorityClass{Name: "waterline-batch", Value: 5500}); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "proxy", Image: "proxy", Resources: cpu("100m")})
	raw, _ := json.Marshal(pod)
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "data", Name: pod.Name,
		Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed {
		t.Fatalf("reinvocation refused: %v", resp.Result)
	}
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Operation+" "+p.Path)
	}
	if !slices.ContainsFunc(paths, func(p string) bool {
		return strings.HasPrefix(p, "add /spec/containers/1/resources/requests/waterline.dev~1batch-cpu")
	}) {
		t.Errorf("reinvocation patches %v; want the sidecar's cpu moved to %s", paths, extension.ResourceBatchCPU)
	}
}
