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

package colocation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/test/bench/colocation/loadgen"
	"github.com/waterline-dev/waterline/test/bench/colocation/report"
	"github.com/waterline-dev/waterline/test/bench/colocation/workload"
)

// Node is the real node the benchmark runs on, as test/util's RealNode
// describes it.
type Node struct {
	// Name of the Node object.
	Name string
	// CgroupRoot is kubelet's --cgroup-root (kubepods lives under it).
	CgroupRoot string
	// CgroupMount is the cgroup filesystem (/sys/fs/cgroup).
	CgroupMount string
}

// Env is what the benchmark runs against.
type Env struct {
	Kube kubernetes.Interface
	Node Node
	// Namespace for the Prod pod and the plain-Kubernetes Batch pods
	// (created by the caller; no colocation profile selects it).
	Namespace string
	// BatchNamespace holds the Batch pods of the Waterline scenarios: a
	// namespace the colocation profile selects, so the manager's webhook
	// gives them their band and tier resources as it would a user's pods.
	BatchNamespace string
	// Image is the pods' image: one with colobench at ImageBinary, or any
	// image (the busybox test image) with BinaryDir set, a host directory
	// holding a static colobench binary, mounted into the pods at
	// /colobench.
	Image     string
	BinaryDir string
	// Colobench is the colobench binary the load generator runs from,
	// outside the pods.
	Colobench string
	// HostDir gets the Batch pods' progress files (hostPath) and the load
	// generator's results.
	HostDir string
	// StartWaterline puts Waterline on the node for a Waterline scenario
	// (agent and NodeQOS; the manager and scheduler run throughout) and
	// returns how to take it off again.
	StartWaterline func(t testing.TB, scenario string) (stop func())
}

// BatchPod is one Batch burner pod.
type BatchPod struct {
	Kind    string `json:"kind"`
	Threads int    `json:"threads"`
	// CPU and Memory are the pod's requests and limits as its user writes
	// them in the Waterline scenarios (the colocation profile turns them
	// into batch-cpu and batch-memory); the plain-Kubernetes pods ask for
	// nothing (BestEffort).
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	// MemBytes and Ramp size a mem burner's buffer and its growth
	// (colobench burn --mem-bytes, --ramp); 0 keeps the defaults.
	MemBytes int64         `json:"memBytes,omitempty"`
	Ramp     time.Duration `json:"ramp,omitempty"`
}

// Plan is what to run.
type Plan struct {
	// Rounds of every scenario; the order of scenarios rotates between
	// rounds (interleaved) so a drift of the machine does not favour one.
	Rounds    int
	Scenarios []string
	// Loads are the Prod loads by shape (report.Steady, report.Bursty).
	Loads   map[string][]loadgen.Phase
	Arrival string
	// ProdCPU is the CPU each request burns; ProdPort the Prod server's
	// loopback port; ProdRequest and ProdLimit its CPU.
	ProdCPU                time.Duration
	ProdPort               int
	ProdRequest, ProdLimit string
	// Batch are the Batch pods of the CPU scenarios; MemoryBatch those of
	// the memory-pressure scenario (report.WaterlineMemory), which runs
	// under the steady load only.
	Batch, MemoryBatch []BatchPod
	// Warmup runs the pods before the load starts; SampleInterval is the
	// cgroup sampling period.
	Warmup, SampleInterval time.Duration
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// BatchNamespaceLabels label the Waterline scenarios' Batch namespace:
// the chart's example profile selects namespaces so labelled.
var BatchNamespaceLabels = map[string]string{"waterline.dev/colocation": "batch"}

// BatchProfile is the colocation profile the Waterline scenarios run
// with (in the ColocationPolicy "default"): pods of the Batch namespace
// become Batch pods of waterline-scheduler, their cpu and memory turned
// into batch-cpu and batch-memory.
func BatchProfile() v1alpha1.ColocationProfile {
	return v1alpha1.ColocationProfile{
		Name:              "colobench-batch",
		NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"waterline.dev/colocation": "batch"}},
		Band:              string(extension.BandBatch),
		PriorityClassName: "waterline-batch",
		SchedulerName:     "waterline-scheduler",
	}
}

