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

// Package scheduler measures the live waterline-scheduler's throughput and
// CPU against a real etcd + kube-apiserver: the deployed profile (LoadAware)
// against the same binary with kube-scheduler's default plugins only, and
// that against the stock kube-scheduler of the same Kubernetes version. See
// README.md.
package scheduler

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/test/bench/benchutil"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// schedulerName is the profile name both variants serve.
const schedulerName = "waterline-scheduler"

// variant is one scheduler configuration under test.
type variant struct {
	name string
	// profile is the KubeSchedulerConfiguration body from `profiles:` on.
	profile string
	// stock runs bin/kube-scheduler (built by hack/build-tools.sh from the
	// Kubernetes version Waterline builds against) instead of
	// waterline-scheduler.
	stock bool
}

// deployed is the profile the chart renders with its default values
// (charts/waterline/values.yaml: loadAwareWeight 2, preemption disabled,
// LoadAware args {} = defaults).
var deployed = variant{name: "deployed", profile: `profiles:
- schedulerName: ` + schedulerName + `
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
        weight: 2
      disabled:
      - name: DefaultPreemption
`}

// defaults is the same binary with kube-scheduler's default plugins only.
// DefaultPreemption is off as in the deployed profile, so that LoadAware
// is the one difference (every pod fits here; PostFilter never runs).
var defaults = variant{name: "default", profile: `profiles:
- schedulerName: ` + schedulerName + `
  plugins:
    multiPoint:
      disabled:
      - name: DefaultPreemption
`}

// stock is kube-scheduler itself with the default profile: what the
// default variant costs against it is the cost of being an out-of-tree
// build (our module's dependency versions, our plugins registered but not
// enabled).
var stock = variant{name: "stock", profile: defaults.profile, stock: true}

// Node shape: 32 cores, 128 GiB, and the tier resources the manager would
// advertise for Mid and Batch pods.
func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:            resource.MustParse("32"),
		corev1.ResourceMemory:         resource.MustParse("128Gi"),
		corev1.ResourcePods:           resource.MustParse("110"),
		extension.ResourceMidCPU:      resource.MustParse("8000"),
		extension.ResourceMidMemory:   resource.MustParse("32Gi"),
		extension.ResourceBatchCPU:    resource.MustParse("16000"),
		extension.ResourceBatchMemory: resource.MustParse("64Gi"),
	}
}

// createNodes creates n Ready, untainted nodes named sb-0..n-1 directly
// (no kwok: nothing runs on them, the scheduler only needs them Ready).
func createNodes(t testing.TB, c *testutil.Cluster, n int) []string {
	t.Helper()
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	now := metav1.Now()
	for i := range n {
		names[i] = fmt.Sprintf("sb-%d", i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			capacity := nodeCapacity()
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{
					corev1.LabelHostname:     names[i],
					corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
				}},
				Status: corev1.NodeStatus{
					Capacity:    capacity,
					Allocatable: capacity.DeepCopy(),
					Phase:       corev1.NodeRunning,
					Conditions: []corev1.NodeCondition{{
						Type: corev1.NodeReady, Status: corev1.ConditionTrue,
						Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now,
					}},
				},
			}
			_, errs[i] = c.Kube.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Creating nodes: %v", err)
		}
	}
	return names
}

// nodeMetrics writes the NodeMetric of every node as waterline-agent
// would: node usage between 10 % and 40 % of cpu and memory, fixed per
// node, and updateTime now.
type nodeMetrics struct {
	c     *testutil.Cluster
	nodes []string
	usage map[string]int64 // cpu millicores per node
}

func newNodeMetrics(c *testutil.Cluster, nodes []string) *nodeMetrics {
	r := rand.New(rand.NewPCG(1, 2))
	m := &nodeMetrics{c: c, nodes: nodes, usage: map[string]int64{}}
	for _, n := range nodes {
		m.usage[n] = 3200 + r.Int64N(9600)
	}
	return m
}

