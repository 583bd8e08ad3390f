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

// Package loadaware is the LoadAware scheduler plugin
// (docs/design/loadaware.md): it keeps pods off nodes whose real load -- the
// NodeMetric the node's agent reports, plus what pods assigned since then will
// add -- would cross a threshold, prefers the least loaded nodes, and keeps
// Batch and Free pods off nodes the agent put in forbid-scheduling state
// (docs/design/loadaware.md#forbid-scheduling).
//
// It is the framework adapter of pkg/core/nodeload, which makes every
// decision; this package feeds it from informers (NodeMetrics, pods), keeps
// the assumed-pod cache that spreads a burst of pods over cold nodes, and
// turns verdicts into statuses. It must never refuse a DaemonSet pod for
// load, never let preemption evict pods for a node it refused for reported
// usage, and never keep load for a pod that is gone.
package loadaware

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	"github.com/waterline-dev/waterline/pkg/client/informers/externalversions"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	// Registers LoadAwareArgs with kube-scheduler's scheme, so that any
	// binary that registers this plugin can also read its args.
	_ "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/scheme"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config/validation"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "LoadAware"

// preFilterStateKey and preScoreStateKey are where PreFilter and PreScore
// leave the cycle's state (the same state when both run).
const (
	preFilterStateKey fwk.StateKey = "PreFilter" + Name
	preScoreStateKey  fwk.StateKey = "PreScore" + Name
)

// metricSyncTimeout bounds how long New waits for the NodeMetric informer:
// scheduling blind to load is worse than a scheduler that does not start,
// and a missing CRD would otherwise hang the start for ever.
const metricSyncTimeout = time.Minute

var (
	_ fwk.PreFilterPlugin   = &LoadAware{}
	_ fwk.FilterPlugin      = &LoadAware{}
	_ fwk.PreScorePlugin    = &LoadAware{}
	_ fwk.ScorePlugin       = &LoadAware{}
	_ fwk.ReservePlugin     = &LoadAware{}
	_ fwk.EnqueueExtensions = &LoadAware{}
	_ fwk.SignPlugin        = &LoadAware{}
)

// LoadAware is the plugin; see the package doc.
type LoadAware struct {
	cfg     *nodeload.Config
	clock   clock.Clock
	cache   *nodeCache
	reasons reasons
	// refusals counts Filter's refusals by reason and resource.
	refusals *refusalCounters
	// recorder emits Events about nodes; nil in tests without one.
	recorder events.EventRecorder
	// activator is the scheduling queue, to activate refused pods.
	activator fwk.PodActivator
	// pending are the pods not bound yet; wake asks runActivation to
	// activate the ones LoadAware may have refused.
	pending pendingPods
	wake    chan struct{}
	// windowEnd is the earliest end, in Unix nanoseconds, of a forced
	// estimation window on a node Filter refused a pod on (0: none): the
	// node's load drops then without any event. rearm tells runActivation
	// it moved.
	windowEnd atomic.Int64
	rearm     chan struct{}
	// stopped is closed once the NodeMetric informers have stopped.
	stopped chan struct{}
	// last is the state PreFilter or PreScore wrote last and the
	// CycleState it went to: Filter and Score, called for every node,
	// find it with one comparison instead of a lookup in the CycleState's
	// map. Any other CycleState (a clone for preemption or nominated pods,
	// an older cycle's) is read as before.
	last atomic.Pointer[lastState]
}

// lastState is LoadAware.last.
type lastState struct {
	cycle fwk.CycleState
	s     *preFilterState
	// preFiltered and preScored say under which keys cycle holds s.
	preFiltered, preScored bool
}

// stateOf returns the state under key, as readState does.
func (pl *LoadAware) stateOf(state fwk.CycleState, key fwk.StateKey) (*preFilterState, error) {
	if l := pl.last.Load(); l != nil && l.cycle == state && (key == preFilterStateKey && l.preFiltered || key == preScoreStateKey && l.preScored) {
		return l.s, nil
	}
	return readState(state, key)
}

