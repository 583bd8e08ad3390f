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

package loadaware

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

func TestMaxScoreIsTheFrameworks(t *testing.T) {
	if nodeload.MaxScore != fwk.MaxScore {
		t.Errorf("nodeload.MaxScore = %d, want fwk.MaxScore = %d", nodeload.MaxScore, fwk.MaxScore)
	}
}

func TestFilter(t *testing.T) {
	// The node has 16 cores and 64Gi; defaults: cpu 65 %, memory 95 %.
	// The incoming 1-core, 1Gi pod is estimated at 850m and 0.7Gi.
	daemonSet := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	tests := []struct {
		name       string
		args       func(*config.LoadAwareArgs)
		node       *corev1.Node
		metric     *v1alpha1.NodeMetric // nil: the node has no NodeMetric
		pod        *corev1.Pod
		wantCode   fwk.Code
		wantReason []string
	}{{
		name:   "a cool node fits",
		node:   node16("n").Obj(),
		metric: metric("n", t0).usage("8", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// (8 + 0.85) / 16 = 55.3 % → 55 ≤ 65.
		wantCode: fwk.Success,
	}, {
		name:   "a hot node is refused for cpu",
		node:   node16("n").Obj(),
		metric: metric("n", t0).usage("13", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// (13 + 0.85) / 16 = 86.6 % → 87 > 75.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) cpu usage exceed threshold"},
	}, {
		name:   "a node short of memory is refused for memory",
		node:   node16("n").Obj(),
		metric: metric("n", t0).usage("1", "61Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// (61 + 0.7) / 64 = 96.4 % → 96 > 95.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) memory usage exceed threshold"},
	}, {
		name:     "a node without a NodeMetric fits",
		node:     node16("n").Obj(),
		pod:      pod("p", "1", "1Gi").Obj(),
		wantCode: fwk.Success,
	}, {
		name:   "a stale NodeMetric is refused",
		node:   node16("n").Obj(),
		metric: metric("n", t0.Add(-3*time.Minute)).usage("1", "1Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// Reported at t0 − 180 s, now t0 + 10 s: 190 s ≥ 180 s.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{ReasonNodeMetricExpired},
	}, {
		name:     "a NodeMetric never reported counts as none: the node fits",
		node:     node16("n").Obj(),
		metric:   &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
		pod:      pod("p", "1", "1Gi").Obj(),
		wantCode: fwk.Success,
	}, {
		name:     "a stale NodeMetric fits when allowed",
		args:     func(a *config.LoadAwareArgs) { a.EnableScheduleWhenNodeMetricsExpired = true },
		node:     node16("n").Obj(),
		metric:   metric("n", t0.Add(-3*time.Minute)).usage("15", "60Gi").obj(),
		pod:      pod("p", "1", "1Gi").Obj(),
		wantCode: fwk.Success,
	}, {
		name:     "a DaemonSet pod passes a hot node",
		node:     node16("n").Obj(),
		metric:   metric("n", t0).usage("15", "60Gi").forbid().obj(),
		pod:      pod("p", "1", "1Gi").OwnerReference("ds", daemonSet).Label(extension.LabelBand, "batch").Obj(),
		wantCode: fwk.Success,
	}, {
		name:       "a Batch pod is refused on a forbid-scheduling node",
		node:       node16("n").Obj(),
		metric:     metric("n", t0).usage("1", "1Gi").forbid().obj(),
		pod:        batchPod("p").Obj(),
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{ReasonForbidScheduling},
	}, {
		name:     "a Prod pod lands on a forbid-scheduling node",
		node:     node16("n").Obj(),
		metric:   metric("n", t0).usage("1", "1Gi").forbid().obj(),
		pod:      pod("p", "1", "1Gi").Obj(),
		wantCode: fwk.Success,
	}, {
		name:   "the node's threshold annotation wins",
		node:   node16("n").Annotation(extension.AnnotationUsageThresholds, `{"usageThresholds":{"cpu":50}}`).Obj(),
		metric: metric("n", t0).usage("8", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// 55 % > 50 %; memory is not judged on this node any more.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) cpu usage exceed threshold"},
	}, {
		name:     "a malformed threshold annotation is ignored",
		node:     node16("n").Annotation(extension.AnnotationUsageThresholds, `{"usageThresholds":`).Obj(),
		metric:   metric("n", t0).usage("8", "32Gi").obj(),
		pod:      pod("p", "1", "1Gi").Obj(),
		wantCode: fwk.Success,
	}, {
		name:   "the raw-allocatable annotation replaces allocatable",
		node:   node16("n").Annotation(extension.AnnotationRawAllocatable, `{"cpu":"32"}`).Obj(),
		metric: metric("n", t0).usage("10", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// (10 + 0.85) / 32 = 33.9 % → 34 ≤ 65.
		wantCode: fwk.Success,
	}, {
		name:   "a negative raw-allocatable annotation is ignored, not a free pass",
		node:   node16("n").Annotation(extension.AnnotationRawAllocatable, `{"cpu":"-32"}`).Obj(),
		metric: metric("n", t0).usage("14", "32Gi").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// The node's own 16 cores: (14 + 0.85) / 16 = 92.8 % → 93 > 65.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) cpu usage exceed threshold"},
	}, {
		name:       "a zero raw-allocatable annotation is ignored, not a free pass",
		node:       node16("n").Annotation(extension.AnnotationRawAllocatable, `{"cpu":"0"}`).Obj(),
		metric:     metric("n", t0).usage("14", "32Gi").obj(),
		pod:        pod("p", "1", "1Gi").Obj(),
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) cpu usage exceed threshold"},
	}, {
		name:   "1Ei used of a raw allocatable of 1E does not wrap to a fit",
		node:   node16("n").Annotation(extension.AnnotationRawAllocatable, `{"memory":"1E"}`).Obj(),
		metric: metric("n", t0).usage("1", "1Ei").obj(),
		pod:    pod("p", "1", "1Gi").Obj(),
		// 2^60 / 10^18 = 115 % > 95.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) memory usage exceed threshold"},
	}, {
		name: "Prod thresholds: a Prod pod ignores Batch load",
		args: func(a *config.LoadAwareArgs) { a.ProdUsageThresholds = map[corev1.ResourceName]int64{"cpu": 55} },
		node: node16("n").Obj(),
		metric: metric("n", t0).usage("14", "32Gi").
			pod("ns", "prod", extension.BandProd, "4", "8Gi").
			pod("ns", "batch", extension.BandBatch, "10", "24Gi").
			prodPeak("9", "10Gi").obj(),
		pod: pod("p", "1", "1Gi").Obj(),
		// Prod usage (4 + 0.85) / 16 = 30.3 % → 30 ≤ 55.
		wantCode: fwk.Success,
	}, {
		name: "Prod thresholds with prediction: the predicted peak counts",
		args: func(a *config.LoadAwareArgs) {
			a.ProdUsageThresholds = map[corev1.ResourceName]int64{"cpu": 55}
			a.ProdUsageIncludePrediction = true
		},
		node: node16("n").Obj(),
		metric: metric("n", t0).usage("14", "32Gi").
			pod("ns", "prod", extension.BandProd, "4", "8Gi").
			pod("ns", "batch", extension.BandBatch, "10", "24Gi").
			prodPeak("9", "10Gi").obj(),
		pod: pod("p", "1", "1Gi").Obj(),
		// max(4, 9) + 0.85 = 9.85 / 16 = 61.6 % → 62 > 55.
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: []string{"node(s) cpu usage exceed threshold"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := defaultArgs()
			if tc.args != nil {
				tc.args(args)
			}
			var metrics []*v1alpha1.NodeMetric
			if tc.metric != nil {
				metrics = append(metrics, tc.metric)
			}
			e := newEnv(t, args, []*corev1.Node{tc.node}, nil, metrics...)
			got := e.filter(tc.pod, "n")
			if got.Code() != tc.wantCode {
				t.Fatalf("Filter = %v, want code %v", got, tc.wantCode)
			}
			if tc.wantReason == nil {
				return
			}
			if diff := cmp.Diff(tc.wantReason, got.Reasons()); diff != "" {
				t.Errorf("Filter reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScorePrefersLeastUsed(t *testing.T) {
	nodes := []*corev1.Node{node16("cold").Obj(), node16("warm").Obj(), node16("hot").Obj(), node16("unknown").Obj(), node16("stale").Obj()}
	e := newEnv(t, nil, nodes, nil,
		metric("cold", t0).usage("2", "8Gi").obj(),
		metric("warm", t0).usage("6", "8Gi").obj(),
		metric("hot", t0).usage("10", "8Gi").obj(),
		metric("stale", t0.Add(-time.Hour)).usage("0", "0").obj(),
	)
	got := e.scores(pod("p", "1", "1Gi").Obj(), "cold", "warm", "hot", "unknown", "stale")
	// memory (8 + 0.7)Gi / 64Gi → ⌊(64 − 8.7) × 100 / 64⌋ = 86 everywhere;
	// cold: cpu 2.85 → ⌊13.15 × 100 / 16⌋ = 82 → (82 + 86) / 2 = 84;
	// warm: 6.85 → 57 → 71; hot: 10.85 → 32 → 59; unknown and stale: 0.
	want := map[string]int64{"cold": 84, "warm": 71, "hot": 59, "unknown": 0, "stale": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestReserveSpreadsABurst(t *testing.T) {
	// Two equally cool nodes and ten 1-core pods (850m estimated each):
	// each Reserve makes its node look busier to the next pod, so they
	// alternate instead of piling onto the node that scored best first.
	e := newEnv(t, nil, []*corev1.Node{node16("a").Obj(), node16("b").Obj()}, nil,
		metric("a", t0).usage("2", "8Gi").obj(),
		metric("b", t0).usage("2", "8Gi").obj(),
	)
	count := map[string]int{}
	for i := range 10 {
		node := e.schedule(pod("p"+string(rune('0'+i)), "1", "1Gi").Obj(), "a", "b")
		count[node]++
	}
	// a, b, a, b, ...: after a takes one, a scores with 2 + 0.85 + 0.85 cores
	// against b's 2 + 0.85.
	if diff := cmp.Diff(map[string]int{"a": 5, "b": 5}, count); diff != "" {
		t.Errorf("pods per node (-want +got):\n%s", diff)
	}
}

func TestReserveAndUnreserve(t *testing.T) {
	// 10 cores used of 16: one 2-core pod (1.7 estimated) fits, a second
	// one does not until the first is taken back.
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0).usage("10", "8Gi").obj())
	first, second := pod("first", "2", "1Gi").Obj(), pod("second", "2", "1Gi").Obj()
	if got := e.schedule(first, "n"); got != "n" {
		t.Fatalf("first pod scheduled on %q, want n", got)
	}
	// 10 + 1.7 + 1.7 = 13.4 / 16 = 84 % > 75.
	if s := e.filter(second, "n"); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("second pod after the first was reserved: %v, want refused", s)
	}
	e.fw.RunReservePluginsUnreserve(e.ctx, framework.NewCycleState(), first, "n")
	// 10 + 1.7 = 11.7 / 16 = 73 % ≤ 75.
	if s := e.filter(second, "n"); !s.IsSuccess() {
		t.Errorf("second pod after the first was unreserved: %v, want it to fit", s)
	}
}

func TestAssignedPodsLeaveNoGhostLoad(t *testing.T) {
	ctx := t.Context()
	// Node n: 8 cores used of 16. A 4-core pod is estimated at 3.4 cores,
	// the incoming 2-core pod at 1.7: 8 + 3.4 + 1.7 = 13.1 / 16 = 82 %
	// (refused) while the 4-core pod counts; 8 + 1.7 = 61 % (fits) when it
	// does not.
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj(), node16("other").Obj()}, nil,
		metric("n", t0).usage("8", "8Gi").obj(),
		metric("other", t0).usage("1", "1Gi").obj(),
	)
	incoming := pod("incoming", "2", "1Gi").Obj()
	big := pod("big", "4", "1Gi").Obj()
	fits := func(want bool, when string) {
		t.Helper()
		if got := e.filter(incoming, "n").IsSuccess(); got != want {
			t.Errorf("%s: incoming pod fits = %v, want %v", when, got, want)
		}
	}
	counted := func(node string, uid types.UID) func() bool {
		return func() bool { _, ok := e.pl.cache.counted(node)[uid]; return ok }
	}
	fits(true, "before anything")

	// Reserved: counted at once.
	e.schedule(big, "n")
	fits(false, "after Reserve")

	// Bound in the API: the informer confirms it; Unreserve can no longer
	// take it back.
	bound := big.DeepCopy()
	bound.Spec.NodeName = "n"
	bound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(5 * time.Second))}}
	if _, err := e.kube.CoreV1().Pods("ns").Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the bound pod counted as bound", func() bool { return e.pl.cache.counted("n")[big.UID] == false && counted("n", big.UID)() })
	e.fw.RunReservePluginsUnreserve(ctx, framework.NewCycleState(), big, "n")
	fits(false, "after a late Unreserve of a bound pod")

	// Reported by the agent at t0 + 6m, scheduled at t0 + 5 s, more than
	// the averaging window (300 s) before: its 3 cores are inside the 10
	// cores of node usage, nothing is added: 10 + 1.7 = 11.7 / 16 = 73 %
	// fits (counted twice it would be 10 + 3.4 + 1.7 = 94 %).
	// The scheduler sees the report as it is written (it ages reports
	// from then).
	e.clock.SetTime(t0.Add(6 * time.Minute))
	reported := metric("n", t0.Add(6*time.Minute)).usage("10", "8Gi").pod("ns", "big", extension.BandProd, "3", "1Gi").obj()
	if _, err := e.wlClient.WaterlineV1alpha1().NodeMetrics().Update(ctx, reported, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the new NodeMetric", func() bool { return e.metricSeen("n", t0.Add(6*time.Minute)) })
	e.clock.SetTime(t0.Add(6*time.Minute + 10*time.Second))
	fits(true, "once the NodeMetric reports the pod over a whole window")

	// Deleted: gone from the cache. Back to a NodeMetric reported at t0
	// that does not show the pod; the plugin never takes a NodeMetric
	// back in time, so the old one goes first (as if recreated).
	e.clock.SetTime(t0.Add(10 * time.Second))
	if err := e.wlClient.WaterlineV1alpha1().NodeMetrics().Delete(ctx, "n", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the NodeMetric deleted", func() bool { return e.metricGone("n") })
	if _, err := e.wlClient.WaterlineV1alpha1().NodeMetrics().Create(ctx, metric("n", t0).usage("8", "8Gi").obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the older NodeMetric", func() bool { return e.metricSeen("n", t0) })
	fits(false, "before the pod is deleted")
	if err := e.kube.CoreV1().Pods("ns").Delete(ctx, "big", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the deleted pod forgotten", func() bool { return !counted("n", big.UID)() })
	fits(true, "after the pod is deleted")

	// Reserved on n, but bound elsewhere (another scheduler won the race):
	// counted where it runs only.
	moved := pod("moved", "4", "1Gi").Obj()
	e.schedule(moved, "n")
	fits(false, "after Reserve of the moving pod")
	elsewhere := moved.DeepCopy()
	elsewhere.Spec.NodeName = "other"
	if _, err := e.kube.CoreV1().Pods("ns").Create(ctx, elsewhere, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the pod counted on the other node", counted("other", moved.UID))
	if counted("n", moved.UID)() {
		t.Errorf("pod bound to other is still counted on n")
	}
	fits(true, "after the pod was bound elsewhere")

	// Finished: not counted any more.
	done := elsewhere.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	if _, err := e.kube.CoreV1().Pods("ns").UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the finished pod forgotten", func() bool { return !counted("other", moved.UID)() })
}

func TestNodeMetricExpiresWithTime(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0).usage("1", "1Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	e.clock.SetTime(t0.Add(179 * time.Second))
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("179 s after the report: %v, want a fit", s)
	}
	e.clock.SetTime(t0.Add(180 * time.Second))
	if s := e.filter(p, "n"); s.Code() != fwk.UnschedulableAndUnresolvable || s.Reasons()[0] != ReasonNodeMetricExpired {
		t.Errorf("180 s after the report: %v, want refused as expired", s)
	}
	if got := e.scores(p, "n")["n"]; got != 0 {
		t.Errorf("score of a node with an expired NodeMetric = %d, want 0", got)
	}
}

// TestNodeMetricAfterAgentClockStepsBack: an agent whose clock ran an hour
// ahead reports once, then its clock is corrected. The informer delivers
// NodeMetric updates in the API server's order, so the corrected report is
// the newer one and the node is judged by it -- not by the future-stamped
// report, which would never expire and hide the node's load for an hour.
func TestNodeMetricAfterAgentClockStepsBack(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0.Add(time.Hour)).usage("1", "1Gi").obj())
	e.eventually("the future-stamped NodeMetric", func() bool { return e.metricSeen("n", t0.Add(time.Hour)) })
	e.updateMetric(metric("n", t0.Add(5*time.Second)).usage("15", "60Gi").obj())
	e.eventually("the corrected NodeMetric", func() bool { return e.metricSeen("n", t0.Add(5*time.Second)) })
	if s := e.filter(pod("p", "1", "1Gi").Obj(), "n"); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("node at 94 %% cpu by its latest report: %v, want refused", s)
	}
}

// TestNodeMetricAgedByTheSchedulersClock: the agent of node n runs a clock
// five minutes behind. The NodeMetric the scheduler lists at start is
// judged by its own updateTime (expired: nothing else tells its age), but
// every report the scheduler then sees arrive is fresh from then, for the
// expiry, whatever its updateTime: the node is not refused while its agent
// reports on time, and is once it stops.
func TestNodeMetricAgedByTheSchedulersClock(t *testing.T) {
	behind := -5 * time.Minute
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0.Add(behind)).usage("1", "1Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	if s := e.filter(p, "n"); s.Code() != fwk.UnschedulableAndUnresolvable || s.Reasons()[0] != ReasonNodeMetricExpired {
		t.Errorf("the listed report, 5 min old by its updateTime and without managedFields: %v, want refused as expired", s)
	}
	now := t0.Add(time.Minute)
	e.clock.SetTime(now)
	e.updateMetric(metric("n", now.Add(behind)).usage("1", "1Gi").obj())
	e.eventually("the next report", func() bool { return e.metricSeen("n", now.Add(behind)) })
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("a report just seen, stamped 5 min ago by the node's clock: %v, want a fit", s)
	}
	e.clock.SetTime(now.Add(179 * time.Second))
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("179 s after the scheduler saw the report: %v, want a fit", s)
	}
	e.clock.SetTime(now.Add(180 * time.Second))
	if s := e.filter(p, "n"); s.Code() != fwk.UnschedulableAndUnresolvable || s.Reasons()[0] != ReasonNodeMetricExpired {
		t.Errorf("180 s after the scheduler saw the report: %v, want refused as expired", s)
	}
}

// TestListedReportAgedByTheAPIServersClock: after a scheduler restart the
// reports it lists are aged from when the API server stored them (the
// agent's managedFields entry), not by the updateTime of a node whose clock
// is 5 minutes behind: a report stored 20 s ago fits until 160 s from now.
func TestListedReportAgedByTheAPIServersClock(t *testing.T) {
	nm := metric("n", t0.Add(-5*time.Minute)).usage("1", "1Gi").obj()
	nm.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "waterline-agent", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		Time: &metav1.Time{Time: t0.Add(-20 * time.Second)}, FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:updateTime":{}}}`),
	}}
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, nm)
	p := pod("p", "1", "1Gi").Obj()
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("a listed report stored 20 s ago, stamped 5 min ago by the node's clock: %v, want a fit", s)
	}
	e.clock.SetTime(t0.Add(159 * time.Second))
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("179 s after the API server stored the report: %v, want a fit", s)
	}
	e.clock.SetTime(t0.Add(160 * time.Second))
	if s := e.filter(p, "n"); s.Code() != fwk.UnschedulableAndUnresolvable || s.Reasons()[0] != ReasonNodeMetricExpired {
		t.Errorf("180 s after the API server stored the report: %v, want refused as expired", s)
	}
}

