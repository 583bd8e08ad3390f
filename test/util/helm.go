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
	bin, err := toolPath("helm")
	if err != nil {
		t.Fatalf("%v (hack/build-tools.sh helm)", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, append(args, "--kubeconfig", c.Kubeconfig)...)
	// Keep helm's cache and config inside the test.
	cmd.Env = append(cmd.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ChartDir is charts/waterline of this checkout.
func ChartDir() string { return filepath.Join(RepoRoot(), "charts", "waterline") }
