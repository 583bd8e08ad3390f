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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// kubeStateMetrics are the kube-state-metrics series the dashboard reads
// (Mid/Batch allocatable and requests); kube-state-metrics is not part of
// this repository, so they are listed here instead of found in code.
var kubeStateMetrics = map[string]bool{
	"kube_node_status_allocatable":         true,
	"kube_pod_container_resource_requests": true,
}

var (
	metricName     = regexp.MustCompile(`\b((?:waterline|scheduler|kube)_[a-z0-9_]+)\b`)
	quoted         = regexp.MustCompile(`"[^"]*"`)
	quotedName     = regexp.MustCompile(`"(waterline_[a-z0-9_]+)"`)
	schedulerNames = regexp.MustCompile(`Name:\s+"([a-z0-9_]+)"`)
)

// TestDashboardMetricsExist: every panel of the shipped Grafana dashboard
// queries something, and every metric it names is one Waterline's
// binaries register (a name in their code), one kube-scheduler registers
// (in the Kubernetes release go.mod pins), or a listed kube-state-metrics
// series -- so a renamed metric cannot leave a panel silently empty.
// TestMonitoring checks that the chart scrapes the components they come
// from.
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	sources := metricSources(t)
	queries := dashboardQueries(t)
	panels := map[string]bool{}
	for _, q := range queries {
		panels[q.panel] = true
		if q.expr == "" {
			t.Errorf("panel %q queries nothing", q.panel)
			continue
		}
		if len(q.metrics) == 0 {
			t.Errorf("panel %q: %q names no metric", q.panel, q.expr)
		}
		for _, n := range q.metrics {
			if _, ok := sources[n]; !ok {
				t.Errorf("panel %q reads %s, which no Waterline binary, kube-scheduler or the listed kube-state-metrics series provides", q.panel, n)
			}
		}
	}
	if len(panels) < 8 {
		t.Errorf("the dashboard has %d panels, want the operator's eight views", len(panels))
	}
	if t.Failed() {
		var names []string
		for n := range sources {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("known metrics: %v", names[:min(len(names), 80)])
	}
}

// dashboardQuery is one query of a panel of the shipped dashboard (a panel
// without a query has one with an empty expr).
type dashboardQuery struct {
	panel, expr string
	// metrics are the metric names expr reads.
	metrics []string
}

// dashboardQueries reads charts/waterline/files/dashboards/waterline.json.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.ChartDir(), "files", "dashboards", "waterline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var out []dashboardQuery
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			out = append(out, dashboardQuery{panel: p.Title})
		}
		for _, target := range p.Targets {
			// Label values ("waterline_dev_.*") are not metric names.
			names := metricName.FindAllString(quoted.ReplaceAllString(target.Expr, `""`), -1)
			out = append(out, dashboardQuery{panel: p.Title, expr: target.Expr, metrics: names})
		}
	}
	return out
}

// kubeStateMetricsSource is the source metricSources gives the listed
// kube-state-metrics series.
const kubeStateMetricsSource = "kube-state-metrics"

// metricSources maps every metric name a Waterline binary registers (a
// quoted name in the code of its cmd/ or pkg/ directory, histograms with
// their series) to the workload that serves it -- waterline-agent,
// waterline-manager or waterline-scheduler --, kube-scheduler's own
// metrics (in the Kubernetes release go.mod pins) to waterline-scheduler,
// and the listed kube-state-metrics series to kubeStateMetricsSource.
func metricSources(t *testing.T) map[string]string {
	t.Helper()
	root := testutil.RepoRoot()
	out := map[string]string{}
	add := func(name, source string) {
		out[name] = source
		for _, suffix := range []string{"_count", "_sum", "_bucket"} {
			out[name+suffix] = source
		}
	}
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			names := quotedName.FindAllStringSubmatch(string(b), -1)
			if len(names) == 0 {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			source := workloadOf(filepath.ToSlash(rel))
			if source == "" {
				t.Errorf("%s registers metrics %v, but no binary is known to serve its package: add it to workloadOf", rel, names[0][1])
				return nil
			}
			for _, m := range names {
				add(m[1], source)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	k8s, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes: %v", err)
	}
	sched, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(k8s)), "pkg", "scheduler", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range schedulerNames.FindAllStringSubmatch(string(sched), -1) {
		add("scheduler_"+m[1], "waterline-scheduler")
	}
	for name := range kubeStateMetrics {
		out[name] = kubeStateMetricsSource
	}
	return out
}

// workloadOf is the chart workload whose binary serves the metrics a file
// of this repository registers ("" when none is known).
func workloadOf(rel string) string {
	for prefix, w := range map[string]string{
		"pkg/agent/":               "waterline-agent",
		"cmd/waterline-agent/":     "waterline-agent",
		"pkg/manager/":             "waterline-manager",
		"cmd/waterline-manager/":   "waterline-manager",
		"pkg/scheduler/":           "waterline-scheduler",
		"cmd/waterline-scheduler/": "waterline-scheduler",
	} {
		if strings.HasPrefix(rel, prefix) {
			return w
		}
	}
	return ""
}