// reportAll creates (once) and refreshes every NodeMetric's status.
func (m *nodeMetrics) reportAll(ctx context.Context) error {
	errs := make([]error, len(m.nodes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, n := range m.nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = m.report(ctx, n)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *nodeMetrics) report(ctx context.Context, node string) error {
	client := m.c.Waterline.WaterlineV1alpha1().NodeMetrics()
	nm, err := client.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		nm, err = client.Create(ctx, &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing the NodeMetric of %s: %w", node, err)
	}
	now := metav1.Now()
	milli := m.usage[node]
	nm.Status = v1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(milli, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(milli*4<<20, resource.BinarySI), // same share of 128Gi as cpu of 32 cores
		}},
	}
	if _, err := client.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the NodeMetric status of %s: %w", node, err)
	}
	return nil
}

// priorityClasses creates the classes the pods name (values as in
// config/priorityclasses).
func priorityClasses(t testing.TB, c *testutil.Cluster) {
	t.Helper()
	for name, v := range map[string]int32{"waterline-prod": 9500, "waterline-mid": 7500, "waterline-batch": 5500} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(t.Context(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Creating PriorityClass %s: %v", name, err)
		}
	}
}

// podMix is pod i of a run: 40 % Prod (cpu/memory requests, half with equal
// limits), 30 % Mid and 30 % Batch (tier resources, as the profile webhook
// would rewrite them), each with its band label and PriorityClass.
func podMix(namespace string, i int) *corev1.Pod {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: namespace},
		Spec: corev1.PodSpec{
			SchedulerName:                 schedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	res := &pod.Spec.Containers[0].Resources
	switch b := i % 10; {
	case b < 4:
		cpu := []string{"250m", "500m", "1", "2"}[r.IntN(4)]
		mem := []string{"512Mi", "1Gi", "2Gi", "4Gi"}[r.IntN(4)]
		res.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		if i%2 == 0 {
			res.Limits = res.Requests.DeepCopy()
		}
		pod.Labels = map[string]string{extension.LabelBand: string(extension.BandProd)}
		pod.Spec.PriorityClassName = "waterline-prod"
	case b < 7:
		cpu := []string{"250", "500", "1000"}[r.IntN(3)]
		res.Requests = corev1.ResourceList{extension.ResourceMidCPU: resource.MustParse(cpu), extension.ResourceMidMemory: resource.MustParse("1Gi")}
		res.Limits = res.Requests.DeepCopy()
		pod.Labels = map[string]string{extension.LabelBand: string(extension.BandMid)}
		pod.Spec.PriorityClassName = "waterline-mid"
	default:
		cpu := []string{"500", "1000", "2000"}[r.IntN(3)]
		res.Requests = corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse(cpu), extension.ResourceBatchMemory: resource.MustParse("2Gi")}
		res.Limits = res.Requests.DeepCopy()
		pod.Labels = map[string]string{extension.LabelBand: string(extension.BandBatch)}
		pod.Spec.PriorityClassName = "waterline-batch"
	}
	return pod
}

// runningScheduler is a started waterline-scheduler process.
type runningScheduler struct {
	p    *testutil.Process
	port int
	http *http.Client
}

// apiQPS is the scheduler's client QPS and burst in both variants: high
// enough that binding is not throttled by the client.
const apiQPS = 5000

