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
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
)

// Scrape GETs url as Prometheus scrapes a secure /metrics: with token as
// a bearer token (none when empty), not verifying the serving certificate
// (the components sign their own, and the chart's ServiceMonitors skip
// verification unless monitoring.serviceMonitors.tlsConfig says how). It
// returns the status code and the body.
func Scrape(t testing.TB, url, token string) (int, string) {
	t.Helper()
	return ScrapeTLS(t, url, token, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // as the chart's ServiceMonitors scrape: self-signed serving certificates
}

// ScrapeTLS is Scrape with the client's TLS configuration: a scraper that
// verifies the serving certificate. A failed handshake fails the test.
func ScrapeTLS(t testing.TB, url, token string, config *tls.Config) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: config}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// ServingCertSecretData is the data of a kubernetes.io/tls Secret as
// cert-manager writes one for host: tls.crt (the serving certificate, then
// the CA that signed it), tls.key, and ca.crt (that CA alone).
func ServingCertSecretData(t testing.TB, host string) map[string][]byte {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// certutil writes the serving certificate, then its CA.
	_, rest := pem.Decode(certPEM)
	if ca, _ := pem.Decode(rest); ca == nil {
		t.Fatalf("the certificate generated for %s has no CA after it", host)
	}
	return map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": rest}
}

// VerifyingTLSConfig is how a scraper that verifies a serving certificate
// is configured from Secret ns/name, as a ServiceMonitor's tlsConfig names
// it: the CA under key, for serverName.
func (c *Cluster) VerifyingTLSConfig(t testing.TB, ns, name, key, serverName string) *tls.Config {
	t.Helper()
	s, err := c.Kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the CA of Secret %s/%s: %v", ns, name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data[key]) {
		t.Fatalf("Secret %s/%s has no PEM certificate under %q", ns, name, key)
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
}
