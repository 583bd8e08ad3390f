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
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	wlinformers "github.com/waterline-dev/waterline/pkg/client/informers/externalversions"
	wllisters "github.com/waterline-dev/waterline/pkg/client/listers/apis/v1alpha1"
)

// What the agent may do on the API server. RBAC cannot limit a list or
// watch to one node's objects; the agent does so itself with field
// selectors (spec.nodeName for pods, metadata.name for its Node and
// NodeMetric). Events are the agent's and its modules' (recorded by the
// command's recorder); pods/eviction is the QoS executor's, and so is pod
// delete: memory relief deletes a pod whose eviction a PodDisruptionBudget
// refused, as kubelet's own eviction would. DaemonSet get tells an
// uninstall (its DaemonSet gone) from a restart on SIGTERM.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=waterline.dev,resources=nodemetrics,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=waterline.dev,resources=nodemetrics/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=waterline.dev,resources=nodeqoses,verbs=get;list;watch

// States is the agent's view of the API server, limited to its node: the
// Node, the pods bound to it, its NodeMetric, and the NodeQOS objects.
type States struct {
	nodeName string

	podFactory  informers.SharedInformerFactory
	nodeFactory informers.SharedInformerFactory
	nmFactory   wlinformers.SharedInformerFactory
	qosFactory  wlinformers.SharedInformerFactory

	pods  corelisters.PodLister
	nodes corelisters.NodeLister
	nms   wllisters.NodeMetricLister
	qoses wllisters.NodeQOSLister

	// synced is set once the informers have synced; until then the
	// States answer from snap, the node snapshot a previous run saved,
	// when there is one (see UseSnapshot).
	synced   atomic.Bool
	snap     *nodeSnapshot
	snapPath string
}

// NewStates builds the informers; Start runs them.
func NewStates(nodeName string, kube kubernetes.Interface, wlClient versioned.Interface, resync time.Duration) *States {
	byNodeName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	}
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
	}
	s := &States{
		nodeName:    nodeName,
		podFactory:  informers.NewSharedInformerFactoryWithOptions(kube, resync, informers.WithTweakListOptions(byNodeName), informers.WithTransform(stripManagedFields)),
		nodeFactory: informers.NewSharedInformerFactoryWithOptions(kube, resync, informers.WithTweakListOptions(byName), informers.WithTransform(stripManagedFields)),
		nmFactory:   wlinformers.NewSharedInformerFactoryWithOptions(wlClient, resync, wlinformers.WithTweakListOptions(byName)),
		qosFactory:  wlinformers.NewSharedInformerFactory(wlClient, resync),
	}
	s.pods = s.podFactory.Core().V1().Pods().Lister()
	s.nodes = s.nodeFactory.Core().V1().Nodes().Lister()
	s.nms = s.nmFactory.Waterline().V1alpha1().NodeMetrics().Lister()
	s.qoses = s.qosFactory.Waterline().V1alpha1().NodeQOSs().Lister()
	return s
}

// stripManagedFields drops what the agent never reads and pods carry most
// of: server-side-apply bookkeeping is a large part of a pod object, and
// the agent keeps every pod of its node in memory. The agent never writes
// pods or its Node back, so nothing is lost.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// Start starts the informers and waits until they have synced or ctx ends.
func (s *States) Start(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	s.synced.Store(true)
	return nil
}

// StartInBackground starts the informers and returns at once; onSynced is
// called once they have synced (never, if ctx ends first). Until then the
// States answer from the node snapshot, if UseSnapshot loaded one, so that
// the loop can protect the node while the API server cannot be reached.
func (s *States) StartInBackground(ctx context.Context, onSynced func()) {
	go func() {
		if err := s.start(ctx); err != nil {
			return
		}
		s.synced.Store(true)
		if onSynced != nil {
			onSynced()
		}
	}()
}

func (s *States) start(ctx context.Context) error {
	for _, f := range []interface{ Start(<-chan struct{}) }{s.podFactory, s.nodeFactory, s.nmFactory, s.qosFactory} {
		f.Start(ctx.Done())
	}
	synced := []cache.InformerSynced{
		s.podFactory.Core().V1().Pods().Informer().HasSynced,
		s.nodeFactory.Core().V1().Nodes().Informer().HasSynced,
		s.nmFactory.Waterline().V1alpha1().NodeMetrics().Informer().HasSynced,
		s.qosFactory.Waterline().V1alpha1().NodeQOSs().Informer().HasSynced,
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("waiting for the informers of node %s to sync: %w", s.nodeName, context.Cause(ctx))
	}
	return nil
}

// Shutdown waits for the informers' goroutines after ctx has ended.
func (s *States) Shutdown() {
	s.podFactory.Shutdown()
	s.nodeFactory.Shutdown()
	s.nmFactory.Shutdown()
	s.qosFactory.Shutdown()
}

// NodeName is the agent's node.
func (s *States) NodeName() string { return s.nodeName }

// Node returns the agent's Node, or nil before it exists.
func (s *States) Node() *corev1.Node {
	if s.fromSnapshot() {
		return s.snap.Node
	}
	n, err := s.nodes.Get(s.nodeName)
	if err != nil {
		return nil
	}
	return n
}

// Pods returns the pods bound to the node that have not finished. The
// objects are the informer's: read-only.
func (s *States) Pods() []*corev1.Pod {
	if s.fromSnapshot() {
		return s.snap.Pods
	}
	all, _ := s.pods.List(labels.Everything())
	// List returns a slice of its own: filter it in place.
	out := all[:0]
	for _, p := range all {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// NodeMetric returns the node's NodeMetric, or nil before it exists.
func (s *States) NodeMetric() *v1alpha1.NodeMetric {
	if s.fromSnapshot() {
		return s.snap.NodeMetric
	}
	nm, err := s.nms.Get(s.nodeName)
	if err != nil {
		return nil
	}
	return nm
}

// NodeQOSes returns every NodeQOS; which select the node is the QoS core's
// decision (qos.SelectNodeQOS).
func (s *States) NodeQOSes() []*v1alpha1.NodeQOS {
	if s.fromSnapshot() {
		return s.snap.NodeQOSes
	}
	all, _ := s.qoses.List(labels.Everything())
	return all
}