// ScenarioProbe is a Waterline run whose lines the caller sets low enough
// that the agent must act on any machine: it checks that the harness sees
// the agent's actions and measures their over-action; it is not part of
// the benchmark's report.
const ScenarioProbe = "waterline-probe"

// waterlineScenarios put the Batch pods in the Batch band.
var waterlineScenarios = map[string]bool{report.Waterline: true, report.WaterlineNoThrottle: true, report.WaterlineMemory: true, ScenarioProbe: true}

// batchOf is the Batch pods of scenario.
func batchOf(plan Plan, scenario string) []BatchPod {
	if scenario == report.WaterlineMemory {
		return plan.MemoryBatch
	}
	return plan.Batch
}

// RunOne runs one scenario under one load outside a plan's rounds (the
// probe).
func RunOne(t testing.TB, env Env, plan Plan, scenario, load string, id int) report.Run {
	t.Helper()
	cpu, err := NewCPUReader(env.Node.CgroupMount)
	if err != nil {
		t.Fatal(err)
	}
	return runOne(t, env, plan, cpu, scenario, load, plan.Loads[load], 1, id)
}

// Run runs the plan and returns the results (Command, Smoke and Machine
// are the caller's to fill).
func Run(t testing.TB, env Env, plan Plan) *report.Results {
	t.Helper()
	cpu, err := NewCPUReader(env.Node.CgroupMount)
	if err != nil {
		t.Fatal(err)
	}
	res := &report.Results{Started: time.Now(), Loads: plan.Loads,
		Prod:  fmt.Sprintf("colobench serve, %v of CPU a request, cpu request %s limit %s, %s arrivals", plan.ProdCPU, plan.ProdRequest, plan.ProdLimit, plan.Arrival),
		Batch: describeBatch(plan.Batch)}
	if slices.Contains(plan.Scenarios, report.WaterlineMemory) {
		res.Batch += "; " + report.WaterlineMemory + ": " + describeBatch(plan.MemoryBatch)
	}
	loads := make([]string, 0, len(plan.Loads))
	for l := range plan.Loads {
		loads = append(loads, l)
	}
	sort.Strings(loads)
	sort.SliceStable(loads, func(i, j int) bool { return loads[i] == report.Steady })
	runID := 0
	for round := 1; round <= plan.Rounds; round++ {
		order := append([]string(nil), plan.Scenarios...)
		for range round - 1 {
			order = append(order[1:], order[0])
		}
		for _, sc := range order {
			if sc == report.BatchAlone {
				runID++
				res.Runs = append(res.Runs, runOne(t, env, plan, cpu, sc, "", plan.Loads[loads[0]], round, runID))
				continue
			}
			for _, load := range loads {
				if sc == report.WaterlineMemory && load != report.Steady {
					continue
				}
				runID++
				res.Runs = append(res.Runs, runOne(t, env, plan, cpu, sc, load, plan.Loads[load], round, runID))
			}
		}
	}
	return res
}

func describeBatch(b []BatchPod) string {
	var parts []string
	for _, p := range b {
		d := fmt.Sprintf("%s×%d", p.Kind, p.Threads)
		if p.MemBytes > 0 {
			d += fmt.Sprintf(" %d MiB", p.MemBytes>>20)
			if p.Ramp > 0 {
				d += fmt.Sprintf(" grown over %v", p.Ramp)
			}
		}
		if p.CPU != "" || p.Memory != "" {
			d += fmt.Sprintf(" (Waterline: cpu %s memory %s)", p.CPU, p.Memory)
		}
		parts = append(parts, d)
	}
	return fmt.Sprintf("%d burner pods: %s; BestEffort under plain Kubernetes, through the colocation profile under Waterline", len(b), strings.Join(parts, ", "))
}

func logf(plan Plan, format string, args ...any) {
	if plan.Logf != nil {
		plan.Logf(format, args...)
	}
}

