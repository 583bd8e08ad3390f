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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestCheck runs `waterline check` as the chart's `helm test` Pod runs it
// -- the ServiceAccount and RBAC of templates/tests/check.yaml, its flags
// -- against a real API server holding a working installation's objects
// (the workloads' status, leases, nodes, NodeMetrics, a webhook with its
// Service's endpoints), then breaks one part at a time: the command fails
// and names what broke.
func TestCheck(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	const ns = "waterline-system"
	c.CreateNamespace(t, ns, nil)

	rendered := c.Helm(t, "template", "waterline", testutil.ChartDir(), "-n", ns, "--show-only", "templates/tests/check.yaml")
	manifest := filepath.Join(t.TempDir(), "check.yaml")
	if err := os.WriteFile(manifest, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", manifest)
	args := checkPodArgs(t, rendered)

	// A working installation.
	labels := map[string]string{"app": "x"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	for _, name := range []string{"waterline-manager", "waterline-scheduler"} {
		d, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2}
		if _, err := c.Kube.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := c.Kube.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent"},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}
	if _, err := c.Kube.AppsV1().DaemonSets(ns).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	renewLease := func(name string, at time.Time) {
		t.Helper()
		spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name + "-0"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &metav1.MicroTime{Time: at}}
		l, err := c.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if _, err := c.Kube.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return
		}
		l.Spec = spec
		if _, err := c.Kube.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"waterline-manager.waterline.dev", "waterline-scheduler"} {
		renewLease(name, time.Now())
	}
	report := func(node string, at time.Time) {
		t.Helper()
		nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			nm, err = c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		nm.Status.UpdateTime = &metav1.Time{Time: at}
		if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"node-a", "node-b"} {
		n, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Capacity = corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse("4000")}
		n.Status.Allocatable = n.Status.Capacity
		if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		report(name, time.Now())
	}
	// An agent pod on each of them, and a node without one whose
	// NodeMetric, made by the manager, is never reported.
	for _, name := range []string{"node-a", "node-b"} {
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent-" + name, Labels: labels, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true),
			}}},
			Spec: corev1.PodSpec{NodeName: name, Containers: template.Spec.Containers},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-without-agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "node-without-agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A webhook that intercepts nothing this test creates, and its
	// Service's one ready endpoint.
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-webhook"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}, Selector: labels},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "waterline-webhook-1", Labels: map[string]string{discoveryv1.LabelServiceName: "waterline-webhook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	none := admissionregistrationv1.SideEffectClassNone
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-colocation-profiles"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "profiles.waterline.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "waterline-webhook"},
				CABundle: []byte("not checked here"),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"waterline.dev/test": "never"}},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The test Pod's identity.
	kubeconfig := tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-check"))
	bin := testutil.BuildBinary(t, "waterline")
	run := func(extra ...string) (string, bool) {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, slices.Concat(args, []string{"--kubeconfig", kubeconfig}, extra)...).CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("running waterline check: %v", err)
		}
		return string(out), err == nil
	}
	// line is the report's line of check name: STATUS, then the name.
	line := func(out, name string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(l, f[0]), " "), name+"  ") {
				return l
			}
		}
		return ""
	}
	out, ok := run()
	if !ok {
		t.Fatalf("waterline check failed on a working installation:\n%s", out)
	}
	t.Logf("waterline check on a working installation:\n%s", out)
	if js, ok := run("-o", "json"); !ok || !strings.Contains(js, `"failed": false`) || strings.Count(js, `"status": "ok"`) != 7 {
		t.Errorf("waterline check -o json on a working installation: want seven ok checks and failed false:\n%s", js)
	}
	for _, name := range []string{"CRDs", "waterline-manager", "waterline-scheduler", "waterline-agent", "NodeMetrics", "tier resources", "webhooks"} {
		if l := line(out, name); !strings.HasPrefix(l, "ok") {
			t.Errorf("check %s: %q, want ok\n%s", name, l, out)
		}
	}
	if l := line(out, "NodeMetrics"); !strings.Contains(l, "2 of 2 nodes report fresh metrics (1 without an agent, not colocated)") {
		t.Errorf("check NodeMetrics: %q, want the two agents' nodes counted and the third named as without an agent\n%s", l, out)
	}

	for _, tc := range []struct {
		name, check, saying string
		args                []string
		// warn: the check warns (and waterline check passes) rather
		// than fails.
		warn         bool
		breakIt, fix func()
	}{
		{
			// The reports were written seconds ago: older than a 2 s
			// expiry, by the API server's clock too.
			name: "the nodes stop reporting", check: "NodeMetrics", saying: "2 older than 2s", args: []string{"--stale-after=2s"},
			breakIt: func() { time.Sleep(3 * time.Second) },
		},
		{
			// The API server stores a report now that the node's clock
			// says was made 10 minutes ago: fresh, as LoadAware ages it
			// from when it arrives, and the clock named.
			name: "a node's clock is behind", check: "NodeMetrics", warn: true,
			saying:  "2 of 2 nodes report fresh metrics (1 without an agent, not colocated); 1 with a clock more than 30s off the API server's",
			breakIt: func() { report("node-b", time.Now().Add(-10*time.Minute)) },
			fix:     func() { report("node-b", time.Now()) },
		},
		{
			name: "an agent never reports", check: "NodeMetrics", saying: "1 never reported by the node's agent",
			breakIt: func() {
				nm, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, "node-a", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				nm.Status = v1alpha1.NodeMetricStatus{}
				if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			fix: func() { report("node-a", time.Now()) },
		},
		{
			name: "no scheduler leads", check: "waterline-scheduler", saying: "no replica is leading",
			breakIt: func() { renewLease("waterline-scheduler", time.Now().Add(-5*time.Minute)) },
			fix:     func() { renewLease("waterline-scheduler", time.Now()) },
		},
		{
			name: "the webhook's pods are gone", check: "webhooks", saying: "1 not reachable",
			breakIt: func() {
				if err := c.Kube.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "waterline-webhook-1", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
		},
	} {
		tc.breakIt()
		out, ok := run(tc.args...)
		want := "FAIL"
		if tc.warn {
			want = "warning"
		}
		if ok != tc.warn {
			t.Errorf("%s: waterline check exited ok = %v, want %v:\n%s", tc.name, ok, tc.warn, out)
		}
		if l := line(out, tc.check); !strings.HasPrefix(l, want) || !strings.Contains(out, tc.saying) {
			t.Errorf("%s: check %s is %q, want %s saying %q\n%s", tc.name, tc.check, l, want, tc.saying, out)
		} else {
			t.Logf("%s:\n%s", tc.name, out)
		}
		if tc.fix != nil {
			tc.fix()
		}
	}
}

// checkPodArgs are the arguments of the chart's helm test Pod,
// waterline-check, in manifest: `waterline check` and its flags.
func checkPodArgs(t *testing.T, manifest string) []string {
	t.Helper()
	var args []string
	for _, o := range decodeManifest(t, manifest) {
		if o.GetKind() == "Pod" && o.GetName() == "waterline-check" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
			for _, a := range containers[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
		}
	}
	if len(args) == 0 || args[0] != "check" {
		t.Fatalf("the chart's test Pod waterline-check runs %v, want waterline check\n%s", args, manifest)
	}
	return args
}
