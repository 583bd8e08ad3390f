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
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartControllerManager runs bin/kube-controller-manager against the
// cluster: DaemonSets, ReplicaSets, default ServiceAccounts, the
// kube-root-ca.crt ConfigMap pods' tokens need, garbage collection. It
// returns once the default namespace's ServiceAccount exists.
func (c *Cluster) StartControllerManager(t testing.TB) *Process {
	t.Helper()
	bin, err := toolPath("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, c.Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	args := []string{
		"--kubeconfig", c.Kubeconfig,
		"--authentication-kubeconfig", c.Kubeconfig,
		"--authorization-kubeconfig", c.Kubeconfig,
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--root-ca-file", ca,
		"--use-service-account-credentials=false",
		"--controllers", "*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
		"--concurrent-daemonset-syncs", "2",
		"--v", "1",
	}
	if api := c.Env.ControlPlane.APIServer; api != nil && api.CertDir != "" {
		if key := filepath.Join(api.CertDir, "sa-signer.key"); fileExists(key) {
			args = append(args, "--service-account-private-key-file", key)
		}
	}
	p := StartProcess(t, "kube-controller-manager", bin, args...)
	c.WaitServiceAccount(t, metav1.NamespaceDefault, "default", time.Minute)
	return p
}

// WaitServiceAccount waits for ServiceAccount ns/name, which
// kube-controller-manager creates in every namespace for "default".
func (c *Cluster) WaitServiceAccount(t testing.TB, ns, name string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, 200*time.Millisecond, func() (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("serviceaccount %s/%s not there yet", ns, name)
		}
		return err == nil, err
	}, "waiting for serviceaccount %s/%s", ns, name)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
