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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateCustomMetrics: a bad --custom-metrics file fails at start
// with an error naming the flag and the field in the file.
func TestValidateCustomMetrics(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("metrics:\n- {name: user_cpu, controller: cpuacct, file: cpuacct.usage_user, type: counter, divisor: 1000000, sortable: true, evictable: true, evictQuantified: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("metrics:\n- {name: user_cpu, controller: cpuacct, file: cpuacct.usage_user, type: rate}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.NodeName = "n1"
	o.CustomMetrics = good
	if errs := o.Validate(); len(errs) > 0 {
		t.Errorf("good file: %v", errs)
	}
	o.CustomMetrics = bad
	errs := o.Validate()
	if len(errs) != 1 || errs[0].Field != "custom-metrics" || !strings.Contains(errs[0].Error(), `customMetrics.metrics[0].type: Unsupported value: "rate"`) {
		t.Errorf("bad file: %v, want one custom-metrics error naming customMetrics.metrics[0].type", errs)
	}
	cm, err := o.customMetrics()
	if err == nil || cm != nil {
		t.Errorf("customMetrics() of the bad file = %v, %v; want an error", cm, err)
	}
}