// startScheduler runs the scheduler binary bin with the variant's profile,
// the same client settings for every variant, and /metrics and
// /debug/pprof open on loopback.
func startScheduler(t testing.TB, c *testutil.Cluster, bin string, v variant) *runningScheduler {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
enableProfiling: true
%s`, c.Kubeconfig, apiQPS, apiQPS, v.profile)
	configPath := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatalf("Writing scheduler config: %v", err)
	}
	port := testutil.FreePort(t)
	p := testutil.StartProcess(t, "scheduler-"+v.name, bin,
		"--config", configPath,
		"--secure-port", strconv.Itoa(port),
		"--bind-address", "127.0.0.1",
		"--cert-dir", filepath.Join(dir, "certs"),
		"--authentication-skip-lookup",
		"--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics,/debug/pprof,/debug/pprof/*",
		"--v", "1",
	)
	testutil.WaitHealthy(t, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), 2*time.Minute)
	return &runningScheduler{p: p, port: port, http: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the scheduler's own self-signed certificate on loopback
	}}
}

func (s *runningScheduler) get(path string) ([]byte, error) {
	resp, err := s.http.Get(fmt.Sprintf("https://127.0.0.1:%d%s", s.port, path))
	if err != nil {
		return nil, fmt.Errorf("getting %s from the scheduler: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading %s from the scheduler: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("getting %s from the scheduler: status %d: %s", path, resp.StatusCode, b)
	}
	return b, nil
}

// result is what one run of one variant measured.
type result struct {
	variant     string
	run         int // the repeat it belongs to: runs of the same repeat are a set
	pods        int
	wall        time.Duration // first create → last bound
	cpu         float64       // scheduler CPU seconds over the run
	apiCPU      float64       // kube-apiserver + etcd CPU seconds over the run (0 if not found)
	latencies   []float64     // create → bound (watch event), seconds
	sliP99      float64       // scheduler_pod_scheduling_sli_duration_seconds p99
	attemptP99  float64       // scheduler_scheduling_attempt_duration_seconds p99
	attemptMean float64
	unschedAtt  float64 // attempts that ended unschedulable
	// per-call mean seconds of plugin × extension point, from the sampled
	// scheduler_plugin_execution_duration_seconds
	plugin map[string]float64
	// extension point per cycle mean seconds (whole phase over all nodes)
	phase map[string]float64
}

func (r result) podsPerSec() float64 { return float64(r.pods) / r.wall.Seconds() }
func (r result) cpuPerPod() float64  { return r.cpu / float64(r.pods) }

// pluginKeys are the per-call timings the report compares.
var pluginKeys = []struct{ plugin, point string }{
	{"LoadAware", "PreFilter"}, {"NodeResourcesFit", "PreFilter"},
	{"LoadAware", "Filter"}, {"NodeResourcesFit", "Filter"},
	{"LoadAware", "PreScore"}, {"NodeResourcesFit", "PreScore"},
	{"LoadAware", "Score"}, {"NodeResourcesFit", "Score"},
	{"NodeResourcesBalancedAllocation", "Score"},
	{"LoadAware", "Reserve"},
}

var phaseKeys = []string{"PreFilter", "Filter", "PreScore", "Score", "Reserve", "Bind"}

// schedulerBins are the binaries the variants run.
type schedulerBins struct {
	waterline, stock string
}

func (b schedulerBins) of(v variant) string {
	if v.stock {
		return b.stock
	}
	return b.waterline
}

// runOnce starts the variant's scheduler, waits until it has synced, then
// creates m pods in a fresh namespace as fast as the client allows and
// waits until every one is bound, reading the scheduler's CPU time and
// metrics before and after. It stops the scheduler and deletes the pods
// before it returns.
func runOnce(t testing.TB, c *testutil.Cluster, bins schedulerBins, v variant, run, m int, cpPIDs [2]int, pprofSeconds int) result {
	t.Helper()
	ctx := t.Context()
	ns := fmt.Sprintf("sb-%s-%d", v.name, run)
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating namespace %s: %v", ns, err)
	}
	s := startScheduler(t, c, bins.of(v), v)
	// Let the informers settle (healthz answers before the first list of
	// NodeMetrics has been converted everywhere).
	time.Sleep(3 * time.Second)

	// An informer, not a bare watch: it re-watches when the API server
	// closes a watch, so no bound pod is missed.
	boundCh := make(chan *corev1.Pod, m)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(ns))
	onPod := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			boundCh <- pod
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onPod,
		UpdateFunc: func(_, obj any) { onPod(obj) },
	}); err != nil {
		t.Fatalf("Watching pods: %v", err)
	}
	infCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	factory.Start(infCtx.Done())
	factory.WaitForCacheSync(infCtx.Done())

	cpu0, err := benchutil.CPUSeconds(s.p.PID())
	if err != nil {
		t.Fatal(err)
	}
	api0 := controlPlaneCPU(cpPIDs)

	created := make([]time.Time, m)
	var mu sync.Mutex
	start := time.Now()
	var profile []byte
	var profErr error
	var profWG sync.WaitGroup
	if pprofSeconds > 0 {
		profWG.Add(1)
		go func() {
			defer profWG.Done()
			profile, profErr = s.get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", pprofSeconds))
		}()
	}
	go func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for i := range m {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				pod := podMix(ns, i)
				at := time.Now()
				mu.Lock()
				created[i] = at
				mu.Unlock()
				if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("Creating pod %s: %v", pod.Name, err)
				}
			}()
		}
		wg.Wait()
	}()

	bound := map[string]time.Time{}
	timeout := time.After(time.Duration(m)*100*time.Millisecond + 2*time.Minute)
	var last time.Time
	for len(bound) < m {
		select {
		case pod := <-boundCh:
			if _, seen := bound[pod.Name]; !seen {
				last = time.Now()
				bound[pod.Name] = last
			}
		case <-timeout:
			t.Fatalf("%s run %d: only %d of %d pods bound in time (scheduler log: %s)", v.name, run, len(bound), m, s.p.LogPath)
		}
	}
	cpu1, err := benchutil.CPUSeconds(s.p.PID())
	if err != nil {
		t.Fatal(err)
	}
	api1 := controlPlaneCPU(cpPIDs)
	// kube-scheduler records the sampled plugin timings asynchronously
	// (its metrics recorder flushes about once a second): a short run can
	// end before the first flush, so wait for them, for a few seconds.
	var page []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if page, err = s.get("/metrics"); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(page, []byte("scheduler_plugin_execution_duration_seconds_count{")) || time.Now().After(deadline) {
			break
		}
	}
	profWG.Wait()
	if profErr != nil {
		t.Logf("Profiling %s: %v", v.name, profErr)
	} else if profile != nil {
		path := filepath.Join(outDir(t), fmt.Sprintf("cpu-%s-%d.pprof", v.name, run))
		if err := os.WriteFile(path, profile, 0o644); err != nil {
			t.Logf("Writing %s: %v", path, err)
		} else {
			t.Logf("CPU profile of %s run %d: %s", v.name, run, path)
		}
	}
	s.p.Stop()

	res := result{variant: v.name, run: run, pods: m, wall: last.Sub(start), cpu: cpu1 - cpu0, apiCPU: api1 - api0,
		plugin: map[string]float64{}, phase: map[string]float64{}}
	mu.Lock()
	for i := range m {
		name := fmt.Sprintf("p-%05d", i)
		res.latencies = append(res.latencies, bound[name].Sub(created[i]).Seconds())
	}
	mu.Unlock()
	samples := benchutil.ParseMetrics(string(page))
	res.sliP99 = benchutil.HistogramOf(samples, "scheduler_pod_scheduling_sli_duration_seconds", nil).Quantile(0.99)
	att := benchutil.HistogramOf(samples, "scheduler_scheduling_attempt_duration_seconds", map[string]string{"result": "scheduled"})
	res.attemptP99, res.attemptMean = att.Quantile(0.99), att.Mean()
	res.unschedAtt = benchutil.CounterOf(samples, "scheduler_schedule_attempts_total", map[string]string{"result": "unschedulable"})
	for _, k := range pluginKeys {
		res.plugin[k.plugin+"/"+k.point] = benchutil.HistogramOf(samples, "scheduler_plugin_execution_duration_seconds",
			map[string]string{"plugin": k.plugin, "extension_point": k.point}).Mean()
	}
	for _, p := range phaseKeys {
		res.phase[p] = benchutil.HistogramOf(samples, "scheduler_framework_extension_point_duration_seconds",
			map[string]string{"extension_point": p}).Mean()
	}

	// Delete the pods (grace 0: nothing runs them) so the next run starts
	// from the same empty nodes.
	if err := c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatalf("Deleting the pods of %s: %v", ns, err)
	}
	testutil.Eventually(t, 2*time.Minute, 500*time.Millisecond, func() (bool, error) {
		l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 0, fmt.Errorf("pods left in %s", ns)
	}, "waiting for the pods of %s to go", ns)
	return res
}

func controlPlaneCPU(pids [2]int) float64 {
	var sum float64
	for _, pid := range pids {
		if pid == 0 {
			continue
		}
		if v, err := benchutil.CPUSeconds(pid); err == nil {
			sum += v
		}
	}
	return sum
}

// outDir is where the report and profiles go: $SCHEDBENCH_OUT, else
// _output/bench-scheduler in the repository.
func outDir(t testing.TB) string {
	dir := os.Getenv("SCHEDBENCH_OUT")
	if dir == "" {
		dir = filepath.Join(testutil.RepoRoot(), "_output", "bench-scheduler")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("Creating %s: %v", dir, err)
	}
	return dir
}
