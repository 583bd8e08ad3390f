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
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestChartCIValuesAreAdmitted renders charts/waterline with each of its
// ci/*-values.yaml -- the defaults, local-up's, and the largest and the
// smallest values its schema admits -- and creates every object it renders,
// hooks included, on a real API server in dry run with strict field
// validation, as helm would send them. values.schema.json holds the CRDs'
// spec schemas but not the API server's other checks, and `helm install
// --dry-run=server` does not send objects for validation, so a values
// file the chart renders could otherwise still fail half-way through an
// install (the largest and smallest files did, before their NodeQOS lines
// were put in the order the CRD requires). The server has the CRDs of the
// Prometheus Operator's ServiceMonitor and cert-manager's Certificate and
// Issuer, from their releases' modules, so the chart's objects of those
// kinds meet the schemas those operators' clusters check; a kind the
// server does not serve fails the test.
func TestChartCIValuesAreAdmitted(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{CRDPaths: append([]string{testutil.ServiceMonitorCRD(t), testutil.PrometheusRuleCRD(t)}, testutil.CertManagerCRDs(t)...)})
	ctx := t.Context()
	client, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	const namespace = "waterline-system"
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	chart := testutil.ChartDir()
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("want at least the default, local, largest and smallest values in %s/ci, found %v (%v)", chart, files, err)
	}
	checkedKinds := map[string]int{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			manifest := c.Helm(t, "template", "waterline", chart, "-n", namespace, "-f", file)
			// Helm reads a values file's numbers as float64, and a
			// template that prints one as it is writes 1e+06 for a
			// million: valid YAML, but a float where the API wants an
			// integer, which strict validators refuse.
			if m := scientificNumber.FindString(manifest); m != "" {
				t.Errorf("the chart rendered with %s prints a number as %q: render it with toJson", filepath.Base(file), m)
			}
			objects := decodeManifest(t, manifest)
			var checked int
			for _, obj := range objects {
				gvk := obj.GroupVersionKind()
				mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if meta.IsNoMatchError(err) {
					t.Errorf("the test's API server does not serve %s (%s %q): install its CRD in the test", gvk, gvk.Kind, obj.GetName())
					continue
				}
				if err != nil {
					t.Fatalf("%s %s: %v", gvk, obj.GetName(), err)
				}
				var ri dynamic.ResourceInterface = client.Resource(mapping.Resource)
				if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
					if obj.GetNamespace() == "" {
						obj.SetNamespace(namespace)
					}
					ri = client.Resource(mapping.Resource).Namespace(obj.GetNamespace())
				}
				_, err = ri.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
				if err != nil {
					t.Errorf("the API server refuses %s %q rendered with %s: %v", gvk.Kind, obj.GetName(), filepath.Base(file), err)
				}
				checked++
				checkedKinds[gvk.Kind]++
			}
			t.Logf("%d objects admitted in dry run", checked)
			if checked < 20 {
				t.Errorf("only %d objects checked: the render is not what this test expects", checked)
			}
		})
	}
	if checkedKinds["ServiceMonitor"] < 3 {
		t.Errorf("%d ServiceMonitors checked, want the agent's, the manager's and the scheduler's at least (ci/largest-values.yaml enables them)", checkedKinds["ServiceMonitor"])
	}
	if checkedKinds["PrometheusRule"] == 0 {
		t.Errorf("%d PrometheusRules checked, want the chart's alerts (ci/largest-values.yaml and ci/replace-kube-scheduler-values.yaml enable them)", checkedKinds["PrometheusRule"])
	}
	if checkedKinds["Certificate"] == 0 || checkedKinds["Issuer"] == 0 {
		t.Errorf("%d Certificates and %d Issuers checked, want cert-manager's objects (ci/largest-values.yaml enables them)", checkedKinds["Certificate"], checkedKinds["Issuer"])
	}
}

// scientificNumber is a number printed in exponent form.
var scientificNumber = regexp.MustCompile(`[:\[{,\s-][0-9](\.[0-9]+)?e\+[0-9]+\b`)

// decodeManifest splits a multi-document manifest into its objects.
func decodeManifest(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(manifest), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding the rendered chart: %v", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}
