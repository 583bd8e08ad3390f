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
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	wlfake "github.com/waterline-dev/waterline/pkg/client/clientset/versioned/fake"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
)

// t0 is when the agents in these tests last reported; the scheduler's
// clock starts 10 s later.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// env is a scheduling framework running LoadAware against fake API
// clients, with a fake clock.
type env struct {
	t        testing.TB
	ctx      context.Context
	pl       *LoadAware
	fw       framework.Framework
	clock    *testingclock.FakeClock
	kube     *kubefake.Clientset
	wlClient *wlfake.Clientset
	snapshot *cache.Snapshot
	// events holds the Events the plugin emitted, one string each.
	events *events.FakeRecorder
	// activator records the pods the plugin activated.
	activator *fakeActivator
}

// fakeActivator is the scheduling queue's PodActivator, recording.
type fakeActivator struct {
	mu   sync.Mutex
	pods map[string]bool
}

func (a *fakeActivator) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pods == nil {
		a.pods = map[string]bool{}
	}
	for _, p := range pods {
		a.pods[p.Namespace+"/"+p.Name] = true
	}
}

// names returns the activated pods, sorted.
func (a *fakeActivator) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.pods))
}

func (a *fakeActivator) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods = nil
}

// updateMetric writes a NodeMetric to the fake API, creating it if needed.
func (e *env) updateMetric(nm *v1alpha1.NodeMetric) {
	e.t.Helper()
	client := e.wlClient.WaterlineV1alpha1().NodeMetrics()
	if _, err := client.Update(e.ctx, nm, metav1.UpdateOptions{}); err != nil {
		if _, err := client.Create(e.ctx, nm, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("writing NodeMetric %s: %v", nm.Name, err)
		}
	}
}

func defaultArgs() *config.LoadAwareArgs {
	a := configv1.DefaultedLoadAwareArgs()
	return &a
}

// newEnv starts LoadAware with args (nil: defaults) on the nodes, with the
// bound pods in the API and the NodeMetrics in the waterline.dev API.
func newEnv(t testing.TB, args *config.LoadAwareArgs, nodes []*corev1.Node, pods []*corev1.Pod, metrics ...*v1alpha1.NodeMetric) *env {
	t.Helper()
	if args == nil {
		args = defaultArgs()
	}
	ctx := t.Context()
	var kubeObjs []runtime.Object
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
	}
	var wlObjs []runtime.Object
	for _, m := range metrics {
		wlObjs = append(wlObjs, m)
	}
	e := &env{
		t:         t,
		ctx:       ctx,
		clock:     testingclock.NewFakeClock(t0.Add(10 * time.Second)),
		kube:      kubefake.NewClientset(kubeObjs...),
		wlClient:  newWaterlineClient(wlObjs...),
		snapshot:  cache.NewSnapshot(pods, nodes),
		events:    events.NewFakeRecorder(100),
		activator: &fakeActivator{},
	}
	informerFactory := informers.NewSharedInformerFactory(e.kube, 0)
	factory := func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := newPlugin(ctx, args, h, e.wlClient, e.clock)
		e.pl = pl
		return pl, err
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Filter", "PreScore", "Score", "Reserve"),
	}, "waterline-scheduler",
		frameworkruntime.WithInformerFactory(informerFactory),
		frameworkruntime.WithSnapshotSharedLister(e.snapshot),
		frameworkruntime.WithClientSet(e.kube),
		frameworkruntime.WithEventRecorder(e.events),
		frameworkruntime.WithPodActivator(e.activator),
	)
	if err != nil {
		t.Fatalf("creating the framework: %v", err)
	}
	e.fw = fw
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	return e
}

func (e *env) nodeInfo(name string) fwk.NodeInfo {
	e.t.Helper()
	ni, err := e.snapshot.NodeInfos().Get(name)
	if err != nil {
		e.t.Fatalf("node %s: %v", name, err)
	}
	return ni
}

// filter runs PreFilter and Filter for the pod on a node.
func (e *env) filter(pod *corev1.Pod, node string) *fwk.Status {
	e.t.Helper()
	state := framework.NewCycleState()
	if _, s, _ := e.fw.RunPreFilterPlugins(e.ctx, state, pod); !s.IsSuccess() {
		e.t.Fatalf("PreFilter: %v", s)
	}
	return e.fw.RunFilterPlugins(e.ctx, state, pod, e.nodeInfo(node))
}

// scores runs PreFilter and Score for the pod on the nodes.
func (e *env) scores(pod *corev1.Pod, nodes ...string) map[string]int64 {
	e.t.Helper()
	state := framework.NewCycleState()
	if _, s, _ := e.fw.RunPreFilterPlugins(e.ctx, state, pod); !s.IsSuccess() {
		e.t.Fatalf("PreFilter: %v", s)
	}
	var infos []fwk.NodeInfo
	for _, n := range nodes {
		infos = append(infos, e.nodeInfo(n))
	}
	if s := e.fw.RunPreScorePlugins(e.ctx, state, pod, infos); !s.IsSuccess() {
		e.t.Fatalf("PreScore: %v", s)
	}
	list, s := e.fw.RunScorePlugins(e.ctx, state, pod, infos)
	if !s.IsSuccess() {
		e.t.Fatalf("Score: %v", s)
	}
	out := map[string]int64{}
	for _, ns := range list {
		out[ns.Name] = ns.TotalScore
	}
	return out
}

