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

package bandpreemption

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

const ns = "default"

// Classes of the tests: mid-np (7500) is NonPreemptible below 9000.
func testClasses() []*schedulingv1.PriorityClass {
	never := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "prod-never"}, Value: 9600,
		PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "mid-np", Annotations: map[string]string{
			extension.AnnotationPreemptionPolicy:      extension.PreemptionPolicyNonPreemptible,
			extension.AnnotationPreemptibleByPriority: "9000",
		}}, Value: 7500},
		{ObjectMeta: metav1.ObjectMeta{Name: "mid-typo", Annotations: map[string]string{
			extension.AnnotationPreemptionPolicy: "nonpreemptible",
		}}, Value: 7500},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 5000},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Value: 9500},
		never,
	}
}

// onePod is a node with room for one pod.
func onePod(name string) *corev1.Node {
	return st.MakeNode().Name(name).Capacity(map[corev1.ResourceName]string{corev1.ResourcePods: "1"}).Obj()
}

// runningPod is bound to node; every running pod started at the same time,
// so only priority, PDBs and Waterline's rules tell victims apart.
func runningPod(name, node, class string, priority int32) *st.PodWrapper {
	w := st.MakePod().Name(name).UID(name).Namespace(ns).Node(node).Priority(priority).
		StartTime(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	w.Spec.PriorityClassName = class
	return w
}

func pendingPod(class string, priority int32) *st.PodWrapper {
	w := st.MakePod().Name("pending").UID("pending").Namespace(ns).Priority(priority)
	w.Spec.PriorityClassName = class
	return w
}

type testEnv struct {
	plugin   *BandPreemption
	fw       framework.Framework
	client   *clientsetfake.Clientset
	recorder *events.FakeRecorder
}

// newTestEnv runs a real framework (NodeResourcesFit as PreFilter/Filter)
// over the given cluster, with BandPreemption built on it.
func newTestEnv(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, pending *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) *testEnv {
	t.Helper()
	objs := []runtime.Object{pending}
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, pc := range testClasses() {
		objs = append(objs, pc)
	}
	for _, pdb := range pdbs {
		objs = append(objs, pdb)
	}
	client := clientsetfake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := events.NewFakeRecorder(10)
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)

	fit := func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return noderesources.NewFit(ctx, &schedconfig.NodeResourcesFitArgs{
			ScoringStrategy: &schedconfig.ScoringStrategy{Type: schedconfig.LeastAllocated,
				Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}}},
		}, h, feature.Features{})
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterPluginAsExtensions(noderesources.Name, fit, "Filter", "PreFilter"),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
	}, "",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithEventRecorder(recorder),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithPodNominator(internalqueue.NewSchedulingQueue(nil, factory)),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewSnapshot(pods, nodes)),
		frameworkruntime.WithLogger(logger),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()),
	)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := NewWithFeatures(ctx, &config.BandPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}, fw, feature.Features{})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("Informer for %v did not sync", typ)
		}
	}
	return &testEnv{plugin: pl, fw: fw, client: client, recorder: recorder}
}

// postFilter runs PreFilter then BandPreemption's PostFilter with every
// node Unschedulable (preemption may help).
func (e *testEnv) postFilter(t *testing.T, pod *corev1.Pod, nodes []*corev1.Node) (*fwk.PostFilterResult, *fwk.Status) {
	t.Helper()
	ctx := t.Context()
	state := framework.NewCycleState()
	if _, status, _ := e.fw.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	statuses := map[string]*fwk.Status{}
	for _, n := range nodes {
		statuses[n.Name] = fwk.NewStatus(fwk.Unschedulable, "Too many pods")
	}
	return e.plugin.PostFilter(ctx, state, pod, framework.NewNodeToStatus(statuses, fwk.NewStatus(fwk.UnschedulableAndUnresolvable)))
}

