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

package predictor

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// ignoreDetail compares results by what the status shows.
var ignoreDetail = cmpopts.IgnoreFields(Result{}, "Time", "Model", "Message", "BandPeaks", "ReclaimRatioPercent")

// TestColdStart: a Prod pod younger than coldStartSeconds, or without
// usage history, counts at its request; PredictionReady says why.
//
// Setup (N = 2, no safety margin, no decay): pod A (4 cores, 2Gi
// requested, started 2 h ago) uses 1 core in the first 30 s window and 3 in
// the second, 1Gi; pod B (2 cores, 1Gi) uses 0.5 core and 512Mi when it has
// a cgroup; the system uses 1 core and 256Mi. Predicted after the two
// windows (t0+60s) unless said otherwise.
func TestColdStart(t *testing.T) {
	const (
		aReq = "4"
		bReq = "2"
	)
	for _, tc := range []struct {
		name   string
		b      func(now time.Time) *podBuilder
		bLoads bool
		margin int32
		run    time.Duration
		want   Result
	}{{
		// Node level: windows A+B+sys = 2.5, 4.5 → mean 3.5, sd 1 → 5.5,
		// + B's request 2 = 7.5. Pod level: A 2+2·1 = 4, B 2 (request),
		// system 1 → 7. max = 7.5.
		// Memory: node 1Gi+512Mi+256Mi = 1792Mi, sd 0, + 1Gi = 2816Mi;
		// pods 1Gi + 1Gi + 256Mi = 2304Mi.
		// Requests 6 cores, 3Gi: reclaimable 0 and 3072Mi − 2816Mi = 256Mi.
		name:   "pod in cold start counts at its request",
		b:      func(now time.Time) *podBuilder { return makePod("b").started(now.Add(-5 * time.Minute)) },
		bLoads: true,
		run:    60 * time.Second,
		want: Result{
			ProdPeak: Amounts{7500, 2816 * mi}, ProdRequests: Amounts{6000, 3 * gi}, ProdReclaimable: Amounts{0, 256 * mi},
			Reason: ReasonColdStart, ProdPods: 2, ColdStartPods: 1,
		},
	}, {
		// Node 5.5; pods 4 + 0.5 + 1 = 5.5. Memory 1792Mi both ways.
		name:   "pod past its cold start counts at its history",
		b:      func(now time.Time) *podBuilder { return makePod("b").started(now.Add(-15 * time.Minute)) },
		bLoads: true,
		run:    60 * time.Second,
		want: Result{
			ProdPeak: Amounts{5500, 1792 * mi}, ProdRequests: Amounts{6000, 3 * gi}, ProdReclaimable: Amounts{500, 1280 * mi},
			Ready: true, Reason: ReasonPredicted, ProdPods: 2,
		},
	}, {
		// 5500m × 1.1 = 6050m; 1792Mi = 1879048192 B × 1.1 = 2066953011.2 B.
		name:   "safety margin on top",
		b:      func(now time.Time) *podBuilder { return makePod("b").started(now.Add(-15 * time.Minute)) },
		bLoads: true,
		margin: 10,
		run:    60 * time.Second,
		want: Result{
			ProdPeak: Amounts{6050, 2066953011}, ProdRequests: Amounts{6000, 3 * gi}, ProdReclaimable: Amounts{0, 3*gi - 2066953011},
			Ready: true, Reason: ReasonPredicted, ProdPods: 2,
		},
	}, {
		// B has no cgroup: node A+sys = 2, 4 → 3 + 2 = 5, + 2 = 7; pods
		// 4 + 2 + 1 = 7. Memory: node 1280Mi + 1Gi = 2304Mi; pods
		// 1Gi + 1Gi + 256Mi = 2304Mi.
		name: "old pod without usage history counts at its request",
		b:    func(now time.Time) *podBuilder { return makePod("b").started(now.Add(-2 * time.Hour)) },
		run:  60 * time.Second,
		want: Result{
			ProdPeak: Amounts{7000, 2304 * mi}, ProdRequests: Amounts{6000, 3 * gi}, ProdReclaimable: Amounts{0, 768 * mi},
			Reason: ReasonColdStart, ProdPods: 2, ColdStartPods: 1,
		},
	}, {
		name: "pod not started yet counts at its request",
		b:    func(now time.Time) *podBuilder { return makePod("b").notStarted(now.Add(-time.Minute)) },
		run:  60 * time.Second,
		want: Result{
			ProdPeak: Amounts{7000, 2304 * mi}, ProdRequests: Amounts{6000, 3 * gi}, ProdReclaimable: Amounts{0, 768 * mi},
			Reason: ReasonColdStart, ProdPods: 2, ColdStartPods: 1,
		},
	}, {
		// First cycle, nothing fed yet: Σ requests, 6 cores and 3Gi.
		name:   "no history at all: requests",
		b:      func(now time.Time) *podBuilder { return makePod("b").started(now.Add(-15 * time.Minute)) },
		bLoads: true,
		run:    time.Second,
		want: Result{
			ProdPeak: Amounts{6000, 3 * gi}, ProdRequests: Amounts{6000, 3 * gi}, ProdReclaimable: Amounts{0, 0},
			Reason: ReasonNoHistory, ProdPods: 2, ColdStartPods: 2,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			policy := noDecay(v1alpha1.PredictPolicy{Model: v1alpha1.PredictNSigmaV2, NSigma: ptr.To[int32](2),
				SafetyMarginPercent: ptr.To(tc.margin), ColdStartSeconds: ptr.To[int64](600)})
			e := newEnv(t, Config{}, policy)
			a := makePod("a").priority(9500).req(aReq, "2Gi").started(t0.Add(-2 * time.Hour)).obj()
			b := tc.b(t0.Add(tc.run)).priority(9500).req(bReq, "1Gi").obj()
			e.pods = []*corev1.Pod{a, b}
			e.load = func(now time.Time) load {
				aCPU := 1.0
				if window(now) == 2 {
					aCPU = 3
				}
				l := load{nodeCPU: aCPU + 1, nodeMemory: gi + 256*mi, pods: []podLoad{{a, aCPU, gi}}}
				if tc.bLoads {
					l.nodeCPU += 0.5
					l.nodeMemory += 512 * mi
					l.pods = append(l.pods, podLoad{b, 0.5, 512 * mi})
				}
				return l
			}
			e.run(tc.run)
			got := latest(t, e.p)
			if diff := cmp.Diff(tc.want, got, ignoreDetail); diff != "" {
				t.Errorf("Prediction (-want +got):\n%s", diff)
			}
			if !got.Time.Equal(t0.Add(tc.run)) {
				t.Errorf("Prediction time t0+%s, want t0+%s", got.Time.Sub(t0), tc.run)
			}
		})
	}
}