// runOne runs one scenario under one load: Waterline on (if asked), the
// Prod and Batch pods up, a warmup, the load while sampling cgroups and
// watching the agent's Events, then everything off again.
func runOne(t testing.TB, env Env, plan Plan, cpu *CPUReader, scenario, load string, phases []loadgen.Phase, round, id int) report.Run {
	t.Helper()
	if load == "" {
		logf(plan, "Round %d: %s", round, scenario)
	} else {
		logf(plan, "Round %d: %s, %s load", round, scenario, load)
	}
	ctx := t.Context()
	run := report.Run{Scenario: scenario, Load: load, Round: round}
	dir := filepath.Join(env.HostDir, fmt.Sprintf("run-%02d-%s-%s", id, scenario, load))
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if waterlineScenarios[scenario] {
		stop := env.StartWaterline(t, scenario)
		defer stop()
	}
	defer deletePods(t, env)

	// The agent's actions are watched from before the pods exist: it may
	// act during the warmup.
	batch := &batchSet{env: env, plan: plan, scenario: scenario, dir: dir, id: id}
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	var watched []timedAction
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		watched = watchActions(wctx, env, batch)
	}()

	var prod *corev1.Pod
	if scenario != report.BatchAlone {
		prod = createPod(t, env, prodPod(env, plan, id))
	}
	if scenario != report.Alone {
		if waterlineScenarios[scenario] {
			// Kubelet admits a pod bound to the node only if the node
			// sells the tier resources it asks for.
			waitBatchAllocatable(t, env, batch.pods())
		}
		for i := range batch.pods() {
			if err := batch.create(i, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitRunning(t, env, 2*time.Minute)
	if prod != nil {
		waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", plan.ProdPort), time.Minute)
		prod = getPod(t, env, prod.Name)
	}
	// Sampling starts before the warmup, so actions the agent takes then
	// have CPU samples around them (at negative times).
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var samples []report.Sample
	origin := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		samples = sample(sctx, cpu, env.Node, prod, plan.SampleInterval, origin)
	}()
	time.Sleep(plan.Warmup)

	// The run's clock starts with the load.
	start := time.Now()
	run.Start = start

	var total time.Duration
	for _, p := range phases {
		total += p.Duration
	}
	if prod != nil {
		run.Prod = runLoad(t, env, plan, phases, dir, uint64(id))
	} else {
		select {
		case <-time.After(total):
		case <-ctx.Done():
		}
	}
	stopSampling()
	wg.Wait()
	stopWatching()
	<-watchDone
	batch.replacing.Wait()
	end := start.Add(total)
	shift := origin.Sub(start).Seconds()
	for _, x := range samples {
		x.T += shift
		run.Samples = append(run.Samples, x)
	}
	for _, a := range watched {
		a.T = a.at.Sub(start).Seconds() // negative: during the warmup
		run.Actions = append(run.Actions, a.Action)
	}
	run.Progress, run.BatchUnits = progressOf(t, dir, start, end, plan.SampleInterval)
	batch.mu.Lock()
	run.BatchPods = append([]report.PodInfo(nil), batch.admitted...)
	batch.mu.Unlock()
	logf(plan, "  %s", summarize(run))
	return run
}

func summarize(r report.Run) string {
	s := fmt.Sprintf("batch units %d, actions %d", r.BatchUnits, len(r.Actions))
	if r.Prod != nil {
		s = fmt.Sprintf("offered %.0f/s achieved %.0f/s errors %d p50 %v p99 %v p99.9 %v; ", r.Prod.OfferedRate, r.Prod.AchievedRate, r.Prod.Errors,
			time.Duration(r.Prod.Latency.P50), time.Duration(r.Prod.Latency.P99), time.Duration(r.Prod.Latency.P999)) + s
	}
	return s
}

const (
	prodName  = "prod"
	labelRole = "colobench.waterline.dev/role"
)

// ImageBinary is where an image made for the benchmark (see README)
// holds colobench.
const ImageBinary = "/usr/local/bin/colobench"

func command(env Env, args ...string) []string {
	bin := ImageBinary
	if env.BinaryDir != "" {
		bin = "/colobench/colobench"
	}
	return append([]string{bin}, args...)
}

func withBinary(env Env, spec *corev1.PodSpec) {
	if env.BinaryDir == "" {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "colobench", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: env.BinaryDir, Type: ptr.To(corev1.HostPathDirectory)}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "colobench", MountPath: "/colobench", ReadOnly: true})
}