// TestEstimateDatesSkewedReportsWhenSeen: node n's clock runs 10 minutes
// ahead. A 4-core pod bound 10 s ago shows 0.3 cores in a report that
// arrives now, stamped 10 minutes from now. Dated by its updateTime, the
// report would cover the pod's whole averaging window and the pod's
// estimate (3.4) would be dropped: 9 + 1.7 = 67 % for a 2-core pod, a fit
// on a node about to carry 3 cores more. Dated when it arrived, the pod
// ran 10 s of the 300 s: nearly all of its estimate still counts, 87 %,
// refused.
func TestEstimateDatesSkewedReportsWhenSeen(t *testing.T) {
	placed := pod("placed", "4", "1Gi").Node("n").Condition(corev1.PodScheduled, corev1.ConditionTrue, "").Obj()
	placed.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0)
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, []*corev1.Pod{placed}, metric("n", t0).usage("9", "8Gi").obj())
	e.eventually("the placed pod counted", func() bool { _, ok := e.pl.cache.counted("n")[placed.UID]; return ok })
	ahead := t0.Add(10*time.Second + 10*time.Minute) // the plugin's clock is at t0 + 10 s
	e.updateMetric(metric("n", ahead).usage("9", "8Gi").pod("ns", "placed", extension.BandProd, "300m", "256Mi").obj())
	e.eventually("the report from ahead", func() bool { return e.metricSeen("n", ahead) })
	if s := e.filter(pod("incoming", "2", "1Gi").Obj(), "n"); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("a 2-core pod next to a 4-core pod bound 10 s ago: %v, want refused", s)
	}
}

