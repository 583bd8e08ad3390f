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

package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestUninstallAgents runs the chart's pre-delete hook against a real API
// server and garbage collector: it deletes the agent DaemonSet in the
// foreground (so its agents see it being deleted), waits while an agent
// pod is still there, names the pods left when it times out, and returns
// once the pods and the DaemonSet are gone.
func TestUninstallAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: starts etcd, kube-apiserver and kube-controller-manager (-short)")
	}
	c := testutil.StartCluster(t, testutil.Options{})
	c.StartControllerManager(t)
	ctx := t.Context()
	c.CreateNamespace(t, "waterline-system", nil)
	lbls := map[string]string{"app.kubernetes.io/name": "waterline-agent"}
	ds, err := c.Kube.AppsV1().DaemonSets("waterline-system").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbls},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"no": "node"}, Containers: []corev1.Container{{Name: "agent", Image: "fake"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An agent still stopping: owned by the DaemonSet, held by a finalizer.
	if _, err := c.Kube.CoreV1().Pods("waterline-system").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-1", Labels: lbls, Finalizers: []string{"waterline.dev/test-hold"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "agent", Image: "fake"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := uninstallAgents(ctx, c.Kube, &out, "waterline-system", "waterline-agent", 5*time.Second); err != nil {
		t.Fatalf("uninstall-agents: %v", err)
	}
	got, err := c.Kube.AppsV1().DaemonSets("waterline-system").Get(ctx, "waterline-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the DaemonSet while its pod stays: %v, want it there, being deleted in the foreground", err)
	}
	if got.DeletionTimestamp == nil || !strings.Contains(strings.Join(got.Finalizers, ","), metav1.FinalizerDeleteDependents) {
		t.Errorf("DaemonSet deletionTimestamp %v finalizers %v, want a foreground deletion", got.DeletionTimestamp, got.Finalizers)
	}
	if !strings.Contains(out.String(), "did not stop within 5s") || !strings.Contains(out.String(), "agent-1 on node node-a") {
		t.Errorf("output on timeout:\n%s\nwant the pod left and its node named", out.String())
	}

	// The agent stops: the command returns once it and the DaemonSet are gone.
	done := make(chan error, 1)
	out.Reset()
	go func() {
		done <- uninstallAgents(context.Background(), c.Kube, &out, "waterline-system", "waterline-agent", time.Minute)
	}()
	// No kubelet runs here to finish a graceful deletion: the pod goes at
	// once, as it would when its kubelet confirms the agent has exited.
	if err := c.Kube.CoreV1().Pods("waterline-system").Delete(ctx, "agent-1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.Kube.CoreV1().Pods("waterline-system").Patch(ctx, "agent-1", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("uninstall-agents: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("uninstall-agents did not return after the last agent pod went")
	}
	if !strings.Contains(out.String(), "Every agent of waterline-system/waterline-agent stopped") {
		t.Errorf("output:\n%s\nwant it to say every agent stopped", out.String())
	}
	if _, err := c.Kube.AppsV1().DaemonSets("waterline-system").Get(ctx, "waterline-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the DaemonSet after uninstall-agents: %v, want not found", err)
	}
}
