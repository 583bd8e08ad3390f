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

// Package securemetrics serves /metrics the way kube-scheduler and kubelet
// serve theirs, and kubebuilder projects do by default: over HTTPS, and
// only to callers the API server says may read it. A scraper's
// ServiceAccount needs a ClusterRole rule `nonResourceURLs: ["/metrics"],
// verbs: ["get"]`; the serving component's own ServiceAccount needs to
// create TokenReviews and SubjectAccessReviews (the rules of
// system:auth-delegator).
//
// The reviews are made with client-go's typed clients and cached here
// rather than through k8s.io/apiserver's delegating authenticator and
// authorizer: those link CEL, gRPC and OpenTelemetry, and took
// waterline-agent's binary from 44 to 89 MB.
package securemetrics

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// How long answers are kept. A Prometheus scraping every 30 s with one
// token costs each server one TokenReview a minute and one
// SubjectAccessReview every five; while the API server is unreachable a
// scraper already known is served for as long as its answers are kept,
// then answered 500 until it is back. The figures are
// controller-runtime's (pkg/metrics/filters).
const (
	TokenTTL = time.Minute
	AllowTTL = 5 * time.Minute
	DenyTTL  = 30 * time.Second
)

const (
	// reviewTimeout bounds one review, within a scrape's 10 s default.
	reviewTimeout = 5 * time.Second
	// cacheSize bounds each cache, so that requests with made-up tokens
	// cannot grow it: a few scrapers use a few tokens. Such requests
	// cost the API server at most the Authorizer's own rate limit.
	cacheSize = 1024
)

// Authorizer lets a request through when the API server authenticates its
// bearer token (a TokenReview) and authorizes that user to use the
// request's method on its path (a SubjectAccessReview of a non-resource
// URL), and answers 401, 403, or 500 when it cannot ask.
type Authorizer struct {
	client  kubernetes.Interface
	tokens  *cache.LRUExpireCache // sha256(token) → *authenticationv1.UserInfo, nil when refused
	allowed *cache.LRUExpireCache // review key → bool
}

// NewAuthorizer returns an Authorizer asking the API server cfg reaches,
// with the server's own credentials. Its requests have a rate limit of
// their own (5 QPS, burst 10), apart from cfg's.
func NewAuthorizer(cfg *rest.Config) (*Authorizer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = 5, 10, nil
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newAuthorizer(client), nil
}

func newAuthorizer(client kubernetes.Interface) *Authorizer {
	return &Authorizer{client: client, tokens: cache.NewLRUExpireCache(cacheSize), allowed: cache.NewLRUExpireCache(cacheSize)}
}

// reviewFailed ends the message of a 500: the API server did not answer
// the review, or refused it (the server's RBAC); its log says which.
const reviewFailed = "failed; this server's log says why"

