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

package daemonset

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func request(t *testing.T, op admissionv1.Operation, ds, old *appsv1.DaemonSet) admission.Request {
	t.Helper()
	raw, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: ds.Namespace, Name: ds.Name,
		Kind:   metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		Object: runtime.RawExtension{Raw: raw},
	}}
	if old != nil {
		if req.OldObject.Raw, err = json.Marshal(old); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

func daemonSet(mod func(*corev1.PodSpec)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "node-exporter"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "exporter"}},
		}}},
	}
	if mod != nil {
		mod(&ds.Spec.Template.Spec)
	}
	return ds
}

func TestHandle(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &Handler{Decoder: admission.NewDecoder(scheme)}
	tests := []struct {
		name      string
		op        admissionv1.Operation
		ds        *appsv1.DaemonSet
		old       *appsv1.DaemonSet
		wantPatch []string // JSON patch operations as "op path value"
	}{{
		name:      "no class: the DaemonSet class is set",
		op:        admissionv1.Create,
		ds:        daemonSet(nil),
		wantPatch: []string{"add /spec/template/spec/priorityClassName waterline-daemonset"},
	}, {
		name:      "an update that rolls the pods out anyway gets the class too",
		op:        admissionv1.Update,
		ds:        daemonSet(func(s *corev1.PodSpec) { s.Containers[0].Image = "exporter:v2" }),
		old:       daemonSet(nil),
		wantPatch: []string{"add /spec/template/spec/priorityClassName waterline-daemonset"},
	}, {
		name: "an update that leaves the template alone starts no rollout",
		op:   admissionv1.Update,
		ds: func() *appsv1.DaemonSet {
			ds := daemonSet(nil)
			ds.Labels = map[string]string{"team": "observability"}
			return ds
		}(),
		old: daemonSet(nil),
	}, {
		name: "the owner's class wins",
		op:   admissionv1.Create,
		ds:   daemonSet(func(s *corev1.PodSpec) { s.PriorityClassName = "system-node-critical" }),
	}, {
		name: "an explicit priority wins",
		op:   admissionv1.Create,
		ds:   daemonSet(func(s *corev1.PodSpec) { s.Priority = ptr.To[int32](1000) }),
	}, {
		name: "deletes are not touched",
		op:   admissionv1.Delete,
		ds:   daemonSet(nil),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(t.Context(), request(t, tc.op, tc.ds, tc.old))
			if !resp.Allowed {
				t.Fatalf("Handle refused: %+v", resp.Result)
			}
			var got []string
			for _, p := range resp.Patches {
				got = append(got, p.Operation+" "+p.Path+" "+p.Value.(string))
			}
			if diff := cmp.Diff(tc.wantPatch, got); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandleMissingClass: while the class does not exist the DaemonSet is
// left alone, since its pods would be refused for naming a missing class.
func TestHandleMissingClass(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := schedulingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		wantPatch int
		wantWarn  bool
	}{
		{name: "class missing", wantWarn: true},
		{name: "class present", objs: []client.Object{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: DefaultPriorityClassName}, Value: 100000}}, wantPatch: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Decoder: admission.NewDecoder(scheme), Classes: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()}
			resp := h.Handle(t.Context(), request(t, admissionv1.Create, daemonSet(nil), nil))
			if !resp.Allowed {
				t.Fatalf("Handle refused: %+v", resp.Result)
			}
			if len(resp.Patches) != tc.wantPatch || (len(resp.Warnings) > 0) != tc.wantWarn {
				t.Errorf("patches %v warnings %v, want %d patches, warning %v", resp.Patches, resp.Warnings, tc.wantPatch, tc.wantWarn)
			}
		})
	}
}
