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
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/hack/image/imagetar"
	testutil "github.com/waterline-dev/waterline/test/util"
)

const (
	agentNamespace = "waterline-system"
	agentName      = "waterline-agent"
	// agentMetricsSecret is the kubernetes.io/tls Secret the agent's
	// /metrics serves, made for agentMetricsHost.
	agentMetricsSecret = "waterline-agent-metrics-tls"
	agentMetricsHost   = "waterline-agent-metrics.e2e.example"
	// reportSeconds and aggregateSeconds are the agent's NodeMetric report
	// interval and usage window here: short, so scenarios take seconds.
	reportSeconds    = 2
	aggregateSeconds = 10
)

// system is the whole system on one real node, shared by the scenarios
// of TestRealNode (they run one after another: they share the machine's
// CPUs).
type system struct {
	c    *testutil.Cluster
	node *testutil.RealNode
	// agentHealth and agentMetrics are the agent pod's health and metrics
	// ports on the node, managerMetrics the manager pod's metrics port
	// (loopback, host network).
	agentHealth, agentMetrics, managerMetrics int
	// valuesFile holds the helm values of the install.
	valuesFile string
	// view is the agent's proc root.
	view *testutil.NodeProcView
}

// strictScheduler is waterline-scheduler's profile whose LoadAware
// refuses a node over 90 % CPU.
const strictScheduler = "waterline-strict"

// schedulerProfiles: default-scheduler places the DaemonSet's pods (no
// kube-scheduler runs here); waterline-scheduler places the workloads with
// LoadAware's CPU threshold off (this machine is shared: its real CPU use
// is not the test's to decide), waterline-strict with it at 90 %.
const schedulerProfiles = `profiles:
- schedulerName: default-scheduler
- schedulerName: waterline-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
        weight: 2
  pluginConfig:
  - name: LoadAware
    args:
      nodeMetricExpirationSeconds: 30
      usageThresholds: {cpu: 0, memory: 95}
- schedulerName: ` + strictScheduler + `
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
        weight: 2
  pluginConfig:
  - name: LoadAware
    args:
      nodeMetricExpirationSeconds: 30
      usageThresholds: {cpu: 90, memory: 95}
`