// New builds the plugin from its args (nil for the defaults), validates
// them again, and starts watching NodeMetrics with the handle's kubeconfig
// until ctx ends.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := argsOf(obj)
	if err != nil {
		return nil, err
	}
	if h.KubeConfig() == nil {
		return nil, errors.New("LoadAware needs the scheduler's kubeconfig to watch NodeMetrics")
	}
	client, err := versioned.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("creating the waterline.dev client: %w", err)
	}
	return newPlugin(ctx, args, h, client, clock.RealClock{})
}

// argsOf returns the internal args, validated.
func argsOf(obj runtime.Object) (*config.LoadAwareArgs, error) {
	var args config.LoadAwareArgs
	switch a := obj.(type) {
	case nil:
		args = configv1.DefaultedLoadAwareArgs()
	case *config.LoadAwareArgs:
		if a == nil {
			args = configv1.DefaultedLoadAwareArgs()
			break
		}
		args = *a
	default:
		return nil, fmt.Errorf("want args of type LoadAwareArgs, got %T", obj)
	}
	if err := validation.ValidateLoadAwareArgs(nil, &args).ToAggregate(); err != nil {
		return nil, fmt.Errorf("invalid LoadAware args: %w", err)
	}
	return &args, nil
}

// CoreSpec is the core's view of the args (validated): what the plugin
// builds its nodeload.Config from, and what the simulator takes for the
// args of a values file (waterline sim --values).
func CoreSpec(args *config.LoadAwareArgs) nodeload.Spec {
	s := nodeload.Spec{
		NodeMetricExpiration:                 time.Duration(args.NodeMetricExpirationSeconds) * time.Second,
		EnableScheduleWhenNodeMetricsExpired: args.EnableScheduleWhenNodeMetricsExpired,
		ResourceWeights:                      args.ResourceWeights,
		DominantResourceWeight:               args.DominantResourceWeight,
		UsageThresholds:                      args.UsageThresholds,
		ProdUsageThresholds:                  args.ProdUsageThresholds,
		ProdUsageIncludeSys:                  args.ProdUsageIncludeSys,
		ProdUsageIncludePrediction:           args.ProdUsageIncludePrediction,
		NodeUsageIncludePrediction:           args.NodeUsageIncludePrediction,
		ScoreAccordingPrediction:             args.ScoreAccordingPrediction,
		ScoreAccordingProdUsage:              args.ScoreAccordingProdUsage,
		EstimatedScalingFactors:              args.EstimatedScalingFactors,
		EstimatedAfterPodScheduled:           time.Duration(args.EstimatedSecondsAfterPodScheduled) * time.Second,
		EstimatedAfterInitialized:            time.Duration(args.EstimatedSecondsAfterInitialized) * time.Second,
		AllowCustomizeEstimation:             args.AllowCustomizeEstimation,
		SupportedResources:                   args.SupportedResources,
	}
	if a := args.Aggregated; a != nil {
		s.AggregatedUsageThresholds = a.UsageThresholds
		s.UsageAggregation = nodeload.Aggregation{Type: a.UsageAggregationType, Duration: a.UsageAggregatedDuration.Duration}
		s.ScoreAggregation = nodeload.Aggregation{Type: a.ScoreAggregationType, Duration: a.ScoreAggregatedDuration.Duration}
	}
	return s
}

