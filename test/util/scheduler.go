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
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// SchedulerName is the scheduler name sample configurations use.
const SchedulerName = "waterline-scheduler"

// StartScheduler builds waterline-scheduler from this checkout and runs it
// against the cluster with a KubeSchedulerConfiguration made of the harness's
// header (client connection to this cluster, no leader election) followed by
// body, which holds the rest: `profiles:` and anything else. Its endpoints,
// /metrics included, take anonymous requests. It returns once the scheduler
// answers /healthz.
func (c *Cluster) StartScheduler(t testing.TB, body string, extraArgs ...string) *Process {
	t.Helper()
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
%s`, c.Kubeconfig, body)
	p, _ := c.StartSchedulerWithConfig(t, config, append([]string{
		"--authentication-skip-lookup",
		"--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics",
	}, extraArgs...)...)
	return p
}

// StartSchedulerWithConfig builds waterline-scheduler from this checkout
// and runs it with the KubeSchedulerConfiguration config (which says how
// it reaches the API server), serving on 127.0.0.1 at a free port with a
// self-signed certificate, with args added (authentication and
// authorization: kube-scheduler's defaults otherwise). It returns the
// process and its secure port once the scheduler answers /healthz.
func (c *Cluster) StartSchedulerWithConfig(t testing.TB, config string, args ...string) (*Process, int) {
	t.Helper()
	return StartSchedulerBinary(t, "waterline-scheduler", BuildBinary(t, "waterline-scheduler"), config, args...)
}

// StartSchedulerBinary is StartSchedulerWithConfig for any kube-scheduler
// build at bin (the stock kube-scheduler of bin/, say), its process named
// name.
func StartSchedulerBinary(t testing.TB, name, bin, config string, args ...string) (*Process, int) {
	t.Helper()
	dir := t.TempDir()
	configPath := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatalf("Writing scheduler config: %v", err)
	}
	port := FreePort(t)
	p := StartProcess(t, name, bin, append([]string{
		"--config", configPath,
		"--secure-port", strconv.Itoa(port),
		"--bind-address", "127.0.0.1",
		"--cert-dir", filepath.Join(dir, "certs"),
		"--v", "2",
	}, args...)...)
	WaitHealthy(t, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), time.Minute)
	return p, port
}

// WaitHealthy waits until url answers 200 (TLS not verified: the process
// serves a self-signed certificate), failing fast if the process exits.
func WaitHealthy(t testing.TB, p *Process, url string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // a test's own self-signed server
	}
	Eventually(t, timeout, 200*time.Millisecond, func() (bool, error) {
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited before it was healthy: %v (log: %s)", p.Name, err, p.LogPath)
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("status %d", resp.StatusCode)
	}, "waiting for %s to be healthy at %s", p.Name, url)
}
