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

package reporter

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned/fake"
)

// fakeState is a NodeState whose NodeMetric the test sets.
type fakeState struct {
	mu   sync.Mutex
	node *corev1.Node
	pods []*corev1.Pod
	nm   *v1alpha1.NodeMetric
}

func (s *fakeState) Node() *corev1.Node  { return s.node }
func (s *fakeState) Pods() []*corev1.Pod { return s.pods }
func (s *fakeState) NodeMetric() *v1alpha1.NodeMetric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nm
}
func (s *fakeState) setReportInterval(seconds int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nm = &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec:       v1alpha1.NodeMetricSpec{CollectPolicy: &v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To(seconds)}},
	}
}

// conditionSetter contributes a condition, as the QoS executor does.
type conditionSetter struct{ status metav1.ConditionStatus }

func (c conditionSetter) Name() string                                 { return "qos" }
func (c conditionSetter) Cycle(context.Context, *agent.Snapshot) error { return nil }
func (c conditionSetter) ContributeStatus(st *v1alpha1.NodeMetricStatus) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionThrottling, Status: c.status, Reason: "Test", ObservedGeneration: 0,
	})
}

func nodeSeries() []series {
	return []series{
		{metriccache.NodeKey(metriccache.ResourceCPU), nodeCPU1to10},
		{metriccache.NodeKey(metriccache.ResourceMemory), always(4096 * mi)},
	}
}

