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
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

func TestMain(m *testing.M) {
	resctltest.RunBurnerIfAsked()
	os.Exit(m.Run())
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// scriptedEvictor answers evictions from a script (pod name → error) and
// records the calls. It stands in for the Eviction API in tests of the
// executor's own decisions; the API itself is exercised by the integration
// test on a real API server.
type scriptedEvictor struct {
	mu     sync.Mutex
	refuse map[string]error
	calls  []string
	grace  []*int64
	// deletes are the pods deleted past a refusal (memory relief).
	deletes []string
	// hang, when set, makes every call wait until the request's context
	// ends, as a request to a partitioned API server does.
	hang bool
}

func (s *scriptedEvictor) Evict(ctx context.Context, pod *corev1.Pod, grace *int64) error {
	s.mu.Lock()
	s.calls = append(s.calls, pod.Name)
	s.grace = append(s.grace, grace)
	hang, err := s.hang, s.refuse[pod.Name]
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (s *scriptedEvictor) Delete(ctx context.Context, pod *corev1.Pod, grace *int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, pod.Name)
	return nil
}

func (s *scriptedEvictor) callList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// world is one node and an executor acting on it.
type world struct {
	t        *testing.T
	clock    *clocktesting.FakeClock
	evictor  *scriptedEvictor
	recorder *record.FakeRecorder
	rc       *resctl.Reconciler
	reg      *prometheus.Registry
	ex       *executor.Executor
	reports  int

	node *corev1.Node
	nqs  []*v1alpha1.NodeQOS
	// nm is the node's NodeMetric as the reporter last wrote it: it
	// starts with both conditions False and takes the executor's
	// conditions whenever a cycle asked for a report.
	nm   *v1alpha1.NodeMetric
	pods []*corev1.Pod
	// cfg is the executor's configuration, kept across restarts (its
	// StatePath is the agent's state directory).
	cfg executor.Config
	// use is each pod's usage by name: cores and bytes.
	use               map[string]usage
	nodeCPU, nodeMem  float64
	noNodeCPU, noNode bool
}

type usage struct {
	cpu float64
	mem float64
}

// newWorld makes a 4-CPU, 16 GiB node with the NodeQOS objects.
func newWorld(t *testing.T, nqs ...*v1alpha1.NodeQOS) *world {
	t.Helper()
	w := &world{
		t:     t,
		clock: clocktesting.NewFakeClock(t0),
		node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"pool": "colo"}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}},
		},
		nqs: nqs,
		use: map[string]usage{},
		cfg: executor.Config{StatePath: filepath.Join(t.TempDir(), executor.StateFile)},
		nm: &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1alpha1.NodeMetricStatus{Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionForbidScheduling, Status: metav1.ConditionFalse, Reason: "UnderWaterline"},
			{Type: v1alpha1.ConditionThrottling, Status: metav1.ConditionFalse, Reason: "NoneThrottled"},
		}}},
	}
	w.restart()
	return w
}

// restart builds a new executor and reconciler, as an agent restart does.
func (w *world) restart() {
	w.t.Helper()
	layout, err := cgroups.NewLayout(w.t.TempDir(), cgroups.V1, cgroups.DriverCgroupfs, "/")
	if err != nil {
		w.t.Fatal(err)
	}
	w.rc, err = resctl.New(layout, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.evictor = &scriptedEvictor{refuse: map[string]error{}}
	w.recorder = record.NewFakeRecorder(1000)
	w.reg = prometheus.NewRegistry()
	w.ex, err = executor.New(w.cfg, executor.Deps{
		Evictor: w.evictor, Reconciler: w.rc, Recorder: w.recorder, Clock: w.clock, Prometheus: w.reg,
		RequestReport: func() { w.reports++ },
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) addPod(p *corev1.Pod, cpu, memGiB float64) *corev1.Pod {
	p.Spec.NodeName = w.node.Name
	w.pods = append(w.pods, p)
	w.use[p.Name] = usage{cpu, memGiB * (1 << 30)}
	return p
}

func (w *world) snapshot() *agent.Snapshot {
	s := &collector.Sample{Time: w.clock.Now()}
	if !w.noNodeCPU {
		s.Node.CPU, s.Node.HasCPU = w.nodeCPU, true
	}
	s.Node.Memory, s.Node.HasMemory = uint64(w.nodeMem*(1<<30)), true
	for _, p := range w.pods {
		u := w.use[p.Name]
		s.Pods = append(s.Pods, collector.PodSample{Pod: collector.PodRefOf(p), Usage: collector.Usage{CPU: u.cpu, HasCPU: true, Memory: uint64(u.mem), HasMemory: true}})
	}
	node := w.node
	if w.noNode {
		node = nil
	}
	return &agent.Snapshot{Time: s.Time, Sample: s, Node: node, Pods: w.pods, NodeQOSes: w.nqs, NodeMetric: w.nm}
}

// cycle advances the clock by a second and runs one executor cycle.
func (w *world) cycle() {
	w.t.Helper()
	w.clock.Step(time.Second)
	before := w.reports
	if err := w.ex.Cycle(w.t.Context(), w.snapshot()); err != nil {
		w.t.Fatalf("Cycle: %v", err)
	}
	// Evictions run beside the loop; the next cycle takes in their
	// results. Waiting here keeps the tests deterministic.
	w.ex.WaitForEvictions(w.t.Context())
	if w.reports > before {
		// The reporter writes early: the next cycle sees it.
		nm := w.nm.DeepCopy()
		w.ex.ContributeStatus(&nm.Status)
		w.nm = nm
	}
}

// quotas returns the executor's intents by pod name.
func (w *world) quotas() map[string]int64 {
	out := map[string]int64{}
	byUID := map[types.UID]string{}
	for _, p := range w.pods {
		byUID[p.UID] = p.Name
	}
	for uid, in := range w.rc.Intents(executor.Source) {
		if !in.BelowOwnLimits {
			w.t.Errorf("intent for %s is not marked below the pod's own limits", byUID[uid])
		}
		out[byUID[uid]] = in.CPUQuotaMilli
	}
	return out
}

// events drains the recorder.
func (w *world) events() []string {
	var out []string
	for {
		select {
		case e := <-w.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func nodeQOS(name string, mutate func(*v1alpha1.NodeQOSSpec)) *v1alpha1.NodeQOS {
	nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), ResourceVersion: "1"}}
	mutate(&nq.Spec)
	return nq
}

func condition(status *v1alpha1.NodeMetricStatus, typ string) *metav1.Condition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == typ {
			return &status.Conditions[i]
		}
	}
	return nil
}

var (
	i32 = ptr.To[int32]
	i64 = ptr.To[int64]
)

// gathered returns the value of a counter or gauge with one label as a
// collector promtest can read (zero when never set).
func gathered(t *testing.T, w *world, name, label, value string) prometheus.Collector {
	t.Helper()
	fams, err := w.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := 0.0
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					v = m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name})
	g.Set(v)
	return g
}
