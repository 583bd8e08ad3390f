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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/waterline-dev/waterline/apis/extension"
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
		{Resource: "nodemetrics.v1alpha1.waterline.dev", ActionType: fwk.Add | fwk.Update | fwk.Delete},
		{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeAnnotation},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestNodeMetricHintIsPure: a QueueingHint is a question the framework
// may or may not ask; it must not change what Filter sees. The plugin's
// own informer is the one writer of its NodeMetrics.
func TestNodeMetricHintIsPure(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	stale := metric("n", t0.Add(-10*time.Minute)).usage("8", "8Gi").obj()
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, nil, stale)
	pending := pod("p", "1", "1Gi").Obj()
	fresh := metric("n", t0).usage("8", "8Gi").obj()
	hint, err := e.pl.isSchedulableAfterNodeMetricChange(logger, pending, unstructuredMetric(t, stale), unstructuredMetric(t, fresh))
	if err != nil || hint != fwk.Queue {
		t.Fatalf("hint = %v, %v; want Queue", hint, err)
	}
	if !e.metricSeen("n", t0.Add(-10*time.Minute)) {
		t.Errorf("the hint changed the plugin's NodeMetric of n")
	}
}

// TestRefusedPodsActivatedWhenThePluginCatchesUp: the scheduler's informer
// may deliver a NodeMetric before the plugin's own does; the pod its hint
// requeued is then refused again on the older view. When the plugin's
// informer catches up with a change that may admit more, it activates the
// pending pods LoadAware refused (and pods still on their first attempt),
// so none waits minutes for the next flush of unschedulable pods. Pods
// refused for other reasons are left to their own hints.
func TestRefusedPodsActivatedWhenThePluginCatchesUp(t *testing.T) {
	stale := metric("n", t0.Add(-10*time.Minute)).usage("8", "8Gi").obj()
	refused := pod("refused", "1", "1Gi").Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable).Obj()
	refused.Status.Conditions[0].Message = "0/1 nodes are available: 1 node(s) nodeMetric expired."
	other := pod("other", "1", "1Gi").Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable).Obj()
	other.Status.Conditions[0].Message = "0/1 nodes are available: 1 Insufficient cpu."
	fresh := pod("fresh", "1", "1Gi").Obj()
	bound := pod("bound", "1", "1Gi").Node("n").Obj()
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, []*corev1.Pod{refused, other, fresh, bound}, stale)
	e.eventually("the pending pods", func() bool { return e.pl.pending.len() == 3 })

	// A routine report with more load admits nothing: no activation.
	e.updateMetric(metric("n", t0.Add(-9*time.Minute)).usage("9", "8Gi").obj())
	e.eventually("the plugin's view", func() bool { return e.metricSeen("n", t0.Add(-9*time.Minute)) })
	if got := e.activator.names(); len(got) != 0 {
		t.Errorf("activated %v after a report that admits nothing, want none", got)
	}
	// The node reports again after a gap: it may admit more.
	e.updateMetric(metric("n", t0).usage("9", "8Gi").obj())
	want := []string{"ns/fresh", "ns/refused"}
	e.eventually("the activation", func() bool { return cmp.Equal(want, e.activator.names()) })
	// Deleting the NodeMetric lets the node fit unchecked: activate again.
	e.activator.reset()
	if err := e.wlClient.WaterlineV1alpha1().NodeMetrics().Delete(e.ctx, "n", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the activation after the deletion", func() bool { return cmp.Equal(want, e.activator.names()) })
}

