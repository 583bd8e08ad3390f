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

package securemetrics

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"
)

// apiServer answers the reviews of an Authorizer: tokens names the users
// of the tokens it accepts, readers the users who may get /metrics.
type apiServer struct {
	tokens  map[string]authenticationv1.UserInfo
	readers map[string]bool
	down    bool
	// reviews are the reviews it was asked, in order.
	tokenReviews, accessReviews []string
}

func (s *apiServer) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		s.tokenReviews = append(s.tokenReviews, tr.Spec.Token)
		if s.down {
			return true, nil, errors.New("connection refused")
		}
		out := tr.DeepCopy()
		if u, ok := s.tokens[tr.Spec.Token]; ok {
			out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
		} else {
			out.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, out, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		na := sar.Spec.NonResourceAttributes
		if na == nil || sar.Spec.ResourceAttributes != nil {
			return true, nil, errors.New("not a non-resource review")
		}
		s.accessReviews = append(s.accessReviews, sar.Spec.User+" "+na.Verb+" "+na.Path+" "+strings.Join(sar.Spec.Groups, ","))
		if s.down {
			return true, nil, errors.New("connection refused")
		}
		out := sar.DeepCopy()
		out.Status.Allowed = s.readers[sar.Spec.User] && na.Verb == "get" && na.Path == "/metrics"
		return true, out, nil
	})
	return c
}

func TestAuthorizer(t *testing.T) {
	s := &apiServer{
		tokens: map[string]authenticationv1.UserInfo{
			"prom":  {Username: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}},
			"other": {Username: "system:serviceaccount:default:other"},
		},
		readers: map[string]bool{"system:serviceaccount:monitoring:prometheus": true},
	}
	a := newAuthorizer(s.client())
	srv := httptest.NewServer(a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("waterline_agent_up 1\n"))
	})))
	defer srv.Close()
	get := func(path, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}

	for _, tc := range []struct {
		name, path, auth string
		want             int
		body             string
	}{
		{name: "no token", path: "/metrics", want: http.StatusUnauthorized},
		{name: "not a bearer token", path: "/metrics", auth: "Basic cHJvbTpwcm9t", want: http.StatusUnauthorized},
		{name: "empty bearer token", path: "/metrics", auth: "Bearer  ", want: http.StatusUnauthorized},
		{name: "a token the API server refuses", path: "/metrics", auth: "Bearer forged", want: http.StatusUnauthorized},
		{name: "a user without the rule", path: "/metrics", auth: "Bearer other", want: http.StatusForbidden, body: `user "system:serviceaccount:default:other" may not get /metrics`},
		{name: "the reader", path: "/metrics", auth: "Bearer prom", want: http.StatusOK, body: "waterline_agent_up 1"},
		{name: "the reader, scheme in lower case", path: "/metrics", auth: "bearer prom", want: http.StatusOK},
		{name: "the reader on another path", path: "/debug", auth: "Bearer prom", want: http.StatusForbidden},
	} {
		code, body := get(tc.path, tc.auth)
		if code != tc.want || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q, want %d containing %q", tc.name, code, body, tc.want, tc.body)
		}
	}
	// The reader's review carried its groups and asked get /metrics.
	if want := "system:serviceaccount:monitoring:prometheus get /metrics system:serviceaccounts"; !slices.Contains(s.accessReviews, want) {
		t.Errorf("access reviews %q lack %q", s.accessReviews, want)
	}

	// Answers are kept: scraping again asks nothing, even with the API
	// server down; a token not seen before cannot be checked then.
	tokens, accesses := len(s.tokenReviews), len(s.accessReviews)
	s.down = true
	for range 3 {
		if code, _ := get("/metrics", "Bearer prom"); code != http.StatusOK {
			t.Errorf("a kept reader with the API server down: %d, want 200", code)
		}
		if code, _ := get("/metrics", "Bearer forged"); code != http.StatusUnauthorized {
			t.Errorf("a kept refused token with the API server down: %d, want 401", code)
		}
	}
	if len(s.tokenReviews) != tokens || len(s.accessReviews) != accesses {
		t.Errorf("kept answers asked the API server again: %d → %d token reviews, %d → %d access reviews",
			tokens, len(s.tokenReviews), accesses, len(s.accessReviews))
	}
	if code, body := get("/metrics", "Bearer new"); code != http.StatusInternalServerError || !strings.Contains(body, "TokenReview failed") {
		t.Errorf("a new token with the API server down: %d %q, want 500 saying why", code, body)
	}
	// An error is not kept: back up, the token is reviewed again.
	s.down = false
	s.tokens["new"] = s.tokens["prom"]
	if code, _ := get("/metrics", "Bearer new"); code != http.StatusOK {
		t.Errorf("the new token once the API server is back: %d, want 200", code)
	}
}