// remaining lists the pods still in the API server, the preemptor aside.
func (e *testEnv) remaining(t *testing.T) []string {
	t.Helper()
	list, err := e.client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Name != "pending" {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestPostFilter(t *testing.T) {
	tests := []struct {
		name          string
		nodes         []*corev1.Node
		pods          []*corev1.Pod
		pdbs          []*policyv1.PodDisruptionBudget
		pending       *corev1.Pod
		wantNominated string
		wantStatus    *fwk.Status
		wantRemaining []string
	}{
		{
			name:          "high pod preempts low pod",
			nodes:         []*corev1.Node{onePod("node1")},
			pods:          []*corev1.Pod{runningPod("low", "node1", "batch", 5000).Obj()},
			pending:       pendingPod("prod", 9500).Obj(),
			wantNominated: "node1",
			wantStatus:    fwk.NewStatus(fwk.Success),
		},
		{
			name:    "NonPreemptible pod is not a victim below the threshold",
			nodes:   []*corev1.Node{onePod("node1")},
			pods:    []*corev1.Pod{runningPod("np", "node1", "mid-np", 7500).Obj()},
			pending: pendingPod("", 8000).Obj(),
			wantStatus: fwk.NewStatus(fwk.Unschedulable, `preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod, `+
				`1 node(s) had pods of NonPreemptible PriorityClass "mid-np", not preemptible by priority 8000 below threshold 9000.`),
			wantRemaining: []string{"np"},
		},
		{
			name:          "NonPreemptible pod is a victim at the threshold",
			nodes:         []*corev1.Node{onePod("node1")},
			pods:          []*corev1.Pod{runningPod("np", "node1", "mid-np", 7500).Obj()},
			pending:       pendingPod("", 9000).Obj(),
			wantNominated: "node1",
			wantStatus:    fwk.NewStatus(fwk.Success),
		},
		{
			name:  "NonPreemptible pod spared, the other node's pod preempted",
			nodes: []*corev1.Node{onePod("node1"), onePod("node2")},
			// By priority np (6000) is the better victim than low (7000); the
			// NonPreemptible rule sends the preemptor to node2 instead.
			pods: []*corev1.Pod{
				runningPod("np", "node1", "mid-np", 6000).Obj(),
				runningPod("low", "node2", "batch", 7000).Obj(),
			},
			pending:       pendingPod("", 8000).Obj(),
			wantNominated: "node2",
			wantStatus:    fwk.NewStatus(fwk.Success),
			wantRemaining: []string{"np"},
		},
		{
			name:          "malformed annotation: the class is a normal class",
			nodes:         []*corev1.Node{onePod("node1")},
			pods:          []*corev1.Pod{runningPod("typo", "node1", "mid-typo", 7500).Obj()},
			pending:       pendingPod("", 8000).Obj(),
			wantNominated: "node1",
			wantStatus:    fwk.NewStatus(fwk.Success),
		},
		{
			name:          "class preemptionPolicy Never preempts nothing",
			nodes:         []*corev1.Node{onePod("node1")},
			pods:          []*corev1.Pod{runningPod("low", "node1", "batch", 5000).Obj()},
			pending:       pendingPod("prod-never", 9600).Obj(),
			wantStatus:    fwk.NewStatus(fwk.Unschedulable, `preemption: not eligible due to preemptionPolicy=Never of PriorityClass "prod-never"`),
			wantRemaining: []string{"low"},
		},
		{
			name:          "pod preemptionPolicy Never preempts nothing",
			nodes:         []*corev1.Node{onePod("node1")},
			pods:          []*corev1.Pod{runningPod("low", "node1", "batch", 5000).Obj()},
			pending:       pendingPod("prod", 9500).PreemptionPolicy(corev1.PreemptNever).Obj(),
			wantStatus:    fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible due to preemptionPolicy=Never"),
			wantRemaining: []string{"low"},
		},
		{
			name:  "DaemonSet pod is never a victim",
			nodes: []*corev1.Node{onePod("node1")},
			pods: []*corev1.Pod{runningPod("agent", "node1", "", 0).
				OwnerReference("agent", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}).Obj()},
			pending: pendingPod("prod", 9500).Obj(),
			wantStatus: fwk.NewStatus(fwk.Unschedulable, "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod, "+
				"1 node(s) had DaemonSet pods, which are never preempted."),
			wantRemaining: []string{"agent"},
		},
		{
			name:  "PDB respected: the node whose victim has a budget left is chosen",
			nodes: []*corev1.Node{onePod("node1"), onePod("node2")},
			// Same priority and start: only the PDB tells the nodes apart.
			pods: []*corev1.Pod{
				runningPod("guarded", "node1", "batch", 5000).Label("app", "guarded").Obj(),
				runningPod("free", "node2", "batch", 5000).Label("app", "free").Obj(),
			},
			pdbs: []*policyv1.PodDisruptionBudget{
				st.MakePDB().Name("guarded").Namespace(ns).MatchLabel("app", "guarded").MinAvailable("1").DisruptionsAllowed(0).Obj(),
			},
			pending:       pendingPod("prod", 9500).Obj(),
			wantNominated: "node2",
			wantStatus:    fwk.NewStatus(fwk.Success),
			wantRemaining: []string{"guarded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, tt.nodes, tt.pods, tt.pending, tt.pdbs)
			result, status := env.postFilter(t, tt.pending, tt.nodes)
			if diff := cmp.Diff(tt.wantStatus.Code(), status.Code()); diff != "" {
				t.Errorf("PostFilter() code (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStatus.Message(), status.Message()); diff != "" {
				t.Errorf("PostFilter() message (-want +got):\n%s", diff)
			}
			var nominated string
			if result != nil && result.NominatingInfo != nil {
				nominated = result.NominatedNodeName
			}
			if nominated != tt.wantNominated {
				t.Errorf("PostFilter() nominated %q, want %q", nominated, tt.wantNominated)
			}
			if diff := cmp.Diff(tt.wantRemaining, env.remaining(t)); diff != "" {
				t.Errorf("Pods left after preemption (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMalformedClassEvent(t *testing.T) {
	env := newTestEnv(t, []*corev1.Node{onePod("node1")}, nil, pendingPod("", 1).Obj(), nil)
	select {
	case got := <-env.recorder.Events:
		want := `Warning MalformedPreemptionAnnotation PriorityClass "mid-typo": ignoring annotation waterline.dev/preemption-policy="nonpreemptible": ` +
			`want "NonPreemptible"; the class is treated as a normal preemptible class`
		if got != want {
			t.Errorf("Event = %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("No Event recorded for the malformed PriorityClass mid-typo")
	}
	select {
	case extra := <-env.recorder.Events:
		t.Errorf("Unexpected second Event %q: only mid-typo is malformed", extra)
	case <-time.After(100 * time.Millisecond):
	}

	// Fixing the class records nothing; breaking it again records anew.
	fixed, err := env.client.SchedulingV1().PriorityClasses().Get(t.Context(), "mid-typo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fixed.Annotations[extension.AnnotationPreemptionPolicy] = extension.PreemptionPolicyNonPreemptible
	if _, err := env.client.SchedulingV1().PriorityClasses().Update(t.Context(), fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixed.Annotations[extension.AnnotationPreemptibleByPriority] = "x"
	if _, err := env.client.SchedulingV1().PriorityClasses().Update(t.Context(), fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-env.recorder.Events:
		want := `Warning MalformedPreemptionAnnotation PriorityClass "mid-typo": ignoring annotation waterline.dev/preemptible-by-priority="x": ` +
			`not a 32-bit integer; the class is treated as a normal preemptible class`
		if got != want {
			t.Errorf("Event = %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("No Event recorded after mid-typo broke again")
	}
}

func TestNewArgs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := clientsetfake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
	}, "", frameworkruntime.WithInformerFactory(factory), frameworkruntime.WithClientSet(client))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, nil, fw); err != nil {
		t.Errorf("New(nil args) = %v, want the defaults to be used", err)
	}
	_, err = New(ctx, &config.BandPreemptionArgs{MinCandidateNodesPercentage: 101, MinCandidateNodesAbsolute: -1}, fw)
	want := "invalid BandPreemption args: [minCandidateNodesPercentage: Invalid value: 101: must be in [0, 100], " +
		"minCandidateNodesAbsolute: Invalid value: -1: must be at least 0]"
	if err == nil || err.Error() != want {
		t.Errorf("New(bad args) error = %v, want %s", err, want)
	}
	if _, err := New(ctx, &schedconfig.DefaultPreemptionArgs{}, fw); err == nil {
		t.Error("New(DefaultPreemptionArgs) succeeded, want a type error")
	}
}