// TestColdStartMessage: the condition's message says how many pods stand
// in with their requests, and for how long.
func TestColdStartMessage(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	a := makePod("a").priority(9500).req("1", "1Gi").started(t0.Add(-10 * time.Minute)).obj()
	e.pods = []*corev1.Pod{a}
	e.load = func(time.Time) load { return load{nodeCPU: 1, nodeMemory: gi, pods: []podLoad{{a, 0.5, gi / 2}}} }
	e.run(60 * time.Second)
	got := latest(t, e.p)
	want := "1 of 1 Prod pods started less than 1h0m0s ago or have no usage history yet: their requests stand in for their usage"
	if got.Reason != ReasonColdStart || got.Message != want {
		t.Errorf("Reason %q, message %q; want %q, %q", got.Reason, got.Message, ReasonColdStart, want)
	}
}

// TestPodsThatGoAreForgotten: a Prod pod that leaves the node, or the
// Prod band, leaves the trackers with its history and its request.
func TestPodsThatGoAreForgotten(t *testing.T) {
	policy := noDecay(v1alpha1.PredictPolicy{Model: v1alpha1.PredictNSigmaV2, SafetyMarginPercent: ptr.To[int32](0), ColdStartSeconds: ptr.To[int64](0)})
	e := newEnv(t, Config{}, policy)
	a := makePod("a").priority(9500).req("2", "2Gi").obj()
	b := makePod("b").priority(9500).req("1", "1Gi").obj()
	e.pods = []*corev1.Pod{a, b}
	loads := map[string]podLoad{"a": {a, 1, gi}, "b": {b, 0.5, gi / 2}}
	e.load = func(time.Time) load {
		l := load{nodeCPU: 0.25, nodeMemory: gi / 4}
		for _, p := range e.pods {
			if pl, ok := loads[p.Name]; ok && extension.BandOf(p) == extension.BandProd {
				l.pods = append(l.pods, pl)
				l.nodeCPU += pl.cpu
				l.nodeMemory += pl.memory
			}
		}
		return l
	}
	tracked := func() []string {
		e.p.mu.Lock()
		defer e.p.mu.Unlock()
		var out []string
		for id := range e.p.tracked {
			if e.p.res[cpuIndex].prod.Pod(id) != nil && e.p.res[memoryIndex].prod.Pod(id) != nil {
				out = append(out, id)
			}
		}
		if n := e.p.res[cpuIndex].prod.Len(); n != len(e.p.tracked)+1 {
			t.Errorf("The cpu tracker holds %d pods, want the %d tracked and the system", n, len(e.p.tracked))
		}
		return out
	}
	sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })

	e.run(60 * time.Second)
	// Steady usage, so the peak is the usage: a 1 + b 0.5 + system 0.25
	// (cores, and Gi); reclaimable 3 − 1.75.
	if diff := cmp.Diff(Result{ProdPeak: Amounts{1750, gi + gi/2 + gi/4}, ProdRequests: Amounts{3000, 3 * gi},
		ProdReclaimable: Amounts{1250, gi + gi/4}, Ready: true, Reason: ReasonPredicted, ProdPods: 2}, latest(t, e.p), ignoreDetail); diff != "" {
		t.Errorf("Prediction with both pods (-want +got):\n%s", diff)
	}

	e.pods = []*corev1.Pod{a} // b deleted
	e.run(60 * time.Second)
	if diff := cmp.Diff([]string{"uid-a"}, tracked(), sorted); diff != "" {
		t.Errorf("Tracked pods after b left (-want +got):\n%s", diff)
	}
	got := latest(t, e.p)
	if got.ProdRequests != (Amounts{2000, 2 * gi}) || got.ProdPods != 1 {
		t.Errorf("After b left: requests %v, %d pods; want cpu=2000m memory=%d, 1 pod", got.ProdRequests, got.ProdPods, 2*gi)
	}

	a = makePod("a").priority(9500).band(extension.BandBatch).req("2", "2Gi").obj() // relabelled
	e.pods = []*corev1.Pod{a}
	e.run(30 * time.Second)
	if diff := cmp.Diff([]string(nil), tracked(), sorted); diff != "" {
		t.Errorf("Tracked pods after a left the Prod band (-want +got):\n%s", diff)
	}
	if got := latest(t, e.p); got.ProdRequests != (Amounts{}) || got.ProdPods != 0 {
		t.Errorf("After a left the Prod band: requests %v, %d pods; want none", got.ProdRequests, got.ProdPods)
	}
}

