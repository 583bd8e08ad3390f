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
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestMonitoring installs the chart's monitoring objects with
// monitoring.serviceMonitors enabled (the ServiceMonitor CRD is the
// Prometheus Operator's) and follows each ServiceMonitor the way the
// operator does: ServiceMonitor → Service → the pods of a Waterline
// workload → the container port its endpoint names.
func TestMonitoring(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true, CRDPaths: []string{testutil.ServiceMonitorCRD(t)}})
	const ns = "waterline-system"
	c.CreateNamespace(t, ns, nil)
	// The agents serve a certificate of the user's (agent.metricsCertSecret,
	// as cert-manager writes it), which their ServiceMonitor verifies; the
	// manager and the scheduler serve their own, not verified.
	const agentCertSecret, agentCertHost = "waterline-agent-metrics-tls", "waterline-agent-metrics.waterline-system.svc"
	manifest := c.Helm(t, "template", "waterline", testutil.ChartDir(), "-n", ns, "--set", "monitoring.serviceMonitors.enabled=true",
		"--set", "agent.metricsCertSecret="+agentCertSecret,
		"--set", "monitoring.serviceMonitors.tlsConfig.agent.ca.secret.name="+agentCertSecret,
		"--set", "monitoring.serviceMonitors.tlsConfig.agent.ca.secret.key=ca.crt",
		"--set", "monitoring.serviceMonitors.tlsConfig.agent.serverName="+agentCertHost)
	objects := decodeManifest(t, manifest)
	monitors := scrapedComponents(t, objects)

	// The dashboard reads metrics of components the chart scrapes: a
	// panel fed by a component without a ServiceMonitor stays empty.
	t.Run("DashboardMetricsAreScraped", func(t *testing.T) {
		sources := metricSources(t)
		for _, q := range dashboardQueries(t) {
			for _, name := range q.metrics {
				component, ok := sources[name]
				if !ok {
					t.Errorf("panel %q reads %s, which no component of this repository or kube-scheduler registers", q.panel, name)
					continue
				}
				if component == kubeStateMetricsSource {
					continue
				}
				if _, ok := monitors[component]; !ok {
					t.Errorf("panel %q reads %s, served by %s, which no ServiceMonitor of the chart scrapes (scraped: %v)", q.panel, name, component, slices.Sorted(maps.Keys(monitors)))
				}
			}
		}
	})

	// Prometheus scrapes each component's /metrics as the chart's
	// ServiceMonitor says, against the component as the chart deploys it:
	// its arguments, its ServiceAccount's RBAC, and authentication and
	// authorization delegated to the API server (kube-scheduler's own;
	// pkg/securemetrics for the manager and the agent).
	c.StartControllerManager(t) // fills in the reader's token Secret
	// Who may do what, and the objects Prometheus reads; no workloads
	// (the components run as processes below).
	var docs []string
	for _, o := range objects {
		switch o.GetKind() {
		case "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "ServiceMonitor":
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
	}
	path := filepath.Join(t.TempDir(), "monitoring.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Kubectl(t, "apply", "-f", path)
	dyn := dynamic.NewForConfigOrDie(c.Config)
	smGVR := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

	// scrapeAsDeployed checks that the component's ServiceMonitor, as the
	// API server stored it, scrapes over HTTPS with the reader's token
	// and the port the component serves on, then scrapes it at port as
	// Prometheus would: the reader gets the page with every series in
	// want, a request without a token gets 401, and another of the
	// chart's ServiceAccounts, stranger, gets 403. With verified the
	// ServiceMonitor must verify the serving certificate, and the scrapes
	// do, with the CA and server name it names; without, it must skip
	// verification.
	scrapeAsDeployed := func(t *testing.T, component string, port int, verified bool, stranger string, want ...string) {
		t.Helper()
		target, ok := monitors[component]
		if !ok {
			t.Fatalf("the chart has no ServiceMonitor for %s", component)
		}
		if target.containerPort != strconv.Itoa(int(target.port)) {
			t.Errorf("%s's ServiceMonitor reaches container port %s, the component serves /metrics on %d", component, target.containerPort, target.port)
		}
		stored, err := dyn.Resource(smGVR).Namespace(ns).Get(t.Context(), target.monitor, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ep := firstEndpoint(t, stored)
		scheme, _, _ := unstructured.NestedString(ep, "scheme")
		urlPath, _, _ := unstructured.NestedString(ep, "path")
		if urlPath == "" {
			urlPath = "/metrics" // the operator's default
		}
		skipVerify, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
		secretName, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
		secretKey, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key")
		if scheme != "https" || skipVerify == verified || secretName == "" || secretKey == "" {
			t.Fatalf("%s's ServiceMonitor endpoint is %v: want https, the certificate verified: %v, and a bearer token from a Secret", component, ep, verified)
		}
		// What Prometheus checks the serving certificate against: the CA
		// of the Secret the ServiceMonitor names, for its server name.
		tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // as the ServiceMonitor says: a self-signed certificate
		if verified {
			caSecret, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "name")
			caKey, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "key")
			serverName, _, _ := unstructured.NestedString(ep, "tlsConfig", "serverName")
			tlsConfig = c.VerifyingTLSConfig(t, ns, caSecret, caKey, serverName)
		}
		var token string
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			s, err := c.Kube.CoreV1().Secrets(ns).Get(t.Context(), secretName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			token = string(s.Data[secretKey])
			return token != "", fmt.Errorf("secret %s has no %q yet", secretName, secretKey)
		}, "waiting for kube-controller-manager to fill in the ServiceMonitor's token")

		// The manager opens /metrics beside its probes, not before them.
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false, err
			}
			return true, conn.Close()
		}, "waiting for %s to listen on %s", component, addr)
		url := fmt.Sprintf("%s://%s%s", scheme, addr, urlPath)
		code, body := testutil.ScrapeTLS(t, url, token, tlsConfig)
		if code != http.StatusOK {
			t.Fatalf("GET %s with the ServiceMonitor's token: %d %s", url, code, body)
		}
		for _, series := range want {
			if !strings.Contains(body, series) {
				t.Errorf("%s's /metrics has no %s", component, series)
			}
		}
		// Nobody else reads it: anonymous requests and ServiceAccounts
		// without the reader's ClusterRole are refused.
		if code, _ := testutil.Scrape(t, url, ""); code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401 or 403", url, code)
		}
		if code, _ := testutil.Scrape(t, url, "not-a-token"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a made-up token: %d, want 401", url, code)
		}
		if code, _ := testutil.Scrape(t, url, c.MintToken(t, ns, stranger)); code != http.StatusForbidden {
			t.Errorf("GET %s as %s: %d, want 403", url, stranger, code)
		}
	}

	t.Run("SchedulerScrapedAsDeployed", func(t *testing.T) {
		// The scheduler's ServiceAccount, as its pod would have it.
		kubeconfig := tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-scheduler"))
		config := schedulerConfigOf(t, objects, kubeconfig)
		_, port := c.StartSchedulerWithConfig(t, config,
			"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig)
		scrapeAsDeployed(t, "waterline-scheduler", port, false, "waterline-agent", "waterline_loadaware_filter_refusals_total", "scheduler_pending_pods")

		// With the chart's RBAC the scheduler also takes its lease (the
		// chart's configuration elects a leader).
		testutil.Eventually(t, time.Minute, 250*time.Millisecond, func() (bool, error) {
			l, err := c.Kube.CoordinationV1().Leases(ns).Get(t.Context(), "waterline-scheduler", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("no lease yet")
			}
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", err
		}, "waiting for waterline-scheduler to take its lease with the chart's RBAC")
	})

	// The manager and the agent check their callers with their own
	// ServiceAccount's TokenReviews and SubjectAccessReviews, which the
	// chart grants.
	t.Run("ManagerScrapedAsDeployed", func(t *testing.T) {
		port := testutil.FreePort(t)
		c.StartManager(t, "--kubeconfig", tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-manager")),
			workloadArg(t, objects, "waterline-manager", "--metrics-secure="),
			"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(port))
		scrapeAsDeployed(t, "waterline-manager", port, false, "waterline-agent", "controller_runtime_reconcile_total", "workqueue_adds_total")
	})
	t.Run("AgentScrapedAsDeployed", func(t *testing.T) {
		// agent.metricsCertSecret, mounted where the chart's
		// --metrics-cert-dir says, as kubelet mounts it.
		data := testutil.ServingCertSecretData(t, agentCertHost)
		if _, err := c.Kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: agentCertSecret}, Type: corev1.SecretTypeTLS, Data: data,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		certDir := t.TempDir()
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if err := os.WriteFile(filepath.Join(certDir, key), data[key], 0o600); err != nil {
				t.Fatal(err)
			}
		}
		workloadArg(t, objects, "waterline-agent", "--metrics-cert-dir=")
		node := c.CreateNodes(t, "monitored", 1, testutil.NodeOptions{})[0].Name
		a := startFixtureAgent(t, c, testutil.AgentOptions{
			NodeName:      node,
			Kubeconfig:    tokenKubeconfig(t, c, c.MintToken(t, ns, "waterline-agent")),
			SecureMetrics: workloadArg(t, objects, "waterline-agent", "--metrics-secure=") == "--metrics-secure=true",
			Args:          []string{"--metrics-cert-dir=" + certDir},
		})
		port, err := strconv.Atoi(a.MetricsURL[strings.LastIndex(a.MetricsURL, ":")+1:])
		if err != nil {
			t.Fatal(err)
		}
		scrapeAsDeployed(t, "waterline-agent", port, true, "waterline-manager", "waterline_agent_cycle_duration_seconds_count", "waterline_agent_node_cpu_usage_cores")
	})
}

