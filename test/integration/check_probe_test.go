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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/pkg/check"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestCheckProbesTheWebhookServer: `waterline check`, as the chart's test
// Pod runs it, asks the API server to call the manager's probe webhook --
// the chart's configuration, the real manager, the CA bundle it injects --
// and reports the replica that answered; with the manager gone it reports
// that the API server cannot reach the webhook server, quoting the API
// server's error. Nothing the probe creates is stored.
func TestCheckProbesTheWebhookServer(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	const ns = "waterline-system"
	c.CreateNamespace(t, ns, nil)
	port := testutil.FreePort(t)
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	// The probe's configuration and the test Pod's RBAC, as the chart
	// renders them for a manager the API server reaches by URL, with one
	// webhook of the manager's: the DaemonSet one (failurePolicy Ignore).
	rendered := c.Helm(t, "template", "waterline", testutil.ChartDir(), "-n", ns,
		"--set", "webhooks.url="+url, "--set", "webhooks.colocation.enabled=false", "--set", "webhooks.priorityQuota.enabled=false",
		"--set", "agent.nodeScoped=false")
	objects := decodeManifest(t, rendered)
	var docs []string
	for _, o := range objects {
		if o.GetName() == "waterline-webhook-probe" || o.GetName() == "waterline-daemonset-priority" || o.GetName() == "waterline-check" && o.GetKind() != "Pod" {
			b, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
	}
	if len(docs) != 7 {
		t.Fatalf("the chart rendered %d of the probe's and the DaemonSet webhook's configurations and the test Pod's ServiceAccount, ClusterRole(Binding) and Role(Binding), want 7", len(docs))
	}
	path := filepath.Join(t.TempDir(), "probe.json")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", path)
	caTargets := workloadArg(t, objects, "waterline-manager", "--ca-bundle-configurations=")
	if !strings.Contains(caTargets, "validating/waterline-webhook-probe") {
		t.Fatalf("the chart's manager does not keep the probe's CA bundle: %s", caTargets)
	}
	manager := c.StartManager(t,
		"--webhooks=true", "--webhook-host=127.0.0.1", "--webhook-port="+strconv.Itoa(port),
		"--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"), "--webhook-cert-mode=secret",
		"--webhook-namespace="+ns, "--webhook-url="+url, "--colocation-webhook-configuration=",
		"--daemonset-priority-class=waterline-daemonset", caTargets)

	kubeconfig := tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-check"))
	args := slices.Concat(checkPodArgs(t, rendered), []string{"--kubeconfig", kubeconfig, "-o", "json"})
	bin := testutil.BuildBinary(t, "waterline")
	webhooks := func() check.Check {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), bin, args...).Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("running waterline check: %v", err)
		}
		var r check.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("waterline check -o json: %v\n%s", err, out)
		}
		for _, ch := range r.Checks {
			if ch.Name == "webhooks" {
				return ch
			}
		}
		t.Fatalf("waterline check reports no webhooks check:\n%s", out)
		return check.Check{}
	}

	// The manager injects the CA bundle within its first pass.
	var got check.Check
	testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
		got = webhooks()
		return got.Status == check.OK, fmt.Errorf("%s: %s %v", got.Status, got.Message, got.Details)
	}, "waiting for the check to reach the manager's webhook server")
	if !strings.Contains(got.Message, "1 webhook, each with a CA bundle and a ready endpoint (or a URL); the API server reached the manager's webhook server (") {
		t.Errorf("webhooks check with the manager up: %q, want the replica that answered", got.Message)
	}
	t.Logf("with the manager up: %s", got.Message)
	if cms, err := c.Kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "waterline.dev/webhook-probe"}); err != nil || len(cms.Items) > 0 {
		t.Errorf("the probe left ConfigMaps behind: %v %v", cms, err)
	}

	manager.Stop()
	got = webhooks()
	if got.Status != check.Warning || !strings.Contains(got.Message, "the API server cannot reach the manager's webhook server") ||
		len(got.Details) == 0 || !strings.Contains(got.Details[0], `failed calling webhook "probe.waterline.dev"`) {
		t.Errorf("webhooks check with the manager gone: %s %q %q, want a warning (the DaemonSet webhook fails open) quoting the API server's failed call", got.Status, got.Message, got.Details)
	}
	t.Logf("with the manager gone: %s %s %v", got.Status, got.Message, got.Details)
}