// TestEarlyReportReason checks the decision table of fast reporting.
func TestEarlyReportReason(t *testing.T) {
	at := func(cpu, mem int64, ready bool) *Result {
		return &Result{ProdPeak: Amounts{cpu, mem}, Ready: ready}
	}
	const force = 600 * time.Second
	lastAt := t0
	for _, tc := range []struct {
		name      string
		cur, last *Result
		since     time.Duration
		threshold int64
		want      string
	}{
		{"nothing reported yet", at(1000, gi, true), nil, 0, 5, EarlyFirst},
		{"unchanged", at(1000, gi, true), at(1000, gi, true), 10 * time.Second, 5, ""},
		// 5 % of 1000m is 50m: 1050m is not more than that, 1051m is.
		{"cpu up by exactly the threshold", at(1050, gi, true), at(1000, gi, true), time.Minute, 5, ""},
		{"cpu up by more than the threshold", at(1051, gi, true), at(1000, gi, true), time.Minute, 5, EarlyMoved},
		{"cpu down by more than the threshold", at(949, gi, true), at(1000, gi, true), time.Minute, 5, EarlyMoved},
		{"cpu down by exactly the threshold", at(950, gi, true), at(1000, gi, true), time.Minute, 5, ""},
		// 5 % of 1Gi = 53687091.2 B.
		{"memory up by 53687091 B", at(1000, gi+53687091, true), at(1000, gi, true), time.Minute, 5, ""},
		{"memory up by 53687092 B", at(1000, gi+53687092, true), at(1000, gi, true), time.Minute, 5, EarlyMoved},
		{"from zero", at(1, gi, true), at(0, gi, true), time.Minute, 5, EarlyMoved},
		{"threshold 0: any change", at(1001, gi, true), at(1000, gi, true), time.Minute, 0, EarlyMoved},
		{"readiness changed", at(1000, gi, false), at(1000, gi, true), time.Minute, 5, EarlyReadiness},
		{"force update due", at(1000, gi, true), at(1000, gi, true), force, 5, EarlyForce},
		{"force update not yet due", at(1000, gi, true), at(1000, gi, true), force - time.Second, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, detail := earlyReportReason(tc.cur, tc.last, lastAt, lastAt.Add(tc.since), tc.threshold, force)
			if got != tc.want {
				t.Errorf("earlyReportReason = %q (%s), want %q", got, detail, tc.want)
			}
		})
	}
}

