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
	"time"

	"github.com/spf13/pflag"
)

func TestValidateNamesEveryBadFlag(t *testing.T) {
	o := NewOptions()
	o.MetricsBindAddress = "localhost"
	o.LeaseDuration = 5 * time.Second // not longer than the 10 s renew deadline
	o.WebhookPort = 70000
	o.WebhookCertDir = filepath.Join(t.TempDir(), "missing")
	o.Controllers = []string{"nodemetric", "bogus"}

	errs := o.Validate()
	msg := errs.ToAggregate().Error()
	for _, want := range []string{
		"metrics-bind-address",
		"leader-elect-lease-duration",
		"webhook-port",
		"webhook-cert-dir",
		`controllers[1]: Unsupported value: "bogus"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("validation error %q does not name %q", msg, want)
		}
	}
	if len(errs) != 6 { // webhook-cert-dir reports tls.crt and tls.key
		t.Errorf("got %d errors, want 6: %v", len(errs), msg)
	}
}

func TestValidateAcceptsDefaultsWithCerts(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := NewOptions()
	o.WebhookCertDir = dir
	if errs := o.Validate(); len(errs) > 0 {
		t.Fatalf("defaults are invalid: %v", errs.ToAggregate())
	}
}

func TestCommandRefusesBadFlagsAtStart(t *testing.T) {
	cmd := NewCommand()
	cmd.SetArgs([]string{"--webhooks=false", "--controllers=nope"})
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "controllers[0]") {
		t.Fatalf("Execute() error = %v, want a refusal naming controllers[0]", err)
	}
}

func TestValidateDaemonSetPriorityClass(t *testing.T) {
	o := NewOptions()
	o.Webhooks = false
	o.DaemonSetPriorityClass = "Waterline_DaemonSet"
	msg := o.Validate().ToAggregate().Error()
	for _, want := range []string{`daemonset-priority-class: Invalid value: "Waterline_DaemonSet"`, "webhooks: Invalid value: false: must be true with --daemonset-priority-class"} {
		if !strings.Contains(msg, want) {
			t.Errorf("validation error %q does not contain %q", msg, want)
		}
	}
}

// The manager's client budget: client-go's default (5 QPS) starved a
// 5,000-node cluster, so it is a flag with a default sized for one, and
// nonsense is refused naming the flag.
func TestKubeAPIBudget(t *testing.T) {
	o := NewOptions()
	if o.KubeAPIQPS != 50 || o.KubeAPIBurst != 100 {
		t.Errorf("default kube-api-qps/burst = %v/%d, want 50/100", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--webhooks=false", "--kube-api-qps=0", "--kube-api-burst=0"}); err != nil {
		t.Fatal(err)
	}
	msg := o.Validate().ToAggregate().Error()
	for _, want := range []string{"kube-api-qps: Invalid value: 0", "kube-api-burst: Invalid value: 0"} {
		if !strings.Contains(msg, want) {
			t.Errorf("validation error %q does not name %q", msg, want)
		}
	}
}

// Secure /metrics by default; a certificate directory is refused without
// it, and one without its files stops the start naming the flag.
func TestMetricsSecureOptions(t *testing.T) {
	o := NewOptions()
	if !o.MetricsSecure || o.MetricsBindAddress != ":8443" {
		t.Errorf("default metrics-secure %v on %q, want true on :8443", o.MetricsSecure, o.MetricsBindAddress)
	}
	o.Webhooks = false
	o.MetricsSecure, o.MetricsCertDir = false, t.TempDir()
	if msg := o.Validate().ToAggregate().Error(); !strings.Contains(msg, "metrics-cert-dir: Invalid value") {
		t.Errorf("validation error %q does not name metrics-cert-dir", msg)
	}
	o.MetricsSecure = true
	if errs := o.Validate(); len(errs) > 0 {
		t.Errorf("a certificate directory with secure metrics: %v", errs.ToAggregate())
	}
	if _, err := metricsOptions(o); err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir") || !strings.Contains(err.Error(), "tls.crt") {
		t.Errorf("metricsOptions with an empty --metrics-cert-dir: %v, want an error naming the flag and tls.crt", err)
	}
	o.MetricsCertDir = ""
	m, err := metricsOptions(o)
	if err != nil || !m.SecureServing || m.FilterProvider == nil || len(m.TLSOpts) != 1 {
		t.Errorf("metricsOptions = %+v, %v: want secure serving with a filter and our TLS", m, err)
	}
	o.MetricsSecure = false
	if m, err := metricsOptions(o); err != nil || m.SecureServing || m.FilterProvider != nil {
		t.Errorf("metricsOptions with --metrics-secure=false = %+v, %v: want plain HTTP", m, err)
	}
}
