package cmdutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateAddress(t *testing.T) {
	for addr, ok := range map[string]bool{
		":8080": true, "127.0.0.1:0": true, "[::1]:9443": true,
		"localhost": false, ":http": false, ":70000": false, "": false,
	} {
		if err := ValidateAddress(addr); (err == nil) != ok {
			t.Errorf("ValidateAddress(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func TestRESTConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(path)
	if err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("RESTConfig(%s) = %v, %v", path, cfg, err)
	}
	if _, err := RESTConfig(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "loading --kubeconfig") {
		t.Errorf("RESTConfig(missing) error = %v, want one naming --kubeconfig", err)
	}
}
