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
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/waterline-dev/waterline/apis/extension"
)

// The scheduling cycle finds a node's load through an index of the
// scheduler's NodeInfo objects built in PreFilter (cache.go). These tests
// hold it to the verdicts a lookup by name gives whenever the index is
// behind the cache or the NodeInfo is not the one indexed.

// preFiltered runs PreFilter for the pod and returns the cycle state.
func (e *env) preFiltered(pod *corev1.Pod) fwk.CycleState {
	e.t.Helper()
	state := framework.NewCycleState()
	if _, s, _ := e.fw.RunPreFilterPlugins(e.ctx, state, pod); !s.IsSuccess() {
		e.t.Fatalf("PreFilter: %v", s)
	}
	return state
}

// TestNodeForgottenAndKnownAgain: a node whose NodeMetric is deleted (and
// that has no pods) leaves the cache; when its agent reports again, the
// node is judged by the new report, not by the entry an older index still
// holds.
func TestNodeForgottenAndKnownAgain(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0).usage("15", "8Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	if s := e.filter(p, "n"); s.IsSuccess() {
		t.Fatalf("at 15 of 16 cores used: fits, want refused")
	}
	if err := e.wlClient.WaterlineV1alpha1().NodeMetrics().Delete(e.ctx, "n", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the node forgotten", func() bool { return e.pl.cache.get("n") == nil })
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Errorf("without a NodeMetric: %v, want a fit (load unknown)", s)
	}
	e.updateMetric(metric("n", t0).usage("15", "8Gi").obj())
	e.eventually("the new NodeMetric", func() bool { return e.metricSeen("n", t0) })
	if s := e.filter(p, "n"); s.IsSuccess() {
		t.Errorf("reported again at 15 of 16 cores: fits, want refused")
	}
}

// TestNodeInfoCopiesAndReusedNodeInfos: Filter and Score give the same
// answers for a copy of a NodeInfo (the scheduler makes one to add
// nominated pods, preemption to remove victims) as for the indexed one,
// and judge the node a NodeInfo holds now, not the one it held when it was
// indexed.
func TestNodeInfoCopiesAndReusedNodeInfos(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("cold").Obj(), node16("hot").Obj()}, nil,
		metric("cold", t0).usage("2", "8Gi").obj(), metric("hot", t0).usage("15", "8Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	state := e.preFiltered(p)
	for _, tc := range []struct {
		node string
		fits bool
	}{{"cold", true}, {"hot", false}} {
		indexed := e.nodeInfo(tc.node)
		for name, ni := range map[string]fwk.NodeInfo{"indexed": indexed, "copy": indexed.Snapshot()} {
			if s := e.fw.RunFilterPlugins(e.ctx, state, p, ni); s.IsSuccess() != tc.fits {
				t.Errorf("%s NodeInfo of %s: Filter = %v, want fit %v", name, tc.node, s, tc.fits)
			}
		}
	}
	if s := e.fw.RunPreScorePlugins(e.ctx, state, p, []fwk.NodeInfo{e.nodeInfo("cold")}); !s.IsSuccess() {
		t.Fatal(s)
	}
	want, _ := e.pl.Score(e.ctx, state, p, e.nodeInfo("cold"))
	if got, _ := e.pl.Score(e.ctx, state, p, e.nodeInfo("cold").Snapshot()); got != want || want == 0 {
		t.Errorf("Score of a copy of cold = %d, of the indexed NodeInfo %d; want equal and above 0", got, want)
	}

	// The indexed NodeInfo of cold now holds hot: it is judged as hot.
	reused := e.nodeInfo("cold")
	coldNode := reused.Node()
	reused.SetNode(e.nodeInfo("hot").Node())
	defer reused.SetNode(coldNode)
	if s := e.fw.RunFilterPlugins(e.ctx, state, p, reused); s.IsSuccess() {
		t.Errorf("the NodeInfo of cold holding hot: fits, want refused as hot")
	}
	// Filter passed cold's NodeInfo in this cycle and left cold's score on
	// the entry it indexes; holding hot, it scores as hot.
	hot, _ := e.pl.Score(e.ctx, state, p, e.nodeInfo("hot"))
	if got, _ := e.pl.Score(e.ctx, state, p, reused); got != hot || got == want {
		t.Errorf("Score of the NodeInfo of cold holding hot = %d, want hot's %d (cold's is %d)", got, hot, want)
	}
}

