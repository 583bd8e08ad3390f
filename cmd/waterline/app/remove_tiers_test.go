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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestRemoveTierResources runs the chart's post-delete hook against a real
// API server: it waits for the manager's pods, then takes the tier
// resources off every node whose pods no longer request them, keeping
// cpu, memory and pods, and names the nodes and pods that keep them.
func TestRemoveTierResources(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: starts etcd and kube-apiserver (-short)")
	}
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	c.CreateNamespace(t, "waterline-system", nil)
	c.CreateNamespace(t, "jobs", nil)

	status := func(tiers bool) corev1.ResourceList {
		rl := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}
		if tiers {
			rl[extension.ResourceMidCPU] = resource.MustParse("1200")
			rl[extension.ResourceMidMemory] = resource.MustParse("2Gi")
			rl[extension.ResourceBatchCPU] = resource.MustParse("3000")
			rl[extension.ResourceBatchMemory] = resource.MustParse("8Gi")
		}
		return rl
	}
	for _, n := range []struct {
		name  string
		tiers bool
	}{{"plain", false}, {"free", true}, {"done", true}, {"held", true}} {
		node, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Capacity, node.Status.Allocatable = status(n.tiers), status(n.tiers)
		if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(ns, name, node string, labels map[string]string, requests corev1.ResourceList, phase corev1.PodPhase) {
		t.Helper()
		p, err := c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Finalizers: []string{"waterline.dev/test-hold"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "fake",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = phase
		if _, err := c.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			_, _ = c.Kube.CoreV1().Pods(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		})
	}
	batch := corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse("500"), extension.ResourceBatchMemory: resource.MustParse("1Gi")}
	pod("jobs", "running-batch", "held", nil, batch, corev1.PodRunning)
	pod("jobs", "finished-batch", "done", nil, batch, corev1.PodSucceeded)
	pod("jobs", "plain-pod", "free", nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, corev1.PodRunning)
	managerLabels := map[string]string{"app.kubernetes.io/name": "waterline-manager"}
	pod("waterline-system", "manager-0", "plain", managerLabels, nil, corev1.PodRunning)

	opts := removeTiersOptions{managerNamespace: "waterline-system", managerSelector: "app.kubernetes.io/name=waterline-manager", timeout: 3 * time.Second}
	tierNames := func() map[string][]string {
		t.Helper()
		nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			for _, name := range publishedTierResources(n) {
				out[n.Name] = append(out[n.Name], string(name))
			}
			if n.Status.Capacity.Cpu().Cmp(resource.MustParse("8")) != 0 || n.Status.Allocatable.Memory().Cmp(resource.MustParse("32Gi")) != 0 {
				t.Errorf("node %s: cpu capacity %v, memory allocatable %v: the command touched more than the tier resources",
					n.Name, n.Status.Capacity.Cpu(), n.Status.Allocatable.Memory())
			}
		}
		return out
	}
	all := []string{string(extension.ResourceMidCPU), string(extension.ResourceMidMemory), string(extension.ResourceBatchCPU), string(extension.ResourceBatchMemory)}
	before := tierNames()

	// The manager still runs: nothing is removed, and it says why.
	var out bytes.Buffer
	err := removeTierResources(ctx, c.Kube, &out, opts)
	if err == nil || !strings.Contains(err.Error(), "manager-0") {
		t.Fatalf("with the manager's pod still there: error %v, want one naming manager-0", err)
	}
	if diff := cmp.Diff(before, tierNames()); diff != "" {
		t.Errorf("tier resources changed while the manager ran (-before +after):\n%s", diff)
	}

	// The manager is gone: every node but the one with a running Batch pod
	// loses its tier resources.
	if err := c.Kube.CoreV1().Pods("waterline-system").Delete(ctx, "manager-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.Kube.CoreV1().Pods("waterline-system").Patch(ctx, "manager-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := removeTierResources(ctx, c.Kube, &out, opts); err != nil {
		t.Fatalf("remove-tier-resources: %v\n%s", err, out.String())
	}
	if diff := cmp.Diff(map[string][]string{"held": all}, tierNames()); diff != "" {
		t.Errorf("tier resources left (-want +got):\n%s\noutput:\n%s", diff, out.String())
	}
	for _, want := range []string{"Node held keeps", "jobs/running-batch", "removed from 2 nodes", "1 nodes keep them"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// --force takes them off the last node too.
	out.Reset()
	opts.force = true
	if err := removeTierResources(ctx, c.Kube, &out, opts); err != nil {
		t.Fatalf("remove-tier-resources --force: %v\n%s", err, out.String())
	}
	if got := tierNames(); len(got) != 0 {
		t.Errorf("tier resources left after --force: %v\noutput:\n%s", got, out.String())
	}
}
