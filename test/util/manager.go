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
	"fmt"
	"strconv"
	"testing"
	"time"
)

// StartManager builds waterline-manager from this checkout and runs it
// against the cluster, without leader election, metrics or webhooks unless
// args turn them on (later flags override the defaults). It returns once
// /readyz answers.
func (c *Cluster) StartManager(t testing.TB, args ...string) *Process {
	t.Helper()
	bin := BuildBinary(t, "waterline-manager")
	probePort := FreePort(t)
	all := append([]string{
		"--kubeconfig", c.Kubeconfig,
		"--leader-elect=false",
		"--webhooks=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probePort),
		"--v", "2",
	}, args...)
	p := StartProcess(t, "waterline-manager", bin, all...)
	WaitHealthy(t, p, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort), time.Minute)
	return p
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
