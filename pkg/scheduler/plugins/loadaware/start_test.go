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

package loadaware

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// TestSchedulerRefusesToStartWithInvalidArgs starts kube-scheduler's own
// setup -- what waterline-scheduler's main runs -- with a configuration
// whose LoadAware args are invalid, and expects it to stop with every bad
// field named, before it talks to any API server.
func TestSchedulerRefusesToStartWithInvalidArgs(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// A server nobody listens on: setup must fail before it matters.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user:
    token: t
`), 0o600); err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: `+kubeconfig+`
leaderElection:
  leaderElect: false
profiles:
- schedulerName: waterline-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
  pluginConfig:
  - name: LoadAware
    args:
      nodeMetricExpirationSeconds: 0
      usageThresholds:
        cpu: 120
      estimatedScalingFactors:
        memory: 0
`), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := options.NewOptions()
	opts.ConfigFile = configFile
	opts.SecureServing.BindPort = 0 // no listener in a unit test

	_, _, err := app.Setup(t.Context(), opts, app.WithPlugin(Name, New))
	if err == nil {
		t.Fatal("scheduler set up with invalid LoadAware args; want an error")
	}
	for _, want := range []string{
		"nodeMetricExpirationSeconds: Invalid value: 0",
		"usageThresholds[cpu]: Invalid value: 120",
		"estimatedScalingFactors[memory]: Invalid value: 0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("setup error does not name %q:\n%v", want, err)
		}
	}
	t.Logf("scheduler setup error: %v", err)
}