// prodPod is the Prod pod: the server on a loopback port of the host
// network, in the Prod band, with CPU requests and limits.
func prodPod(env Env, plan Plan, id int) *corev1.Pod {
	cpuReq, cpuLim := resource.MustParse(plan.ProdRequest), resource.MustParse(plan.ProdLimit)
	mem := resource.MustParse("64Mi")
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prodName, id), Namespace: env.Namespace,
			Labels: map[string]string{labelRole: "prod", extension.LabelBand: string(extension.BandProd)}},
		Spec: corev1.PodSpec{
			NodeName: env.Node.Name, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "server", Image: env.Image, ImagePullPolicy: corev1.PullNever,
				Command: command(env, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", plan.ProdPort), "--cpu", plan.ProdCPU.String()),
				Env:     []corev1.EnvVar{{Name: "GOMAXPROCS", Value: strconv.Itoa(int(max(1, cpuLim.Value())))}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: cpuReq, corev1.ResourceMemory: mem},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: cpuLim, corev1.ResourceMemory: mem},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Host: "127.0.0.1", Path: "/healthz", Port: intstr.FromInt32(int32(plan.ProdPort))}}, PeriodSeconds: 1},
			}},
		},
	}
	withBinary(env, &p.Spec)
	return p
}

// batchSet makes the Batch pods of a run and replaces the evicted ones,
// as their Job would: under Waterline through waterline-scheduler (whose
// LoadAware refuses the node while the agent reports forbid-scheduling),
// under plain Kubernetes bound to the node directly (one node: what the
// default scheduler would do).
type batchSet struct {
	env      Env
	plan     Plan
	scenario string
	dir      string
	id       int
	mu       sync.Mutex
	made     int
	// replacing tracks replacement creations in flight, so a run ends
	// only once they are done and its pods can all be deleted.
	replacing sync.WaitGroup
	// slot of each pod name, for replacing it.
	slots map[string]int
	// admitted are the pods as the API server admitted them.
	admitted []report.PodInfo
}

func (b *batchSet) pods() []BatchPod { return batchOf(b.plan, b.scenario) }

func (b *batchSet) create(slot int, replacement bool) error {
	b.mu.Lock()
	name := fmt.Sprintf("batch-%d-%d-%d", b.id, slot, b.made)
	b.made++
	if b.slots == nil {
		b.slots = map[string]int{}
	}
	b.slots[name] = slot
	b.mu.Unlock()
	p := batchPodSpec(b.env, b.plan, b.scenario, b.dir, name, slot)
	if replacement && waterlineScenarios[b.scenario] {
		// Through waterline-scheduler, whose LoadAware refuses the node
		// while the agent reports forbid-scheduling.
		p.Spec.NodeName = ""
		p.Spec.SchedulerName = "waterline-scheduler"
	}
	got, err := b.env.Kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Batch pod %s/%s: %w", p.Namespace, name, err)
	}
	info := podInfo(got)
	info.Replacement = replacement
	b.mu.Lock()
	b.admitted = append(b.admitted, info)
	b.mu.Unlock()
	return nil
}

func podInfo(p *corev1.Pod) report.PodInfo {
	info := report.PodInfo{Name: p.Name, Namespace: p.Namespace, Band: p.Labels[extension.LabelBand],
		PriorityClassName: p.Spec.PriorityClassName, SchedulerName: p.Spec.SchedulerName}
	if len(p.Spec.Containers) > 0 {
		res := p.Spec.Containers[0].Resources
		for _, l := range []struct {
			from corev1.ResourceList
			to   *map[string]string
		}{{res.Requests, &info.Requests}, {res.Limits, &info.Limits}} {
			for k, v := range l.from {
				if *l.to == nil {
					*l.to = map[string]string{}
				}
				(*l.to)[string(k)] = v.String()
			}
		}
	}
	return info
}

