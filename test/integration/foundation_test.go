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

package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	waterlinev1alpha1 "github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

func TestCRDsInstallAndExplain(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})

	for _, crd := range []string{"nodemetrics.waterline.dev", "nodeqoses.waterline.dev", "colocationpolicies.waterline.dev"} {
		out := c.Kubectl(t, "get", "crd", crd, "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}")
		if out != "True" {
			t.Errorf("CRD %s Established = %q, want True", crd, out)
		}
	}
	// Field docs reach users through kubectl explain.
	for resourcePath, want := range map[string]string{
		"nodeqos.spec.cpu.throttlePercent":                     "throttled, one at a",
		"nodemetrics.status.prodPeak":                          "predicted peak usage",
		"colocationpolicies.spec.tiers.midCPUThresholdPercent": "Allocatable × threshold%",
	} {
		// The API server publishes a new CRD's OpenAPI a moment after it is
		// Established, so explain may need a few tries.
		testutil.Eventually(t, 30*time.Second, 500*time.Millisecond, func() (bool, error) {
			out, err := c.KubectlE("explain", resourcePath)
			if err != nil {
				return false, fmt.Errorf("%w: %s", err, out)
			}
			if !strings.Contains(out, want) {
				return false, fmt.Errorf("output lacks %q:\n%s", want, out)
			}
			return true, nil
		}, "kubectl explain %s", resourcePath)
	}
}

func TestNodeQOSValidation(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	client := c.Waterline.WaterlineV1alpha1().NodeQOSs()

	tests := []struct {
		name string
		cpu  *waterlinev1alpha1.CPUWaterlines
		mem  *waterlinev1alpha1.MemoryWaterlines
		// wantErr lists substrings the API server's refusal must contain;
		// empty means the object is accepted.
		wantErr []string
	}{
		{
			name: "valid waterlines",
			cpu:  &waterlinev1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](65), RestorePercent: ptr.To[int32](55), EvictPercent: ptr.To[int32](80)},
			mem:  &waterlinev1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](80), EvictPercent: ptr.To[int32](90)},
		},
		{
			name:    "evict equal to throttle",
			cpu:     &waterlinev1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70), EvictPercent: ptr.To[int32](70)},
			wantErr: []string{"spec.cpu.evictPercent", "evictPercent must be greater than throttlePercent"},
		},
		{
			name:    "evict below throttle",
			cpu:     &waterlinev1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](80), EvictPercent: ptr.To[int32](70)},
			wantErr: []string{"spec.cpu.evictPercent", "evictPercent must be greater than throttlePercent"},
		},
		{
			name:    "percent above 100",
			cpu:     &waterlinev1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](120)},
			wantErr: []string{"spec.cpu.throttlePercent", "less than or equal to 100"},
		},
		{
			name:    "negative percent",
			mem:     &waterlinev1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](-1)},
			wantErr: []string{"spec.memory.evictPercent", "greater than or equal to 1"},
		},
		{
			name:    "throttle below forbid scheduling",
			cpu:     &waterlinev1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](70), ThrottlePercent: ptr.To[int32](60)},
			wantErr: []string{"spec.cpu.throttlePercent", "throttlePercent must be at least forbidSchedulingPercent"},
		},
		{
			name:    "restore above throttle",
			cpu:     &waterlinev1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](60), RestorePercent: ptr.To[int32](65)},
			wantErr: []string{"spec.cpu.restorePercent"},
		},
		{
			name:    "memory evict not above forbid",
			mem:     &waterlinev1alpha1.MemoryWaterlines{ForbidSchedulingPercent: ptr.To[int32](90), EvictPercent: ptr.To[int32](90)},
			wantErr: []string{"spec.memory.evictPercent", "evictPercent must be greater than forbidSchedulingPercent"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &waterlinev1alpha1.NodeQOS{
				ObjectMeta: metav1.ObjectMeta{Name: "qos-" + string(rune('a'+i))},
				Spec:       waterlinev1alpha1.NodeQOSSpec{CPU: tt.cpu, Memory: tt.mem},
			}
			created, err := client.Create(t.Context(), obj, metav1.CreateOptions{})
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Create refused a valid NodeQOS: %v", err)
				}
				// Defaults from the schema are applied by the API server.
				if got := ptr.Deref(created.Spec.AvoidanceCount, 0); got != waterlinev1alpha1.DefaultAvoidanceCount {
					t.Errorf("spec.avoidanceCount defaulted to %d, want %d", got, waterlinev1alpha1.DefaultAvoidanceCount)
				}
				return
			}
			if err == nil {
				t.Fatalf("Create accepted an invalid NodeQOS: %+v", created.Spec)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("Create error = %v, want an Invalid error", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err.Error(), want)
				}
			}
		})
	}

	// The printer columns show the waterlines.
	out := c.Kubectl(t, "get", "nodeqos")
	for _, col := range []string{"CPU-THROTTLE", "CPU-EVICT", "MEM-EVICT", "DRYRUN"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get nodeqos lacks column %s:\n%s", col, out)
		}
	}
}