// workloadArg returns the argument of the Deployment or DaemonSet named
// workload that starts with prefix.
func workloadArg(t *testing.T, objects []*unstructured.Unstructured, workload, prefix string) string {
	t.Helper()
	for _, o := range objects {
		if (o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet") || o.GetName() != workload {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		for _, a := range args {
			if strings.HasPrefix(a, prefix) {
				return a
			}
		}
		t.Fatalf("%s %s has no argument %s...: %v", o.GetKind(), workload, prefix, args)
	}
	t.Fatalf("the chart renders no workload %s", workload)
	return ""
}

// scrapeTarget is what a ServiceMonitor of the chart reaches.
type scrapeTarget struct {
	monitor string
	// containerPort is the port the endpoint reaches in the workload's
	// pods (the container port its Service's targetPort names).
	containerPort string
	// port is the port the workload serves /metrics on (its
	// --secure-port, --metrics-bind-address or --metrics-address), 0
	// without one.
	port int64
}

// scrapedComponents follows every rendered ServiceMonitor to the workload
// (Deployment or DaemonSet) whose pods its Services select, and returns
// the targets by workload name. A ServiceMonitor that reaches no workload,
// or names a port the Service or the pods lack, fails the test.
func scrapedComponents(t *testing.T, objects []*unstructured.Unstructured) map[string]scrapeTarget {
	t.Helper()
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objects {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}
	out := map[string]scrapeTarget{}
	for _, sm := range byKind["ServiceMonitor"] {
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		portName, _, _ := unstructured.NestedString(firstEndpoint(t, sm), "port")
		found := false
		for _, svc := range byKind["Service"] {
			if !labelsMatch(selector, svc.GetLabels()) {
				continue
			}
			podSelector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			var target string
			for _, p := range ports {
				if p, _ := p.(map[string]any); p["name"] == portName {
					target = fmt.Sprint(p["targetPort"])
				}
			}
			if target == "" {
				t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s lacks", sm.GetName(), portName, svc.GetName())
				continue
			}
			for _, kind := range []string{"Deployment", "DaemonSet"} {
				for _, w := range byKind[kind] {
					podLabels, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
					if !labelsMatch(podSelector, podLabels) {
						continue
					}
					found = true
					port, ok := containerPortNamed(w, target)
					if !ok {
						t.Errorf("ServiceMonitor %s → Service %s → %s %s: no container port named %q", sm.GetName(), svc.GetName(), kind, w.GetName(), target)
						continue
					}
					out[w.GetName()] = scrapeTarget{monitor: sm.GetName(), containerPort: port, port: servingPort(w)}
				}
			}
		}
		if !found {
			t.Errorf("ServiceMonitor %s reaches no Waterline workload", sm.GetName())
		}
	}
	return out
}

