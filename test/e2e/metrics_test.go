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

package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// testMetricsServedSecurely: the chart's pods on the real node -- the agent
// on the host network, the manager beside it -- serve /metrics over HTTPS
// to a ServiceAccount allowed to get /metrics, as the chart's defaults
// say, and refuse anyone else: no token, a made-up one, or the agent's own
// ServiceAccount, which may not read metrics. The agent serves the
// certificate of agent.metricsCertSecret, which a scraper verifies with
// the Secret's CA; the manager serves one it signed.
func (s *system) testMetricsServedSecurely(t *testing.T) {
	const scraper = "e2e-metrics-scraper"
	reader, agentToken := s.c.CreateMetricsReader(t, agentNamespace, scraper), s.c.MintToken(t, agentNamespace, agentName)

	for _, tc := range []struct {
		component string
		port      int
		series    string
		// certHost is the host the served certificate is for: the
		// agent's comes from agent.metricsCertSecret, the manager signs
		// its own for its pod's host name.
		certHost string
	}{
		{"waterline-agent", s.agentMetrics, "waterline_agent_cycle_duration_seconds_count", agentMetricsHost},
		{"waterline-manager", s.managerMetrics, "controller_runtime_reconcile_total", ""},
	} {
		addr := fmt.Sprintf("127.0.0.1:%d", tc.port)
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test reads the served certificate
		if err != nil {
			t.Fatalf("TLS to %s's /metrics at %s: %v", tc.component, addr, err)
		}
		served := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if fromSecret := slices.Contains(served.DNSNames, agentMetricsHost); fromSecret != (tc.certHost != "") {
			t.Errorf("%s serves a certificate for %v (CN %s); from the Secret %s: %v, want %v",
				tc.component, served.DNSNames, served.Subject.CommonName, agentMetricsSecret, fromSecret, tc.certHost != "")
		}
		// A scraper that verifies the certificate of the Secret, as the
		// chart's ServiceMonitor does with monitoring.serviceMonitors
		// .tlsConfig: the Secret's ca.crt, for the certificate's name.
		scraperTLS := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the manager's own certificate is self-signed
		if tc.certHost != "" {
			scraperTLS = s.c.VerifyingTLSConfig(t, agentNamespace, agentMetricsSecret, "ca.crt", tc.certHost)
		}
		url := "https://" + addr + "/metrics"
		// The binding reaches the component's cached authorizer at once:
		// it has not asked about this ServiceAccount before.
		var code int
		var body string
		testutil.Eventually(t, 30*time.Second, time.Second, func() (bool, error) {
			code, body = testutil.ScrapeTLS(t, url, reader, scraperTLS)
			return code == http.StatusOK, fmt.Errorf("%d %.200s", code, body)
		}, "scraping %s's /metrics as %s", tc.component, scraper)
		if !strings.Contains(body, tc.series) {
			t.Errorf("%s's /metrics has no %s", tc.component, tc.series)
		}
		if code, _ := testutil.Scrape(t, url, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", url, code)
		}
		if code, _ := testutil.Scrape(t, url, "made-up"); code != http.StatusUnauthorized {
			t.Errorf("%s with a made-up token: %d, want 401", url, code)
		}
		if code, _ := testutil.Scrape(t, url, agentToken); code != http.StatusForbidden {
			t.Errorf("%s as %s: %d, want 403", url, agentName, code)
		}
	}
}
