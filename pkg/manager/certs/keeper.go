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

package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Mode says who makes the certificate.
type Mode string

const (
	// ModeSecret: the manager generates and renews it in a Secret.
	ModeSecret Mode = "secret"
	// ModeFiles: somebody else (cert-manager, a test) puts tls.crt, tls.key
	// and optionally ca.crt in the directory; the manager only publishes
	// ca.crt as the CA bundle.
	ModeFiles Mode = "files"
)

// Keeper keeps the webhook server's certificate files current.
type Keeper struct {
	Client kubernetes.Interface
	Mode   Mode
	// Namespace and SecretName locate the Secret (ModeSecret).
	Namespace, SecretName string
	// Dir is the webhook server's certificate directory.
	Dir      string
	Hosts    Hosts
	Validity time.Duration
	Clock    clock.PassiveClock
}

// Ensure makes the certificate files in Dir current and returns the CA
// bundle the webhook configurations must carry (nil: leave theirs alone).
func (k *Keeper) Ensure(ctx context.Context) ([]byte, error) {
	if k.Mode == ModeFiles {
		ca, err := os.ReadFile(filepath.Join(k.Dir, CACert))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return ca, err
	}
	b, err := k.current(ctx)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(k.Dir, b); err != nil {
		return nil, err
	}
	return b.CACert, nil
}

// current returns the Secret's bundle, generating or renewing it first
// when needed. Replicas race on the Secret's resourceVersion; the loser
// takes the winner's bundle.
func (k *Keeper) current(ctx context.Context) (*Bundle, error) {
	logger := klog.FromContext(ctx)
	secrets := k.Client.CoreV1().Secrets(k.Namespace)
	for attempt := 0; attempt < 3; attempt++ {
		secret, err := secrets.Get(ctx, k.SecretName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, k.SecretName, err)
		}
		exists := err == nil
		var old *Bundle
		if exists {
			old = &Bundle{CACert: secret.Data[CACert], CAKey: secret.Data[CAKey], Cert: secret.Data[TLSCert], Key: secret.Data[TLSKey]}
		}
		now := k.Clock.Now()
		why := Renewal(old, now, k.Hosts)
		if why == "" {
			return old, nil
		}
		b, err := Generate(now, k.Hosts, k.Validity)
		if err != nil {
			return nil, err
		}
		if old != nil {
			// Trust the previous CA too while replicas still serve
			// certificates it signed.
			b.CACert = append(b.CACert, firstValidCert(old.CACert, now)...)
		}
		data := map[string][]byte{CACert: b.CACert, CAKey: b.CAKey, TLSCert: b.Cert, TLSKey: b.Key}
		if !exists {
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: k.SecretName, Namespace: k.Namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "waterline"}},
				Type:       corev1.SecretTypeTLS, Data: data,
			}, metav1.CreateOptions{})
		} else {
			secret = secret.DeepCopy()
			secret.Data = data
			_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
		}
		switch {
		case err == nil:
			logger.Info("Issued the webhook serving certificate", "secret", klog.KRef(k.Namespace, k.SecretName), "reason", why, "notAfter", now.Add(k.Validity))
			return b, nil
		case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
			continue // another replica won: read its bundle
		default:
			return nil, fmt.Errorf("writing Secret %s/%s: %w", k.Namespace, k.SecretName, err)
		}
	}
	return nil, fmt.Errorf("secret %s/%s keeps changing under us", k.Namespace, k.SecretName)
}

func firstValidCert(pemBytes []byte, now time.Time) []byte {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil || now.After(c.NotAfter) {
		return nil
	}
	return pem.EncodeToMemory(block)
}

// writeFiles replaces tls.crt, tls.key and ca.crt in dir when they differ,
// each by an atomic rename, key first: the webhook server reloads the pair
// when it sees the certificate change.
func writeFiles(dir string, b *Bundle) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{TLSKey, b.Key}, {CACert, b.CACert}, {TLSCert, b.Cert}} {
		path := filepath.Join(dir, f.name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, f.data) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("replacing %s: %w", path, err)
		}
	}
	return nil
}
