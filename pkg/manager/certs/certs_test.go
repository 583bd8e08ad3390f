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
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	local = Hosts{IPs: []net.IP{net.ParseIP("127.0.0.1")}}
	svc   = Hosts{DNSNames: []string{"waterline-webhook.waterline-system.svc"}}
)

func TestRenewal(t *testing.T) {
	year := 365 * 24 * time.Hour
	b, err := Generate(t0, svc, year)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Generate(t0, svc, year)
	if err != nil {
		t.Fatal(err)
	}
	mixed := &Bundle{CACert: other.CACert, Cert: b.Cert, Key: b.Key}
	for _, tt := range []struct {
		name  string
		b     *Bundle
		now   time.Time
		hosts Hosts
		want  string // substring; "" = keep
	}{
		{"fresh", b, t0, svc, ""},
		{"two thirds left", b, t0.Add(year / 2), svc, ""},
		{"less than a third left", b, t0.Add(year * 7 / 10), svc, "less than a third"},
		{"expired", b, t0.Add(2 * year), svc, "does not verify"},
		{"other host", b, t0, local, "not valid for 127.0.0.1"},
		{"wrong CA", mixed, t0, svc, "does not verify against ca.crt"},
		{"missing", nil, t0, svc, "no certificate"},
		{"garbage", &Bundle{CACert: []byte("x"), Cert: []byte("x"), Key: []byte("x")}, t0, svc, "not PEM"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Renewal(tt.b, tt.now, tt.hosts)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Renewal() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGenerateRefusesBadInput(t *testing.T) {
	if _, err := Generate(t0, Hosts{}, time.Hour); err == nil {
		t.Error("Generate with no host: no error")
	}
	if _, err := Generate(t0, local, 0); err == nil {
		t.Error("Generate with zero validity: no error")
	}
}

// The Secret shell is thin; a fake clientset is enough to check that it
// keeps a valid certificate, renews an expiring one, and keeps trusting
// the previous CA.
func TestKeeperRenewsAndKeepsOldCA(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	clk := clocktesting.NewFakePassiveClock(t0)
	dir := t.TempDir()
	k := &Keeper{Client: kube, Mode: ModeSecret, Namespace: "ns", SecretName: "certs", Dir: dir, Hosts: local, Validity: 30 * 24 * time.Hour, Clock: clk}
	ca1, err := k.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	crt1, _ := os.ReadFile(filepath.Join(dir, TLSCert))
	again, err := k.Ensure(ctx)
	if err != nil || string(again) != string(ca1) {
		t.Fatalf("a second pass changed a valid bundle (err %v)", err)
	}
	clk.SetTime(t0.Add(25 * 24 * time.Hour))
	ca2, err := k.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	crt2, _ := os.ReadFile(filepath.Join(dir, TLSCert))
	if string(crt1) == string(crt2) {
		t.Error("an expiring certificate was not renewed in the directory")
	}
	if !strings.Contains(string(ca2), string(ca1)) || len(ca2) <= len(ca1) {
		t.Error("the renewed CA bundle does not carry the previous CA")
	}
	s, err := kube.CoreV1().Secrets("ns").Get(ctx, "certs", metav1.GetOptions{})
	if err != nil || string(s.Data[TLSCert]) != string(crt2) {
		t.Errorf("the Secret does not hold the renewed certificate (err %v)", err)
	}
}