// statusUpdates counts the status writes the fake client saw.
func statusUpdates(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// TestSchedule walks the reporter's schedule second by second: when it
// writes, and how often, is what the scheduler's staleness check and the
// API server's load depend on.
func TestSchedule(t *testing.T) {
	type event struct {
		// at is the time in seconds after the start.
		at int
		// request asks for an early report before the step.
		request bool
		// fail makes the API server refuse writes from this step on;
		// heal accepts them again.
		fail, heal bool
		// interval changes the NodeMetric's report interval before the step.
		interval int64
		// wantWrites is the number of write attempts after the step.
		wantWrites int
	}
	tests := []struct {
		name   string
		noData bool
		events []event
	}{
		{
			name: "first report at once, then every report interval",
			events: []event{
				{at: 0, wantWrites: 1},
				{at: 1, wantWrites: 1},
				{at: 9, wantWrites: 1},
				{at: 10, wantWrites: 2},
				{at: 19, wantWrites: 2},
				{at: 20, wantWrites: 3},
			},
		},
		{
			name:   "nothing is written while the cache has no node usage",
			noData: true,
			events: []event{{at: 0}, {at: 1}, {at: 30}},
		},
		{
			name: "a shorter interval applies at once, not after the old one",
			events: []event{
				{at: 0, wantWrites: 1},
				{at: 3, interval: 2, wantWrites: 2},
				{at: 4, wantWrites: 2},
				{at: 5, wantWrites: 3},
			},
		},
		{
			// Early reports at most once per 5 s after the last write.
			name: "early requests are spaced by MinReportSpacing",
			events: []event{
				{at: 0, wantWrites: 1},
				{at: 2, request: true, wantWrites: 1},
				{at: 4, wantWrites: 1},
				{at: 5, wantWrites: 2},
				{at: 6, request: true, wantWrites: 2},
				{at: 10, wantWrites: 3},
				{at: 11, wantWrites: 3},
			},
		},
		{
			// Interval 10 s, retry 5 s: failures at 0, 5 (+5), 15 (+10,
			// capped at the interval), 25; healed, 35 writes and the
			// next is due 10 s later.
			name: "failed writes are retried with a backoff up to the interval",
			events: []event{
				{at: 0, fail: true, wantWrites: 1},
				{at: 4, wantWrites: 1},
				{at: 5, wantWrites: 2},
				{at: 14, wantWrites: 2},
				{at: 15, wantWrites: 3},
				{at: 25, heal: true, wantWrites: 4},
				{at: 34, wantWrites: 4},
				{at: 35, wantWrites: 5},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ss []series
			if !tt.noData {
				ss = nodeSeries()
			}
			cache := newCache(t, ss)
			clk := testingclock.NewFakeClock(t0.Add(10 * time.Second))
			state := &fakeState{}
			state.setReportInterval(10)
			cs := fake.NewSimpleClientset(state.NodeMetric().DeepCopy())
			failing := false
			cs.PrependReactor("update", "nodemetrics", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failing {
					return true, nil, errors.New("injected: API server unavailable")
				}
				return false, nil, nil
			})
			r, err := New(Config{}, Deps{NodeName: "n1", Client: cs.WaterlineV1alpha1().NodeMetrics(), State: state, Cache: cache, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			var s schedule
			start := clk.Now()
			for _, e := range tt.events {
				clk.SetTime(start.Add(time.Duration(e.at) * time.Second))
				if e.interval != 0 {
					state.setReportInterval(e.interval)
				}
				failing = (failing || e.fail) && !e.heal
				if e.request {
					s.early = true
				}
				r.step(t.Context(), &s, clk.Now())
				if got := statusUpdates(cs); got != e.wantWrites {
					t.Fatalf("at %ds: %d status writes, want %d", e.at, got, e.wantWrites)
				}
			}
		})
	}
}

// TestReportWritesUsageAndContributions: the status written carries the
// usage, the contributors' conditions and the conditions another writer
// set, and the NodeMetric is created, owned by the Node, when missing.
func TestReportWritesUsageAndContributions(t *testing.T) {
	other := metav1.Condition{Type: "SomethingElse", Status: metav1.ConditionTrue, Reason: "Other", LastTransitionTime: metav1.NewTime(t0)}
	tests := []struct {
		name      string
		existing  *v1alpha1.NodeMetric
		wantOwner []metav1.OwnerReference
		wantConds []string
	}{
		{
			name: "existing NodeMetric keeps other writers' conditions",
			existing: &v1alpha1.NodeMetric{
				ObjectMeta: metav1.ObjectMeta{Name: "n1"},
				Status:     v1alpha1.NodeMetricStatus{Conditions: []metav1.Condition{other}, ProdPeak: rl("3", "1Gi")},
			},
			wantConds: []string{"SomethingElse=True", "Throttling=False"},
		},
		{
			name: "missing NodeMetric is created with the node as owner",
			wantOwner: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid", BlockOwnerDeletion: ptr.To(false),
			}},
			wantConds: []string{"Throttling=False"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := newCache(t, nodeSeries())
			clk := testingclock.NewFakeClock(t0.Add(10 * time.Second))
			state := &fakeState{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}}
			var objs []runtime.Object
			if tt.existing != nil {
				objs = append(objs, tt.existing)
				state.nm = tt.existing.DeepCopy()
			}
			cs := fake.NewSimpleClientset(objs...)
			r, err := New(Config{}, Deps{
				NodeName: "n1", Client: cs.WaterlineV1alpha1().NodeMetrics(), State: state, Cache: cache, Clock: clk,
				Contributors: ContributorsOf([]agent.CycleModule{conditionSetter{metav1.ConditionFalse}}),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Report(t.Context()); err != nil {
				t.Fatal(err)
			}
			got, err := cs.WaterlineV1alpha1().NodeMetrics().Get(t.Context(), "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantOwner, got.OwnerReferences); diff != "" {
				t.Errorf("owner references (-want +got):\n%s", diff)
			}
			var conds []string
			for _, c := range got.Status.Conditions {
				conds = append(conds, c.Type+"="+string(c.Status))
			}
			if diff := cmp.Diff(tt.wantConds, conds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if got.Status.UpdateTime == nil || !got.Status.UpdateTime.Time.Equal(clk.Now()) {
				t.Errorf("updateTime = %v, want %v", got.Status.UpdateTime, clk.Now())
			}
			// Node CPU 1..10 over the default 300 s: avg 5.5 cores.
			if diff := cmp.Diff(rl("5500m", "4Gi"), got.Status.NodeMetric.NodeUsage); diff != "" {
				t.Errorf("nodeUsage (-want +got):\n%s", diff)
			}
			if tt.existing != nil {
				if diff := cmp.Diff(tt.existing.Status.ProdPeak, got.Status.ProdPeak); diff != "" {
					t.Errorf("prodPeak of another writer (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestReportNoUsage(t *testing.T) {
	cs := fake.NewSimpleClientset()
	r, err := New(Config{}, Deps{
		NodeName: "n1", Client: cs.WaterlineV1alpha1().NodeMetrics(), State: &fakeState{},
		Cache: newCache(t, nil), Clock: testingclock.NewFakeClock(t0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Report(t.Context()); !errors.Is(err, ErrNoUsage) {
		t.Fatalf("Report on an empty cache = %v, want ErrNoUsage", err)
	}
	if n := len(cs.Actions()); n != 0 {
		t.Errorf("Report on an empty cache made %d API calls, want none", n)
	}
}

// TestRunStopsAndAnswersRequests: Run reports at start, an early request
// wakes it without waiting for a tick, and it returns when ctx ends.
func TestRunStopsAndAnswersRequests(t *testing.T) {
	cache := newCache(t, nodeSeries())
	clk := testingclock.NewFakeClock(t0.Add(10 * time.Second))
	state := &fakeState{}
	state.setReportInterval(60)
	cs := fake.NewSimpleClientset(state.NodeMetric().DeepCopy())
	requests := make(chan struct{}, 1)
	r, err := New(Config{MinReportSpacing: time.Second}, Deps{
		NodeName: "n1", Client: cs.WaterlineV1alpha1().NodeMetrics(), State: state, Cache: cache, Clock: clk, Requests: requests,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for statusUpdates(cs) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d status writes, want %d", statusUpdates(cs), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(1)
	// Past the spacing, a request alone (no tick) makes a report.
	clk.SetTime(clk.Now().Add(2 * time.Second))
	requests <- struct{}{}
	waitFor(2)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{MinReportSpacing: time.Hour, RetryInterval: time.Millisecond}, Deps{})
	if err == nil {
		t.Fatal("New with a bad config and no deps succeeded")
	}
	for _, want := range []string{"reporter.minReportSpacing", "reporter.retryInterval", "nodeName", "client", "state", "cache", "clock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
