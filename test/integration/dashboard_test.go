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
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	root := testutil.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, "charts", "waterline", "files", "dashboards", "waterline.json"))
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

	known := map[string]bool{}
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			for _, m := range quotedName.FindAllStringSubmatch(string(b), -1) {
				known[m[1]] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes: %v", err)
	}
	sched, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "scheduler", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range schedulerNames.FindAllStringSubmatch(string(sched), -1) {
		known["scheduler_"+m[1]] = true
	}
	exists := func(name string) bool {
		if known[name] || kubeStateMetrics[name] {
			return true
		}
		for _, suffix := range []string{"_count", "_sum", "_bucket"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && known[base] {
				return true
			}
		}
		return false
	}

	panels := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		panels++
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			// Label values ("waterline_dev_.*") are not metric names.
			names := metricName.FindAllString(quoted.ReplaceAllString(target.Expr, `""`), -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q names no metric", p.Title, target.Expr)
			}
			for _, n := range names {
				if !exists(n) {
					t.Errorf("panel %q reads %s, which no Waterline binary, kube-scheduler or the listed kube-state-metrics series provides", p.Title, n)
				}
			}
		}
	}
	if panels < 8 {
		t.Errorf("the dashboard has %d panels, want the operator's eight views", panels)
	}
	if t.Failed() {
		var names []string
		for n := range known {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("known waterline metrics: %v", names[:min(len(names), 80)])
	}
}