// TestRefusedPodsActivatedWhenAnEstimateShrinks: a node whose usage stays
// flat still admits more once its reports show a recently placed pod for
// longer -- less of the pod's estimate stands in for its usage -- and
// when they pass its averaging window. Without an activation then, the
// refused pod would wait for the next flush of unschedulable pods, up to
// five minutes.
func TestRefusedPodsActivatedWhenAnEstimateShrinks(t *testing.T) {
	refused := pod("refused", "4", "1Gi").Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable).Obj()
	refused.Status.Conditions[0].Message = "0/1 nodes are available: 1 node(s) cpu usage exceed threshold."
	// Counted from the plugin's clock, t0 + 10 s; averaged over 300 s.
	placed := pod("placed", "4", "1Gi").Node("n").Obj()
	report := func(at time.Duration) *v1alpha1.NodeMetric {
		return metric("n", t0.Add(at)).usage("9", "8Gi").pod("ns", "placed", extension.BandBatch, "300m", "256Mi").obj()
	}
	e := newEnv(t, nil, []*corev1.Node{node16("n").Obj()}, []*corev1.Pod{refused, placed}, report(20*time.Second))
	e.eventually("the pending pod", func() bool { return e.pl.pending.len() == 1 })
	want := []string{"ns/refused"}
	// Each report arrives when it is stamped.
	deliver := func(at time.Duration) {
		e.clock.SetTime(t0.Add(at))
		e.updateMetric(report(at))
	}

	// The same usage a bit later: the pod ran 110 of the 300 s, not 10.
	deliver(2 * time.Minute)
	e.eventually("the activation", func() bool { return cmp.Equal(want, e.activator.names()) })
	// Past the window: the pod needs no estimate any more.
	e.activator.reset()
	deliver(7 * time.Minute)
	e.eventually("the activation past the window", func() bool { return cmp.Equal(want, e.activator.names()) })
	// Nothing left to give back: a report of the same usage admits nothing.
	e.activator.reset()
	deliver(8 * time.Minute)
	e.eventually("the plugin's view", func() bool { return e.metricSeen("n", t0.Add(8*time.Minute)) })
	if got := e.activator.names(); len(got) != 0 {
		t.Errorf("activated %v after a report that admits nothing, want none", got)
	}
}

func TestRefusedPodsActivatedWhenAForcedWindowEnds(t *testing.T) {
	// TestForcedEstimationWindowEnds' node: refused until the bound pod's
	// 10-minute window ends at t0 + 5m, with no report or pod event then
	// (the report of t0 still current).
	args := defaultArgs()
	args.EstimatedSecondsAfterPodScheduled = 600
	args.NodeMetricExpirationSeconds = 3600
	args.UsageThresholds["cpu"] = 57
	bound := pod("bound", "4", "1Gi").Node("n").
		Condition(corev1.PodScheduled, corev1.ConditionTrue, "").Obj()
	bound.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-5 * time.Minute))
	e := newEnv(t, args, []*corev1.Node{node16("n").Obj()}, []*corev1.Pod{bound},
		metric("n", t0).usage("8", "8Gi").pod("ns", "bound", extension.BandProd, "3", "1Gi").obj())
	e.eventually("the bound pod counted", func() bool { _, ok := e.pl.cache.counted("n")[bound.UID]; return ok })

	// Created after the start-up activation, so that only the window's end
	// can activate it.
	refused := pod("refused", "1", "1Gi").Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable).Obj()
	refused.Status.Conditions[0].Message = "0/1 nodes are available: 1 node(s) cpu usage exceed threshold."
	if _, err := e.kube.CoreV1().Pods("ns").Create(e.ctx, refused, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the pending pod", func() bool { return e.pl.pending.len() == 1 })
	if s := e.filter(refused, "n"); s.IsSuccess() {
		t.Fatalf("inside the window: fits, want refused")
	}
	e.clock.SetTime(t0.Add(5*time.Minute - time.Second))
	time.Sleep(200 * time.Millisecond)
	if got := e.activator.names(); len(got) != 0 {
		t.Fatalf("activated %v before the window ended, want none", got)
	}

	e.clock.SetTime(t0.Add(5*time.Minute + time.Second))
	e.eventually("the activation at the window's end", func() bool { return cmp.Equal([]string{"ns/refused"}, e.activator.names()) })
	if s := e.filter(refused, "n"); !s.IsSuccess() {
		t.Errorf("after the window: %v, want a fit", s)
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
		{"deleted", metric("n", t0).usage("8", "8Gi").obj(), nil, fwk.Queue},
		{"reporting again after going stale", metric("n", t0).usage("8", "8Gi").obj(), metric("n", t0.Add(10*time.Minute)).usage("8", "8Gi").obj(), fwk.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var old any
			if tc.old != nil {
				old = unstructuredMetric(t, tc.old)
			}
			var cur any
			if tc.cur != nil {
				cur = unstructuredMetric(t, tc.cur)
			}
			got, err := e.pl.isSchedulableAfterNodeMetricChange(logger, pending, old, cur)
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
