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
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestNodeQOSStatus runs waterline-manager against the real API server and
// checks what `kubectl get nqos` shows: how many nodes each NodeQOS
// selects, that two whose merge is out of order on the colo nodes say so
// (the agents there refuse that merge), and that the overlap is reported;
// relabelling a node moves the counts.
func TestNodeQOSStatus(t *testing.T) {
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	for _, n := range []struct{ name, pool string }{{"colo-1", "colo"}, {"colo-2", "colo"}, {"web-1", "web"}} {
		node, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: n.name, Labels: map[string]string{"pool": n.pool}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}
		if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nqs := c.Waterline.WaterlineV1alpha1().NodeQOSs()
	for _, nq := range []*v1alpha1.NodeQOS{
		{ObjectMeta: metav1.ObjectMeta{Name: "colo-throttle"}, Spec: v1alpha1.NodeQOSSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "colo"}},
			CPU:          &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "all-evict"}, Spec: v1alpha1.NodeQOSSpec{
			CPU: &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](50)}}},
	} {
		if _, err := nqs.Create(ctx, nq, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.StartManager(t, "--controllers", "nodeqos")

	waitFor := func(what string, ok func(map[string]*v1alpha1.NodeQOS) error) {
		t.Helper()
		var last error
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			list, err := nqs.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			by := map[string]*v1alpha1.NodeQOS{}
			for i := range list.Items {
				by[list.Items[i].Name] = &list.Items[i]
			}
			if last = ok(by); last == nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: %v", what, last)
	}
	cond := func(nq *v1alpha1.NodeQOS, typ string) *metav1.Condition {
		return meta.FindStatusCondition(nq.Status.Conditions, typ)
	}

	waitFor("status of the overlapping, out-of-order pair", func(by map[string]*v1alpha1.NodeQOS) error {
		ct, ae := by["colo-throttle"], by["all-evict"]
		if ct.Status.MatchedNodes != 2 || ae.Status.MatchedNodes != 3 {
			return fmt.Errorf("matchedNodes colo-throttle=%d all-evict=%d, want 2 and 3", ct.Status.MatchedNodes, ae.Status.MatchedNodes)
		}
		for _, nq := range []*v1alpha1.NodeQOS{ct, ae} {
			r := cond(nq, qos.ConditionMergeRefused)
			if r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, "colo-1, colo-2") {
				return fmt.Errorf("%s MergeRefused = %+v, want True naming colo-1, colo-2", nq.Name, r)
			}
			if o := cond(nq, qos.ConditionOverlapping); o == nil || o.Status != metav1.ConditionTrue {
				return fmt.Errorf("%s Overlapping = %+v, want True", nq.Name, o)
			}
			if nq.Status.ObservedGeneration != nq.Generation {
				return fmt.Errorf("%s observedGeneration %d, generation %d", nq.Name, nq.Status.ObservedGeneration, nq.Generation)
			}
		}
		return nil
	})
	if out := c.Kubectl(t, "get", "nqos", "colo-throttle", "-o", "jsonpath={.status.matchedNodes}"); out != "2" {
		t.Errorf("kubectl's Nodes column source = %q, want 2", out)
	}

	// Fix the order: the evict line moves above the throttle line.
	ae, err := nqs.Get(ctx, "all-evict", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ae.Spec.CPU.EvictPercent = ptr.To[int32](90)
	if _, err := nqs.Update(ctx, ae, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// And a node joins the colo pool.
	web, err := c.Kube.CoreV1().Nodes().Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Labels["pool"] = "colo"
	if _, err := c.Kube.CoreV1().Nodes().Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("status after the fix and the relabel", func(by map[string]*v1alpha1.NodeQOS) error {
		ct, ae := by["colo-throttle"], by["all-evict"]
		if ct.Status.MatchedNodes != 3 {
			return fmt.Errorf("colo-throttle matchedNodes = %d, want 3", ct.Status.MatchedNodes)
		}
		for _, nq := range []*v1alpha1.NodeQOS{ct, ae} {
			if r := cond(nq, qos.ConditionMergeRefused); r == nil || r.Status != metav1.ConditionFalse {
				return fmt.Errorf("%s MergeRefused = %+v, want False", nq.Name, r)
			}
			if v := cond(nq, qos.ConditionValid); v == nil || v.Status != metav1.ConditionTrue {
				return fmt.Errorf("%s Valid = %+v, want True", nq.Name, v)
			}
		}
		return nil
	})
}