// TestReviewKeyTellsUsersApart: the kept answers are per user, groups,
// extra, verb and path, whatever order groups come in.
func TestReviewKeyTellsUsersApart(t *testing.T) {
	base := authorizationv1.SubjectAccessReviewSpec{
		User: "u", UID: "1", Groups: []string{"a", "b"}, Extra: map[string]authorizationv1.ExtraValue{"k": {"v"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}
	key := reviewKey(&base)
	same := *base.DeepCopy()
	same.Groups = []string{"b", "a"}
	if reviewKey(&same) != key {
		t.Error("the order of groups changed the key")
	}
	for name, mutate := range map[string]func(*authorizationv1.SubjectAccessReviewSpec){
		"user":          func(s *authorizationv1.SubjectAccessReviewSpec) { s.User = "v" },
		"uid":           func(s *authorizationv1.SubjectAccessReviewSpec) { s.UID = "2" },
		"a group":       func(s *authorizationv1.SubjectAccessReviewSpec) { s.Groups = []string{"a", "c"} },
		"groups joined": func(s *authorizationv1.SubjectAccessReviewSpec) { s.Groups = []string{"ab"} },
		"extra value":   func(s *authorizationv1.SubjectAccessReviewSpec) { s.Extra["k"] = []string{"w"} },
		"extra key": func(s *authorizationv1.SubjectAccessReviewSpec) {
			s.Extra = map[string]authorizationv1.ExtraValue{"j": {"v"}}
		},
		"verb":            func(s *authorizationv1.SubjectAccessReviewSpec) { s.NonResourceAttributes.Verb = "post" },
		"path":            func(s *authorizationv1.SubjectAccessReviewSpec) { s.NonResourceAttributes.Path = "/metrics/x" },
		"user into group": func(s *authorizationv1.SubjectAccessReviewSpec) { s.User, s.Groups = "", []string{"u", "a", "b"} },
	} {
		s := base.DeepCopy()
		mutate(s)
		if reviewKey(s) == key {
			t.Errorf("a different %s has the same key", name)
		}
	}
}

// writePair writes a certificate and key for host into dir.
func writePair(t *testing.T, dir, host string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// servedName is the common name of the certificate a TLS server with cfg
// presents (certutil's are "<host>@<unix time>").
func servedName(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test reads the served certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st := conn.ConnectionState()
	if st.NegotiatedProtocol == "h2" {
		t.Error("the metrics server negotiated HTTP/2")
	}
	return st.PeerCertificates[0].Subject.CommonName
}

func TestTLSConfig(t *testing.T) {
	t.Run("SelfSigned", func(t *testing.T) {
		cfg, err := TLSConfig("")
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		if name := servedName(t, cfg); !strings.HasPrefix(name, host) {
			t.Errorf("served %q, want a certificate for the host %q", name, host)
		}
		if cfg.MinVersion < tls.VersionTLS12 {
			t.Errorf("MinVersion %x", cfg.MinVersion)
		}
	})
	t.Run("FromDirectoryReloaded", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := TLSConfig(dir); err == nil || !strings.Contains(err.Error(), CertFile) {
			t.Errorf("an empty directory: %v, want an error naming %s", err, CertFile)
		}
		writePair(t, dir, "first.example")
		cfg, err := TLSConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if name := servedName(t, cfg); !strings.HasPrefix(name, "first.example@") {
			t.Errorf("served %q, want first.example", name)
		}
		// Rotated: the next connection gets the new pair.
		writePair(t, dir, "second.example")
		if name := servedName(t, cfg); !strings.HasPrefix(name, "second.example@") {
			t.Errorf("after rotation served %q, want second.example", name)
		}
		// Halfway through another rotation (a certificate without its
		// key) and with the files gone, the pair in use stays.
		other := t.TempDir()
		writePair(t, other, "third.example")
		b, err := os.ReadFile(filepath.Join(other, CertFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, CertFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if name := servedName(t, cfg); !strings.HasPrefix(name, "second.example@") {
			t.Errorf("with a mismatched pair served %q, want second.example", name)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if name := servedName(t, cfg); !strings.HasPrefix(name, "second.example@") {
			t.Errorf("with the files gone served %q, want second.example", name)
		}
	})
}
