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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helm runs bin/helm against the cluster (hack/build-tools.sh helm links
// it) and returns its combined output; it fails the test when helm fails.
func (c *Cluster) Helm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.HelmE(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// HelmE is Helm returning the error instead of failing.
func (c *Cluster) HelmE(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := helmCommand(t, append(args, "--kubeconfig", c.Kubeconfig)...).CombinedOutput()
	return string(out), err
}

// HelmTemplate renders charts/waterline with helm template and args (no
// cluster is asked) and returns the manifest.
func HelmTemplate(t testing.TB, args ...string) string {
	t.Helper()
	out, err := helmCommand(t, append([]string{"template", "waterline", ChartDir()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// helmCommand is bin/helm with args, its cache and configuration kept
// inside the test.
func helmCommand(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := toolPath("helm")
	if err != nil {
		t.Fatalf("%v (hack/build-tools.sh helm)", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "data"))
	return cmd
}

// ChartDir is charts/waterline of this checkout.
func ChartDir() string { return filepath.Join(RepoRoot(), "charts", "waterline") }
