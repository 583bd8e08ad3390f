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

package executor_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// userCPUMetric is the custom metric of the real test: user CPU time from
// cpuacct.usage_user, a counter in ns, as millicores.
var userCPUMetric = executor.CustomMetricsFile{Metrics: []executor.CustomMetricSpec{{
	Name: "user_cpu_millicores", Controller: "cpuacct", File: "cpuacct.usage_user", Type: "counter", Divisor: 1_000_000,
	ActionPriority: 4, Sortable: true, Evictable: true, EvictQuantified: true,
}}}

// TestRealCustomMetricEvict: a custom metric configured as the agent's
// --custom-metrics file is read from the real pod cgroups, a NodeQOS Evict
// rule names it, and the executor evicts the Batch pods in the order of
// their usage of it -- batch-b (450m) before batch-c (300m) before batch-a
// (150m), not the order of their names -- and only as many as the gap
// needs. The Prod pod is never chosen.
func TestRealCustomMetricEvict(t *testing.T) {
	node := resctltest.NewRealNode(t, "waterline-test-custom")
	rates := map[string]int64{"batch-a": 150, "batch-b": 450, "batch-c": 300, "prod": 100}
	// Running time alone (the general order) would take batch-a, the
	// newest, first: the metric's order is another.
	age := map[string]time.Duration{"batch-a": time.Hour, "batch-b": 3 * time.Hour, "batch-c": 2 * time.Hour, "prod": time.Hour}
	var pods []*corev1.Pod
	for _, name := range []string{"batch-a", "batch-b", "batch-c", "prod"} {
		b := resctltest.MakePod(name).Band(extension.BandBatch)
		if name == "prod" {
			b = resctltest.MakePod(name).Band(extension.BandProd)
		}
		p := b.Obj()
		p.Status.StartTime = &metav1.Time{Time: time.Now().Add(-age[name])}
		rp := node.AddPod(p)
		resctltest.StartBurner(t, node, rp.Containers["main"], rates[name])
		pods = append(pods, p)
	}
	cm, err := userCPUMetric.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	proc := resctltest.NewFakeProc(t, node)
	d := resctltest.NewDriver(t, node.Layout, proc.Dir)
	col, err := collector.New(collector.Config{ProcRoot: proc.Dir, ContainerInterval: ptr.To(time.Duration(0)), CustomMetrics: cm.Collector}, node.Layout, clock.RealClock{})
	if err != nil {
		t.Fatalf("collector.New: %v", err)
	}
	t.Cleanup(func() { _ = col.Close() })
	d.Collector, d.Proc, d.Pods = col, proc, pods
	d.Node = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "real-node"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(realNodeCPU), corev1.ResourceMemory: resource.MustParse("4Gi")}},
	}
	rc, err := resctl.New(node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &scriptedEvictor{}
	ex, err := executor.New(executor.Config{}, executor.Deps{
		Evictor: ev, Reconciler: rc, Recorder: record.NewFakeRecorder(1000), Clock: clock.RealClock{}, QoSMetrics: cm.QoSMetrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Modules = []agent.CycleModule{ex, rc}
	cycle := func() *agent.Snapshot {
		t.Helper()
		time.Sleep(time.Second)
		s, err := d.Cycle(t.Context())
		if err != nil {
			t.Fatalf("Cycle: %v", err)
		}
		return s
	}

	cycle() // the counters' first read has no rate
	var warm *agent.Snapshot
	for i := 0; i < 5 && (warm == nil || warm.Sample.Custom["user_cpu_millicores"] < 400); i++ {
		warm = cycle()
	}
	if v := warm.Sample.Custom["user_cpu_millicores"]; v < 400 {
		t.Skipf("Skipping: the machine is too busy for this test: the burners got %dm of user CPU in 5 cycles, want about 1000m (at least 400m)", v)
	}
	// The gap is the biggest Batch user and half the next one, as
	// measured now: one pod is not enough, two are.
	var top []int64
	for _, p := range warm.Sample.Pods {
		if p.Pod.Band == extension.BandBatch {
			top = append(top, p.Custom["user_cpu_millicores"])
		}
	}
	slices.Sort(top)
	slices.Reverse(top)
	line := warm.Sample.Custom["user_cpu_millicores"] - (top[0] + top[1]/2)
	d.NodeQOSes = []*v1alpha1.NodeQOS{nodeQOS("custom", func(s *v1alpha1.NodeQOSSpec) {
		s.Rules = []v1alpha1.WaterlineRule{{Name: "user-cpu", Metric: "user_cpu_millicores",
			Threshold: *resource.NewQuantity(line, resource.DecimalSI), Action: v1alpha1.ActionEvict,
			AvoidanceCount: ptr.To[int32](1), RestoreCount: ptr.To[int32](1)}}
	})}
	acting := cycle()
	// The evictions run beside the loop: give them a moment.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && len(ev.callList()) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)

	got := acting.Sample.Custom["user_cpu_millicores"]
	gap := got - line
	type pv struct {
		name string
		v    int64
	}
	var batch []pv
	measured := map[string]int64{}
	for _, p := range acting.Sample.Pods {
		measured[p.Pod.Name] = p.Custom["user_cpu_millicores"]
		if p.Pod.Band == extension.BandBatch {
			batch = append(batch, pv{p.Pod.Name, p.Custom["user_cpu_millicores"]})
		}
	}
	slices.SortFunc(batch, func(a, b pv) int { return int(b.v - a.v) })
	var want []string
	left := gap
	for _, b := range batch {
		if left <= 0 {
			break
		}
		want = append(want, b.name)
		left -= b.v
	}
	t.Logf("Acting cycle: node %dm of user CPU (pods %v), line %dm, gap %dm; evicted %v", got, measured, line, gap, ev.callList())
	if gap <= 0 {
		t.Fatalf("the acting cycle measured %dm, not over the %dm line", got, line)
	}
	// The evictions run in parallel, so their calls come in any order.
	calls := ev.callList()
	slices.Sort(calls)
	slices.Sort(want)
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("evictions (-want +got): the shortest prefix, in order of user CPU, that closes %dm:\n%s", gap, diff)
	}
	if len(want) != 2 {
		t.Logf("Note: the burners' jitter made the gap need %d pods instead of 2", len(want))
	}
}