// TestEarlyReports: the module asks for a report at its first prediction,
// when PredictionReady changes, when forceUpdateSeconds passed since the
// last report, and when the peak moved by more than the diff threshold --
// and not otherwise. The emulated reporter writes at once when asked and
// never on its own, so every report here is an early one.
//
// Model NSigmaV1 with N = 0, no margin, no decay: the peak is the mean
// of the node level's 30 s windows. The node level is 4 cores in windows
// 1–22, 6 in window 23 and 14 from window 24 on; checks run every 20 s
// from t0+1s.
func TestEarlyReports(t *testing.T) {
	policy := noDecay(v1alpha1.PredictPolicy{Model: v1alpha1.PredictNSigmaV1, NSigma: ptr.To[int32](0),
		SafetyMarginPercent: ptr.To[int32](0), ColdStartSeconds: ptr.To[int64](0),
		ResourceDiffThresholdPercent: ptr.To[int64](5), ForceUpdateSeconds: ptr.To[int64](600)})
	e := newEnv(t, Config{}, policy)
	e.writeOnRequest = true
	a := makePod("a").priority(9500).req("8", "8Gi").obj()
	e.pods = []*corev1.Pod{a}
	e.load = func(now time.Time) load {
		cpu := 4.0
		switch w := window(now); {
		case w == 23:
			cpu = 6
		case w >= 24:
			cpu = 14
		}
		return load{nodeCPU: cpu, nodeMemory: 4 * gi, pods: []podLoad{{a, cpu, 4 * gi}}}
	}
	counts := func() map[string]float64 {
		out := map[string]float64{}
		for _, r := range []string{EarlyFirst, EarlyForce, EarlyReadiness, EarlyMoved} {
			if v := testutil.ToFloat64(e.p.metrics.earlyReports.WithLabelValues(r)); v > 0 {
				out[r] = v
			}
		}
		return out
	}
	for _, step := range []struct {
		name     string
		until    time.Duration
		want     map[string]float64
		reported int64 // status.prodPeak cpu, millicores
	}{
		// t0+1s: nothing fed, the request (8 cores) stands in.
		{"first prediction", time.Second, map[string]float64{EarlyFirst: 1}, 8000},
		// Window 1 fed at t0+30s: Ready; the check at t0+41s reports.
		{"history makes it ready", 45 * time.Second, map[string]float64{EarlyFirst: 1, EarlyReadiness: 1}, 4000},
		// Steady 4 cores: nothing until 600 s after t0+41s.
		{"steady", 635 * time.Second, map[string]float64{EarlyFirst: 1, EarlyReadiness: 1}, 4000},
		// The check at t0+641s.
		{"force update", 645 * time.Second, map[string]float64{EarlyFirst: 1, EarlyReadiness: 1, EarlyForce: 1}, 4000},
		// Window 23 (6 cores): mean (22·4 + 6)/23 = 4.087, +2.2 %.
		{"small move", 715 * time.Second, map[string]float64{EarlyFirst: 1, EarlyReadiness: 1, EarlyForce: 1}, 4000},
		// Window 24 (14 cores): (22·4 + 6 + 14)/24 = 4.5, +12.5 %.
		{"large move", 725 * time.Second, map[string]float64{EarlyFirst: 1, EarlyReadiness: 1, EarlyForce: 1, EarlyMoved: 1}, 4500},
	} {
		e.run(t0.Add(step.until).Sub(e.clock.Now()))
		if diff := cmp.Diff(step.want, counts()); diff != "" {
			t.Errorf("%s: early reports by reason (-want +got):\n%s", step.name, diff)
		}
		if got := e.status.ProdPeak.Cpu().MilliValue(); got != step.reported {
			t.Errorf("%s: reported prodPeak cpu %dm, want %dm", step.name, got, step.reported)
		}
		if e.reports.n != int(sum(step.want)) {
			t.Errorf("%s: %d RequestReport calls, want %v", step.name, e.reports.n, sum(step.want))
		}
	}
	if got := latest(t, e.p).ProdPeak.MilliCPU; got != 4500 {
		t.Errorf("Latest prodPeak cpu %dm, want 4500m", got)
	}
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// TestContributeStatus: the status gets the prediction in the API's units
// and the PredictionReady condition; before the first prediction nothing
// is touched (the previous agent's values stay until the first cycle).
func TestContributeStatus(t *testing.T) {
	policy := noDecay(v1alpha1.PredictPolicy{SafetyMarginPercent: ptr.To[int32](0), ColdStartSeconds: ptr.To[int64](0)})
	e := newEnv(t, Config{}, policy)
	a := makePod("a").priority(9500).req("2", "2Gi").obj()
	e.pods = []*corev1.Pod{a}
	e.load = func(time.Time) load {
		return load{nodeCPU: 1.25, nodeMemory: gi, pods: []podLoad{{a, 1, 768 * mi}}}
	}
	old := metav1.NewTime(t0.Add(-time.Hour))
	before := v1alpha1.NodeMetricStatus{
		ProdPeak:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		PredictionTime: &old,
		Conditions:     []metav1.Condition{{Type: v1alpha1.ConditionPredictionReady, Status: metav1.ConditionTrue, Reason: ReasonPredicted, LastTransitionTime: old}},
	}
	st := *before.DeepCopy()
	e.p.ContributeStatus(&st)
	if diff := cmp.Diff(before, st); diff != "" {
		t.Errorf("Status before the first prediction changed (-want +got):\n%s", diff)
	}

	e.run(time.Second) // NoHistory: requests
	e.p.ContributeStatus(&st)
	e.run(59 * time.Second) // two windows: 1.25 cores, 1Gi
	e.p.ContributeStatus(&st)
	now := metav1.NewTime(t0.Add(60 * time.Second))
	want := v1alpha1.NodeMetricStatus{
		ProdPeak:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1250m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		ProdReclaimable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		PredictionTime:  &now,
		// False at t0+1s, True since the first window (t0+30s).
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPredictionReady, Status: metav1.ConditionTrue, Reason: ReasonPredicted,
			Message: "NSigmaV2(n=10) predicts from the usage history of the node and its 1 Prod pods", LastTransitionTime: metav1.NewTime(t0.Add(30 * time.Second))}},
	}
	if diff := cmp.Diff(want, st, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPredictionReady); c == nil || !strings.Contains(c.Message, "NSigmaV2") {
		t.Errorf("PredictionReady condition %+v does not name the model", c)
	}
}

