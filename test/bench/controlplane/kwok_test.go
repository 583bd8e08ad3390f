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

package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// startKWOK runs kwok on the cluster's annotated nodes with heartbeats
// off: no Lease renewals and no periodic node status. kwok still makes
// nodes Ready and pods Running. kubelet's heartbeats are then sent by the
// test itself, at a known rate and only in their own phases: at 5,000
// nodes kwok's 500 Lease renewals a second would saturate this machine's
// API server and leave nothing to compare.
func startKWOK(t *testing.T, c *testutil.Cluster) *testutil.Process {
	t.Helper()
	bin := filepath.Join(testutil.BinDir(), "kwok")
	all, err := os.ReadFile(filepath.Join(testutil.BinDir(), "kwok-stages.yaml"))
	if err != nil {
		t.Fatalf("Reading kwok's stages (make tools builds them): %v", err)
	}
	var kept []string
	for _, doc := range strings.Split(string(all), "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(doc), "---")) == "" || strings.Contains(doc, "name: node-heartbeat") {
			continue
		}
		kept = append(kept, doc)
	}
	if len(kept) == 0 || !strings.Contains(string(all), "name: node-heartbeat") {
		t.Fatalf("kwok's stages in %s: no stages, or no node-heartbeat stage to leave out; the file's layout changed", testutil.BinDir())
	}
	stages := filepath.Join(t.TempDir(), "stages.yaml")
	if err := os.WriteFile(stages, []byte(strings.Join(kept, "\n---")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return testutil.StartProcess(t, "kwok", bin,
		"--kubeconfig", c.Kubeconfig,
		"--config", stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", testutil.KWOKNodeAnnotation+"="+testutil.KWOKNodeValue,
		"--node-lease-duration-seconds", "0",
		"--cidr", "10.128.0.0/12",
	)
}
