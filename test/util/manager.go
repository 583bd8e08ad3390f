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
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartManager builds waterline-manager from this checkout and runs it
// against the cluster, without leader election, metrics or webhooks unless
// args turn them on (later flags override the defaults). It returns once
// /readyz answers.
//
// The health probe's port comes from FreePort, which no other test gets
// while this one runs; a program outside the tests can still take it
// before the manager binds it. A manager that exits at start because its
// probe address is in use is started again on another port (twice at
// most).
func (c *Cluster) StartManager(t testing.TB, args ...string) *Process {
	t.Helper()
	bin := BuildBinary(t, "waterline-manager")
	for attempt := 1; ; attempt++ {
		probe := "127.0.0.1:" + strconv.Itoa(FreePort(t))
		all := append([]string{
			"--kubeconfig", c.Kubeconfig,
			"--leader-elect=false",
			"--webhooks=false",
			"--metrics-bind-address=0",
			"--health-probe-bind-address", probe,
			"--v", "2",
		}, args...)
		p := StartProcess(t, "waterline-manager", bin, all...)
		if waitReady(t, p, "http://"+probe+"/readyz", time.Minute) {
			return p
		}
		exited, err := p.Exited()
		if !exited || attempt == 3 || !logSays(p.LogPath, probe+": bind: address already in use") {
			t.Fatalf("%s exited before it was ready: %v (log: %s)", p.Name, err, p.LogPath)
		}
		t.Logf("%s: probe address %s was taken before it bound it; starting it again", p.Name, probe)
	}
}

// waitReady waits until url answers 200; false if p exits first. It fails
// the test on the timeout.
func waitReady(t testing.TB, p *Process, url string, timeout time.Duration) bool {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if exited, _ := p.Exited(); exited {
			return false
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s to be ready at %s: timed out after %v (log: %s)", p.Name, url, timeout, p.LogPath)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logSays reports whether the process log at path contains s.
func logSays(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// WebhookArgs are the manager flags that serve its webhooks where the
// cluster's API server (envtest's WebhookInstallOptions) calls them.
func (c *Cluster) WebhookArgs() []string {
	wh := c.Env.WebhookInstallOptions
	return []string{
		"--webhooks=true",
		"--webhook-host", wh.LocalServingHost,
		"--webhook-port", strconv.Itoa(wh.LocalServingPort),
		"--webhook-cert-dir", wh.LocalServingCertDir,
	}
}
