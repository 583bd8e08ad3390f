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
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// The real-cgroup tests' node: the test's own cgroup subtree, standing in
// for a 2-CPU node. Its "node usage" is the subtree's CPU, which a fake
// /proc/stat (resctltest.FakeProc) hands to the real collector, because
// the collector reads node CPU from /proc and the machine's is everyone's.
const (
	realNodeCPU = "2"
	// tolerance of "under the line": the planner closes the gap exactly
	// (docs/design/node-qos.md#precise-action), so the next sample lands on the line give or take the
	// burners' jitter and one /proc/stat jiffy (10 ms per second = 10m):
	// 2 % of the node.
	lineTolerance = 40
)

type realSetup struct {
	node    *resctltest.RealNode
	driver  *resctltest.Driver
	pods    map[string]*resctltest.RealPod
	burners map[string]*resctltest.Burner
	batch   []string
}

// newRealSetup makes three BestEffort Batch pods with 300m burners and a
// Prod pod with a 200m burner (1100m in all) and a driver with the
// executor and the reconciler. Batch pods have no request: their throttle
// floor is 10 % of one core, 100m.
func newRealSetup(t *testing.T) *realSetup {
	t.Helper()
	node := resctltest.NewRealNode(t, "waterline-test-qos")
	rs := &realSetup{node: node, pods: map[string]*resctltest.RealPod{}, burners: map[string]*resctltest.Burner{}, batch: []string{"batch-a", "batch-b", "batch-c"}}
	var pods []*corev1.Pod
	for _, name := range append(slices.Clone(rs.batch), "prod") {
		b := resctltest.MakePod(name).Band(extension.BandBatch)
		rate := int64(300)
		if name == "prod" {
			b = resctltest.MakePod(name).Band(extension.BandProd)
			rate = 200
		}
		p := b.Obj()
		p.Status.StartTime = &metav1.Time{Time: time.Now().Add(-time.Hour)}
		rs.pods[name] = node.AddPod(p)
		rs.burners[name] = resctltest.StartBurner(t, node, rs.pods[name].Containers["main"], rate)
		pods = append(pods, p)
	}
	proc := resctltest.NewFakeProc(t, node)
	rs.driver = resctltest.NewDriver(t, node.Layout, proc.Dir)
	rs.driver.Proc = proc
	rs.driver.Pods = pods
	rs.driver.Node = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "real-node"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(realNodeCPU), corev1.ResourceMemory: resource.MustParse("4Gi")}},
	}
	rs.startAgent(t)
	return rs
}

