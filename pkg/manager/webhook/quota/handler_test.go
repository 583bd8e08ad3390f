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

package quota

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func quota(namespace, name string, exprs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resourceMust("10")}},
	}
	if len(exprs) > 0 {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
	}
	return q
}

func scope(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
	return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
}

func podRequest(t *testing.T, op admissionv1.Operation, namespace, class string) admission.Request {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "p"},
		Spec:       corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: namespace,
		Operation: op,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// verdict is what a user sees of a response.
type verdict struct {
	Allowed bool
	Code    int32
	Message string
}

func verdictOf(r admission.Response) verdict {
	v := verdict{Allowed: r.Allowed}
	if r.Result != nil {
		v.Code = r.Result.Code
		v.Message = r.Result.Message
	}
	return v
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHandle(t *testing.T) {
	const denyHigh = `pods of PriorityClass "high" may only be created in namespaces with a ResourceQuota scoped to it, ` +
		`and namespace "team-a" has none (want spec.scopeSelector.matchExpressions with scopeName PriorityClass and operator In [high] or Exists)`
	tests := []struct {
		name   string
		config Config
		quotas []client.Object
		op     admissionv1.Operation
		class  string
		want   verdict
	}{
		{
			name:   "denied without any quota",
			config: Config{PriorityClasses: []string{"high"}},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Code: http.StatusForbidden, Message: denyHigh},
		},
		{
			name:   "admitted with a quota In the class",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{quota("team-a", "high-priority", scope(corev1.ScopeSelectorOpIn, "mid", "high"))},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Allowed: true, Code: http.StatusOK, Message: `PriorityClass "high" is covered by ResourceQuota high-priority`},
		},
		{
			name:   "admitted with a quota on Exists",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{quota("team-a", "any-class", scope(corev1.ScopeSelectorOpExists))},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Allowed: true, Code: http.StatusOK, Message: `PriorityClass "high" is covered by ResourceQuota any-class`},
		},
		{
			name:   "admitted with a quota NotIn other classes",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{quota("team-a", "not-free", scope(corev1.ScopeSelectorOpNotIn, "free"))},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Allowed: true, Code: http.StatusOK, Message: `PriorityClass "high" is covered by ResourceQuota not-free`},
		},
		{
			// The ResourceQuota admission plugin reads spec.scopes as
			// Exists selectors (getScopeSelectorsFromQuota).
			name:   "admitted with a quota listing PriorityClass in spec.scopes",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{func() client.Object {
				q := quota("team-a", "classed")
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopePriorityClass}
				return q
			}()},
			op:    admissionv1.Create,
			class: "high",
			want:  verdict{Allowed: true, Code: http.StatusOK, Message: `PriorityClass "high" is covered by ResourceQuota classed`},
		},
		{
			name:   "quota of another class does not cover",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{quota("team-a", "mid-only", scope(corev1.ScopeSelectorOpIn, "mid"))},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Code: http.StatusForbidden, Message: denyHigh},
		},
		{
			name:   "unscoped quota does not cover",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{quota("team-a", "everything")},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Code: http.StatusForbidden, Message: denyHigh},
		},
		{
			name:   "quota in another namespace does not cover",
			config: Config{PriorityClasses: []string{"high"}},
			quotas: []client.Object{quota("team-b", "high-priority", scope(corev1.ScopeSelectorOpIn, "high"))},
			op:     admissionv1.Create,
			class:  "high",
			want:   verdict{Code: http.StatusForbidden, Message: denyHigh},
		},
		{
			name:   "other classes are untouched",
			config: Config{PriorityClasses: []string{"high"}},
			op:     admissionv1.Create,
			class:  "batch",
			want:   verdict{Allowed: true, Code: http.StatusOK},
		},
		{
			name:   "pods without a class are untouched even with allPriorityClasses",
			config: Config{AllPriorityClasses: true},
			op:     admissionv1.Create,
			want:   verdict{Allowed: true, Code: http.StatusOK},
		},
		{
			name:   "allPriorityClasses limits every class",
			config: Config{AllPriorityClasses: true},
			op:     admissionv1.Create,
			class:  "batch",
			want:   verdict{Code: http.StatusForbidden, Message: strings.ReplaceAll(strings.ReplaceAll(denyHigh, `"high"`, `"batch"`), "[high]", "[batch]")},
		},
		{
			name:   "updates are untouched",
			config: Config{PriorityClasses: []string{"high"}},
			op:     admissionv1.Update,
			class:  "high",
			want:   verdict{Allowed: true, Code: http.StatusOK},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := newScheme(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.quotas...).Build()
			h, err := NewHandler(tt.config, c, admission.NewDecoder(scheme))
			if err != nil {
				t.Fatal(err)
			}
			got := verdictOf(h.Handle(t.Context(), podRequest(t, tt.op, "team-a", tt.class)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Handle() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandleListError(t *testing.T) {
	scheme := newScheme(t)
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not synced")
		},
	}).Build()
	h, err := NewHandler(Config{PriorityClasses: []string{"high"}}, c, admission.NewDecoder(scheme))
	if err != nil {
		t.Fatal(err)
	}
	got := verdictOf(h.Handle(t.Context(), podRequest(t, admissionv1.Create, "team-a", "high")))
	want := verdict{Code: http.StatusInternalServerError, Message: "listing ResourceQuotas of namespace team-a: cache not synced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Handle() (-want +got):\n%s", diff)
	}
}

func TestConfigValidate(t *testing.T) {
	p := field.NewPath("priorityQuota")
	tests := []struct {
		name   string
		config Config
		want   field.ErrorList
	}{
		{name: "classes listed", config: Config{PriorityClasses: []string{"high", "mid-np"}}},
		{name: "all classes", config: Config{AllPriorityClasses: true}},
		{
			name: "nothing limited",
			want: field.ErrorList{field.Required(p.Child("priorityClasses"), "list the PriorityClasses that need a ResourceQuota, or set allPriorityClasses")},
		},
		{
			name:   "every problem at once",
			config: Config{PriorityClasses: []string{"high", "Bad_Name", "high"}, AllPriorityClasses: true},
			want: field.ErrorList{
				field.Invalid(p.Child("allPriorityClasses"), true, "may not be true when priorityClasses is set: allPriorityClasses already covers every class"),
				field.Invalid(p.Child("priorityClasses").Index(1), "Bad_Name",
					"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
				field.Duplicate(p.Child("priorityClasses").Index(2), "high"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.config.Validate(p)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := NewHandler(Config{}, nil, nil); err == nil || !strings.Contains(err.Error(), "priorityQuota.priorityClasses: Required value") {
		t.Errorf("NewHandler(Config{}) error = %v, want the validation error", err)
	}
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }
