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

package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// Snapshot is what every module sees in one cycle. Modules must treat it
// as read-only: the pods and objects are the informers'.
type Snapshot struct {
	// Time is the cycle's time (the sample's).
	Time time.Time
	// Sample is what the collector read this cycle.
	Sample *collector.Sample
	// Cache holds the history, this cycle's sample included.
	Cache *metriccache.Cache
	// Node is the agent's Node; nil until it exists.
	Node *corev1.Node
	// Pods are the node's pods that have not finished.
	Pods []*corev1.Pod
	// PodsComplete says Pods is the node's whole pod list (the informers
	// synced, or the node's own snapshot of them stands in): a pod not in
	// it is not on the node. Modules only drop what a pod left behind when
	// it is set.
	PodsComplete bool
	// FromNodeSnapshot says the Node, pods, NodeMetric and NodeQOS objects
	// are the node snapshot a previous run saved, not the API server's
	// current view: the informers have not synced yet. What cannot be
	// undone (an eviction) waits for the current view; it needs the API
	// server anyway.
	FromNodeSnapshot bool
	// NodeMetric is the node's NodeMetric, nil until it exists. Its spec
	// carries the collect and predict policy; use CollectPolicy and
	// PredictPolicy, which fill the defaults.
	NodeMetric *v1alpha1.NodeMetric
	// NodeQOSes are all NodeQOS objects.
	NodeQOSes []*v1alpha1.NodeQOS
}

// CollectPolicy is the NodeMetric's collect policy with defaults filled.
func (s *Snapshot) CollectPolicy() *v1alpha1.NodeMetricCollectPolicy {
	if s.NodeMetric == nil {
		return v1alpha1.CollectPolicyWithDefaults(nil)
	}
	return v1alpha1.CollectPolicyWithDefaults(s.NodeMetric.Spec.CollectPolicy)
}

// PredictPolicy is the NodeMetric's predict policy with defaults filled.
func (s *Snapshot) PredictPolicy() *v1alpha1.PredictPolicy {
	if s.NodeMetric == nil {
		return v1alpha1.PredictPolicyWithDefaults(nil)
	}
	return v1alpha1.PredictPolicyWithDefaults(s.NodeMetric.Spec.PredictPolicy)
}

// CycleModule acts once per collect cycle, on the agent's loop, after the
// sample is in the metric cache and in the order the modules were added.
// It must be quick (the cycle is 1 s by default); an error is logged and
// counted, never fatal, and the next cycle runs as usual -- modules are
// level-triggered, so the next cycle is also the retry.
type CycleModule interface {
	Name() string
	Cycle(ctx context.Context, s *Snapshot) error
}

// StatusContributor adds what it knows to the NodeMetric status the
// reporter is about to write (the predictor its peak, the QoS executor its
// conditions). It is called on the reporter's goroutine: implementations
// guard their own state.
type StatusContributor interface {
	ContributeStatus(status *v1alpha1.NodeMetricStatus)
}

// Runner is a module with work of its own besides cycles (a checkpoint
// loop, say). Run blocks until ctx ends.
type Runner interface {
	Run(ctx context.Context)
}

// Agent runs the collect loop and its modules.
type Agent struct {
	states    *States
	collector *collector.Collector
	cache     *metriccache.Cache
	clock     clock.WithTicker
	interval  time.Duration
	modules   []CycleModule

	// refs is the cycle's pod list as the collector takes it, reused;
	// refCache keeps each pod's PodRef while its object is the same
	// (informer objects are replaced, never changed, on update), so a
	// cycle builds refs only for pods that changed.
	refs     []collector.PodRef
	refCache map[types.UID]cachedRef
	cycleN   uint64

	reportRequests chan struct{}
	// OnCycle, when set, is called after every cycle with its duration
	// and error count; the command uses it for metrics and readiness.
	OnCycle func(took time.Duration, moduleErrors int)
	// OnModuleError, when set, is called for every failed module cycle
	// with the module's name; the command counts them per module.
	OnModuleError func(module string, err error)
}

// New returns an agent; Add modules before Run.
func New(states *States, c *collector.Collector, mc *metriccache.Cache, clk clock.WithTicker, interval time.Duration) *Agent {
	return &Agent{
		states:         states,
		collector:      c,
		cache:          mc,
		clock:          clk,
		interval:       interval,
		reportRequests: make(chan struct{}, 1),
		refCache:       map[types.UID]cachedRef{},
	}
}