// Wrap returns next behind the Authorizer.
func (a *Authorizer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		code, msg := a.check(req)
		if code != http.StatusOK {
			http.Error(w, msg, code)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// check returns 200, or the status and message refusing req.
func (a *Authorizer) check(req *http.Request) (int, string) {
	logger := klog.FromContext(req.Context())
	token, ok := bearerToken(req)
	if !ok {
		return http.StatusUnauthorized, "Unauthorized: a bearer token is required"
	}
	user, err := a.authenticate(req.Context(), token)
	if err != nil {
		logger.Error(err, "Cannot authenticate a metrics request", "remote", req.RemoteAddr)
		return http.StatusInternalServerError, "Cannot authenticate the request: the TokenReview " + reviewFailed
	}
	if user == nil {
		return http.StatusUnauthorized, "Unauthorized"
	}
	verb := strings.ToLower(req.Method)
	allowed, err := a.authorize(req.Context(), user, verb, req.URL.Path)
	if err != nil {
		logger.Error(err, "Cannot authorize a metrics request", "user", user.Username)
		return http.StatusInternalServerError, "Cannot authorize the request: the SubjectAccessReview " + reviewFailed
	}
	if !allowed {
		logger.V(4).Info("Metrics request forbidden", "user", user.Username, "verb", verb, "path", req.URL.Path)
		return http.StatusForbidden, fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, req.URL.Path)
	}
	return http.StatusOK, ""
}

// bearerToken returns the request's bearer token.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authenticate returns the user the API server says token is, or nil when
// it refuses the token.
func (a *Authorizer) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if v, ok := a.tokens.Get(key); ok {
		return v.(*authenticationv1.UserInfo), nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	var user *authenticationv1.UserInfo
	if tr.Status.Authenticated {
		user = &tr.Status.User
	}
	a.tokens.Add(key, user, TokenTTL)
	return user, nil
}

// authorize returns whether the API server lets user use verb on path.
func (a *Authorizer) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	key := reviewKey(&spec)
	if v, ok := a.allowed.Get(key); ok {
		return v.(bool), nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	ttl := DenyTTL
	if allowed {
		ttl = AllowTTL
	}
	a.allowed.Add(key, allowed, ttl)
	return allowed, nil
}

// reviewKey is the cache key of a review: everything the API server
// decides on, unambiguously joined.
func reviewKey(s *authorizationv1.SubjectAccessReviewSpec) string {
	h := sha256.New()
	field := func(v string) { fmt.Fprintf(h, "%d:%s", len(v), v) }
	field(s.User)
	field(s.UID)
	field(s.NonResourceAttributes.Verb)
	field(s.NonResourceAttributes.Path)
	groups := slices.Clone(s.Groups)
	slices.Sort(groups)
	fmt.Fprintf(h, "%d", len(groups))
	for _, g := range groups {
		field(g)
	}
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(h, "%d", len(keys))
	for _, k := range keys {
		field(k)
		fmt.Fprintf(h, "%d", len(s.Extra[k]))
		for _, v := range s.Extra[k] {
			field(v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The files of a --metrics-cert-dir, as cert-manager and kubernetes.io/tls
// Secrets name them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// TLSConfig returns the TLS configuration of a secure metrics server:
// the certificate and key in certDir (tls.crt, tls.key), read again when
// either file changes, or, with certDir empty, a certificate the server
// signs itself at start, as kube-scheduler does (scrapers then skip
// verification). HTTP/1.1 only: HTTP/2's stream resets (CVE-2023-44487)
// are not worth a metrics endpoint's while.
func TLSConfig(certDir string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certDir == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
		if err != nil {
			return nil, fmt.Errorf("signing a metrics serving certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
		return cfg, nil
	}
	kp := &keyPair{cert: filepath.Join(certDir, CertFile), key: filepath.Join(certDir, KeyFile)}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }
	return cfg, nil
}

// keyPair is a certificate and key on disk, read at every TLS handshake
// (a scraper keeps its connection, so handshakes are rare) and parsed
// again when either file's contents changed. A Secret volume swaps both
// files at once; a pair read halfway through another writer's change,
// which does not match, leaves the pair loaded before in use.
type keyPair struct {
	cert, key string

	mu                sync.Mutex
	loaded            *tls.Certificate
	certPEMs, keyPEMs []byte
}

func (kp *keyPair) get() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(kp.cert)
	if err != nil {
		return kp.stale(fmt.Errorf("reading the metrics certificate: %w", err))
	}
	keyPEM, err := os.ReadFile(kp.key)
	if err != nil {
		return kp.stale(fmt.Errorf("reading the metrics key: %w", err))
	}
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if kp.loaded != nil && bytes.Equal(certPEM, kp.certPEMs) && bytes.Equal(keyPEM, kp.keyPEMs) {
		return kp.loaded, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if kp.loaded != nil {
			return kp.loaded, nil
		}
		return nil, fmt.Errorf("the metrics certificate %s and key %s: %w", kp.cert, kp.key, err)
	}
	kp.loaded, kp.certPEMs, kp.keyPEMs = &cert, certPEM, keyPEM
	return kp.loaded, nil
}

// stale returns the pair loaded before, or err when there is none.
func (kp *keyPair) stale(err error) (*tls.Certificate, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if kp.loaded != nil {
		return kp.loaded, nil
	}
	return nil, err
}
