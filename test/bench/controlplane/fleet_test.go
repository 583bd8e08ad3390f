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

package controlplane

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/kwokagent"
	"github.com/waterline-dev/waterline/test/bench/benchutil"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// agentLabel selects the nodes whose simulated agent runs; the test sets
// it node by node over one report interval so the agents' reports are
// spread over the interval as on a real fleet, not sent in one burst.
const agentLabel = "waterline.dev/bench-agent"

// fleetConfig is the size of one TestFleet run.
type fleetConfig struct {
	nodes, podsPerNode int
	// interval is the agents' report interval: 0 keeps the API default
	// (60 s, what the chart deploys); otherwise a default ColocationPolicy
	// sets it.
	interval time.Duration
	// window is how long each phase is measured.
	window  time.Duration
	repeats int
	full    bool
}

func (c fleetConfig) reportInterval() time.Duration {
	if c.interval == 0 {
		return time.Duration(v1alpha1.DefaultReportIntervalSeconds) * time.Second
	}
	return c.interval
}

// expectedRate is the NodeMetric writes per second the fleet should send.
func (c fleetConfig) expectedRate() float64 {
	return float64(c.nodes) / c.reportInterval().Seconds()
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func fleetConfigFromEnv(t *testing.T) fleetConfig {
	cfg := fleetConfig{nodes: 200, podsPerNode: 2, interval: 10 * time.Second, window: 10 * time.Second, repeats: 1}
	if os.Getenv("CPBENCH_FULL") != "" {
		cfg = fleetConfig{nodes: 5000, podsPerNode: 2, window: 60 * time.Second, repeats: 2, full: true}
	}
	cfg.nodes = envInt(t, "CPBENCH_NODES", cfg.nodes)
	cfg.podsPerNode = envInt(t, "CPBENCH_PODS_PER_NODE", cfg.podsPerNode)
	cfg.window = time.Duration(envInt(t, "CPBENCH_WINDOW_SECONDS", int(cfg.window/time.Second))) * time.Second
	cfg.repeats = envInt(t, "CPBENCH_REPEATS", cfg.repeats)
	if v := os.Getenv("CPBENCH_INTERVAL_SECONDS"); v != "" {
		cfg.interval = time.Duration(envInt(t, "CPBENCH_INTERVAL_SECONDS", 60)) * time.Second
	}
	return cfg
}

// fleet is the running system under measurement.
type fleet struct {
	cfg      fleetConfig
	c        *testutil.Cluster
	names    []string
	gate     *gate
	manager  *testutil.Process
	kwok     *testutil.Process
	mgrURL   string
	pids     map[string]int // process → pid, for /proc CPU times
	simErr   atomic.Pointer[error]
	kubelet  *benchutil.Kubelet // the nodes' kubelet-style writes
	patchSeq atomic.Int64
	// The manager's bootstrap: from its start until every node has a
	// NodeMetric (and kwok runs every pod), and from the last agent's
	// start until every node sells Batch.
	nodeMetricsReady, tiersReady time.Duration
}

// TestFleet runs a kwok-backed fleet: real etcd + kube-apiserver, kwok
// nodes, one simulated agent per node (pkg/kwokagent: the agent's reporter
// and metric cache, usage from a model of the pods) writing its NodeMetric
// at the report interval, and the real waterline-manager turning them into
// tier allocatable. It then measures, in rotating order, the fleet
// reporting, kubelet's Lease renewals and Node status patches at the same
// per-second rate, and nothing (idle): API server + etcd CPU, the
// manager's CPU, reconciles and queue, and the writes that reached the API
// server. Without CPBENCH_FULL it is a smoke (200 nodes, 10 s reports,
// 10 s phases) that fails when a node gets no tier allocatable, when the
// fleet's writes do not reach the API server at the rate the interval
// asks, or when the manager does not reconcile them.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: starts etcd, kube-apiserver, kwok and waterline-manager (-short)")
	}
	cfg := fleetConfigFromEnv(t)
	t.Logf("Fleet: %d nodes, %d pods each, report interval %v, %v phases, %d repeats", cfg.nodes, cfg.podsPerNode, cfg.reportInterval(), cfg.window, cfg.repeats)
	f := startFleet(t, cfg)
	ctx := t.Context()

	phases := []phase{
		{name: phaseAgents, run: func(ctx context.Context, d time.Duration) int64 {
			sent := f.gate.sent.Load()
			f.gate.open.Store(true)
			time.Sleep(d)
			f.gate.open.Store(false)
			return f.gate.sent.Load() - sent
		}},
		{name: phaseLease, run: func(ctx context.Context, d time.Duration) int64 {
			return f.stream(ctx, t, cfg.expectedRate(), d, f.kubelet.RenewLease)
		}},
		{name: phaseNodeStatus, run: func(ctx context.Context, d time.Duration) int64 {
			return f.stream(ctx, t, cfg.expectedRate(), d, f.kubelet.PatchNodeStatus)
		}},
		{name: phaseIdle, run: func(ctx context.Context, d time.Duration) int64 {
			time.Sleep(d)
			return 0
		}},
	}
	var results []phaseResult
	for run := range cfg.repeats {
		for k := range phases {
			p := phases[(k+run)%len(phases)]
			// Let the last phase's work (watch fan-out, the manager's
			// queue) drain before measuring the next.
			time.Sleep(3 * time.Second)
			r := f.measure(ctx, t, p, run)
			results = append(results, r)
			t.Logf("run %d %-12s %s", run, p.name, r.summary())
		}
	}
	if err := f.simErr.Load(); err != nil {
		t.Errorf("The simulated agents stopped: %v", *err)
	}

	report := buildReport(cfg, results, f.nodeMetricsReady, f.tiersReady)
	t.Log("\n" + report)
	if cfg.full {
		dir := os.Getenv("CPBENCH_OUT")
		if dir == "" {
			dir = filepath.Join(testutil.RepoRoot(), "_output", "bench-controlplane")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("Creating %s: %v", dir, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("fleet-%dnodes.md", cfg.nodes))
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("Writing %s: %v", path, err)
		}
		t.Logf("Report written to %s", path)
	}

	f.checkTiers(t)
	for _, r := range results {
		switch r.phase {
		case phaseAgents:
			// Over the time the gate was open: the phase's wall time
			// also holds the drain after it.
			rate := r.nodeMetricWrites / cfg.window.Seconds()
			// A report is at most a second late (the reporter polls each
			// second), so the rate is within a few percent of N/interval;
			// the bounds leave room for a busy machine's scheduling.
			if !cfg.full && (rate < 0.8*cfg.expectedRate() || rate > 1.2*cfg.expectedRate()) {
				t.Errorf("The fleet's NodeMetric writes reached the API server at %.1f/s, want %.1f/s ± 20%% (%d nodes every %v)",
					rate, cfg.expectedRate(), cfg.nodes, cfg.reportInterval())
			}
			if r.nodeMetricWrites > 0 && r.reconciles < 0.8*r.nodeMetricWrites {
				t.Errorf("The manager reconciled %.0f times for %.0f NodeMetric writes: it does not keep up with (or no longer watches) the reports",
					r.reconciles, r.nodeMetricWrites)
			}
			if r.cpu["apiserver+etcd"] <= 0 || r.cpu["manager"] <= 0 {
				t.Errorf("CPU time not measured: apiserver+etcd %.3f s, manager %.3f s", r.cpu["apiserver+etcd"], r.cpu["manager"])
			}
		default:
			if r.nodeMetricWrites != 0 {
				t.Errorf("%s phase: %.0f NodeMetric writes reached the API server with the agents' gate closed: the phases are not separated", r.phase, r.nodeMetricWrites)
			}
		}
		if r.phase == phaseLease && r.leaseWrites < 0.5*cfg.expectedRate()*r.wall.Seconds() {
			t.Errorf("Lease phase: %.0f Lease updates reached the API server, want about %.0f", r.leaseWrites, cfg.expectedRate()*r.wall.Seconds())
		}
	}
}

