package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestDeployManifests applies config/deploy -- what a platform engineer
// applies to a cluster -- to a real API server, then runs
// hack/webhook-certs.sh against it: every object is accepted, and the
// webhook gets its serving certificate and CA bundle.
func TestDeployManifests(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	root := testutil.RepoRoot()
	rendered := c.Kubectl(t, "kustomize", filepath.Join(root, "config", "deploy"))
	manifest := filepath.Join(t.TempDir(), "waterline.yaml")
	if err := os.WriteFile(manifest, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	// The CRDs are installed by the harness already; apply is idempotent.
	out := c.Kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", manifest)
	for _, want := range []string{
		"namespace/waterline-system",
		"deployment.apps/waterline-manager",
		"deployment.apps/waterline-scheduler",
		"daemonset.apps/waterline-agent",
		"clusterrole.rbac.authorization.k8s.io/waterline-agent",
		"service/waterline-webhook",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/waterline-mutating",
		"clusterrole.rbac.authorization.k8s.io/waterline-manager",
		"priorityclass.scheduling.k8s.io/waterline-batch",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %s:\n%s", want, out)
		}
	}

	cmd := exec.Command(filepath.Join(root, "hack", "webhook-certs.sh"))
	cmd.Env = append(os.Environ(), "KUBECTL="+filepath.Join(testutil.BinDir(), "kubectl"), "KUBECONFIG="+c.Kubeconfig)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/webhook-certs.sh: %v\n%s", err, o)
	}
	secret, err := c.Kube.CoreV1().Secrets("waterline-system").Get(t.Context(), "waterline-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("webhook secret: %v", err)
	}
	if len(secret.Data["tls.crt"]) == 0 || len(secret.Data["tls.key"]) == 0 {
		t.Errorf("webhook secret lacks tls.crt/tls.key: %v", secret.Data)
	}
	mwc, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), "waterline-mutating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range mwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("webhook %s has no caBundle", w.Name)
		}
	}
}
