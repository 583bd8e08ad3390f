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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/policy"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestColocationPolicyStatus runs waterline-manager against the real API
// server and checks what `kubectl get cp` shows: how many nodes each
// policy governs, that a pool another pool outranks on its nodes says so,
// and that relabelling a node and deleting the winning pool move the
// counts.
func TestColocationPolicyStatus(t *testing.T) {
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	for _, n := range []struct{ name, pool string }{{"colo-1", "colo"}, {"colo-2", "colo"}, {"web-1", "web"}} {
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: n.name, Labels: map[string]string{"pool": n.pool}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cps := c.Waterline.WaterlineV1alpha1().ColocationPolicies()
	pool := func(name string, precedence int32, value string) *v1alpha1.ColocationPolicy {
		return &v1alpha1.ColocationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ColocationPolicySpec{
			Precedence: precedence, NodeSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"pool": v1alpha1.LabelValue(value)}}}}
	}
	for _, p := range []*v1alpha1.ColocationPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultColocationPolicyName}},
		pool("colo-high", 10, "colo"),
		pool("colo-low", 1, "colo"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-selector"}},
	} {
		if _, err := cps.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.StartManager(t, "--controllers", "colocationpolicy")

	waitFor := func(what string, ok func(map[string]*v1alpha1.ColocationPolicy) error) {
		t.Helper()
		var last error
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			list, err := cps.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			by := map[string]*v1alpha1.ColocationPolicy{}
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
	check := func(by map[string]*v1alpha1.ColocationPolicy, name string, nodes int32, overridden metav1.ConditionStatus, msg string) error {
		p := by[name]
		if p == nil {
			return fmt.Errorf("%s is gone", name)
		}
		if p.Status.SelectedNodes != nodes || p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("%s: selectedNodes %d (want %d), observedGeneration %d (generation %d)",
				name, p.Status.SelectedNodes, nodes, p.Status.ObservedGeneration, p.Generation)
		}
		if v := meta.FindStatusCondition(p.Status.Conditions, policy.ConditionValid); v == nil || v.Status != metav1.ConditionTrue {
			return fmt.Errorf("%s Valid = %+v, want True", name, v)
		}
		if overridden == "" {
			return nil
		}
		o := meta.FindStatusCondition(p.Status.Conditions, policy.ConditionOverridden)
		if o == nil || o.Status != overridden || !strings.Contains(o.Message, msg) {
			return fmt.Errorf("%s Overridden = %+v, want %s with %q", name, o, overridden, msg)
		}
		return nil
	}

	waitFor("status of two pools on the same nodes", func(by map[string]*v1alpha1.ColocationPolicy) error {
		return errorsOf(
			check(by, "default", 3, "", ""),
			check(by, "colo-high", 2, metav1.ConditionFalse, ""),
			check(by, "colo-low", 0, metav1.ConditionTrue, "2 node(s) governed by colo-high"),
			check(by, "no-selector", 0, metav1.ConditionFalse, ""),
		)
	})
	if out := c.Kubectl(t, "get", "cp", "colo-high", "-o", "jsonpath={.status.selectedNodes}"); out != "2" {
		t.Errorf("kubectl's Nodes column source = %q, want 2", out)
	}
	if r := meta.FindStatusCondition(mustGetPolicy(t, c, "no-selector").Status.Conditions, policy.ConditionValid); r == nil || r.Reason != "NoNodeSelector" {
		t.Errorf("no-selector Valid = %+v, want reason NoNodeSelector", r)
	}

	// A node joins the colo pool, and the winning pool goes.
	web, err := c.Kube.CoreV1().Nodes().Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Labels["pool"] = "colo"
	if _, err := c.Kube.CoreV1().Nodes().Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("status after the relabel", func(by map[string]*v1alpha1.ColocationPolicy) error {
		return errorsOf(
			check(by, "colo-high", 3, metav1.ConditionFalse, ""),
			check(by, "colo-low", 0, metav1.ConditionTrue, "3 node(s) governed by colo-high"),
		)
	})
	if err := cps.Delete(ctx, "colo-high", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("status after the winning pool's deletion", func(by map[string]*v1alpha1.ColocationPolicy) error {
		return errorsOf(
			check(by, "default", 3, "", ""),
			check(by, "colo-low", 3, metav1.ConditionFalse, ""),
		)
	})
}

func mustGetPolicy(t *testing.T, c *testutil.Cluster, name string) *v1alpha1.ColocationPolicy {
	t.Helper()
	p, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// errorsOf is the first non-nil error.
func errorsOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