// startFleet brings the system up: cluster, kwok, nodes, leases, pods,
// manager, then the simulated agents, started over one report interval,
// and waits until every node sells tiers.
func startFleet(t *testing.T, cfg fleetConfig) *fleet {
	ctx := t.Context()
	t0 := time.Now()
	c := testutil.StartCluster(t, testutil.Options{})
	f := &fleet{cfg: cfg, c: c, gate: &gate{}, pids: map[string]int{}}
	api, etcd, err := benchutil.ControlPlanePIDs(c)
	if err != nil {
		t.Fatal(err)
	}
	f.pids["apiserver"], f.pids["etcd"] = api, etcd
	f.kwok = startKWOK(t, c)
	f.pids["kwok"] = f.kwok.PID()

	if cfg.interval != 0 {
		policy := &v1alpha1.ColocationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultColocationPolicyName},
			Spec: v1alpha1.ColocationPolicySpec{CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{
				ReportIntervalSeconds: ptr.To(int64(cfg.interval / time.Second))}},
		}
		if _, err := c.Waterline.WaterlineV1alpha1().ColocationPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating the default ColocationPolicy: %v", err)
		}
	}
	f.names = make([]string, cfg.nodes)
	for i := range f.names {
		f.names[i] = fmt.Sprintf("fleet-%d", i)
	}
	parallel(t, f.names, func(n string) error { return createNode(ctx, c, n) })
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating %s: %v", corev1.NamespaceNodeLease, err)
	}
	f.kubelet = &benchutil.Kubelet{Kube: c.Kube}
	parallel(t, f.names, func(n string) error { return f.kubelet.CreateLease(ctx, n) })
	c.CreateNamespace(t, "fleet", nil)
	var podNames []string
	for _, n := range f.names {
		for j := range cfg.podsPerNode {
			podNames = append(podNames, n+"/"+strconv.Itoa(j))
		}
	}
	parallel(t, podNames, func(key string) error {
		node, j, _ := strings.Cut(key, "/")
		i, _ := strconv.Atoi(j)
		_, err := c.Kube.CoreV1().Pods("fleet").Create(ctx, fleetPod(node, i), metav1.CreateOptions{})
		return err
	})
	t.Logf("%d nodes, %d Leases and %d pods created in %v", cfg.nodes, cfg.nodes, len(podNames), time.Since(t0).Round(time.Second))

	port := testutil.FreePort(t)
	f.mgrURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	// CPBENCH_MANAGER_ARGS adds flags, e.g. "--kube-api-qps=5
	// --kube-api-burst=10" (client-go's defaults, what the manager used
	// before it had these flags) to measure the old budget.
	f.manager = c.StartManager(t, append([]string{"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--metrics-secure=false"},
		strings.Fields(os.Getenv("CPBENCH_MANAGER_ARGS"))...)...)
	f.pids["manager"] = f.manager.PID()
	managerStarted := time.Now()

	// kwok runs pods and the manager creates NodeMetrics at some tens a
	// second on this shared machine (about 20 and 10 a second at 5,000
	// nodes under a load average of 20): allow 60 ms an object.
	// CPBENCH_SETUP_MINUTES overrides it on a busier machine.
	setupTimeout := 2*time.Minute + time.Duration(cfg.nodes*(1+cfg.podsPerNode))*60*time.Millisecond
	if os.Getenv("CPBENCH_SETUP_MINUTES") != "" {
		setupTimeout = time.Duration(envInt(t, "CPBENCH_SETUP_MINUTES", 0)) * time.Minute
	}
	testutil.Eventually(t, setupTimeout, 2*time.Second, func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods("fleet").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		running := 0
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				running++
			}
		}
		nms, err := c.Waterline.WaterlineV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		if running < len(podNames) || len(nms.Items) < cfg.nodes {
			return false, fmt.Errorf("%d of %d pods Running (kwok), %d of %d NodeMetrics (manager)", running, len(podNames), len(nms.Items), cfg.nodes)
		}
		return true, nil
	}, "waiting for kwok to run the pods and the manager to create the NodeMetrics")
	f.nodeMetricsReady = time.Since(managerStarted)
	t.Logf("Pods Running and NodeMetrics created %v after the manager started", f.nodeMetricsReady.Round(time.Second))

	f.startAgents(t)
	agentsStarted := time.Now()
	t.Logf("Simulated agents started on every node after %v", time.Since(t0).Round(time.Second))
	// Every agent has reported once and the manager published the tiers:
	// the steady state.
	testutil.Eventually(t, setupTimeout+3*cfg.reportInterval(), 2*time.Second, func() (bool, error) {
		missing, err := f.nodesWithoutTiers(ctx)
		if err != nil {
			return false, err
		}
		if len(missing) > 0 {
			return false, fmt.Errorf("%d of %d nodes without batch-cpu, e.g. %s", len(missing), cfg.nodes, missing[0])
		}
		return true, nil
	}, "waiting for every node's tier allocatable")
	f.tiersReady = time.Since(agentsStarted)
	t.Logf("Every node sells Batch %v after the last agent started", f.tiersReady.Round(time.Second))
	time.Sleep(cfg.reportInterval())
	f.gate.open.Store(false)
	t.Logf("Steady state after %v", time.Since(t0).Round(time.Second))
	return f
}

