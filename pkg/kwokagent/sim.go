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

package kwokagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/agent/predictor"
	"github.com/waterline-dev/waterline/pkg/agent/reporter"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	wlinformers "github.com/waterline-dev/waterline/pkg/client/informers/externalversions"
	wllisters "github.com/waterline-dev/waterline/pkg/client/listers/apis/v1alpha1"
)

// Config is what the simulator simulates.
type Config struct {
	// Nodes selects the nodes to simulate an agent on (e.g. type=kwok);
	// never select nodes that run a real agent.
	Nodes labels.Selector
	// Model turns the nodes' pods into usage.
	Model Model
	// Interval is how often a sample is taken (default 1s, 100ms-1m).
	Interval time.Duration
	// Predictor is each simulated agent's predictor configuration (its
	// update and check intervals; defaults as the agent's). The model and
	// its parameters come from the node's NodeMetric, as on a real node.
	// Simulated agents keep no checkpoint: CheckpointPath must be empty.
	Predictor predictor.Config
}

// Simulator runs one simulated agent (a metric cache fed by Model, the
// agent's predictor and its reporter) per selected node.
type Simulator struct {
	cfg      Config
	kube     kubernetes.Interface
	wlClient versioned.Interface
	clock    clock.WithTicker

	nodes   corelisters.NodeLister
	pods    cache.Indexer
	metrics wllisters.NodeMetricLister

	mu     sync.Mutex
	agents map[string]*nodeAgent
}

type nodeAgent struct {
	cache     *metriccache.Cache
	predictor *predictor.Predictor
	cancel    context.CancelFunc
	done      chan struct{}
}

// reportRequests asks a simulated agent's reporter for an early report,
// as agent.Agent does for the real one: a pending request is enough.
type reportRequests chan struct{}

func (r reportRequests) RequestReport() {
	select {
	case r <- struct{}{}:
	default:
	}
}

const podNodeIndex = "spec.nodeName"

// New validates cfg and returns a simulator.
func New(cfg Config, kube kubernetes.Interface, wlClient versioned.Interface, clk clock.WithTicker) (*Simulator, error) {
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	cfg.Model.SetDefaults()
	errs := cfg.Model.Validate(field.NewPath("model"))
	if cfg.Interval < 100*time.Millisecond || cfg.Interval > time.Minute {
		return nil, fmt.Errorf("interval %v: must be between 100ms and 1m", cfg.Interval)
	}
	if cfg.Nodes == nil || cfg.Nodes.Empty() {
		return nil, errors.New("nodes: a selector is required (an empty one would simulate agents on nodes that have real ones)")
	}
	cfg.Predictor.SetDefaults()
	errs = append(errs, cfg.Predictor.Validate(field.NewPath("predictor"))...)
	if cfg.Predictor.CheckpointPath != "" {
		errs = append(errs, field.Invalid(field.NewPath("predictor", "checkpointPath"), cfg.Predictor.CheckpointPath, "simulated agents keep no checkpoint"))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &Simulator{cfg: cfg, kube: kube, wlClient: wlClient, clock: clk, agents: map[string]*nodeAgent{}}, nil
}

// Run runs the simulated agents until ctx ends.
func (s *Simulator) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	kf := informers.NewSharedInformerFactory(s.kube, 0)
	wf := wlinformers.NewSharedInformerFactory(s.wlClient, 0)
	s.nodes = kf.Core().V1().Nodes().Lister()
	podInformer := kf.Core().V1().Pods().Informer()
	if err := podInformer.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	s.pods = podInformer.GetIndexer()
	s.metrics = wf.Waterline().V1alpha1().NodeMetrics().Lister()
	kf.Start(ctx.Done())
	wf.Start(ctx.Done())
	defer kf.Shutdown()
	defer wf.Shutdown()
	for typ, ok := range kf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the %v informer: %w", typ, ctx.Err())
		}
	}
	for typ, ok := range wf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the %v informer: %w", typ, ctx.Err())
		}
	}
	logger.Info("Simulating agents", "nodes", s.cfg.Nodes.String(), "cpuFactor", s.cfg.Model.CPUFactor, "memoryFactor", s.cfg.Model.MemoryFactor)
	defer s.stopAll()
	tick := s.clock.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		if err := s.step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// step starts agents for new nodes, stops those of gone nodes, and feeds