func TestForcedEstimationWindowEnds(t *testing.T) {
	// A 4-core pod bound at t0 − 5m and reported at 3 cores: with a 10-minute
	// window after scheduling, its estimate (3.4) stands in for its usage
	// until t0 + 5m: 8 + (3.4 − 3) + 0.85 = 9.25 / 16 = 57.8 % → 58 refused
	// against a 57 % threshold; after the window 8 + 0.85 = 55 % fits.
	args := defaultArgs()
	args.EstimatedSecondsAfterPodScheduled = 600
	args.UsageThresholds["cpu"] = 57
	bound := pod("bound", "4", "1Gi").Node("n").
		Condition(corev1.PodScheduled, corev1.ConditionTrue, "").Obj()
	bound.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-5 * time.Minute))
	e := newEnv(t, args, []*corev1.Node{node16("n").Obj()}, []*corev1.Pod{bound},
		metric("n", t0).usage("8", "8Gi").pod("ns", "bound", extension.BandProd, "3", "1Gi").obj())
	e.eventually("the bound pod counted", func() bool { _, ok := e.pl.cache.counted("n")[bound.UID]; return ok })
	p := pod("p", "1", "1Gi").Obj()
	if s := e.filter(p, "n"); s.IsSuccess() {
		t.Errorf("inside the window: fits, want refused")
	}
	e.clock.SetTime(t0.Add(5*time.Minute + time.Second))
	if _, err := e.wlClient.WaterlineV1alpha1().NodeMetrics().Update(e.ctx, metric("n", t0.Add(5*time.Minute)).usage("8", "8Gi").pod("ns", "bound", extension.BandProd, "3", "1Gi").obj(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the new NodeMetric", func() bool { return e.metricSeen("n", t0.Add(5*time.Minute)) })
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("after the window: %v, want a fit", s)
	}
}