type cachedRef struct {
	pod   *corev1.Pod
	ref   collector.PodRef
	cycle uint64
}

// podRefs returns the collector's view of pods, reusing the refs of pods
// whose object did not change: a quiet node allocates nothing here.
func (a *Agent) podRefs(pods []*corev1.Pod) []collector.PodRef {
	a.cycleN++
	a.refs = a.refs[:0]
	for _, p := range pods {
		c, ok := a.refCache[p.UID]
		if !ok || c.pod != p {
			c = cachedRef{pod: p, ref: collector.PodRefOf(p)}
		}
		c.cycle = a.cycleN
		a.refCache[p.UID] = c
		a.refs = append(a.refs, c.ref)
	}
	if len(a.refCache) > len(pods) {
		for uid, c := range a.refCache {
			if c.cycle != a.cycleN {
				delete(a.refCache, uid)
			}
		}
	}
	return a.refs
}

// Add appends a module; modules cycle in the order added.
func (a *Agent) Add(m CycleModule) { a.modules = append(a.modules, m) }

// Modules returns the modules, for the reporter to find contributors.
func (a *Agent) Modules() []CycleModule { return a.modules }

// RequestReport asks the reporter to write the NodeMetric status now rather
// than at its next interval (the predictor does when its prediction moved
// beyond the diff threshold). It never blocks.
func (a *Agent) RequestReport() {
	select {
	case a.reportRequests <- struct{}{}:
	default:
	}
}

// ReportRequests delivers RequestReport calls to the reporter.
func (a *Agent) ReportRequests() <-chan struct{} { return a.reportRequests }

// States is the agent's view of the API server.
func (a *Agent) States() *States { return a.states }

// Cache is the agent's metric cache.
func (a *Agent) Cache() *metriccache.Cache { return a.cache }

// Run runs the collect loop until ctx ends; Runner modules run beside it.
// The States must have been started.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	done := make(chan struct{})
	running := 0
	for _, m := range a.modules {
		if r, ok := m.(Runner); ok {
			running++
			go func() {
				defer func() { done <- struct{}{} }()
				r.Run(ctx)
			}()
		}
	}
	ticker := a.clock.NewTicker(a.interval)
	defer ticker.Stop()
	logger.Info("Starting the collect loop", "interval", a.interval, "modules", len(a.modules))
	for {
		a.Cycle(ctx)
		select {
		case <-ctx.Done():
			for range running {
				<-done
			}
			return nil
		case <-ticker.C():
		}
	}
}

// Cycle runs one collect cycle: collect, store, then every module.
func (a *Agent) Cycle(ctx context.Context) {
	logger := klog.FromContext(ctx)
	start := a.clock.Now()
	// Before any object is read: once synced, the States never answer
	// from the snapshot again, so false here means every object below is
	// the current view (true at worst makes this cycle wait needlessly).
	fromSnapshot := a.states.fromSnapshot()
	pods := a.states.Pods()
	sample, err := a.collector.Collect(ctx, a.podRefs(pods))
	if err != nil {
		logger.Error(err, "Collecting node usage")
		return
	}
	if err := a.cache.AppendSample(sample); err != nil && !errors.Is(err, context.Canceled) {
		logger.V(2).Info("Metric cache refused the sample", "err", err)
	}
	snap := &Snapshot{
		Time:             sample.Time,
		Sample:           sample,
		Cache:            a.cache,
		Node:             a.states.Node(),
		Pods:             pods,
		PodsComplete:     a.states.PodsComplete(),
		FromNodeSnapshot: fromSnapshot,
		NodeMetric:       a.states.NodeMetric(),
		NodeQOSes:        a.states.NodeQOSes(),
	}
	failed := 0
	for _, m := range a.modules {
		if err := m.Cycle(ctx, snap); err != nil {
			failed++
			logger.Error(fmt.Errorf("%s: %w", m.Name(), err), "Module cycle failed")
			if a.OnModuleError != nil {
				a.OnModuleError(m.Name(), err)
			}
		}
	}
	took := a.clock.Since(start)
	logger.V(4).Info("Cycle done", "pods", len(pods), "collected", sample.Stats.PodsCollected, "took", took)
	if a.OnCycle != nil {
		a.OnCycle(took, failed)
	}
}