func firstEndpoint(t *testing.T, sm *unstructured.Unstructured) map[string]any {
	t.Helper()
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) == 0 {
		t.Fatalf("ServiceMonitor %s has no endpoints", sm.GetName())
	}
	ep, _ := eps[0].(map[string]any)
	return ep
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// containerPortNamed returns the number of the workload's container port
// called name.
func containerPortNamed(w *unstructured.Unstructured, name string) (string, bool) {
	containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		c, _ := c.(map[string]any)
		ports, _, _ := unstructured.NestedSlice(c, "ports")
		for _, p := range ports {
			if p, _ := p.(map[string]any); p["name"] == name {
				return fmt.Sprint(p["containerPort"]), true
			}
		}
	}
	return "", false
}

// servingPort is the port the workload's first container serves
// /metrics on: its --secure-port (kube-scheduler), --metrics-bind-address
// (the manager) or --metrics-address (the agent); 0 without one.
func servingPort(w *unstructured.Unstructured) int64 {
	containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return 0
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, a := range args {
		for _, flag := range []string{"--secure-port=", "--metrics-bind-address=", "--metrics-address="} {
			if v, ok := strings.CutPrefix(a, flag); ok {
				n, _ := strconv.ParseInt(v[strings.LastIndex(v, ":")+1:], 10, 64)
				return n
			}
		}
	}
	return 0
}

// schedulerConfigOf is the KubeSchedulerConfiguration the chart renders,
// reaching the API server with kubeconfig as the scheduler's pod does
// in-cluster.
func schedulerConfigOf(t *testing.T, objects []*unstructured.Unstructured, kubeconfig string) string {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "ConfigMap" || o.GetName() != "waterline-scheduler-config" {
			continue
		}
		raw, _, _ := unstructured.NestedString(o.Object, "data", "scheduler-config.yaml")
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Fatalf("the chart's scheduler configuration: %v", err)
		}
		if _, ok := cfg["clientConnection"]; ok {
			t.Fatalf("the chart's scheduler configuration sets clientConnection; the test replaces it:\n%s", raw)
		}
		cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
		b, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Fatal("the chart renders no waterline-scheduler-config ConfigMap")
	return ""
}

// tokenKubeconfig writes a copy of the cluster's kubeconfig that
// authenticates with token alone.
func tokenKubeconfig(t *testing.T, c *testutil.Cluster, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, ai := range cfg.AuthInfos {
		ai.ClientCertificate, ai.ClientCertificateData, ai.ClientKey, ai.ClientKeyData = "", nil, "", nil
		ai.Username, ai.Password = "", ""
		ai.Token = token
		cfg.AuthInfos[name] = ai
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
