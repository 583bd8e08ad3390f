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

package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/test/bench/benchutil"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// writeKind is one stream of per-node status writes the control plane
// pays for.
type writeKind struct {
	name string
	// write sends one write for node, the seq-th of the run.
	write func(ctx context.Context, node string, seq int) error
}

// podsPerNodeMetric is how many pods each NodeMetric lists in
// status.podsMetric: the object size an agent writes grows with it.
const podsPerNodeMetric = 30

// nodeMetricStatus is a NodeMetric status as an agent with 30 pods writes
// it: node, system and per-pod usage, three aggregate windows, a Prod peak.
func nodeMetricStatus(seq int) v1alpha1.NodeMetricStatus {
	now := metav1.Now()
	cpu := func(m int64) resource.Quantity { return *resource.NewMilliQuantity(m, resource.DecimalSI) }
	mem := func(b int64) resource.Quantity { return *resource.NewQuantity(b, resource.BinarySI) }
	usage := corev1.ResourceList{corev1.ResourceCPU: cpu(int64(8000 + seq%1000)), corev1.ResourceMemory: mem(40 << 30)}
	st := v1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &v1alpha1.NodeMetricInfo{
			NodeUsage:   usage,
			SystemUsage: corev1.ResourceList{corev1.ResourceCPU: cpu(600), corev1.ResourceMemory: mem(3 << 30)},
		},
		ProdPeak: usage.DeepCopy(),
	}
	for _, d := range []time.Duration{5 * time.Minute, 10 * time.Minute, 30 * time.Minute} {
		agg := v1alpha1.AggregatedUsage{Duration: metav1.Duration{Duration: d}, Usage: map[v1alpha1.AggregationType]corev1.ResourceList{}}
		for _, t := range []v1alpha1.AggregationType{"avg", "p50", "p90", "p95", "p99"} {
			agg.Usage[t] = usage.DeepCopy()
		}
		st.NodeMetric.AggregatedNodeUsages = append(st.NodeMetric.AggregatedNodeUsages, agg)
	}
	for p := range podsPerNodeMetric {
		st.PodsMetric = append(st.PodsMetric, v1alpha1.PodMetricInfo{
			Namespace: "team-a", Name: fmt.Sprintf("app-%d-7d9f8c6b5-x%03d", p%7, p), Band: string(extension.BandProd),
			Usage: corev1.ResourceList{corev1.ResourceCPU: cpu(int64(200 + p + seq%50)), corev1.ResourceMemory: mem(int64(512+p) << 20)},
		})
	}
	return st
}

// writeKinds are the three writes compared: what waterline-agent's
// reporter sends every report interval (a status update of the whole
// NodeMetric) and kubelet's own per-node writes (benchutil.Kubelet). Each
// writer keeps the object it last wrote, per node, as the agent's informer
// and kubelet's lease controller do, so a write is one request.
func writeKinds(c *testutil.Cluster, kubelet *benchutil.Kubelet) (nodeMetricWrite, nodeStatusPatch, leaseRenew writeKind) {
	var lastWritten sync.Map // node → the *v1alpha1.NodeMetric last written
	nodeMetricWrite = writeKind{name: "NodeMetric status update", write: func(ctx context.Context, node string, seq int) error {
		client := c.Waterline.WaterlineV1alpha1().NodeMetrics()
		nm, ok := lastWritten.Load(node)
		if !ok {
			got, err := client.Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			nm = got
		}
		obj := nm.(*v1alpha1.NodeMetric).DeepCopy()
		obj.Status = nodeMetricStatus(seq)
		written, err := client.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		lastWritten.Store(node, written)
		return nil
	}}
	nodeStatusPatch = writeKind{name: "Node status patch", write: func(ctx context.Context, node string, _ int) error {
		return kubelet.PatchNodeStatus(ctx, node)
	}}
	leaseRenew = writeKind{name: "Lease renew", write: func(ctx context.Context, node string, _ int) error {
		return kubelet.RenewLease(ctx, node)
	}}
	return nodeMetricWrite, nodeStatusPatch, leaseRenew
}