func TestSignPod(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil)
	sign := func(p *corev1.Pod) any {
		f, s := e.pl.SignPod(e.ctx, p)
		if !s.IsSuccess() || len(f) != 1 {
			t.Fatalf("SignPod = %v, %v", f, s)
		}
		return f[0].Value
	}
	a, b, c := sign(pod("a", "1", "1Gi").Obj()), sign(pod("b", "1", "1Gi").Obj()), sign(pod("c", "2", "1Gi").Obj())
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("equal pods sign differently:\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Errorf("pods with different estimates sign the same: %v", a)
	}
}

func TestNewRejectsInvalidArgs(t *testing.T) {
	bad := defaultArgs()
	bad.NodeMetricExpirationSeconds = 0
	bad.UsageThresholds["cpu"] = 120
	_, err := argsOf(bad)
	for _, want := range []string{"nodeMetricExpirationSeconds", "usageThresholds[cpu]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("argsOf(invalid) = %v, want an error naming %s", err, want)
		}
	}
	if _, err := argsOf(&config.BandPreemptionArgs{}); err == nil {
		t.Errorf("argsOf(BandPreemptionArgs) succeeded, want a type error")
	}
	if a, err := argsOf(nil); err != nil || a.NodeMetricExpirationSeconds != 180 {
		t.Errorf("argsOf(nil) = %+v, %v, want the defaults", a, err)
	}
}

func TestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	kube := kubefake.NewClientset()
	informerFactory := informers.NewSharedInformerFactory(kube, 0)
	fh, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithInformerFactory(informerFactory))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := newPlugin(ctx, defaultArgs(), fh, newWaterlineClient(), testingclock.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-pl.Stopped():
		t.Fatal("stopped before its context ended")
	default:
	}
	cancel()
	select {
	case <-pl.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("NodeMetric informers still running 10 s after the context ended")
	}
}

func TestNewFailsWhenNodeMetricsCannotBeListed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	wlClient := newWaterlineClient()
	wlClient.PrependReactor("list", "nodemetrics", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server could not find the requested resource")
	})
	fh, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newPlugin(ctx, defaultArgs(), fh, wlClient, testingclock.NewFakeClock(t0))
	if err == nil || !strings.Contains(err.Error(), "NodeMetric CRD") {
		t.Errorf("newPlugin without NodeMetrics = %v, want an error that points at the CRD", err)
	}
}

func TestCoreSpecCarriesEveryArg(t *testing.T) {
	args := &config.LoadAwareArgs{
		NodeMetricExpirationSeconds:          120,
		EnableScheduleWhenNodeMetricsExpired: true,
		ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 2},
		DominantResourceWeight:               3,
		UsageThresholds:                      map[corev1.ResourceName]int64{"cpu": 70},
		ProdUsageThresholds:                  map[corev1.ResourceName]int64{"cpu": 55},
		ProdUsageIncludeSys:                  true,
		ProdUsageIncludePrediction:           true,
		ScoreAccordingProdUsage:              true,
		EstimatedScalingFactors:              map[corev1.ResourceName]int64{"cpu": 80},
		EstimatedSecondsAfterPodScheduled:    30,
		EstimatedSecondsAfterInitialized:     20,
		AllowCustomizeEstimation:             true,
		Aggregated: &config.LoadAwareAggregatedArgs{
			UsageThresholds:         map[corev1.ResourceName]int64{"cpu": 75},
			UsageAggregationType:    v1alpha1.AggregationP95,
			UsageAggregatedDuration: metav1.Duration{Duration: 5 * time.Minute},
			ScoreAggregationType:    v1alpha1.AggregationAvg,
			ScoreAggregatedDuration: metav1.Duration{Duration: 10 * time.Minute},
		},
		SupportedResources: []corev1.ResourceName{"nvidia.com/gpu"},
	}
	want := nodeload.Spec{
		NodeMetricExpiration:                 120 * time.Second,
		EnableScheduleWhenNodeMetricsExpired: true,
		ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 2},
		DominantResourceWeight:               3,
		UsageThresholds:                      map[corev1.ResourceName]int64{"cpu": 70},
		ProdUsageThresholds:                  map[corev1.ResourceName]int64{"cpu": 55},
		ProdUsageIncludeSys:                  true,
		ProdUsageIncludePrediction:           true,
		ScoreAccordingProdUsage:              true,
		EstimatedScalingFactors:              map[corev1.ResourceName]int64{"cpu": 80},
		EstimatedAfterPodScheduled:           30 * time.Second,
		EstimatedAfterInitialized:            20 * time.Second,
		AllowCustomizeEstimation:             true,
		AggregatedUsageThresholds:            map[corev1.ResourceName]int64{"cpu": 75},
		UsageAggregation:                     nodeload.Aggregation{Type: v1alpha1.AggregationP95, Duration: 5 * time.Minute},
		ScoreAggregation:                     nodeload.Aggregation{Type: v1alpha1.AggregationAvg, Duration: 10 * time.Minute},
		SupportedResources:                   []corev1.ResourceName{"nvidia.com/gpu"},
	}
	if diff := cmp.Diff(want, CoreSpec(args)); diff != "" {
		t.Errorf("CoreSpec (-want +got):\n%s", diff)
	}
}

