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

// Package nodetiers publishes each node's Mid and Batch tier allocatable
// (waterline.dev/{mid,batch}-{cpu,memory}) on Node status, from its agent's
// NodeMetric, its pods and its ColocationPolicy. The arithmetic is
// pkg/core/tiers'; this controller gathers the inputs, writes the result
// when it moved enough, and resets the tiers to zero when the NodeMetric
// goes stale, also when no event arrives.
package nodetiers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/policy"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
	"github.com/waterline-dev/waterline/pkg/manager"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "tiers"

// PodNodeNameField is the cache index of pods by spec.nodeName the
// controller reads; IndexPods registers it.
const PodNodeNameField = "spec.nodeName"

// IndexPods registers the pod index the controller needs.
func IndexPods(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeNameField, func(obj client.Object) []string {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
}

// Reconciler reconciles one node's tier allocatable.
type Reconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=waterline.dev,resources=nodemetrics,verbs=get;list;watch
// +kubebuilder:rbac:groups=waterline.dev,resources=colocationpolicies,verbs=get;list;watch

// Reconcile computes the node's tiers and writes them when they moved by
// more than the policy's update threshold.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := klog.FromContext(ctx).WithValues("node", req.Name)
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var nm *v1alpha1.NodeMetric
	metric := &v1alpha1.NodeMetric{}
	switch err := r.Client.Get(ctx, types.NamespacedName{Name: node.Name}, metric); {
	case err == nil:
		nm = metric
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("getting NodeMetric %s: %w", node.Name, err)
	}
	podList := &corev1.PodList{}
	if err := r.Client.List(ctx, podList, client.MatchingFields{PodNodeNameField: node.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing pods of node %s: %w", node.Name, err)
	}
	policies := &v1alpha1.ColocationPolicyList{}
	if err := r.Client.List(ctx, policies); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing ColocationPolicies: %w", err)
	}
	resolved, _ := policy.ForNode(node.Labels, manager.Pointers(policies.Items))

	now := r.Clock.Now()
	in := tiers.BuildInput(node, manager.Pointers(podList.Items), nm)
	res := tiers.Calculate(resolved.Tiers, in, now)
	alloc := node.Status.Allocatable
	update, why := tiers.ShouldUpdate(resolved.Tiers, alloc.Cpu().MilliValue(), alloc.Memory().Value(), alloc, res.Allocatable)
	if update {
		patch := client.MergeFrom(node.DeepCopy())
		for name, q := range res.ResourceList() {
			if node.Status.Capacity == nil {
				node.Status.Capacity = corev1.ResourceList{}
			}
			if node.Status.Allocatable == nil {
				node.Status.Allocatable = corev1.ResourceList{}
			}
			node.Status.Capacity[name] = q
			node.Status.Allocatable[name] = q
		}
		if err := r.Client.Status().Patch(ctx, node, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("writing tier allocatable of node %s: %w", node.Name, err)
		}
		logger.V(2).Info("Updated tier allocatable", "why", why,
			"midCPU", res.MidCPU, "midMemory", res.MidMemory, "batchCPU", res.BatchCPU, "batchMemory", res.BatchMemory,
			"degraded", res.Degraded, "reason", res.Reason)
	} else {
		logger.V(4).Info("Tier allocatable unchanged", "midCPU", res.MidCPU, "batchCPU", res.BatchCPU, "reason", res.Reason)
	}

	// Without new events the NodeMetric goes stale on its own: come back
	// when it would, so the tiers drop to zero on time.
	if res.Degraded || in.UpdateTime.IsZero() {
		return reconcile.Result{}, nil
	}
	// Time.Add saturates: a limit of "never" requeues in ~292 years.
	staleAt := in.UpdateTime.Add(tiers.DegradeAfter(resolved.Tiers)).Add(time.Second)
	return reconcile.Result{RequeueAfter: max(staleAt.Sub(now), time.Second)}, nil
}

// SetupWithManager registers the controller: a node is reconciled when its
// allocatable or labels change, when its NodeMetric changes (status
// included), when a pod on it starts, ends or moves, and every node when a
// ColocationPolicy changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	toNode := func(_ context.Context, obj client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetName()}}}
	}
	podToNode := func(_ context.Context, obj client.Object) []reconcile.Request {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n}}}
		}
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(manager.PerNodeOptions()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: nodeChanged})).
		Watches(&v1alpha1.NodeMetric{}, handler.EnqueueRequestsFromMapFunc(toNode)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToNode),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: podChanged})).
		Watches(&v1alpha1.ColocationPolicy{}, handler.EnqueueRequestsFromMapFunc(manager.EnqueueAllNodes(r.Client)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// nodeChanged ignores heartbeats: only allocatable (someone, or we, wrote
// it) and labels (they choose the policy) matter.
func nodeChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
	return !apiequality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
		!apiequality.Semantic.DeepEqual(o.Labels, n.Labels)
}

// podChanged lets through what changes a node's Prod requests: binding,
// finishing, and label changes (the band label).
func podChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
	return o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase ||
		!apiequality.Semantic.DeepEqual(o.Labels, n.Labels)
}
