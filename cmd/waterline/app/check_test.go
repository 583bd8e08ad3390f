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

package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFlags: bad flags stop `waterline check` before it reads the
// cluster, naming the flag. (test/integration's TestCheck runs it against
// a real API server.)
func TestCheckFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown output format", []string{"check", "-o", "yaml"}, `--output "yaml": want table or json`},
		{"unknown component", []string{"check", "--expect", "waterline-manager,kube-proxy"}, `--expect "kube-proxy": want waterline-manager, waterline-scheduler or waterline-agent`},
		{"stale-after zero", []string{"check", "--stale-after", "0s"}, "--stale-after 0s: must be positive"},
		{"missing kubeconfig file", []string{"check", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, "loading kubeconfig: stat "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(tt.args)
			cmd.SetOut(&strings.Builder{})
			cmd.SetErr(&strings.Builder{})
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