// startAgent builds a fresh executor and reconciler, as a (re)started agent
// does; the cgroups keep whatever the previous ones wrote.
func (rs *realSetup) startAgent(t *testing.T) {
	t.Helper()
	rc, err := resctl.New(rs.node.Layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{}, executor.Deps{
		Evictor: &scriptedEvictor{}, Reconciler: rc, Recorder: record.NewFakeRecorder(1000), Clock: clock.RealClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	rs.driver.Modules = []agent.CycleModule{ex, rc}
}

// cycle sleeps a second and runs a cycle, returning its snapshot.
func (rs *realSetup) cycle(t *testing.T) *agent.Snapshot {
	t.Helper()
	time.Sleep(time.Second)
	s, err := rs.driver.Cycle(t.Context())
	if err != nil {
		t.Fatalf("Cycle: %v", err)
	}
	return s
}

// quotas reads each pod's CPU quota from its cgroup.
func (rs *realSetup) quotas() map[string]int64 {
	out := map[string]int64{}
	for name, p := range rs.pods {
		out[name] = rs.node.Quota(p.Cgroup)
	}
	return out
}

func nodeMilli(s *agent.Snapshot) int64 { return int64(math.Round(s.Sample.Node.CPU * 1000)) }

// podMilli lists the sample's pod usage, for logs.
func podMilli(s *agent.Snapshot) map[string]int64 {
	out := map[string]int64{}
	for _, p := range s.Sample.Pods {
		out[p.Pod.Name] = int64(math.Round(p.CPU * 1000))
	}
	return out
}

// podsNeeded is how many Batch pods the shortest prefix in usage order has
// to throttle to release gap, each down to its 100m floor at most.
func podsNeeded(s *agent.Snapshot, gap int64) int {
	var releasable []int64
	for _, p := range s.Sample.Pods {
		if p.Pod.Band == extension.BandBatch {
			releasable = append(releasable, max(0, int64(math.Round(p.CPU*1000))-100))
		}
	}
	slices.Sort(releasable)
	slices.Reverse(releasable)
	for i, r := range releasable {
		gap -= r
		if gap <= 0 {
			return i + 1
		}
	}
	return len(releasable)
}

// realNodeQOS puts the throttle line at percent of the 2000m node and the
// restore line 100m below it. One sample over the line acts; two under the
// restore line release; a restore step is half the node.
func realNodeQOS(percent int32) *v1alpha1.NodeQOS {
	return nodeQOS("real", func(s *v1alpha1.NodeQOSSpec) {
		s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: i32(percent), RestorePercent: i32(percent - 5)}
		s.AvoidanceCount, s.RestoreCount = i32(1), i32(2)
		s.Throttle = &v1alpha1.ThrottlePolicy{StepPercent: i32(50)}
	})
}

// throttle runs the setup until the executor acted and checks the two
// cycles the issue asks about: the acting one throttles only as many pods
// as needed, the next one is under the line. The line is placed 260-280m
// under what the burners measure (about 1100m on an idle machine), so the
// gap needs two of the three Batch pods whatever the machine's load.
func (rs *realSetup) throttle(t *testing.T) (line int64) {
	t.Helper()
	rs.cycle(t) // the collector's first cycle has no rates
	// On a loaded machine the burners get their CPU late: give them a few
	// seconds before judging the machine too busy.
	var warm int64
	for i := 0; i < 5 && warm < 600; i++ {
		warm = nodeMilli(rs.cycle(t))
	}
	if warm < 600 {
		t.Skipf("Skipping: the machine is too busy for this test: the burners got %dm in 5 cycles, want about 1100m (at least 600m)", warm)
	}
	percent := int32((warm - 260) / 20)
	line = int64(percent) * 20
	rs.driver.NodeQOSes = []*v1alpha1.NodeQOS{realNodeQOS(percent)}
	var acting *agent.Snapshot
	var throttled []string
	for i := 0; i < 5 && len(throttled) == 0; i++ {
		acting = rs.cycle(t)
		q := rs.quotas()
		for _, name := range rs.batch {
			if q[name] != resctl.Unlimited {
				throttled = append(throttled, fmt.Sprintf("%s=%dm", name, q[name]))
			}
		}
	}
	usage := nodeMilli(acting)
	need := podsNeeded(acting, usage-line)
	t.Logf("First cycle over the line: node %dm (pods %v), line %dm; throttled %v (%d needed)", usage, podMilli(acting), line, throttled, need)
	if len(throttled) != need {
		t.Errorf("throttled %d pods %v, want %d: the shortest prefix in usage order that closes %dm", len(throttled), throttled, need, usage-line)
	}
	quotas := rs.quotas()
	if quotas["prod"] != resctl.Unlimited {
		t.Errorf("the Prod pod was throttled to %dm", quotas["prod"])
	}
	// The sample the next cycle judges must start once the quotas are in
	// the cgroups: the acting cycle wrote them some time after its own
	// sample, a long time on a loaded machine, and that stretch of
	// unthrottled CPU is not what throttling promised. A collect without
	// modules starts the next sample now.
	rs.rebaseline(t)
	next := rs.cycle(t)
	// The planner closes the gap it measured with the pods it throttles;
	// what the pods it left alone (and Prod) do meanwhile is the machine's
	// load, not its decision: take their drift out of the node's usage.
	before, after := podMilli(acting), podMilli(next)
	var drift int64
	for name := range after {
		if quotas[name] == resctl.Unlimited {
			drift += after[name] - before[name]
		}
	}
	got := nodeMilli(next) - drift
	t.Logf("Next cycle: node %dm, %dm of it drift of pods not throttled (pods %v; line %dm + %dm tolerance), quotas %v",
		nodeMilli(next), drift, after, line, lineTolerance, rs.quotas())
	if got > line+lineTolerance {
		t.Errorf("node usage the cycle after throttling, without the drift of pods left alone = %dm, want at most the %dm line (+%dm)", got, line, lineTolerance)
	}
	for name, q := range quotas {
		if q != resctl.Unlimited && after[name] > q+lineTolerance {
			t.Errorf("pod %s used %dm the cycle after it was throttled to %dm", name, after[name], q)
		}
	}
	return line
}

// rebaseline collects once without running the modules, so that the next
// cycle's rates start now.
func (rs *realSetup) rebaseline(t *testing.T) {
	t.Helper()
	modules := rs.driver.Modules
	rs.driver.Modules = nil
	defer func() { rs.driver.Modules = modules }()
	if _, err := rs.driver.Cycle(t.Context()); err != nil {
		t.Fatalf("Collecting: %v", err)
	}
}

// TestRealThrottleAndRestore: three burners in Batch pod cgroups and a
// Prod burner push the node (its cgroup subtree) to about 1100m, some 270m
// over the throttle line. Within two cycles usage is under the line, with only
// as many Batch pods throttled as needed and the Prod pod untouched. When
// the load drops, the quotas are stepped back up to unlimited.
func TestRealThrottleAndRestore(t *testing.T) {
	rs := newRealSetup(t)
	line := rs.throttle(t)

	for _, b := range rs.burners {
		b.SetRate(0)
	}
	released := false
	for i := 0; i < 20 && !released; i++ {
		s := rs.cycle(t)
		q := rs.quotas()
		t.Logf("Load dropped, cycle %d: node %dm, quotas %v", i+1, nodeMilli(s), q)
		released = true
		for _, v := range q {
			released = released && v == resctl.Unlimited
		}
	}
	if !released {
		t.Errorf("quotas 20 cycles after the load dropped under the %dm restore line = %v, want all unlimited", line-100, rs.quotas())
	}
}

// TestRealCrashWhileThrottled: the agent dies while pods are throttled (no
// cleanup runs), the load falls under the line, and a new agent starts with
// nothing remembered: after two cycles no pod is throttled.
func TestRealCrashWhileThrottled(t *testing.T) {
	rs := newRealSetup(t)
	rs.throttle(t)
	before := rs.quotas()

	for _, name := range rs.batch {
		rs.burners[name].SetRate(100)
	}
	// The new process: new modules, and a new collector and cache (it
	// starts without rates, as a restarted agent does).
	proc, pods, node, nqs := rs.driver.Proc, rs.driver.Pods, rs.driver.Node, rs.driver.NodeQOSes
	rs.driver = resctltest.NewDriver(t, rs.node.Layout, proc.Dir)
	rs.driver.Proc, rs.driver.Pods, rs.driver.Node, rs.driver.NodeQOSes = proc, pods, node, nqs
	rs.startAgent(t)
	rs.cycle(t)
	rs.cycle(t)
	after := rs.quotas()
	t.Logf("Throttled before the crash: %v; two cycles after the restart: %v", before, after)
	for name, q := range after {
		if q != resctl.Unlimited {
			t.Errorf("pod %s still at %dm two cycles after the restart, want unlimited", name, q)
		}
	}
}