// TestControlPlaneWrites measures what the API server and etcd pay per
// NodeMetric status write against kubelet's own per-node writes (Node
// status patch, Lease renew) at the same rate over the same number of
// nodes, alternating, repeated. Without SCHEDBENCH_FULL it is a smoke (50
// objects, 1 s streams).
func TestControlPlaneWrites(t *testing.T) {
	full := os.Getenv("SCHEDBENCH_FULL") != ""
	nodes, rate, seconds, repeats := 50, 50, 1, 1
	if full {
		nodes, rate, seconds, repeats = 5000, 84, 20, 3
	}
	nodes = envInt(t, "SCHEDBENCH_CP_NODES", nodes)
	rate = envInt(t, "SCHEDBENCH_CP_RATE", rate)
	seconds = envInt(t, "SCHEDBENCH_CP_SECONDS", seconds)
	repeats = envInt(t, "SCHEDBENCH_REPEATS", repeats)

	c := testutil.StartCluster(t, testutil.Options{})
	cp := [2]int{}
	var err error
	if cp[0], cp[1], err = benchutil.ControlPlanePIDs(c); err != nil {
		t.Fatalf("Cannot measure the control plane's CPU: %v", err)
	}
	ctx := t.Context()
	t0 := time.Now()
	names := createNodes(t, c, nodes)
	if err := newNodeMetrics(c, names).reportAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating %s: %v", corev1.NamespaceNodeLease, err)
	}
	kubelet := &benchutil.Kubelet{Kube: c.Kube}
	parallel(t, names, func(n string) error { return kubelet.CreateLease(ctx, n) })
	nodeMetricWrite, nodeStatusPatch, leaseRenew := writeKinds(c, kubelet)
	// Every NodeMetric at its full size before measuring, so the first
	// stream does not pay for growing the objects.
	parallel(t, names, func(n string) error { return nodeMetricWrite.write(ctx, n, 0) })
	t.Logf("%d nodes, NodeMetrics and Leases in %v", nodes, time.Since(t0).Round(time.Millisecond))

	kinds := []writeKind{nodeMetricWrite, nodeStatusPatch, leaseRenew}
	perWrite := map[string][]float64{}
	achieved := map[string][]float64{}
	seq := 1
	var idle []float64
	for run := range repeats {
		// What the control plane burns with no writes over a window as
		// long as a stream's, subtracted from every stream of this run.
		time.Sleep(2 * time.Second)
		i0 := controlPlaneCPU(cp)
		time.Sleep(time.Duration(seconds)*time.Second + time.Second)
		idleCPU := controlPlaneCPU(cp) - i0
		idle = append(idle, idleCPU/float64(seconds+1))
		for k := range kinds {
			kind := kinds[(k+run)%len(kinds)] // rotate which goes first
			time.Sleep(2 * time.Second)       // let the last stream's work drain
			cpu0 := controlPlaneCPU(cp)
			start := time.Now()
			n := stream(ctx, t, c, kind, names, rate, time.Duration(seconds)*time.Second, seq)
			wall := time.Since(start)
			time.Sleep(time.Second) // count the tail of the writes' work (watch fan-out, etcd compaction is not)
			cpu := controlPlaneCPU(cp) - cpu0 - idleCPU
			seq++
			perWrite[kind.name] = append(perWrite[kind.name], cpu/float64(n))
			achieved[kind.name] = append(achieved[kind.name], float64(n)/wall.Seconds())
			t.Logf("run %d %-24s %d writes in %v (%.0f/s): apiserver+etcd %.3f CPU-s above idle, %.3f ms per write",
				run, kind.name, n, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), cpu, 1000*cpu/float64(n))
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Control plane CPU per write: %d nodes, %d writes/s for %d s, %d runs each (rotating order)\n\n", nodes, rate, seconds, repeats)
	ilo, ihi := benchutil.Spread(idle)
	fmt.Fprintf(&b, "apiserver+etcd idle: %.3f cores [%.3f–%.3f], subtracted.\n\n", benchutil.Median(idle), ilo, ihi)
	fmt.Fprintf(&b, "| write | apiserver+etcd CPU per write, ms: median [min–max] | achieved rate, /s | ratio to Node status patch |\n|---|---|---|---|\n")
	base := benchutil.Median(perWrite[nodeStatusPatch.name])
	for _, k := range kinds {
		m := benchutil.Median(perWrite[k.name])
		lo, hi := benchutil.Spread(perWrite[k.name])
		fmt.Fprintf(&b, "| %s | %.3f [%.3f–%.3f] | %.0f | %.2f× |\n", k.name, 1000*m, 1000*lo, 1000*hi, benchutil.Median(achieved[k.name]), m/base)
	}
	nm, patch, lease := benchutil.Median(perWrite[nodeMetricWrite.name]), base, benchutil.Median(perWrite[leaseRenew.name])
	fmt.Fprintf(&b, "\nAt 5,000 nodes: NodeMetrics every 60 s = 83.3 writes/s → %.2f cores; kubelet Leases every 10 s = 500/s → %.2f cores, Node status every 5 min = 16.7/s → %.2f cores.\n",
		83.3*nm, 500*lease, 16.7*patch)
	t.Log("\n" + b.String())
	if full {
		path := filepath.Join(outDir(t), fmt.Sprintf("controlplane-%dnodes.md", nodes))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("Writing %s: %v", path, err)
		}
	}
	for _, k := range kinds {
		for _, v := range perWrite[k.name] {
			if v <= 0 {
				t.Errorf("%s: %v CPU-s per write: the control plane's CPU is not being measured", k.name, v)
			}
		}
	}
}

// stream sends writes of kind round-robin over the nodes at rate per
// second for d, and returns how many succeeded.
func stream(ctx context.Context, t *testing.T, c *testutil.Cluster, kind writeKind, nodes []string, rate int, d time.Duration, seq int) int {
	var ok atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	sem := make(chan struct{}, 64)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		sem <- struct{}{}
		wg.Add(1)
		node := nodes[i%len(nodes)]
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := kind.write(ctx, node, seq); err != nil {
				if ctx.Err() == nil {
					t.Errorf("%s of %s: %v", kind.name, node, err)
				}
				return
			}
			ok.Add(1)
		}()
	}
	wg.Wait()
	return int(ok.Load())
}

// parallel runs f for every name, 32 at a time, failing on the first error.
func parallel(t *testing.T, names []string, f func(string) error) {
	t.Helper()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(n)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
