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

package util

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// PrometheusOperatorModule is the Prometheus Operator, whose CRDs the
// tests install so that the chart's ServiceMonitors meet the schema a
// cluster running the operator checks them against; hack/tools/crds/go.mod
// pins its release.
const PrometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator"

// ServiceMonitorCRD is the ServiceMonitor CRD of PrometheusOperatorModule,
// downloaded from the Go module proxy into the module cache.
func ServiceMonitorCRD(t testing.TB) string {
	t.Helper()
	return filepath.Join(ModuleDir(t, PrometheusOperatorModule), "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml")
}

// PrometheusRuleCRD is the Prometheus Operator's PrometheusRule CRD, the
// kind the chart's alerts are (monitoring.prometheusRules).
func PrometheusRuleCRD(t testing.TB) string {
	t.Helper()
	return filepath.Join(ModuleDir(t, PrometheusOperatorModule), "example", "prometheus-operator-crd", "monitoring.coreos.com_prometheusrules.yaml")
}

// CertManagerModule is cert-manager, whose CRDs the tests install so that
// the chart's Certificates and Issuers meet the schema a cluster running
// cert-manager checks them against; hack/tools/crds/go.mod pins its
// release.
const CertManagerModule = "github.com/cert-manager/cert-manager"

// CertManagerCRDs are the Certificate and Issuer CRDs of CertManagerModule,
// the kinds the chart makes with webhooks.certManager.
func CertManagerCRDs(t testing.TB) []string {
	t.Helper()
	dir := filepath.Join(ModuleDir(t, CertManagerModule), "deploy", "crds")
	return []string{filepath.Join(dir, "cert-manager.io_certificates.yaml"), filepath.Join(dir, "cert-manager.io_issuers.yaml")}
}

// ModuleDir downloads module, at the release hack/tools/crds/go.mod
// pins, from the Go module proxy into the module cache (a no-op when it
// is there; checked against that module's go.sum) and returns its
// directory.
func ModuleDir(t testing.TB, module string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = filepath.Join(RepoRoot(), "hack", "tools", "crds")
	out, err := cmd.Output()
	var res struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" || res.Dir == "" {
		t.Fatalf("go mod download %s: %v %s (%v; output %q)", module, err, res.Error, jerr, out)
	}
	return res.Dir
}
