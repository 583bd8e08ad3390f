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

package nodeqos

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// TestReconcileRetriesAfterConflict: a status write that loses to a newer
// object must bring the controller back by itself. When only the status
// moved on, the NodeQOS watch (generation changes only) sends nothing, and
// without the retry the count stayed stale until the next unrelated event.
func TestReconcileRetriesAfterConflict(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "colo"}, Spec: v1alpha1.NodeQOSSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "colo"}},
		CPU:          &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"pool": "colo"}}}
	conflicts := 1
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nq, node).WithStatusSubresource(nq).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if conflicts > 0 {
					conflicts--
					return apierrors.NewConflict(schema.GroupResource{Group: "waterline.dev", Resource: "nodeqoses"}, obj.GetName(), nil)
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	r := &Reconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(metav1.Now().Time)}

	res, err := r.Reconcile(t.Context(), allKey)
	if err != nil {
		t.Fatalf("Reconcile after a conflict: %v, want no error (a conflict is not a failure)", err)
	}
	if res.RequeueAfter <= 0 {
		t.Fatalf("Reconcile after a conflict = %+v, want a retry", res)
	}
	res, err = r.Reconcile(t.Context(), allKey)
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("second Reconcile = %+v, %v; want done", res, err)
	}
	got := &v1alpha1.NodeQOS{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(nq), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.MatchedNodes != 1 {
		t.Errorf("matchedNodes = %d after the retry, want 1", got.Status.MatchedNodes)
	}
}
