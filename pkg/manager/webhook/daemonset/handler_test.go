package daemonset

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func request(t *testing.T, op admissionv1.Operation, ds *appsv1.DaemonSet) admission.Request {
	t.Helper()
	raw, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: ds.Namespace, Name: ds.Name,
		Kind:   metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		Object: runtime.RawExtension{Raw: raw},
	}}
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
		wantPatch []string // JSON patch operations as "op path value"
	}{{
		name:      "no class: the DaemonSet class is set",
		op:        admissionv1.Create,
		ds:        daemonSet(nil),
		wantPatch: []string{"add /spec/template/spec/priorityClassName waterline-daemonset"},
	}, {
		name:      "an update without a class gets it too",
		op:        admissionv1.Update,
		ds:        daemonSet(nil),
		wantPatch: []string{"add /spec/template/spec/priorityClassName waterline-daemonset"},
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
			resp := h.Handle(t.Context(), request(t, tc.op, tc.ds))
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
