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
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestHelmUpgradeFromAnOlderChart upgrades, with the real helm and a real
// API server, a release installed by an older chart: one whose values.yaml
// lacked values this chart added since (the test gives the stored release
// the current values.yaml less three of them). `helm upgrade
// --reuse-values` renders the new chart with the old chart's values.yaml
// in place of its own, so without the schema's required values the
// templates failed on nil (the test Pod's image) or, worse, rendered with
// a safety switch off (--metrics-secure with no value). The upgrade is
// refused naming every missing value, and the release is left as it was.
// `--reset-then-reuse-values`, which the READMEs give, takes the new
// chart's defaults and the user's own values, and upgrades.
func TestHelmUpgradeFromAnOlderChart(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	const ns, release = "waterline-system", "waterline"
	chart := testutil.ChartDir()
	c.Helm(t, "install", release, chart, "-n", ns, "--create-namespace",
		"-f", filepath.Join(chart, "ci", "local-values.yaml"),
		// No kube-controller-manager here to run the hook Jobs.
		"--set", "agent.uninstallHook.enabled=false", "--set", "manager.uninstallHook.enabled=false",
		// A value of the user's own, which every upgrade must keep.
		"--set", "agent.logLevel=4")

	// The chart before agent.secureMetrics, monitoring.prometheusRules and
	// the helm test Pod's values.
	raw, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var older map[string]any
	if err := yaml.Unmarshal(raw, &older); err != nil {
		t.Fatal(err)
	}
	delete(older["agent"].(map[string]any), "secureMetrics")
	delete(older["monitoring"].(map[string]any), "prometheusRules")
	delete(older, "tests")
	rewriteRelease(t, c, ns, release, 1, func(rel map[string]any) {
		rel["chart"].(map[string]any)["values"] = older
	})

	schedulerConfig := func() string {
		t.Helper()
		cm, err := c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "waterline-scheduler-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["scheduler-config.yaml"]
	}
	out, err := c.HelmE(t, "upgrade", release, chart, "-n", ns, "--reuse-values", "--set", "scheduler.preemption=enabled")
	if err == nil {
		t.Fatalf("helm upgrade --reuse-values from a chart without agent.secureMetrics, monitoring.prometheusRules and tests succeeded, want refused naming them:\n%s", out)
	}
	for _, want := range []string{"missing property 'tests'", "at '/agent': missing property 'secureMetrics'", "at '/monitoring': missing property 'prometheusRules'"} {
		if !strings.Contains(out, want) {
			t.Errorf("helm upgrade --reuse-values refused without %q:\n%s", want, out)
		}
	}
	if strings.Contains(schedulerConfig(), "BandPreemption") {
		t.Error("the refused upgrade enabled preemption")
	}
	if hist := c.Helm(t, "history", release, "-n", ns, "-o", "json"); strings.Count(hist, `"revision"`) != 1 || !strings.Contains(hist, `"deployed"`) {
		t.Errorf("after the refused upgrade the release has a history other than one deployed revision:\n%s", hist)
	}

	c.Helm(t, "upgrade", release, chart, "-n", ns, "--reset-then-reuse-values", "--set", "scheduler.preemption=enabled")
	if !strings.Contains(schedulerConfig(), "BandPreemption") {
		t.Errorf("helm upgrade --reset-then-reuse-values --set scheduler.preemption=enabled did not enable BandPreemption:\n%s", schedulerConfig())
	}
	ds, err := c.Kube.AppsV1().DaemonSets(ns).Get(ctx, "waterline-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := ds.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{
		"--v=4",                 // the user's value, kept
		"--metrics-secure=true", // the new chart's default
		"--kubelet-cgroup-root=/waterline-node-local", // local-values.yaml's, kept
	} {
		if !slices.Contains(args, want) {
			t.Errorf("after helm upgrade --reset-then-reuse-values the agent's args %v lack %s", args, want)
		}
	}
}

// rewriteRelease edits revision rev of a Helm release as Helm's Secret
// storage keeps it (base64 of the gzipped JSON release), so that a test can
// make it look installed by another chart.
func rewriteRelease(t *testing.T, c *testutil.Cluster, ns, name string, rev int, edit func(map[string]any)) {
	t.Helper()
	ctx := t.Context()
	secrets := c.Kube.CoreV1().Secrets(ns)
	s, err := secrets.Get(ctx, "sh.helm.release.v1."+name+".v"+strconv.Itoa(rev), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("helm's release Secret: %v", err)
	}
	zipped, err := base64.StdEncoding.DecodeString(string(s.Data["release"]))
	if err != nil {
		t.Fatalf("release %s: %v", s.Name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatalf("release %s: %v", s.Name, err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("release %s: %v", s.Name, err)
	}
	var rel map[string]any
	if err := json.Unmarshal(plain, &rel); err != nil {
		t.Fatalf("release %s: %v", s.Name, err)
	}
	edit(rel)
	if plain, err = json.Marshal(rel); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	s.Data["release"] = []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
