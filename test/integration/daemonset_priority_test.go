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
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestDaemonSetPriorityWebhook installs the chart's DaemonSet priority
// webhook configuration and PriorityClasses (rendered by helm from
// charts/waterline) and the manager serving the webhook with its own
// certificate: a DaemonSet that names no class gets waterline-daemonset
// and its pods run at the class's priority; a DaemonSet naming a class is
// untouched, and so is one in kube-system.
func TestDaemonSetPriorityWebhook(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	c.StartControllerManager(t)
	c.CreateNodes(t, "ds-node", 2, testutil.NodeOptions{})
	c.CreateNamespace(t, "waterline-system", nil)
	c.CreateNamespace(t, "monitoring", nil)

	port := testutil.FreePort(t)
	manifest := c.Helm(t, "template", "waterline", testutil.ChartDir(), "--namespace", "waterline-system",
		"--set", "webhooks.url=https://127.0.0.1:"+strconv.Itoa(port),
		"--show-only", "templates/daemonset-priority-webhook.yaml",
		"--show-only", "templates/policies.yaml",
		"--set", "colocationPolicy.create=false", "--set", "nodeQOS.create=false")
	file := filepath.Join(t.TempDir(), "daemonset-priority.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := c.KubectlE("apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply of the rendered chart: %v\n%s", err, out)
	}
	c.StartManager(t,
		"--webhooks=true",
		"--webhook-host=127.0.0.1",
		"--webhook-port="+strconv.Itoa(port),
		"--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"),
		"--webhook-cert-mode=secret",
		"--webhook-namespace=waterline-system",
		"--webhook-url=https://127.0.0.1:"+strconv.Itoa(port),
		"--colocation-webhook-configuration=",
		"--daemonset-priority-class=waterline-daemonset",
		"--ca-bundle-configurations=mutating/waterline-daemonset-priority",
		"--controllers=nodemetric",
	)

	ds := func(ns, name, class string) *appsv1.DaemonSet {
		lbl := map[string]string{"app": name}
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: lbl},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: lbl},
					Spec: corev1.PodSpec{
						PriorityClassName: class,
						Containers:        []corev1.Container{{Name: "agent", Image: "node-agent"}},
					},
				},
			},
		}
	}
	// The manager needs a moment for its certificate to reach the
	// configuration's caBundle: dry-run until the webhook answers.
	testutil.Eventually(t, time.Minute, 300*time.Millisecond, func() (bool, error) {
		got, err := c.Kube.AppsV1().DaemonSets("monitoring").Create(ctx, ds("monitoring", "probe", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Spec.Template.Spec.PriorityClassName == "waterline-daemonset", fmt.Errorf("not mutated yet")
	}, "waiting for the DaemonSet priority webhook")

	for _, tc := range []struct {
		ns, name, class string
		wantClass       string
		wantPriority    int32
	}{
		{ns: "monitoring", name: "node-exporter", wantClass: "waterline-daemonset", wantPriority: 100000},
		{ns: "monitoring", name: "log-shipper", class: "system-node-critical", wantClass: "system-node-critical", wantPriority: 2000001000},
		{ns: "kube-system", name: "kube-proxy"},
	} {
		got, err := c.Kube.AppsV1().DaemonSets(tc.ns).Create(ctx, ds(tc.ns, tc.name, tc.class), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating DaemonSet %s/%s: %v", tc.ns, tc.name, err)
		}
		if got.Spec.Template.Spec.PriorityClassName != tc.wantClass {
			t.Errorf("DaemonSet %s/%s: priorityClassName %q, want %q", tc.ns, tc.name, got.Spec.Template.Spec.PriorityClassName, tc.wantClass)
		}
		// Its pods, one per node, carry the class's priority.
		var pods *corev1.PodList
		testutil.Eventually(t, time.Minute, 300*time.Millisecond, func() (bool, error) {
			pods, err = c.Kube.CoreV1().Pods(tc.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + tc.name})
			if err != nil {
				return false, err
			}
			return len(pods.Items) == 2, fmt.Errorf("%d pods, want 2", len(pods.Items))
		}, "waiting for the pods of DaemonSet %s/%s", tc.ns, tc.name)
		for _, p := range pods.Items {
			if p.Spec.PriorityClassName != tc.wantClass || p.Spec.Priority == nil || *p.Spec.Priority != tc.wantPriority {
				t.Errorf("pod %s/%s: class %q priority %v, want %q %d", p.Namespace, p.Name, p.Spec.PriorityClassName, p.Spec.Priority, tc.wantClass, tc.wantPriority)
			}
		}
	}
}