// TestPolicyChange: a model change rebuilds the predictor and keeps the
// histograms; a half-life change rebuilds the histograms from what the
// metric cache holds; an invalid policy keeps the last valid one.
func TestPolicyChange(t *testing.T) {
	policy := noDecay(v1alpha1.PredictPolicy{Model: v1alpha1.PredictNSigmaV2, SafetyMarginPercent: ptr.To[int32](0), ColdStartSeconds: ptr.To[int64](0)})
	e := newEnv(t, Config{}, policy)
	a := makePod("a").priority(9500).req("4", "2Gi").obj()
	e.pods = []*corev1.Pod{a}
	e.load = func(time.Time) load { return load{nodeCPU: 2.2, nodeMemory: gi, pods: []podLoad{{a, 2, gi}}} }
	nodeWeight := func() float64 {
		return statsOf(e.p, cpuIndex, func(rs *resourceState) histStats { return rs.prod.Node() }).Weight
	}
	e.run(90 * time.Second)
	if w := nodeWeight(); w != 3 {
		t.Fatalf("Node histogram weight %g after 3 windows, want 3", w)
	}

	// Borg-default: 4 cores ÷ 1.1 = 3.636 → 3636m; history kept.
	e.nm.Spec.PredictPolicy.Model = v1alpha1.PredictBorgDefault
	e.run(time.Second)
	got := latest(t, e.p)
	if got.Model != "BorgDefault(a=1.1)" || got.ProdPeak.MilliCPU != 3636 {
		t.Errorf("After the model change: %s predicts %dm, want BorgDefault(a=1.1) 3636m", got.Model, got.ProdPeak.MilliCPU)
	}
	if w := nodeWeight(); w != 3 {
		t.Errorf("Node histogram weight %g after a model change, want the 3 windows kept", w)
	}

	// An invalid policy (percentile 0 cannot be built) is ignored.
	e.nm.Spec.PredictPolicy.Percentile = ptr.To[int32](0)
	e.run(time.Second)
	if got := latest(t, e.p); got.Model != "BorgDefault(a=1.1)" {
		t.Errorf("After an invalid policy the model is %s, want BorgDefault(a=1.1) kept", got.Model)
	}
	e.nm.Spec.PredictPolicy.Percentile = nil

	// A half-life of 1 h: new histograms, filled at once from the cache's
	// 92 s: windows ending t0+30s, 60s, 90s (the 4th is not complete).
	e.nm.Spec.PredictPolicy.Model = v1alpha1.PredictNSigmaV2
	e.nm.Spec.PredictPolicy.HalfLifeSeconds = ptr.To[int64](3600)
	e.run(time.Second)
	e.p.mu.Lock()
	hl := e.p.res[cpuIndex].layout.Config().HalfLife
	n := e.p.res[cpuIndex].prod.Node()
	mean, weight := n.Mean(), n.TotalWeight(t0.Add(90*time.Second))
	e.p.mu.Unlock()
	// Weights at t0+90s: 2^(−60/3600) + 2^(−30/3600) + 1 = 2.9827.
	if hl != time.Hour || mean < 2.2-1e-6 || mean > 2.2+1e-6 || weight < 2.982 || weight > 2.983 {
		t.Errorf("After the half-life change: half-life %s, node mean %g, weight %g; want 1h, 2.2, 2.9827", hl, mean, weight)
	}
	if got := latest(t, e.p); !got.Ready || got.ProdPeak.MilliCPU != 2200 {
		t.Errorf("After the half-life change: ready %t, peak %dm; want true, 2200m (history refilled from the cache)", got.Ready, got.ProdPeak.MilliCPU)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want field.ErrorList
	}{
		{"defaults", Config{}, nil},
		{"all bad", Config{UpdateInterval: 500 * time.Millisecond, CheckInterval: time.Hour, CheckpointPath: "state/predictor.json", CheckpointInterval: time.Second},
			field.ErrorList{
				field.Invalid(field.NewPath("p", "updateInterval"), "500ms", "must be between 1s and 10m"),
				field.Invalid(field.NewPath("p", "checkInterval"), "1h0m0s", "must be between 1s and 10m"),
				field.Invalid(field.NewPath("p", "checkpointPath"), "state/predictor.json", "must be an absolute path"),
				field.Invalid(field.NewPath("p", "checkpointInterval"), "1s", "must be between 10s and 1h"),
			}},
		{"bounds", Config{UpdateInterval: time.Second, CheckInterval: 10 * time.Minute, CheckpointPath: "/var/lib/x.json", CheckpointInterval: time.Hour}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.SetDefaults()
			if diff := cmp.Diff(tc.want, tc.cfg.Validate(field.NewPath("p"))); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := New(Config{}, Deps{}); err == nil || !strings.Contains(err.Error(), "clock") {
		t.Errorf("New without a clock: %v, want an error naming the clock", err)
	}
}
