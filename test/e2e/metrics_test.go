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

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// testMetricsServedSecurely: the chart's pods on the real node -- the agent
// on the host network, the manager beside it -- serve /metrics over HTTPS
// to a ServiceAccount allowed to get /metrics, as the chart's defaults
// say, and refuse anyone else: no token, a made-up one, or the agent's own
// ServiceAccount, which may not read metrics. The agent serves the
// certificate of agent.metricsCertSecret, the manager one it signed.
func (s *system) testMetricsServedSecurely(t *testing.T) {
	ctx := t.Context()
	const scraper = "e2e-metrics-scraper"
	if _, err := s.c.Kube.CoreV1().ServiceAccounts(agentNamespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: scraper},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: scraper},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: scraper},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: scraper},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: agentNamespace, Name: scraper}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.c.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, scraper, metav1.DeleteOptions{})
		_ = s.c.Kube.RbacV1().ClusterRoles().Delete(ctx, scraper, metav1.DeleteOptions{})
	})
	token := func(sa string) string {
		tr, err := s.c.Kube.CoreV1().ServiceAccounts(agentNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a token for %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	reader, agentToken := token(scraper), token(agentName)

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
		url := "https://" + addr + "/metrics"
		// The binding reaches the component's cached authorizer at once:
		// it has not asked about this ServiceAccount before.
		var code int
		var body string
		testutil.Eventually(t, 30*time.Second, time.Second, func() (bool, error) {
			code, body = testutil.Scrape(t, url, reader)
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
