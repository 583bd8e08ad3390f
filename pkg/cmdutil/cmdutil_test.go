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