// schedule runs a whole scheduling cycle up to Reserve, as the scheduler
// does: PreFilter, Filter on every node, Score, and Reserve on the best
// node (the first one in name order among equals). It returns the node, or
// "" when none fits.
func (e *env) schedule(pod *corev1.Pod, nodes ...string) string {
	e.t.Helper()
	state := framework.NewCycleState()
	if _, s, _ := e.fw.RunPreFilterPlugins(e.ctx, state, pod); !s.IsSuccess() {
		e.t.Fatalf("PreFilter: %v", s)
	}
	var feasible []fwk.NodeInfo
	for _, n := range nodes {
		if s := e.fw.RunFilterPlugins(e.ctx, state, pod, e.nodeInfo(n)); s.IsSuccess() {
			feasible = append(feasible, e.nodeInfo(n))
		}
	}
	if len(feasible) == 0 {
		return ""
	}
	if s := e.fw.RunPreScorePlugins(e.ctx, state, pod, feasible); !s.IsSuccess() {
		e.t.Fatalf("PreScore: %v", s)
	}
	list, s := e.fw.RunScorePlugins(e.ctx, state, pod, feasible)
	if !s.IsSuccess() {
		e.t.Fatalf("Score: %v", s)
	}
	best := list[0]
	for _, ns := range list[1:] {
		if ns.TotalScore > best.TotalScore || ns.TotalScore == best.TotalScore && ns.Name < best.Name {
			best = ns
		}
	}
	if s := e.fw.RunReservePluginsReserve(e.ctx, state, pod, best.Name); !s.IsSuccess() {
		e.t.Fatalf("Reserve: %v", s)
	}
	return best.Name
}

// eventually waits for cond, which informers make true asynchronously.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// metricSeen reports whether the plugin holds a NodeMetric of node
// reported at updated.
func (e *env) metricSeen(node string, updated time.Time) bool {
	ns := e.pl.cache.get(node)
	if ns == nil {
		return false
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.metric != nil && ns.metric.UpdateTime.Equal(updated)
}

// metricGone reports whether the plugin holds no NodeMetric of node.
func (e *env) metricGone(node string) bool {
	ns := e.pl.cache.get(node)
	if ns == nil {
		return true
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.metric == nil
}

// node16 is a node with 16 cores and 64Gi.
func node16(name string) *st.NodeWrapper {
	return st.MakeNode().Name(name).Capacity(map[corev1.ResourceName]string{"cpu": "16", "memory": "64Gi", "pods": "110"})
}

// pod builds a pending pod that asks for cpu cores and memory.
func pod(name, cpu, memory string) *st.PodWrapper {
	return st.MakePod().Namespace("ns").Name(name).UID(name).SchedulerName("waterline-scheduler").
		Req(map[corev1.ResourceName]string{"cpu": cpu, "memory": memory})
}

func batchPod(name string) *st.PodWrapper {
	return pod(name, "1", "1Gi").Label(extension.LabelBand, string(extension.BandBatch))
}

// metricBuilder builds NodeMetrics.
type metricBuilder struct{ nm *v1alpha1.NodeMetric }

func metric(node string, updated time.Time) *metricBuilder {
	ut := metav1.NewTime(updated)
	return &metricBuilder{nm: &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status:     v1alpha1.NodeMetricStatus{UpdateTime: &ut, NodeMetric: &v1alpha1.NodeMetricInfo{}},
	}}
}

func (b *metricBuilder) usage(cpu, memory string) *metricBuilder {
	b.nm.Status.NodeMetric.NodeUsage = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return b
}

func (b *metricBuilder) pod(ns, name string, band extension.Band, cpu, memory string) *metricBuilder {
	b.nm.Status.PodsMetric = append(b.nm.Status.PodsMetric, v1alpha1.PodMetricInfo{
		Namespace: ns, Name: name, Band: string(band),
		Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
	})
	return b
}

func (b *metricBuilder) prodPeak(cpu, memory string) *metricBuilder {
	b.nm.Status.ProdPeak = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return b
}

func (b *metricBuilder) forbid() *metricBuilder {
	b.nm.Status.Conditions = append(b.nm.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionForbidScheduling, Status: metav1.ConditionTrue, Reason: "OverWaterline", LastTransitionTime: metav1.NewTime(t0),
	})
	return b
}

func (b *metricBuilder) obj() *v1alpha1.NodeMetric { return b.nm }

// newWaterlineClient is a fake waterline.dev clientset. It is the simple
// (object-tracker) kind: the field-managed NewClientset needs OpenAPI models
// of the waterline.dev types, which are not generated.
func newWaterlineClient(objs ...runtime.Object) *wlfake.Clientset {
	return wlfake.NewSimpleClientset(objs...)
}