// every agent's cache one sample.
func (s *Simulator) step(ctx context.Context) error {
	nodes, err := s.nodes.List(s.cfg.Nodes)
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	now := s.clock.Now()
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		a, err := s.agentFor(ctx, n.Name)
		if err != nil {
			return err
		}
		pods := s.Pods(n.Name)
		if err := a.cache.Append(now, s.cfg.Model.Sample(pods, now)); err != nil && !errors.Is(err, metriccache.ErrOutOfOrder) {
			return fmt.Errorf("sampling node %s: %w", n.Name, err)
		}
		// The predictor feeds on the cache as on a real agent's cycle.
		nm, _ := s.metrics.Get(n.Name)
		snap := &agent.Snapshot{Time: now, Cache: a.cache, Node: n, Pods: pods, PodsComplete: true, NodeMetric: nm}
		if err := a.predictor.Cycle(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("node", n.Name)), snap); err != nil {
			klog.FromContext(ctx).Error(err, "Predicting the Prod peak of a simulated node", "node", n.Name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, a := range s.agents {
		if !seen[name] {
			a.cancel()
			<-a.done
			delete(s.agents, name)
			klog.FromContext(ctx).Info("Stopped the simulated agent of a node that is gone or no longer selected", "node", name)
		}
	}
	return nil
}

func (s *Simulator) agentFor(ctx context.Context, node string) (*nodeAgent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.agents[node]; ok {
		return a, nil
	}
	actx, cancel := context.WithCancel(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("node", node)))
	c, err := metriccache.New(actx, metriccache.Config{Retention: 30 * time.Minute, Interval: s.cfg.Interval, MemoryBudgetBytes: 4 << 20}, s.clock)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("the metric cache of node %s: %w", node, err)
	}
	requests := make(reportRequests, 1)
	pred, err := predictor.New(s.cfg.Predictor, predictor.Deps{Clock: s.clock, Reports: requests})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("the predictor of node %s: %w", node, err)
	}
	rep, err := reporter.New(reporter.Config{}, reporter.Deps{
		NodeName:     node,
		Client:       s.wlClient.WaterlineV1alpha1().NodeMetrics(),
		State:        nodeState{s: s, node: node},
		Cache:        c,
		Clock:        s.clock,
		Requests:     requests,
		Contributors: []agent.StatusContributor{pred},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("the reporter of node %s: %w", node, err)
	}
	a := &nodeAgent{cache: c, predictor: pred, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		rep.Run(actx)
	}()
	s.agents[node] = a
	klog.FromContext(ctx).V(2).Info("Started a simulated agent", "node", node)
	return a, nil
}

func (s *Simulator) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, a := range s.agents {
		a.cancel()
		<-a.done
		delete(s.agents, name)
	}
}

// Pods are the node's pods that have not finished.
func (s *Simulator) Pods(node string) []*corev1.Pod {
	objs, _ := s.pods.ByIndex(podNodeIndex, node)
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	return out
}

// nodeState is the reporter's view of one simulated node.
type nodeState struct {
	s    *Simulator
	node string
}

func (n nodeState) Node() *corev1.Node {
	node, err := n.s.nodes.Get(n.node)
	if err != nil {
		return nil
	}
	return node
}

func (n nodeState) Pods() []*corev1.Pod { return n.s.Pods(n.node) }

func (n nodeState) NodeMetric() *v1alpha1.NodeMetric {
	nm, err := n.s.metrics.Get(n.node)
	if err != nil {
		return nil
	}
	return nm
}
