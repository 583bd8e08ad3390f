package integration

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// tierNode is a kwok node whose Batch pod asks batch-cpu 300 and has a
// real cgroup under a private subtree of /sys/fs/cgroup: the agent's tier
// enforcement holds it to 300m at once (BestEffort to kubelet: unlimited).
type tierNode struct {
	c    *testutil.Cluster
	rn   *resctltest.RealNode
	node string
	pod  *resctltest.RealPod
	opts testutil.AgentOptions
}

func newTierNode(t *testing.T, prefix string) *tierNode {
	t.Helper()
	rn := resctltest.NewRealNode(t, "waterline-test-"+prefix)
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	node := c.CreateNodes(t, prefix, 1, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}})[0].Name
	qosPriorityClasses(t, c)
	c.CreateNamespace(t, prefix, nil)
	q := resource.MustParse("300")
	p := qosPod(t, c, prefix, "batch", node, "qos-batch", nil, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{extension.ResourceBatchCPU: q}, Limits: corev1.ResourceList{extension.ResourceBatchCPU: q}})
	tn := &tierNode{c: c, rn: rn, node: node, pod: rn.AddPod(p)}
	proc := resctltest.NewFakeProc(t, rn)
	proc.Update()
	tn.opts = testutil.AgentOptions{
		NodeName: node, CgroupRoot: resctltest.RealRoot, KubeletCgroupRoot: "/" + rn.Top,
		CgroupVersion: string(rn.Layout.Version()), CgroupDriver: "cgroupfs", ProcRoot: proc.Dir, StateDir: t.TempDir(),
	}
	return tn
}

func (tn *tierNode) quota() int64 { return tn.rn.Quota(tn.pod.Cgroup) }

func (tn *tierNode) waitQuota(t *testing.T, want int64, msg string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		return tn.quota() == want, fmt.Errorf("quota %dm", tn.quota())
	}, "%s", msg)
}

// TestAgentReleaseCommand: an agent holds a Batch pod to its 300m tier
// limit and is stopped (SIGTERM; no DaemonSet to say it is uninstalled):
// the limit stays, for the next agent to take over. `waterline-agent
// --release` with the same state directory and no API server gives the pod
// kubelet's value back (unlimited) and exits 0.
func TestAgentReleaseCommand(t *testing.T) {
	tn := newTierNode(t, "release-cmd")
	agent := tn.c.StartAgent(t, tn.opts)
	tn.waitQuota(t, 300, "waiting for the agent to hold the Batch pod to its 300m tier limit")
	agent.Stop()
	if q := tn.quota(); q != 300 {
		t.Fatalf("after a plain SIGTERM the quota is %dm, want the tier limit kept (300m) for the next agent", q)
	}
	bin := testutil.BuildBinary(t, "waterline-agent")
	cmd := exec.CommandContext(t.Context(), bin, "--release", "--state-dir", tn.opts.StateDir,
		"--cgroup-root", tn.opts.CgroupRoot, "--kubelet-cgroup-root", tn.opts.KubeletCgroupRoot,
		"--cgroup-version", tn.opts.CgroupVersion, "--cgroup-driver", "cgroupfs",
		"--kubeconfig", "/nonexistent", "--v", "2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("waterline-agent --release: %v\n%s", err, out)
	}
	if q := tn.quota(); q != resctl.Unlimited {
		t.Errorf("after --release the quota is %dm, want kubelet's (unlimited)\n%s", q, out)
	}
}

// TestAgentReleasesOnUninstall: the agent runs as the pod of a DaemonSet
// (objects in the real API server; the process is the test's). SIGTERM
// while the DaemonSet stays keeps the tier limit (a rolling update); a new
// agent takes over; deleting the DaemonSet and then SIGTERM -- what an
// uninstall does -- gives the pod kubelet's value back before the agent
// exits.
func TestAgentReleasesOnUninstall(t *testing.T) {
	tn := newTierNode(t, "release-uninstall")
	ctx := t.Context()
	const ns = "release-uninstall"
	labels := map[string]string{"app": "waterline-agent"}
	ds, err := tn.c.Kube.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "waterline-agent"}},
					NodeSelector: map[string]string{"no-such-node": "true"}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own pod, as the DaemonSet controller would make it.
	if _, err := tn.c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waterline-agent-x", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
		Spec: corev1.PodSpec{NodeName: tn.node, Containers: []corev1.Container{{Name: "agent", Image: "waterline-agent"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tn.opts.Args = []string{"--pod-name", "waterline-agent-x", "--pod-namespace", ns}

	first := tn.c.StartAgent(t, tn.opts)
	tn.waitQuota(t, 300, "waiting for the agent to hold the Batch pod to its 300m tier limit")
	first.Stop()
	if q := tn.quota(); q != 300 {
		t.Fatalf("after SIGTERM with the DaemonSet in place the quota is %dm, want 300m kept", q)
	}
	second := tn.c.StartAgent(t, tn.opts)
	tn.waitQuota(t, 300, "waiting for the second agent")
	if err := tn.c.Kube.AppsV1().DaemonSets(ns).Delete(ctx, ds.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second.Stop()
	if exited, err := second.Exited(); !exited || err != nil {
		t.Errorf("agent exit: exited %v, err %v; want a clean exit", exited, err)
	}
	if q := tn.quota(); q != resctl.Unlimited {
		t.Errorf("after the uninstall's SIGTERM the quota is %dm, want kubelet's (unlimited)", q)
	}
}
