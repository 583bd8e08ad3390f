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
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestHelmInstallUpgradeUninstall installs charts/waterline into a real
// API server with helm, runs waterline-manager with the exact arguments
// the chart gives it and as its ServiceAccount (so the chart's RBAC is what
// is tested), then upgrades and uninstalls the release. Without a
// kube-controller-manager nothing runs the Deployments and the DaemonSet;
// the manager runs as a process instead.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	chart := testutil.ChartDir()
	webhookPort, metricsPort, healthPort := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	install := []string{"install", "waterline", chart, "-n", "waterline-system", "--create-namespace",
		"-f", filepath.Join(chart, "ci", "local-values.yaml"),
		"--set", "manager.ports.webhook=" + strconv.Itoa(webhookPort),
		"--set", "manager.ports.metrics=" + strconv.Itoa(metricsPort),
		"--set", "manager.ports.health=" + strconv.Itoa(healthPort),
		// No kube-controller-manager or node here, so the hook Jobs could
		// never run and uninstall would wait on them; test/e2e's real node
		// runs both (HelmUpgradeAndUninstall).
		"--set", "agent.uninstallHook.enabled=false",
		"--set", "manager.uninstallHook.enabled=false",
		"--set-json", `colocationPolicy.spec.profiles=[{"name":"batch-namespaces","namespaceSelector":{"matchLabels":{"waterline.dev/colocation":"batch"}},"band":"batch","priorityClassName":"waterline-batch","schedulerName":"waterline-scheduler"}]`,
	}
	c.Helm(t, install...)

	for _, obj := range []string{
		"crd/nodemetrics.waterline.dev", "daemonset/waterline-agent", "deployment/waterline-manager", "deployment/waterline-scheduler",
		"mutatingwebhookconfiguration/waterline-colocation-profiles", "validatingadmissionpolicy/waterline-agent-node-scope",
		"priorityclass/waterline-batch", "nodeqos/default", "colocationpolicy/default", "configmap/waterline-scheduler-config",
		"clusterrole/waterline-agent", "validatingwebhookconfiguration/waterline-agent-eviction",
	} {
		if _, err := c.KubectlE("get", "-n", "waterline-system", obj); err != nil {
			t.Errorf("after helm install, %s is missing: %v", obj, err)
		}
	}
	cm, err := c.Kube.CoreV1().ConfigMaps("waterline-system").Get(ctx, "waterline-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if body := cm.Data["scheduler-config.yaml"]; strings.Contains(body, "BandPreemption") || !strings.Contains(body, "DefaultPreemption") {
		t.Errorf("preemption is not disabled at install:\n%s", body)
	}

	// The manager, with the chart's arguments, as its ServiceAccount.
	dep, err := c.Kube.AppsV1().Deployments("waterline-system").Get(ctx, "waterline-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := chartArgs(t, dep)
	mgr := c.StartManager(t, append(args,
		"--kubeconfig", impersonatingKubeconfig(t, c.Kubeconfig, "system:serviceaccount:waterline-system:waterline-manager"))...)
	testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
		m, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "waterline-colocation-profiles", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(m.Webhooks) == 1 && len(m.Webhooks[0].ClientConfig.CABundle) > 0 &&
			*m.Webhooks[0].ClientConfig.URL == fmt.Sprintf("https://127.0.0.1:%d/mutate-v1-pod-colocation-profile", webhookPort), fmt.Errorf("webhooks %v", m.Webhooks)
	}, "waiting for the manager to fill in its webhook configuration")

	// Upgrade: preemption on. The manager's entries survive helm's update
	// of the object it owns the rest of.
	c.Helm(t, "upgrade", "waterline", chart, "-n", "waterline-system", "--reset-then-reuse-values", "--set", "scheduler.preemption=enabled")
	cm, err = c.Kube.CoreV1().ConfigMaps("waterline-system").Get(ctx, "waterline-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["scheduler-config.yaml"], "BandPreemption") {
		t.Errorf("helm upgrade --set scheduler.preemption=enabled did not enable BandPreemption:\n%s", cm.Data["scheduler-config.yaml"])
	}
	m, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "waterline-colocation-profiles", metav1.GetOptions{})
	if err != nil || len(m.Webhooks) != 1 {
		t.Errorf("after helm upgrade the colocation webhook has %d entries (err %v), want the manager's 1", len(m.Webhooks), err)
	}

	mgr.Stop()
	c.Helm(t, "uninstall", "waterline", "-n", "waterline-system", "--wait=false")
	for _, check := range []func() error{
		func() error {
			_, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "waterline-colocation-profiles", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "waterline-agent-node-scope", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Kube.AppsV1().DaemonSets("waterline-system").Get(ctx, "waterline-agent", metav1.GetOptions{})
			return err
		},
	} {
		if err := check(); !apierrors.IsNotFound(err) {
			t.Errorf("after helm uninstall: %v, want not found", err)
		}
	}
}

// chartArgs are the manager container's arguments, less the addresses the
// test picks itself.
func chartArgs(t *testing.T, dep *appsv1.Deployment) []string {
	t.Helper()
	var out []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
		case strings.HasPrefix(a, "--webhook-cert-dir="):
			out = append(out, "--webhook-cert-dir="+filepath.Join(t.TempDir(), "certs"))
		default:
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		b, _ := yaml.Marshal(dep)
		t.Fatalf("the manager Deployment has no args:\n%s", b)
	}
	return out
}

// impersonatingKubeconfig writes a copy of kubeconfig that acts as user
// (a ServiceAccount, with its groups).
func impersonatingKubeconfig(t *testing.T, kubeconfig, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.Split(user, ":")[2]
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-"+strings.ReplaceAll(user, ":", "-"))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}