// fleetPod is pod i of node: even ones Prod (8 cores, 32 GiB), odd ones
// Batch (4 cores, 8 GiB), bound to the node as the scheduler would.
func fleetPod(node string, i int) *corev1.Pod {
	band, cpu, mem := extension.BandProd, "8", "32Gi"
	if i%2 == 1 {
		band, cpu, mem = extension.BandBatch, "4", "8Gi"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: fmt.Sprintf("%s-%d", node, i), Labels: map[string]string{extension.LabelBand: string(band)}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "fake", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			}}},
		},
	}
}

func createNode(ctx context.Context, c *testutil.Cluster, name string) error {
	capacity := testutil.DefaultNodeCapacity()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{corev1.LabelHostname: name, testutil.LabelFakeNode: "true", "type": "kwok"},
			Annotations: map[string]string{testutil.KWOKNodeAnnotation: testutil.KWOKNodeValue},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy(), Phase: corev1.NodeRunning},
	}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	return nil
}

// startAgents runs the simulator on the nodes that carry agentLabel, and
// labels the nodes one by one over a report interval, so each agent starts
// (and so reports) at its own second of the interval.
func (f *fleet) startAgents(t *testing.T) {
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), klog.Background().V(1)))
	sim, err := kwokagent.New(kwokagent.Config{
		Nodes: labels.SelectorFromSet(labels.Set{agentLabel: "on"}),
	}, f.c.Kube, f.gate.clientset(f.c.Waterline), clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sim.Run(ctx); err != nil && ctx.Err() == nil {
			f.simErr.Store(&err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	f.gate.open.Store(true)
	patch := []byte(`{"metadata":{"labels":{"` + agentLabel + `":"on"}}}`)
	step := f.cfg.reportInterval() / time.Duration(len(f.names))
	start := time.Now()
	parallelPaced(t, f.names, step, func(n string) error {
		_, err := f.c.Kube.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	t.Logf("Labelled %d nodes for their agents in %v", len(f.names), time.Since(start).Round(time.Millisecond))
}

// nodesWithoutTiers lists the nodes that do not publish all four tier
// resources with Batch CPU above zero.
func (f *fleet) nodesWithoutTiers(ctx context.Context) ([]string, error) {
	nodes, err := f.c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: testutil.LabelFakeNode + "=true"})
	if err != nil {
		return nil, err
	}
	var missing []string
	for i := range nodes.Items {
		a := nodes.Items[i].Status.Allocatable
		_, mc := a[extension.ResourceMidCPU]
		_, mm := a[extension.ResourceMidMemory]
		_, bm := a[extension.ResourceBatchMemory]
		bc := a[extension.ResourceBatchCPU]
		if !mc || !mm || !bm || bc.Value() <= 0 {
			missing = append(missing, nodes.Items[i].Name)
		}
	}
	if len(nodes.Items) < f.cfg.nodes {
		missing = append(missing, fmt.Sprintf("(%d nodes listed)", len(nodes.Items)))
	}
	return missing, nil
}

// checkTiers fails the test when a node does not sell Batch: what a user
// of the fleet notices first.
func (f *fleet) checkTiers(t *testing.T) {
	missing, err := f.nodesWithoutTiers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d nodes publish no Mid/Batch allocatable (or Batch CPU 0) at the end, e.g. %s", len(missing), f.cfg.nodes, missing[0])
	}
}

// stream sends write round-robin over the nodes at rate per second for d
// and returns how many succeeded.
func (f *fleet) stream(ctx context.Context, t *testing.T, rate float64, d time.Duration, write func(context.Context, string) error) int64 {
	var ok atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	sem := make(chan struct{}, 64)
	for i := int(f.patchSeq.Load()); time.Now().Before(end); i++ {
		<-tick.C
		sem <- struct{}{}
		wg.Add(1)
		node := f.names[i%len(f.names)]
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := write(ctx, node); err != nil {
				if ctx.Err() == nil {
					t.Errorf("Writing for node %s: %v", node, err)
				}
				return
			}
			ok.Add(1)
		}()
		f.patchSeq.Add(1)
	}
	wg.Wait()
	return ok.Load()
}

// parallel runs fn for every name, 32 at a time, failing on the first error.
func parallel(t *testing.T, names []string, fn func(string) error) {
	t.Helper()
	parallelPaced(t, names, 0, fn)
}

// parallelPaced is parallel with each call started step after the
// previous one (none when step is 0).
func parallelPaced(t *testing.T, names []string, step time.Duration, fn func(string) error) {
	t.Helper()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	start := time.Now()
	for i, n := range names {
		if step > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * step)))
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(n)
		}()
	}
	wg.Wait()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls failed, the first: %v", failed, len(names), first)
	}
}