// waitBatchAllocatable waits until the manager sells on the node the
// batch-cpu and batch-memory the Batch pods will ask for (from the
// agent's NodeMetric: the agent has just started).
func waitBatchAllocatable(t testing.TB, env Env, pods []BatchPod) {
	t.Helper()
	var cpu, mem int64
	for _, p := range pods {
		if p.CPU != "" {
			q := resource.MustParse(p.CPU)
			cpu += q.MilliValue()
		}
		if p.Memory != "" {
			q := resource.MustParse(p.Memory)
			mem += q.Value()
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := env.Kube.CoreV1().Nodes().Get(t.Context(), env.Node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gotCPU, gotMem := n.Status.Allocatable[extension.ResourceBatchCPU], n.Status.Allocatable[extension.ResourceBatchMemory]
		if gotCPU.Value() >= cpu && gotMem.Value() >= mem {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("The manager sells %s batch-cpu and %s batch-memory on %s after 2 minutes; the Batch pods ask for %dm and %d bytes",
				gotCPU.String(), gotMem.String(), env.Node.Name, cpu, mem)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// batchPodSpec is a Batch burner pod: host network, its progress file in
// dir (hostPath). Under plain Kubernetes it asks for nothing (BestEffort)
// and has no priority. Under Waterline it is created as its user would
// write it, with cpu and memory requests and limits, in the namespace the
// colocation profile selects: the manager's webhook puts it in the Batch
// band and turns its cpu and memory into batch-cpu and batch-memory. The
// first pods of a run are bound to the node directly, as if placed before
// the run.
func batchPodSpec(env Env, plan Plan, scenario, dir, name string, slot int) *corev1.Pod {
	bp := batchOf(plan, scenario)[slot]
	args := []string{"burn", "--kind", bp.Kind, "--threads", strconv.Itoa(bp.Threads),
		"--progress", "/progress/" + name + ".jsonl", "--interval", "500ms", "--name", name}
	if bp.MemBytes > 0 {
		args = append(args, "--mem-bytes", strconv.FormatInt(bp.MemBytes, 10))
	}
	if bp.Ramp > 0 {
		args = append(args, "--ramp", bp.Ramp.String())
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace, Labels: map[string]string{labelRole: "batch"}},
		Spec: corev1.PodSpec{
			NodeName: env.Node.Name, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "burn", Image: env.Image, ImagePullPolicy: corev1.PullNever,
				Command:      command(env, args...),
				Env:          []corev1.EnvVar{{Name: "GOMAXPROCS", Value: strconv.Itoa(bp.Threads + 1)}},
				VolumeMounts: []corev1.VolumeMount{{Name: "progress", MountPath: "/progress"}},
			}},
			Volumes: []corev1.Volume{{Name: "progress", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)}}}},
		},
	}
	if waterlineScenarios[scenario] {
		p.Namespace = env.BatchNamespace
		rl := corev1.ResourceList{}
		if bp.CPU != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(bp.CPU)
		}
		if bp.Memory != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(bp.Memory)
		}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	}
	withBinary(env, &p.Spec)
	return p
}

func createPod(t testing.TB, env Env, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := env.Kube.CoreV1().Pods(env.Namespace).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Creating pod %s: %v", p.Name, err)
	}
	return got
}

func getPod(t testing.TB, env Env, name string) *corev1.Pod {
	t.Helper()
	p, err := env.Kube.CoreV1().Pods(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// namespaces are the benchmark's namespaces.
func namespaces(env Env) []string {
	if env.BatchNamespace == "" || env.BatchNamespace == env.Namespace {
		return []string{env.Namespace}
	}
	return []string{env.Namespace, env.BatchNamespace}
}

// listPods lists the pods of the benchmark's namespaces.
func listPods(ctx context.Context, env Env) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, ns := range namespaces(env) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out = append(out, pods.Items...)
	}
	return out, nil
}