func startSystem(t *testing.T) *system {
	t.Helper()
	testutil.SkipUnlessRealNode(t)
	begin := time.Now()
	// ServiceAccount admission stays on: the agent's and the manager's pods
	// get their ServiceAccount's token as on any cluster.
	c := testutil.StartCluster(t, testutil.Options{
		APIServerFlags: map[string]string{
			"disable-admission-plugins": "TaintNodesByCondition",
			"allow-privileged":          "true",
		},
	})
	c.StartControllerManager(t)
	node := c.StartRealNode(t, "real")
	// The agent reads the node's usage from a proc view the scenarios
	// switch: the machine's, as on any node, or only the pods' where a
	// scenario needs a load the test controls on a shared machine.
	s := &system{c: c, node: node, view: node.StartProcView(t, 20*time.Millisecond)}

	// The NodeMetric as the manager would create it, with a short report
	// interval and window.
	if _, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().Create(t.Context(), &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name},
		Spec: v1alpha1.NodeMetricSpec{CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{
			AggregateDurationSeconds: ptr.To[int64](aggregateSeconds),
			ReportIntervalSeconds:    ptr.To[int64](reportSeconds),
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The default ColocationPolicy: the same short collect policy (the
	// manager writes it into NodeMetric specs), the Batch tier sold up to
	// the whole node, and a profile that makes pods of namespaces labelled
	// colocation=batch Batch pods.
	if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(t.Context(), &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ColocationPolicySpec{
			CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{
				AggregateDurationSeconds: ptr.To[int64](aggregateSeconds),
				ReportIntervalSeconds:    ptr.To[int64](reportSeconds),
			},
			Tiers: &v1alpha1.TierPolicy{BatchCPUThresholdPercent: ptr.To[int32](100), BatchMemoryThresholdPercent: ptr.To[int32](90)},
			Profiles: []v1alpha1.ColocationProfile{{
				Name:              "batch",
				NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"colocation": "batch"}},
				Band:              "batch",
				PriorityClassName: "waterline-batch",
				SchedulerName:     testutil.SchedulerName,
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler runs as a process: its profiles are the test's.
	c.StartScheduler(t, schedulerProfiles)
	s.install(t)
	t.Logf("System up in %v (real node in %v)", time.Since(begin).Round(100*time.Millisecond), node.StartupTime.Round(100*time.Millisecond))
	return s
}

// release is the Helm release of the e2e's install.
const release = "waterline"

// install installs charts/waterline with helm, as a user of a local
// cluster would (localCluster.enabled: loopback webhooks and probes, the
// API server on loopback), with the images the real node imported. Only
// what this machine needs differs from a user's values: kubelet's cgroup
// root is the node's private one, the host proc root is the test's view
// (system.view), and ports and the state directory must not collide with
// other work on the machine. The chart installs the
// PriorityClasses, RBAC, the node-scope policy, the manager (a pod on the
// real node serving its webhooks on 127.0.0.1) and the agent DaemonSet; the
// test's own ColocationPolicy and NodeQOS objects stand instead of the
// chart's.
func (s *system) install(t *testing.T) {
	t.Helper()
	begin := time.Now()
	api, err := url.Parse(s.c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := strconv.Atoi(api.Port())
	if err != nil {
		t.Fatalf("API server address %q: %v", s.c.Config.Host, err)
	}
	s.agentHealth, s.agentMetrics, s.managerMetrics = testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	// The agent serves /metrics with a certificate of the user's
	// (agent.metricsCertSecret), the manager with one it signs.
	s.c.CreateNamespace(t, agentNamespace, nil)
	if _, err := s.c.Kube.CoreV1().Secrets(agentNamespace).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: agentMetricsSecret},
		Type:       corev1.SecretTypeTLS,
		Data:       testutil.ServingCertSecretData(t, agentMetricsHost),
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"localCluster": map[string]any{"enabled": true, "apiServer": map[string]any{"host": api.Hostname(), "port": apiPort}},
		"image":        map[string]any{"registry": "", "tag": imagetar.WaterlineTag, "pullPolicy": "Never"},
		"manager": map[string]any{
			"replicas": 1, "leaderElection": map[string]any{"enabled": false},
			"ports":        map[string]any{"webhook": testutil.FreePort(t), "metrics": s.managerMetrics, "health": testutil.FreePort(t)},
			"nodeSelector": map[string]any{"waterline.dev/real-node": "true"},
		},
		"scheduler": map[string]any{"enabled": false},
		"agent": map[string]any{
			"ports":             map[string]any{"health": s.agentHealth, "metrics": s.agentMetrics},
			"stateDir":          filepath.Join(s.node.Dir, "agent-state"),
			"kubeletCgroupRoot": s.node.CgroupRoot,
			"hostProcRoot":      s.view.Dir,
			"nodeSelector":      map[string]any{"waterline.dev/real-node": "true"},
			"extraArgs":         []string{"--collect-interval=1s"},
			"metricsCertSecret": agentMetricsSecret,
		},
		"colocationPolicy": map[string]any{"create": false},
		"nodeQOS":          map[string]any{"create": false},
	}
	s.valuesFile = filepath.Join(s.node.Dir, "e2e-values.yaml")
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.valuesFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The test cluster has the CRDs already (the harness installs them from
	// config/crd, the chart's crds/ are the same files).
	s.c.Helm(t, "install", release, testutil.ChartDir(), "-n", agentNamespace, "--create-namespace", "--skip-crds", "-f", s.valuesFile)
	s.waitManagerReady(t)
	pod := s.waitAgentReady(t, "")
	t.Logf("helm install: manager and agent pod %s Ready on %s in %v", pod.Name, pod.Spec.NodeName, time.Since(begin).Round(100*time.Millisecond))
}

// waitManagerReady waits for the manager's Deployment to have a Ready pod.
func (s *system) waitManagerReady(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 3*time.Minute, time.Second, func() (bool, error) {
		d, err := s.c.Kube.AppsV1().Deployments(agentNamespace).Get(t.Context(), "waterline-manager", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Status.ReadyReplicas < 1 {
			pods, _ := s.c.Kube.CoreV1().Pods(agentNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=waterline-manager"})
			var st []string
			for _, p := range pods.Items {
				st = append(st, fmt.Sprintf("%s %s %+v", p.Name, p.Status.Phase, p.Status.ContainerStatuses))
			}
			return false, fmt.Errorf("manager not Ready: %v", st)
		}
		return true, nil
	}, "waiting for the chart's waterline-manager to be Ready")
}

// agentPod returns the agent's pod on the node, or nil.
func (s *system) agentPod(t *testing.T) *corev1.Pod {
	t.Helper()
	pods, err := s.c.Kube.CoreV1().Pods(agentNamespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: labels.Set{"app.kubernetes.io/name": agentName}.String()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName == s.node.Name && pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i]
		}
	}
	return nil
}

// waitAgentReady waits for an agent pod other than notUID to be Ready on
// the node and for a NodeMetric report newer than that.
func (s *system) waitAgentReady(t *testing.T, notUID string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	testutil.Eventually(t, 3*time.Minute, time.Second, func() (bool, error) {
		pod = s.agentPod(t)
		if pod == nil {
			return false, fmt.Errorf("no agent pod on %s yet", s.node.Name)
		}
		if string(pod.UID) == notUID {
			return false, fmt.Errorf("agent pod %s is still the old one", pod.Name)
		}
		if testutil.PodCondition(pod, corev1.PodReady) != corev1.ConditionTrue {
			return false, fmt.Errorf("agent pod %s phase %s, statuses %+v", pod.Name, pod.Status.Phase, pod.Status.ContainerStatuses)
		}
		return true, nil
	}, "waiting for the agent's DaemonSet pod on %s to be Ready", s.node.Name)
	since := time.Now()
	s.waitNodeMetric(t, since)
	return pod
}

// waitNodeMetric waits for a NodeMetric report written after since and
// returns it.
func (s *system) waitNodeMetric(t *testing.T, since time.Time) *v1alpha1.NodeMetric {
	t.Helper()
	var nm *v1alpha1.NodeMetric
	testutil.Eventually(t, time.Minute, 500*time.Millisecond, func() (bool, error) {
		var err error
		nm, err = s.c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(t.Context(), s.node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if nm.Status.UpdateTime == nil || nm.Status.UpdateTime.Time.Before(since.Truncate(time.Second)) {
			return false, fmt.Errorf("last report %v", nm.Status.UpdateTime)
		}
		return true, nil
	}, "waiting for the agent's NodeMetric report for %s", s.node.Name)
	return nm
}

// podSpec describes a workload pod.
type podSpec struct {
	name, class string
	// burners is how many shell loops it runs (each spins one core);
	// 0 sleeps.
	burners int
	// cpuRequest, cpuLimit, memRequest, memLimit: "" for none.
	cpuRequest, cpuLimit, memRequest, memLimit string
	// script replaces the burners when set.
	script string
	// extraResources are more requests (and equal limits), e.g. tier
	// resources.
	extraResources corev1.ResourceList
	labels         map[string]string
	// scheduler is the profile; empty for waterline-scheduler.
	scheduler string
	// hostDir, when set, is a host directory mounted at /ctl: the test
	// steers the pod's script through files in it.
	hostDir string
}

// burnScript runs n busy loops and exits at once on SIGTERM.
func burnScript(n int) string {
	if n == 0 {
		return "trap 'exit 0' TERM; while :; do sleep 1; done"
	}
	return fmt.Sprintf("trap 'kill 0; exit 0' TERM; for i in $(seq %d); do (while :; do :; done) & done; wait", n)
}

// createPod creates a hostNetwork pod of p in ns for waterline-scheduler
// (the test's namespace has no pod network: every pod is hostNetwork).
func (s *system) createPod(t *testing.T, ns string, p podSpec) *corev1.Pod {
	t.Helper()
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, q := range []struct {
		list corev1.ResourceList
		name corev1.ResourceName
		v    string
	}{{req, corev1.ResourceCPU, p.cpuRequest}, {lim, corev1.ResourceCPU, p.cpuLimit}, {req, corev1.ResourceMemory, p.memRequest}, {lim, corev1.ResourceMemory, p.memLimit}} {
		if q.v != "" {
			q.list[q.name] = resource.MustParse(q.v)
		}
	}
	for k, v := range p.extraResources {
		req[k], lim[k] = v, v
	}
	script := p.script
	if script == "" {
		script = burnScript(p.burners)
	}
	if p.scheduler == "" {
		p.scheduler = testutil.SchedulerName
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name, Labels: p.labels},
		Spec: corev1.PodSpec{
			SchedulerName:                 p.scheduler,
			PriorityClassName:             p.class,
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			NodeSelector:                  map[string]string{"waterline.dev/real-node": "true"},
			Containers: []corev1.Container{{
				Name: "main", Image: testutil.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				// Arguments, not a command, as `kubectl run -- sh -c …`
				// gives them (README.md's walkthrough): the image's
				// command is replaced, as with the public busybox image.
				Args:      []string{"sh", "-c", script},
				Resources: corev1.ResourceRequirements{Requests: req, Limits: lim},
			}},
		},
	}
	if p.hostDir != "" {
		pod.Spec.Volumes = []corev1.Volume{{Name: "ctl", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: p.hostDir, Type: ptr.To(corev1.HostPathDirectory)}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl", ReadOnly: true}}
	}
	created, err := s.c.Kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Creating pod %s/%s: %v", ns, p.name, err)
	}
	return created
}

// waitRunning waits for pods to run on the real node and returns them.
func (s *system) waitRunning(t *testing.T, ns string, names ...string) map[string]*corev1.Pod {
	t.Helper()
	out := map[string]*corev1.Pod{}
	for _, name := range names {
		p := s.c.WaitPodRunning(t, ns, name, 2*time.Minute)
		if p.Spec.NodeName != s.node.Name {
			t.Fatalf("pod %s/%s runs on %q, want the real node %s", ns, name, p.Spec.NodeName, s.node.Name)
		}
		out[name] = p
	}
	return out
}

// namespace creates a namespace for one scenario and, when it ends,
// deletes its pods and waits for kubelet to stop them, so the next
// scenario starts on a quiet node.
func (s *system) namespace(t *testing.T, name string, lbls ...map[string]string) string {
	t.Helper()
	var l map[string]string
	if len(lbls) > 0 {
		l = lbls[0]
	}
	s.c.CreateNamespace(t, name, l)
	s.c.WaitServiceAccount(t, name, "default", time.Minute)
	t.Cleanup(func() {
		s.node.DeletePodsAndWait(t, name, 2*time.Minute)
	})
	return name
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
