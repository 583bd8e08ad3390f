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
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
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
	c := testutil.StartCluster(t, testutil.Options{CRDPaths: []string{testutil.ServiceMonitorCRD(t)}})
	const ns = "waterline-system"
	c.CreateNamespace(t, ns, nil)
	manifest := c.Helm(t, "template", "waterline", testutil.ChartDir(), "-n", ns, "--set", "monitoring.serviceMonitors.enabled=true")
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

	// Prometheus scrapes waterline-scheduler's /metrics as the chart's
	// ServiceMonitor says, against the scheduler as the chart deploys it:
	// its configuration, its ServiceAccount's RBAC, kube-scheduler's
	// delegated authentication and authorization (no path always allowed
	// but the health checks).
	t.Run("SchedulerScrapedAsDeployed", func(t *testing.T) {
		sched, ok := monitors["waterline-scheduler"]
		if !ok {
			t.Fatal("the chart has no ServiceMonitor for waterline-scheduler")
		}
		c.StartControllerManager(t) // fills in the reader's token Secret
		// Who may do what, and the objects Prometheus reads; no
		// workloads (the scheduler runs as a process below).
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

		if sched.containerPort != strconv.Itoa(int(sched.port)) {
			t.Errorf("the ServiceMonitor reaches container port %s, the scheduler serves on --secure-port=%d", sched.containerPort, sched.port)
		}

		// The ServiceMonitor as the API server stored it.
		dyn := dynamic.NewForConfigOrDie(c.Config)
		smGVR := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}
		stored, err := dyn.Resource(smGVR).Namespace(ns).Get(t.Context(), sched.monitor, metav1.GetOptions{})
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
		if scheme != "https" || secretName == "" || secretKey == "" {
			t.Fatalf("the scheduler's ServiceMonitor endpoint is %v: want https with a bearer token from a Secret", ep)
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

		// The scheduler's ServiceAccount, as its pod would have it.
		kubeconfig := tokenKubeconfig(t, c, mintToken(t, c, ns, "waterline-scheduler"))
		config := schedulerConfigOf(t, objects, kubeconfig)
		_, port := c.StartSchedulerWithConfig(t, config,
			"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig)
		url := fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, urlPath)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: skipVerify}, //nolint:gosec // as the chart's ServiceMonitor scrapes: kube-scheduler signs its own certificate
		}}
		get := func(bearer string) (int, string) {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, string(body)
		}
		code, body := get(token)
		if code != http.StatusOK {
			t.Fatalf("GET %s with the ServiceMonitor's token: %d %s", url, code, body)
		}
		for _, want := range []string{"waterline_loadaware_filter_refusals_total", "scheduler_pending_pods"} {
			if !strings.Contains(body, want) {
				t.Errorf("the scheduler's /metrics has no %s", want)
			}
		}
		// Nobody else reads it: anonymous requests and ServiceAccounts
		// without the reader's ClusterRole are refused.
		if code, _ := get(""); code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401 or 403", url, code)
		}
		if code, _ := get(mintToken(t, c, ns, "waterline-agent")); code != http.StatusForbidden {
			t.Errorf("GET %s as waterline-agent: %d, want 403", url, code)
		}

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
}

// scrapeTarget is what a ServiceMonitor of the chart reaches.
type scrapeTarget struct {
	monitor string
	// containerPort is the port the endpoint reaches in the workload's
	// pods (the container port its Service's targetPort names).
	containerPort string
	// port is the workload's --secure-port, 0 without one.
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

// servingPort is the port of the workload's first container's
// --secure-port flag, 0 without one.
func servingPort(w *unstructured.Unstructured) int64 {
	containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return 0
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
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

// mintToken is a token of ServiceAccount ns/name (TokenRequest).
func mintToken(t *testing.T, c *testutil.Cluster, ns, name string) string {
	t.Helper()
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("minting a token for %s/%s: %v", ns, name, err)
	}
	return tok.Status.Token
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
