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
	"testing"
)

// TestShellQuote: the control-plane wrappers name paths that may hold
// spaces, quotes and shell syntax; sh must read each back unchanged.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"/work/main/bin/etcd", "/a dir/with spaces", "it's", `$HOME "x" \n; rm -rf /tmp/none`, ""} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("sh read %q back as %q", s, out)
		}
	}
}