// TestScoreTakesFiltersScore: in a cycle whose Filter passed a node, Score
// answers from the score Filter left on the node's entry, and it is the
// score Score works out itself (in a cycle without Filter); a cycle after
// the node's load changed does not take an older cycle's score.
func TestScoreTakesFiltersScore(t *testing.T) {
	names := []string{"a", "b", "c"}
	e := newEnv(t, nil, []*corev1.Node{node16("a").Obj(), node16("b").Obj(), node16("c").Obj()}, nil,
		metric("a", t0).usage("2", "8Gi").obj(), metric("b", t0).usage("5", "16Gi").obj(), metric("c", t0).usage("8", "32Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	// computed is what Score works out without Filter in the cycle.
	computed := func() map[string]int64 {
		state := e.preFiltered(p)
		if s := e.fw.RunPreScorePlugins(e.ctx, state, p, []fwk.NodeInfo{e.nodeInfo("a")}); !s.IsSuccess() {
			t.Fatal(s)
		}
		out := map[string]int64{}
		for _, name := range names {
			score, s := e.pl.Score(e.ctx, state, p, e.nodeInfo(name))
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			out[name] = score
		}
		return out
	}
	// filteredAndScored runs Filter, then Score, in one cycle, and checks
	// that every node was answered from Filter's score.
	filteredAndScored := func() map[string]int64 {
		state := e.preFiltered(p)
		var infos []fwk.NodeInfo
		for _, name := range names {
			if s := e.fw.RunFilterPlugins(e.ctx, state, p, e.nodeInfo(name)); !s.IsSuccess() {
				t.Fatalf("Filter on %s: %v", name, s)
			}
			infos = append(infos, e.nodeInfo(name))
		}
		if s := e.fw.RunPreScorePlugins(e.ctx, state, p, infos); !s.IsSuccess() {
			t.Fatal(s)
		}
		st, err := readState(state, preScoreStateKey)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, name := range names {
			if _, ok := st.nodes.scoredBy(e.nodeInfo(name), st.cycle); !ok {
				t.Errorf("%s: no score left by Filter in its cycle", name)
			}
			score, s := e.pl.Score(e.ctx, state, p, e.nodeInfo(name))
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			out[name] = score
		}
		return out
	}

	want := computed()
	if want["a"] <= want["b"] || want["b"] <= want["c"] {
		t.Fatalf("scores %v: want a > b > c by load", want)
	}
	if diff := cmp.Diff(want, filteredAndScored()); diff != "" {
		t.Errorf("Score after Filter (-computed +got):\n%s", diff)
	}
	// Six cores more on a: its score drops, in the next cycle.
	for i := range 6 {
		if err := e.pl.cache.assign(pod(fmt.Sprintf("big-%d", i), "1", "1Gi").Obj(), "a", true, t0); err != nil {
			t.Fatal(err)
		}
	}
	after := computed()
	if after["a"] >= want["a"] {
		t.Fatalf("a with six more cores assumed scores %d, before %d: want lower", after["a"], want["a"])
	}
	if diff := cmp.Diff(after, filteredAndScored()); diff != "" {
		t.Errorf("Score after Filter, once a's load changed (-computed +got):\n%s", diff)
	}
}

// TestNewNodeObjectIsJudgedByItsAnnotations: a Node updated in place (a new
// object in the same NodeInfo) is judged by its new annotations at once:
// nothing derived from the old object is reused.
func TestNewNodeObjectIsJudgedByItsAnnotations(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, metric("n", t0).usage("4", "8Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	if s := e.filter(p, "n"); !s.IsSuccess() {
		t.Fatalf("at 4 of 16 cores: %v, want a fit", s)
	}
	ni := e.nodeInfo("n")
	old := ni.Node()
	tight := old.DeepCopy()
	// (4 + 0.85) / 16 = 30 % > 20 %.
	tight.Annotations = map[string]string{extension.AnnotationUsageThresholds: `{"usageThresholds":{"cpu":20}}`}
	ni.SetNode(tight)
	defer ni.SetNode(old)
	if s := e.filter(p, "n"); s.IsSuccess() {
		t.Errorf("after the node's threshold went to 20 %%: fits, want refused")
	}
}

// TestLoadChangesWhileFiltering: Filter on many goroutines while informer
// handlers and Reserve change the nodes' loads (run with -race), and every
// cycle after the changes sees them.
func TestLoadChangesWhileFiltering(t *testing.T) {
	const n = 40
	var nodes []*corev1.Node
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("n%02d", i))
		nodes = append(nodes, node16(names[i]).Obj())
	}
	e := newEnv(t, nil, nodes, nil)
	for _, name := range names {
		e.pl.cache.setMetric(name, e.pl.cfg.NewMetric(metric(name, t0).usage("4", "8Gi").obj()))
	}
	p := pod("p", "1", "1Gi").Obj()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				state := e.preFiltered(p)
				for _, name := range names {
					e.fw.RunFilterPlugins(e.ctx, state, p, e.nodeInfo(name))
				}
			}
		})
	}
	// Each node takes 11 cores of pods: 4 + 11 × 0.85 + 0.85 = 14.2 of 16
	// = 89 % > 80 %, so every node ends up refused.
	for i, name := range names {
		for j := range 11 {
			big := pod(fmt.Sprintf("big-%d-%d", i, j), "1", "1Gi").Obj()
			if err := e.pl.cache.assign(big, name, true, t0); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 0 {
			e.pl.cache.setMetric(name, e.pl.cfg.NewMetric(metric(name, t0.Add(1)).usage("4", "8Gi").obj()))
		}
	}
	close(stop)
	wg.Wait()
	for _, name := range names {
		if s := e.filter(p, name); s.IsSuccess() {
			t.Errorf("%s with 11 more cores assumed: fits, want refused", name)
		}
	}
}