// newPlugin is New with the waterline.dev client and the clock given, for
// tests.
func newPlugin(ctx context.Context, args *config.LoadAwareArgs, h fwk.Handle, client versioned.Interface, clk clock.Clock) (*LoadAware, error) {
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	cfg, err := nodeload.NewConfig(CoreSpec(args))
	if err != nil {
		return nil, fmt.Errorf("invalid LoadAware args: %w", err)
	}
	pl := &LoadAware{
		cfg:       cfg,
		clock:     clk,
		cache:     newNodeCache(cfg),
		reasons:   newReasons(&cfg.Resources),
		refusals:  newRefusalCounters(&cfg.Resources),
		stopped:   make(chan struct{}),
		activator: h,
		wake:      make(chan struct{}, 1),
		rearm:     make(chan struct{}, 1),
	}
	if r := h.EventRecorder(); r != nil {
		pl.recorder = r
	}

	// The handle's pod informer is started by the scheduler after all
	// plugins are built, and synced before the first pod is scheduled.
	podInformer := h.SharedInformerFactory().Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(pl.podHandler(logger)); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}

	factory := externalversions.NewSharedInformerFactory(client, 0)
	metricInformer := factory.Waterline().V1alpha1().NodeMetrics().Informer()
	if _, err := metricInformer.AddEventHandler(pl.metricHandler(logger)); err != nil {
		return nil, fmt.Errorf("watching NodeMetrics: %w", err)
	}
	factory.Start(ctx.Done())
	activationDone := make(chan struct{})
	go func() {
		defer close(activationDone)
		pl.runActivation(ctx, logger)
	}()
	go func() {
		defer close(pl.stopped)
		<-ctx.Done()
		factory.Shutdown()
		<-activationDone
	}()
	syncCtx, cancel := context.WithTimeout(ctx, metricSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), metricInformer.HasSynced) {
		return nil, fmt.Errorf("NodeMetrics not listed within %s (is the NodeMetric CRD installed, and may the scheduler list and watch nodemetrics.waterline.dev?): %w",
			metricSyncTimeout, context.Cause(syncCtx))
	}
	logger.Info("Watching NodeMetrics", "resources", cfg.Resources.Names())
	return pl, nil
}

// Name returns the plugin's name.
func (pl *LoadAware) Name() string { return Name }

// preFilterState is the incoming pod, estimated once per cycle, the
// cycle's time, so every node is judged at the same instant, and the node
// index, so that no node lookup of the cycle takes the cache's lock.
type preFilterState struct {
	pod nodeload.PodLoad
	now time.Time
	// nowNano is now in Unix nanoseconds, to compare with the nodes'
	// views.
	nowNano int64
	nodes   *nodeIndex
	// cycle numbers the state, for the scores Filter leaves to Score
	// (nodeState.scored).
	cycle uint64
}

// Clone shares the state: nothing changes it after PreFilter.
func (s *preFilterState) Clone() fwk.StateData { return s }

// PreFilter estimates the pod. DaemonSet pods skip Filter: they must run on
// their node whatever its load.
func (pl *LoadAware) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	s := pl.newState(ctx, pod, nodes)
	state.Write(preFilterStateKey, s)
	pl.last.Store(&lastState{cycle: state, s: s, preFiltered: true})
	if s.pod.DaemonSet {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the nodes' pods in the snapshot do not
// enter LoadAware's arithmetic (its load comes from NodeMetrics and its own
// cache), so adding or removing them changes nothing.
func (pl *LoadAware) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// newState estimates the pod for the cycle; nodes is the scheduler's list
// of every node, to index (nil when the caller has none).
func (pl *LoadAware) newState(ctx context.Context, pod *corev1.Pod, nodes []fwk.NodeInfo) *preFilterState {
	load, err := pl.cfg.NewPodLoad(pod)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Estimating pod load with defaults", "pod", klog.KObj(pod), "err", err)
	}
	now := pl.clock.Now()
	return &preFilterState{pod: load, now: now, nowNano: now.UnixNano(), nodes: pl.cache.snapshot(nodes), cycle: pl.cache.newCycle()}
}

// PreScore hands Score the state PreFilter left, or, in a profile that
// enables LoadAware for scoring only, estimates the pod once for the
// cycle, as NodeResourcesFit's PreScore does. (Its nodes are only the
// feasible ones, a new list every cycle: they are not indexed, and such a
// profile looks nodes up by name unless a PreFilter indexed them.)
func (pl *LoadAware) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s, err := readState(state, preFilterStateKey)
	if err != nil {
		s = pl.newState(ctx, pod, nil)
	}
	state.Write(preScoreStateKey, s)
	pl.last.Store(&lastState{cycle: state, s: s, preFiltered: err == nil, preScored: true})
	return nil
}

// readState returns the state under key.
func readState(state fwk.CycleState, key fwk.StateKey) (*preFilterState, error) {
	data, err := state.Read(key)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", key, err)
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v cannot be converted to *loadaware.preFilterState", data)
	}
	return s, nil
}