func TestBadAnnotationIsReportedOnce(t *testing.T) {
	node := node16("n").Annotation(extension.AnnotationRawAllocatable, `{"cpu":"-32"}`).Obj()
	e := newEnv(t, nil, []*corev1.Node{node}, nil, metric("n", t0).usage("1", "1Gi").obj())
	for range 3 {
		e.filter(pod("p", "1", "1Gi").Obj(), "n")
	}
	var got []string
	for len(e.events.Events) > 0 {
		got = append(got, <-e.events.Events)
	}
	want := []string{`Warning InvalidAnnotation LoadAware ignores the annotation: ignoring annotation waterline.dev/raw-allocatable="{\"cpu\":\"-32\"}" of node n: cpu: -32 is not positive`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

// TestScoreOnlyProfileUsesPreScore: a profile may enable LoadAware for
// scoring only. PreScore then estimates the pod once for the cycle, as
// NodeResourcesFit's does; Score without PreScore is an error, not a
// silent estimate per node.
func TestScoreOnlyProfileUsesPreScore(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("cold").Obj(), node16("hot").Obj()}, nil,
		metric("cold", t0).usage("2", "8Gi").obj(), metric("hot", t0).usage("12", "8Gi").obj())
	incoming := pod("p", "1", "1Gi").Obj()
	infos := []fwk.NodeInfo{e.nodeInfo("cold"), e.nodeInfo("hot")}

	state := framework.NewCycleState() // no PreFilter: a Score-only profile
	if s := e.pl.PreScore(e.ctx, state, incoming, infos); !s.IsSuccess() {
		t.Fatalf("PreScore = %v", s)
	}
	cold, s := e.pl.Score(e.ctx, state, incoming, infos[0])
	if !s.IsSuccess() {
		t.Fatalf("Score = %v", s)
	}
	hot, _ := e.pl.Score(e.ctx, state, incoming, infos[1])
	if cold <= hot {
		t.Errorf("Score cold = %d, hot = %d; want the cold node ahead", cold, hot)
	}

	if _, s := e.pl.Score(e.ctx, framework.NewCycleState(), incoming, infos[0]); s.Code() != fwk.Error {
		t.Errorf("Score without PreScore = %v, want an Error status", s)
	}
	if s := e.pl.Filter(e.ctx, framework.NewCycleState(), incoming, infos[0]); s.Code() != fwk.Error {
		t.Errorf("Filter without PreFilter = %v, want an Error status", s)
	}
	// The state PreScore just wrote is remembered for Score (stateOf), not
	// for Filter: that cycle had no PreFilter.
	if s := e.pl.Filter(e.ctx, state, incoming, infos[0]); s.Code() != fwk.Error {
		t.Errorf("Filter in the Score-only cycle = %v, want an Error status", s)
	}
}