func TestColocationPolicyDefaultHasNoSelector(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	client := c.Waterline.WaterlineV1alpha1().ColocationPolicies()
	_, err := client.Create(t.Context(), &waterlinev1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: waterlinev1alpha1.DefaultColocationPolicyName},
		Spec: waterlinev1alpha1.ColocationPolicySpec{
			NodeSelector: &waterlinev1alpha1.LabelSelector{MatchLabels: map[string]waterlinev1alpha1.LabelValue{"pool": "a"}},
		},
	}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.nodeSelector") {
		t.Fatalf("Create(default policy with a node selector) error = %v, want a refusal naming spec.nodeSelector", err)
	}
	_, err = client.Create(t.Context(), &waterlinev1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-a"},
		Spec: waterlinev1alpha1.ColocationPolicySpec{
			NodeSelector: &waterlinev1alpha1.LabelSelector{MatchLabels: map[string]waterlinev1alpha1.LabelValue{"pool": "a"}},
			Tiers:        &waterlinev1alpha1.TierPolicy{MidCPUThresholdPercent: ptr.To[int32](150)},
		},
	}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.tiers.midCPUThresholdPercent") {
		t.Fatalf("Create(pool policy with mid threshold 150%%) error = %v, want a refusal naming spec.tiers.midCPUThresholdPercent", err)
	}
}

