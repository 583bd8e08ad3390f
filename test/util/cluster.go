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
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	waterlinev1alpha1 "github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
)

// Cluster is a running etcd + kube-apiserver with Waterline's CRDs, and
// optionally kwok managing fake nodes.
type Cluster struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Kube is a client for the built-in APIs.
	Kube kubernetes.Interface
	// Waterline is a client for the waterline.dev APIs.
	Waterline versioned.Interface
	// Scheme knows the built-in and waterline.dev types.
	Scheme *runtime.Scheme
	// Kubeconfig is the path of an admin kubeconfig file, for child
	// processes (kwok, waterline-scheduler, kubectl).
	Kubeconfig string
	// Env is the envtest environment, for tests that need its webhook
	// options or to add users.
	Env *envtest.Environment

	kwok *Process
}

// Options tunes StartCluster.
type Options struct {
	// KWOK starts kwok managing nodes annotated kwok.x-k8s.io/node=fake.
	KWOK bool
	// APIServerFlags are extra kube-apiserver flags, name without dashes.
	APIServerFlags map[string]string
	// Webhooks installs webhook configurations pointing at a local server
	// the test starts (see envtest.WebhookInstallOptions).
	Webhooks *envtest.WebhookInstallOptions
	// CRDPaths are more CRD files or directories to install besides
	// Waterline's (ServiceMonitorCRD, say).
	CRDPaths []string
	// APIServer is the kube-apiserver program of bin/ to run:
	// "kube-apiserver" (the default, the release Waterline is built with)
	// or OldestAPIServer.
	APIServer string
}

// OldestAPIServer is the kube-apiserver of the oldest Kubernetes release
// Waterline supports (hack/tools/apiserver-1.34).
const OldestAPIServer = "kube-apiserver-1.34"

// controller-runtime (envtest, the manager) logs through klog, as our
// components do.
var setLoggerOnce sync.Once

// DisabledAdmissionPlugins are the admission plugins off in test clusters:
// without kube-controller-manager there are no default ServiceAccounts, and
// nothing removes the not-ready taint TaintNodesByCondition puts on new
// nodes (kwok makes them Ready, but never untaints them).
const DisabledAdmissionPlugins = "ServiceAccount,TaintNodesByCondition"

// StartCluster starts etcd and kube-apiserver from bin/ with the CRDs of
// config/crd (and opts.CRDPaths) installed and stops them when the test
// ends.
func StartCluster(t testing.TB, opts Options) *Cluster {
	t.Helper()
	setLoggerOnce.Do(func() { ctrllog.SetLogger(klog.NewKlogr()) })
	apiServer := opts.APIServer
	if apiServer == "" {
		apiServer = "kube-apiserver"
	}
	for _, tool := range []string{"etcd", apiServer, "kubectl"} {
		if _, err := toolPath(tool); err != nil {
			t.Fatal(err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := waterlinev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        append([]string{filepath.Join(RepoRoot(), "config", "crd", "bases")}, opts.CRDPaths...),
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    BinDir(),
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if opts.Webhooks != nil {
		env.WebhookInstallOptions = *opts.Webhooks
	}
	dieWithTest(t, env, apiServer)
	apiserver := env.ControlPlane.GetAPIServer().Configure()
	apiserver.Set("disable-admission-plugins", DisabledAdmissionPlugins)
	for k, v := range opts.APIServerFlags {
		apiserver.Set(k, v)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("Starting the control plane (etcd, kube-apiserver from %s): %v", BinDir(), err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stopping the control plane: %v", err)
		}
	})
	cfg.QPS, cfg.Burst = 500, 1000

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatalf("Writing kubeconfig: %v", err)
	}
	c := &Cluster{
		Config:     cfg,
		Kube:       kubernetes.NewForConfigOrDie(cfg),
		Waterline:  versioned.NewForConfigOrDie(cfg),
		Scheme:     scheme,
		Kubeconfig: kubeconfig,
		Env:        env,
	}
	if opts.KWOK {
		c.startKWOK(t)
	}
	return c
}

// dieWithTest makes envtest start etcd and kube-apiserver through a wrapper
// that sets their parent-death signal, as every other process the tests
// start has: envtest gives its children no Pdeathsig, so a test binary
// killed before its cleanup ran (go test's -timeout panics out of it, a
// SIGKILL) used to leave both running, holding their ports and data
// directories. setpriv (util-linux) sets the signal and execs the real
// binary in place, so envtest still signals the process it started. Without
// setpriv the binaries are started directly, as before.
func dieWithTest(t testing.TB, env *envtest.Environment, apiServer string) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Logf("setpriv not found (%v): etcd and kube-apiserver will outlive a killed test binary", err)
		env.ControlPlane.APIServer = &envtest.APIServer{Path: filepath.Join(BinDir(), apiServer)}
		return
	}
	dir := t.TempDir()
	wrap := func(tool string) string {
		w := filepath.Join(dir, tool)
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", shellQuote(setpriv), shellQuote(filepath.Join(BinDir(), tool)))
		if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
			t.Fatalf("Writing the %s wrapper: %v", tool, err)
		}
		return w
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: wrap("etcd")}
	env.ControlPlane.APIServer = &envtest.APIServer{Path: wrap(apiServer)}
}

// shellQuote quotes s for sh: a checkout's path may hold spaces or quotes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Kubectl runs bin/kubectl against the cluster and returns its combined
// output; it fails the test when kubectl fails.
func (c *Cluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.KubectlE(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// PodCondition returns the status of the pod's condition of type ct.
func PodCondition(pod *corev1.Pod, ct corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == ct {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
