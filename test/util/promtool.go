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

// Promtool runs Prometheus's promtool (bin/promtool, hack/tools/promtool)
// with args in dir and returns its combined output.
func Promtool(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	bin, err := toolPath("promtool")
	if err != nil {
		t.Fatalf("%v (hack/build-tools.sh promtool)", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
