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
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestAlerts checks the chart's alerts (monitoring.prometheusRules) with
// Prometheus's own promtool: the rules parse (promtool check rules), each
// fires on the series that should fire it and on no others, with the
// labels and annotations a person reads (promtool test rules,
// testdata/alerts_test.yaml), and every series they read is one a
// component of this repository serves, so no alert waits on a name that
// does not exist.
func TestAlerts(t *testing.T) {
	t.Parallel()
	manifest := testutil.HelmTemplate(t, "-n", "waterline-system",
		"--set", "monitoring.serviceMonitors.enabled=true", "--set", "monitoring.prometheusRules.enabled=true",
		"--show-only", "templates/alerts.yaml")
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &raw); err != nil {
		t.Fatalf("the chart's PrometheusRule: %v\n%s", err, manifest)
	}
	if err := yaml.Unmarshal([]byte(manifest), &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("the chart's alerts are not a PrometheusRule (%v):\n%s", err, manifest)
	}
	dir := t.TempDir()
	rules, err := yaml.Marshal(raw["spec"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	cases, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), cases, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := testutil.Promtool(t, dir, "check", "rules", "rules.yaml"); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := testutil.Promtool(t, dir, "test", "rules", "alerts_test.yaml"); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}

	// The jobs the alerts select are the ones the chart's ServiceMonitors
	// name (their relabelings set job to the component).
	jobs := map[string]bool{}
	for _, o := range decodeManifest(t, testutil.HelmTemplate(t, "-n", "waterline-system", "--set", "monitoring.serviceMonitors.enabled=true")) {
		if o.GetKind() != "ServiceMonitor" {
			continue
		}
		relabelings, _, _ := unstructured.NestedSlice(firstEndpoint(t, o), "relabelings")
		for _, r := range relabelings {
			if r, _ := r.(map[string]any); r["targetLabel"] == "job" {
				jobs[fmt.Sprint(r["replacement"])] = true
			}
		}
	}
	jobSelector := regexp.MustCompile(`job="([^"]*)"`)

	// Every alert has a case, and reads series that exist.
	sources := metricSources(t)
	series := regexp.MustCompile(`\b(waterline_[a-z_]+)`)
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if !strings.Contains(string(cases), "alertname: "+r.Alert+"\n") {
				t.Errorf("alert %s has no case in testdata/alerts_test.yaml", r.Alert)
			}
			for _, m := range jobSelector.FindAllStringSubmatch(r.Expr, -1) {
				if !jobs[m[1]] {
					t.Errorf("alert %s selects job %q, which no ServiceMonitor of the chart names (%v)", r.Alert, m[1], jobs)
				}
			}
			for _, m := range series.FindAllStringSubmatch(r.Expr, -1) {
				if _, ok := sources[m[1]]; !ok {
					t.Errorf("alert %s reads %s, which no component of this repository registers", r.Alert, m[1])
				}
			}
		}
	}
	want := []string{"WaterlineAgentDown", "WaterlineAgentMetricCacheFull", "WaterlineAgentModuleErrors", "WaterlineAgentNotReporting",
		"WaterlineManagerDown", "WaterlineNodeEvictingOften", "WaterlineSchedulerDown"}
	if slices.Sort(alerts); !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}
