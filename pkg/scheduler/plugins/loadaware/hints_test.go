package loadaware

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// unstructuredMetric is a NodeMetric as the scheduler's dynamic informer
// delivers it.
func unstructuredMetric(t *testing.T, nm *v1alpha1.NodeMetric) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nm)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestEventsToRegister(t *testing.T) {
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil)
	got, err := e.pl.EventsToRegister(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var events []fwk.ClusterEvent
	for _, ev := range got {
		if ev.QueueingHintFn == nil {
			t.Errorf("event %v has no QueueingHint", ev.Event)
		}
		events = append(events, ev.Event)
	}
	want := []fwk.ClusterEvent{
		{Resource: "nodemetrics.v1alpha1.waterline.dev", ActionType: fwk.Add | fwk.Update},
		{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeAnnotation},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestNodeMetricHintRefreshesThePluginsView: the scheduler's informer may
// deliver a NodeMetric before the plugin's own informer does. The pod the
// hint requeues must be judged on what woke it, not refused again on the
// stale view (it would then wait minutes for the next flush); and an older
// NodeMetric arriving late must not take the view back.
func TestNodeMetricHintRefreshesThePluginsView(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	// The plugin holds a NodeMetric last reported 10 min before t0: expired.
	stale := metric("n", t0.Add(-10*time.Minute)).usage("8", "8Gi").obj()
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, stale)
	pending := pod("p", "1", "1Gi").Obj()
	if s := e.filter(pending, "n"); s.IsSuccess() {
		t.Fatalf("Filter on an expired NodeMetric passed")
	}

	// The agent reports again; only the scheduler's informer has seen it.
	fresh := metric("n", t0).usage("8", "8Gi").obj()
	hint, err := e.pl.isSchedulableAfterNodeMetricChange(logger, pending, unstructuredMetric(t, stale), unstructuredMetric(t, fresh))
	if err != nil || hint != fwk.Queue {
		t.Fatalf("hint = %v, %v; want Queue", hint, err)
	}
	if s := e.filter(pending, "n"); !s.IsSuccess() {
		t.Errorf("Filter after the hint = %v, want success: the requeued pod was judged on the stale NodeMetric", s)
	}

	// The plugin's own informer now delivers the old one, late.
	e.pl.cache.setMetric("n", e.pl.cfg.NewMetric(stale))
	if s := e.filter(pending, "n"); !s.IsSuccess() {
		t.Errorf("Filter after a late, older NodeMetric = %v, want success: the view went back in time", s)
	}
}

func TestNodeMetricHint(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil)
	pending := pod("p", "1", "1Gi").Obj()
	next := t0.Add(time.Minute)
	tests := []struct {
		name     string
		old, cur *v1alpha1.NodeMetric
		want     fwk.QueueingHint
	}{
		{"created", nil, metric("n", t0).usage("8", "8Gi").obj(), fwk.Queue},
		{"usage went down", metric("n", t0).usage("12", "8Gi").obj(), metric("n", next).usage("8", "8Gi").obj(), fwk.Queue},
		{"usage went up", metric("n", t0).usage("8", "8Gi").obj(), metric("n", next).usage("12", "8Gi").obj(), fwk.QueueSkip},
		{"same usage", metric("n", t0).usage("8", "8Gi").obj(), metric("n", next).usage("8", "8Gi").obj(), fwk.QueueSkip},
		{"forbid scheduling cleared", metric("n", t0).usage("8", "8Gi").forbid().obj(), metric("n", next).usage("8", "8Gi").obj(), fwk.Queue},
		{"reporting again after going stale", metric("n", t0).usage("8", "8Gi").obj(), metric("n", t0.Add(10*time.Minute)).usage("8", "8Gi").obj(), fwk.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var old any
			if tc.old != nil {
				old = unstructuredMetric(t, tc.old)
			}
			got, err := e.pl.isSchedulableAfterNodeMetricChange(logger, pending, old, unstructuredMetric(t, tc.cur))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
	if got, err := e.pl.isSchedulableAfterNodeMetricChange(logger, pending, nil, "not a NodeMetric"); err == nil || got != fwk.Queue {
		t.Errorf("hint for a foreign object = %v, %v; want Queue and an error", got, err)
	}
}

func TestPodAndNodeHints(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	pending := pod("p", "1", "1Gi").Obj()
	tests := []struct {
		name     string
		hint     fwk.QueueingHintFn
		old, cur any
		want     fwk.QueueingHint
	}{
		{"assigned pod deleted", isSchedulableAfterPodChange, pod("q", "1", "1Gi").Node("n").Obj(), nil, fwk.Queue},
		{"pending pod deleted", isSchedulableAfterPodChange, pod("q", "1", "1Gi").Obj(), nil, fwk.QueueSkip},
		{"pod scaled down", isSchedulableAfterPodChange, pod("p", "2", "1Gi").Obj(), pod("p", "1", "1Gi").Obj(), fwk.Queue},
		{"node added", isSchedulableAfterNodeChange, nil, node16("n").Obj(), fwk.Queue},
		{"thresholds annotation changed", isSchedulableAfterNodeChange, node16("n").Obj(), node16("n").Annotation("waterline.dev/usage-thresholds", `{"usageThresholds":{"cpu":80}}`).Obj(), fwk.Queue},
		{"raw allocatable annotation changed", isSchedulableAfterNodeChange, node16("n").Obj(), node16("n").Annotation("waterline.dev/raw-allocatable", `{"cpu":"32"}`).Obj(), fwk.Queue},
		{"other annotation changed", isSchedulableAfterNodeChange, node16("n").Obj(), node16("n").Annotation("example.com/x", "y").Obj(), fwk.QueueSkip},
		{"allocatable grew", isSchedulableAfterNodeChange, node16("n").Obj(), st32("n"), fwk.Queue},
		{"allocatable shrank", isSchedulableAfterNodeChange, st32("n"), node16("n").Obj(), fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.hint(logger, pending, tc.old, tc.cur)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

func st32(name string) *corev1.Node {
	return node16(name).Capacity(map[corev1.ResourceName]string{"cpu": "32", "memory": "64Gi", "pods": "110"}).Obj()
}