// waitRunning waits for every pod of the benchmark's namespaces to run.
func waitRunning(t testing.TB, env Env, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pods, err := listPods(t.Context(), env)
		if err != nil {
			t.Fatal(err)
		}
		var notYet []string
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning {
				notYet = append(notYet, fmt.Sprintf("%s (%s %s)", p.Name, p.Status.Phase, p.Status.Reason))
			}
		}
		if len(notYet) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pods not running after %v: %s", timeout, strings.Join(notYet, ", "))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func waitHTTP(t testing.TB, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not answering after %v: %v", url, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deletePods deletes the benchmark's pods at once and waits until kubelet
// has removed their cgroups, so the next run starts on a quiet node.
func deletePods(t testing.TB, env Env) {
	ctx := context.Background()
	pods, err := listPods(ctx, env)
	if err != nil {
		t.Errorf("Listing pods to delete: %v", err)
		return
	}
	for _, p := range pods {
		if err := env.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("Deleting pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		for {
			if _, err := os.Stat(filepath.Join(env.Node.CgroupMount, cpuacctDir(env.Node.CgroupMount), podCgroup(env.Node, &p))); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Pod %s's cgroup still there 2 minutes after its deletion", p.Name)
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	for {
		left, err := listPods(ctx, env)
		if err != nil || len(left) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func cpuacctDir(mount string) string {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
		return ""
	}
	return "cpuacct"
}

// podCgroup is the cgroup kubelet (cgroupfs driver) makes for pod.
func podCgroup(n Node, pod *corev1.Pod) string {
	uid := "pod" + string(pod.UID)
	switch pod.Status.QOSClass {
	case corev1.PodQOSGuaranteed:
		return filepath.Join(n.CgroupRoot, "kubepods", uid)
	case corev1.PodQOSBestEffort:
		return filepath.Join(n.CgroupRoot, "kubepods", "besteffort", uid)
	default:
		return filepath.Join(n.CgroupRoot, "kubepods", "burstable", uid)
	}
}

// sample reads the cgroups' CPU and memory every interval until ctx
// ends: the node's pods (kubepods), the Prod pod, the BestEffort pods
// (every Batch pod is BestEffort: under Waterline its tier resources are
// extended resources, which do not make a QoS class) and the machine.
func sample(ctx context.Context, cpu *CPUReader, n Node, prod *corev1.Pod, interval time.Duration, start time.Time) []report.Sample {
	kubepods := filepath.Join(n.CgroupRoot, "kubepods")
	be := filepath.Join(kubepods, "besteffort")
	var prodCg string
	if prod != nil {
		prodCg = podCgroup(n, prod)
	}
	type reading struct {
		at                               time.Time
		node, prod, batch, mBusy, mTotal int64
		nodeMem, batchMem                int64
	}
	read := func() reading {
		r := reading{at: time.Now()}
		r.node, _ = cpu.Usage(kubepods)
		r.batch, _ = cpu.Usage(be)
		r.nodeMem, _ = cpu.MemoryUsage(kubepods)
		r.batchMem, _ = cpu.MemoryUsage(be)
		if prodCg != "" {
			r.prod, _ = cpu.Usage(prodCg)
		}
		r.mBusy, r.mTotal, _ = MachineBusy("/proc/stat")
		return r
	}
	ncpu := float64(runtime.NumCPU())
	prev := read()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var out []report.Sample
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		cur := read()
		dt := cur.at.Sub(prev.at).Seconds()
		if dt <= 0 {
			continue
		}
		s := report.Sample{T: cur.at.Sub(start).Seconds(),
			Node: float64(cur.node-prev.node) / 1e9 / dt, Prod: float64(cur.prod-prev.prod) / 1e9 / dt,
			Batch: float64(cur.batch-prev.batch) / 1e9 / dt, NodeMemory: cur.nodeMem, BatchMemory: cur.batchMem}
		if dTotal := cur.mTotal - prev.mTotal; dTotal > 0 {
			s.Machine = float64(cur.mBusy-prev.mBusy) / float64(dTotal) * ncpu
		}
		out = append(out, s)
		prev = cur
	}
}

type timedAction struct {
	report.Action
	at time.Time
}

// watchActions records the agent's throttles, restores and evictions of
// the run's pods from their Events, and replaces evicted Batch pods. A
// watch replays the namespace's older Events first: only this run's pods
// (named after its id) count.
func watchActions(ctx context.Context, env Env, batch *batchSet) []timedAction {
	w, err := env.Kube.CoreV1().Events(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()})
	if err != nil {
		return nil
	}
	defer w.Stop()
	var out []timedAction
	seen := map[string]bool{}
	mine := func(pod string) bool {
		return strings.HasPrefix(pod, fmt.Sprintf("batch-%d-", batch.id)) || pod == fmt.Sprintf("%s-%d", prodName, batch.id)
	}
	for {
		select {
		case <-ctx.Done():
			return out
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			e, ok := ev.Object.(*corev1.Event)
			if !ok || seen[string(e.UID)+e.ResourceVersion] || !mine(e.InvolvedObject.Name) {
				continue
			}
			seen[string(e.UID)+e.ResourceVersion] = true
			var kind string
			switch e.Reason {
			case "Throttled":
				kind = report.ActionThrottle
			case "ThrottleReleased":
				kind = report.ActionRestore
			case "Evicted":
				kind = report.ActionEvict
			default:
				continue
			}
			if e.Source.Component == "kubelet" {
				continue // kubelet's own evictions are not the agent's
			}
			gap, rel := report.ParseAction(e.Message)
			out = append(out, timedAction{at: time.Now(), Action: report.Action{Kind: kind, Pod: e.InvolvedObject.Name,
				GapMilli: gap, ReleaseMilli: rel, Message: e.Message}})
			if kind == report.ActionEvict {
				batch.mu.Lock()
				slot, isBatch := batch.slots[e.InvolvedObject.Name]
				batch.mu.Unlock()
				// A failed replacement leaves the run one Batch pod short,
				// which its progress shows.
				if isBatch {
					batch.replacing.Add(1)
					go func() {
						defer batch.replacing.Done()
						_ = batch.create(slot, true)
					}()
				}
			}
		}
	}
}

// runLoad runs the load generator outside the pods, as a process of its
// own, and reads its result.
func runLoad(t testing.TB, env Env, plan Plan, phases []loadgen.Phase, dir string, seed uint64) *loadgen.Result {
	t.Helper()
	var ps []string
	for _, p := range phases {
		ps = append(ps, fmt.Sprintf("%s@%g", p.Duration, p.Rate))
	}
	out := filepath.Join(dir, "load.json")
	cmd := exec.CommandContext(t.Context(), env.Colobench, "load",
		"--url", fmt.Sprintf("http://127.0.0.1:%d/work", plan.ProdPort), "--phases", strings.Join(ps, ","),
		"--arrival", plan.Arrival, "--seed", strconv.FormatUint(seed, 10), "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("Load generator: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res loadgen.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("Reading %s: %v", out, err)
	}
	return &res
}

// progressOf sums the Batch pods' progress files: the units at each
// interval from start to end, and the units done in between.
func progressOf(t testing.TB, dir string, start, end time.Time, interval time.Duration) ([]report.ProgressPoint, int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "batch-*.jsonl"))
	var all [][]workload.Progress
	for _, f := range files {
		lines, err := workload.ReadProgress(f)
		if err != nil {
			t.Errorf("Reading progress: %v", err)
			continue
		}
		all = append(all, lines)
	}
	at := func(ts time.Time) int64 {
		var sum int64
		for _, lines := range all {
			var u int64
			for _, l := range lines {
				if l.Time.After(ts) {
					break
				}
				u = l.Units
			}
			sum += u
		}
		return sum
	}
	var pts []report.ProgressPoint
	for ts := start; !ts.After(end); ts = ts.Add(interval) {
		pts = append(pts, report.ProgressPoint{T: ts.Sub(start).Seconds(), Units: at(ts)})
	}
	return pts, at(end) - at(start)
}