// TestStateOfClonesAndOtherCycles: Filter and Score give the same answers
// on the CycleState PreFilter and PreScore wrote (remembered by the
// plugin) as on a clone of it (read from the clone, as the scheduler's
// nominated-pods pass and preemption make), and an older cycle's state is
// still its own.
func TestStateOfClonesAndOtherCycles(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("cold").Obj(), node16("hot").Obj()}, nil,
		metric("cold", t0).usage("2", "8Gi").obj(), metric("hot", t0).usage("14", "8Gi").obj())
	small, big := pod("small", "1", "1Gi").Obj(), pod("big", "4", "1Gi").Obj()
	cycle := func(p *corev1.Pod) fwk.CycleState {
		state := framework.NewCycleState()
		if _, s := e.pl.PreFilter(e.ctx, state, p, []fwk.NodeInfo{e.nodeInfo("cold"), e.nodeInfo("hot")}); !s.IsSuccess() {
			t.Fatal(s)
		}
		if s := e.pl.PreScore(e.ctx, state, p, []fwk.NodeInfo{e.nodeInfo("cold")}); !s.IsSuccess() {
			t.Fatal(s)
		}
		return state
	}
	older := cycle(big)
	state := cycle(small)
	for name, st := range map[string]fwk.CycleState{"remembered": state, "clone": state.Clone()} {
		if s := e.pl.Filter(e.ctx, st, small, e.nodeInfo("hot")); s.IsSuccess() {
			t.Errorf("%s state: small pod fits hot (14 + 0.85 of 16 cores), want refused", name)
		}
		if s := e.pl.Filter(e.ctx, st, small, e.nodeInfo("cold")); !s.IsSuccess() {
			t.Errorf("%s state: small pod on cold: %v, want a fit", name, s)
		}
	}
	want, _ := e.pl.Score(e.ctx, state, small, e.nodeInfo("cold"))
	if got, _ := e.pl.Score(e.ctx, state.Clone(), small, e.nodeInfo("cold")); got != want {
		t.Errorf("Score on a clone = %d, on the remembered state %d", got, want)
	}
	// The big pod's cycle (4 cores, estimated 3.4) scores cold lower.
	if got, _ := e.pl.Score(e.ctx, older, big, e.nodeInfo("cold")); got >= want {
		t.Errorf("Score of the big pod's older cycle = %d, want below the small pod's %d", got, want)
	}
}