// Filter refuses the node when the pod would take its load over a
// threshold, when its NodeMetric expired, or when it is in forbid-scheduling
// state and the pod is Batch or Free. Every refusal is
// UnschedulableAndUnresolvable: preemption cannot lower reported usage.
func (pl *LoadAware) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := pl.stateOf(state, preFilterStateKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	sl, nv, err := pl.cache.viewOf(s.nodes, nodeInfo, node, s.now, s.nowNano)
	if err != nil {
		pl.badAnnotation(ctx, node, err)
	}
	if nv == nil {
		// No NodeMetric and no pods: the load is unknown, the node fits.
		return nil
	}
	v := pl.cfg.FilterSummary(&s.pod, &nv.sum, s.nowNano)
	if v.Reason == nodeload.Fit {
		// Score runs next on the nodes Filter passed, with the same state:
		// leave it the score while the view is at hand.
		if sl != nil {
			sl.scored.Store(scoredWord(s.cycle, pl.cfg.ScoreSummary(&s.pod, &nv.sum, s.nowNano)))
		}
		return nil
	}
	pl.refusals.count(v)
	if nv.until != 0 {
		pl.noteWindowEnd(nv.until)
	}
	reasons := pl.reasons.of(v)
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		j := pl.cfg.Judge(&s.pod, &nv.load, s.now)
		n := pl.cfg.Resources.Len()
		logger.Info("Node refused by load", "pod", klog.KObj(pod), "node", klog.KObj(node), "reasons", reasons, "prodUsage", v.Reason == nodeload.ReasonProdUsage,
			"estimated", pl.cfg.Resources.List(j.Estimated), "percent", j.Percent[:n], "thresholds", j.Thresholds[:n])
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reasons...)
}

// badAnnotation reports a node annotation LoadAware ignores, in the log
// and as a Warning Event on the Node, where its owner looks.
func (pl *LoadAware) badAnnotation(ctx context.Context, node *corev1.Node, err error) {
	klog.FromContext(ctx).Error(err, "Ignoring node annotation", "node", klog.KObj(node))
	if pl.recorder != nil {
		pl.recorder.Eventf(node, nil, corev1.EventTypeWarning, "InvalidAnnotation", "Scheduling", "LoadAware ignores the annotation: %v", err)
	}
}

// Score ranks the node by how little of it would be used with the pod; see
// nodeload.Config.Score.
func (pl *LoadAware) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := pl.stateOf(state, preScoreStateKey)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if score, ok := s.nodes.scoredBy(nodeInfo, s.cycle); ok {
		return score, nil
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, "node not found")
	}
	_, nv, err := pl.cache.viewOf(s.nodes, nodeInfo, node, s.now, s.nowNano)
	if err != nil {
		pl.badAnnotation(ctx, node, err)
	}
	if nv == nil {
		// No NodeMetric and no pods: the load is unknown.
		return 0, nil
	}
	return pl.cfg.ScoreSummary(&s.pod, &nv.sum, s.nowNano), nil
}

// ScoreExtensions returns nil: scores are already 0-100.
func (pl *LoadAware) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve counts the pod on the node at once, so the next pods of a burst
// see it before the NodeMetric does.
func (pl *LoadAware) Reserve(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	if err := pl.cache.assign(pod, nodeName, true, pl.clock.Now()); err != nil {
		klog.FromContext(ctx).V(2).Info("Estimating pod load with defaults", "pod", klog.KObj(pod), "err", err)
	}
	return nil
}

// Unreserve takes back what Reserve counted, unless the pod informer has
// already seen the pod bound.
func (pl *LoadAware) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.cache.remove(pod.UID, true)
}

// SignPod lets the scheduler batch pods that LoadAware sees as equal: same
// estimate and band flags. A pod's placement only changes the load of the
// node it goes to, which is what batching assumes.
func (pl *LoadAware) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	load, _ := pl.cfg.NewPodLoad(pod)
	return []fwk.SignFragment{{Key: "waterline.dev/" + Name + ".PodLoad()", Value: load}}, nil
}

// Stopped is closed once the plugin's NodeMetric informers and its
// activation loop have stopped, after the context given to New ended.
func (pl *LoadAware) Stopped() <-chan struct{} { return pl.stopped }