// TestCyclesFindNodesByTheirNodeInfo: in the steady state every lookup of
// a cycle is answered by the NodeInfo index (the fast path the package
// README's "Live scheduler" figures rest on), and the index is not rebuilt
// from one cycle to the next.
func TestCyclesFindNodesByTheirNodeInfo(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("a").Obj(), node16("b").Obj(), node16("c").Obj()}, nil,
		metric("a", t0).usage("2", "8Gi").obj(), metric("b", t0).usage("4", "8Gi").obj(), metric("c", t0).usage("6", "8Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	e.schedule(p, "a", "b", "c")
	first := e.pl.cache.index.Load()
	for range 3 {
		e.schedule(pod("q", "1", "1Gi").Obj(), "a", "b", "c")
	}
	idx := e.pl.cache.index.Load()
	if idx.byInfo == nil || len(idx.byInfo.m) != 3 {
		t.Fatalf("NodeInfo index = %+v, want the 3 nodes", idx.byInfo)
	}
	if idx.byInfo != first.byInfo {
		t.Errorf("the NodeInfo index was rebuilt between cycles over the same nodes")
	}
	if m := idx.byInfo.misses.Load(); m != 0 {
		t.Errorf("%d lookups went by name, want none", m)
	}
}

// TestSlotsFollowTheLatestIndex: when the scheduler's node list changes
// (a new NodeInfo index, new slots), a change of a node's load made
// afterwards is seen through the new slots and by a cycle that still holds
// the older index: an older index's slot never serves a view again.
func TestSlotsFollowTheLatestIndex(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("a").Obj(), node16("b").Obj()}, nil,
		metric("a", t0).usage("4", "8Gi").obj(), metric("b", t0).usage("4", "8Gi").obj())
	p := pod("p", "1", "1Gi").Obj()
	filter := func(s *preFilterState, node string) *fwk.Status {
		state := framework.NewCycleState()
		state.Write(preFilterStateKey, s)
		return e.pl.Filter(e.ctx, state, p, e.nodeInfo(node))
	}
	older := e.pl.newState(e.ctx, p, []fwk.NodeInfo{e.nodeInfo("a"), e.nodeInfo("b")})
	if s := filter(older, "a"); !s.IsSuccess() {
		t.Fatalf("a at 4 of 16 cores: %v, want a fit", s)
	}
	// A new list (the scheduler allocates one when a node comes or goes).
	newer := e.pl.newState(e.ctx, p, []fwk.NodeInfo{e.nodeInfo("b"), e.nodeInfo("a")})
	if newer.nodes.byInfo == older.nodes.byInfo {
		t.Fatal("a new node list did not build a new NodeInfo index")
	}
	if s := filter(newer, "a"); !s.IsSuccess() {
		t.Fatalf("a at 4 of 16 cores: %v, want a fit", s)
	}
	// 11 cores more on a: 4 + 11 × 0.85 + 0.85 = 14.2 of 16 = 89 % > 80 %.
	for i := range 11 {
		if err := e.pl.cache.assign(pod(fmt.Sprintf("big-%d", i), "1", "1Gi").Obj(), "a", true, t0); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]*preFilterState{"newer": newer, "older": older} {
		if st := filter(s, "a"); st.IsSuccess() {
			t.Errorf("a with 11 more cores, %s index: fits, want refused", name)
		}
	}
}