func TestNodeMetricStatusRoundTrip(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	client := c.Waterline.WaterlineV1alpha1().NodeMetrics()
	nm, err := client.Create(t.Context(), &waterlinev1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Creating NodeMetric: %v", err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	want := waterlinev1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &waterlinev1alpha1.NodeMetricInfo{
			NodeUsage:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("12Gi")},
			SystemUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			AggregatedNodeUsages: []waterlinev1alpha1.AggregatedUsage{{
				Duration: metav1.Duration{Duration: 5 * time.Minute},
				Usage: map[waterlinev1alpha1.AggregationType]corev1.ResourceList{
					waterlinev1alpha1.AggregationP95: {corev1.ResourceCPU: resource.MustParse("4")},
				},
			}},
		},
		PodsMetric: []waterlinev1alpha1.PodMetricInfo{{
			Namespace: "default", Name: "web-0", Band: "prod",
			Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1200m")},
		}},
		ProdPeak:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")},
		ProdReclaimable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")},
		Conditions: []metav1.Condition{{
			Type: waterlinev1alpha1.ConditionForbidScheduling, Status: metav1.ConditionFalse,
			Reason: "BelowWaterline", Message: "cpu 11% is below the forbid-scheduling waterline 60%",
			LastTransitionTime: now,
		}},
	}
	nm.Status = want
	if _, err := client.UpdateStatus(t.Context(), nm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	got, err := client.Get(t.Context(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(want, got.Status) {
		t.Errorf("status did not round-trip (-want +got):\n%s", cmp.Diff(want, got.Status))
	}
	// The status subresource keeps spec writes out of status updates and back.
	got.Spec.CollectPolicy = &waterlinev1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](30)}
	got.Status.PodsMetric = nil
	updated, err := client.Update(t.Context(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if len(updated.Status.PodsMetric) != 1 {
		t.Errorf("a spec update changed status.podsMetric: %v", updated.Status.PodsMetric)
	}
	// The schema stores no defaults (a pool ColocationPolicy would then
	// override every field of the default policy's); readers apply Go's.
	if got := updated.Spec.CollectPolicy.AggregateDurationSeconds; got != nil {
		t.Errorf("aggregateDurationSeconds stored as %d, want it left unset", *got)
	}
	if got := *waterlinev1alpha1.CollectPolicyWithDefaults(updated.Spec.CollectPolicy).AggregateDurationSeconds; got != waterlinev1alpha1.DefaultAggregateDurationSeconds {
		t.Errorf("aggregateDurationSeconds read as %d, want the default %d", got, waterlinev1alpha1.DefaultAggregateDurationSeconds)
	}
}

func TestKWOKNodesBecomeReadyAndRunPods(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	start := time.Now()
	nodes := c.CreateNodes(t, "kwok", 200, testutil.NodeOptions{})
	t.Logf("200 kwok nodes Ready in %v", time.Since(start).Round(time.Millisecond))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:    nodes[137].Name,
			Containers:  []corev1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := c.Kube.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating pod: %v", err)
	}
	running := c.WaitPodRunning(t, "default", "bound", time.Minute)
	if running.Spec.NodeName != nodes[137].Name {
		t.Errorf("pod runs on %s, want %s", running.Spec.NodeName, nodes[137].Name)
	}
	if running.Status.PodIP == "" {
		t.Errorf("running pod has no IP: kwok did not manage it")
	}
}

// TestControlPlaneDiesWithKilledTest: a test binary killed before its
// cleanup runs (go test -timeout, SIGKILL) takes its etcd and
// kube-apiserver with it instead of leaving them running. The test re-runs
// its own binary as a child that starts a cluster, prints the two pids and
// waits; it SIGKILLs the child and expects both pids gone.
func TestControlPlaneDiesWithKilledTest(t *testing.T) {
	if os.Getenv("WATERLINE_TEST_HOLD_CLUSTER") == "1" {
		holdCluster(t)
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestControlPlaneDiesWithKilledTest$", "-test.v")
	// The child is killed, so its own TempDir cleanup never runs: its
	// temporary directories go inside this test's, which this test's
	// cleanup removes.
	cmd.Env = append(os.Environ(), "WATERLINE_TEST_HOLD_CLUSTER=1", "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var pids []int
	var transcript strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		transcript.WriteString(line + "\n")
		if rest, ok := strings.CutPrefix(line, "control-plane pids: "); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("child printed %q: %v", line, err)
				}
				pids = append(pids, pid)
			}
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("the child never printed its control plane's pids; its output:\n%s", transcript.String())
	}
	for _, pid := range pids {
		if !testutil.ProcessRunning(pid) {
			t.Fatalf("pid %d is not running before the kill", pid)
		}
	}
	t.Cleanup(func() { // when the test fails, do not leave the orphans running
		for _, pid := range pids {
			if testutil.ProcessRunning(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	_ = cmd.Wait()
	killed = true
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		for _, pid := range pids {
			if testutil.ProcessRunning(pid) {
				return false, fmt.Errorf("pid %d still runs", pid)
			}
		}
		return true, nil
	}, "etcd and kube-apiserver to exit with their killed test binary")
}

// holdCluster is the child of TestControlPlaneDiesWithKilledTest.
func holdCluster(t *testing.T) {
	testutil.StartCluster(t, testutil.Options{})
	var pids []string
	for _, pid := range testutil.ChildProcesses(os.Getpid(), "etcd", "kube-apiserver") {
		pids = append(pids, strconv.Itoa(pid))
	}
	fmt.Printf("control-plane pids: %s\n", strings.Join(pids, " "))
	time.Sleep(2 * time.Minute) // the parent kills us long before
}
