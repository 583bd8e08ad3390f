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

// Package nodemetric keeps one NodeMetric per Node: created with the Node,
// deleted with it, and its spec (collect and predict policy, reclaim ratio) written from
// the ColocationPolicy that governs the node. It never writes a NodeMetric's
// status: that belongs to the node's agent.
package nodemetric

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/policy"
	"github.com/waterline-dev/waterline/pkg/manager"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "nodemetric-lifecycle"

// Reconciler reconciles a Node's NodeMetric.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=waterline.dev,resources=nodemetrics,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=waterline.dev,resources=colocationpolicies,verbs=get;list;watch

// Reconcile makes the NodeMetric named after the node exist with the spec its
// policy asks for, or not exist when the node is gone.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := klog.FromContext(ctx).WithValues("node", req.Name)
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting node %s: %w", req.Name, err)
		}
		// The owner reference lets the garbage collector delete the
		// NodeMetric too; deleting it here does not wait for the collector.
		nm := &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: req.Name}}
		if err := r.Client.Delete(ctx, nm); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("deleting NodeMetric %s of a deleted node: %w", req.Name, err)
		} else if err == nil {
			logger.V(2).Info("Deleted the NodeMetric of a deleted node")
		}
		return reconcile.Result{}, nil
	}
	if node.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}

	policies := &v1alpha1.ColocationPolicyList{}
	if err := r.Client.List(ctx, policies); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing ColocationPolicies: %w", err)
	}
	resolved, errs := policy.ForNode(node.Labels, manager.Pointers(policies.Items))
	for _, err := range errs {
		logger.Info("Ignoring a ColocationPolicy", "err", err)
	}
	// The reclaim ratio goes with the spec so that the agent reports
	// status.prodReclaimable at the ratio Mid is sold at.
	want := v1alpha1.NodeMetricSpec{
		CollectPolicy: resolved.Collect, PredictPolicy: resolved.Predict,
		Tiers: &v1alpha1.NodeMetricTiers{ReclaimRatioPercent: resolved.Tiers.ReclaimRatioPercent},
	}

	nm := &v1alpha1.NodeMetric{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: node.Name}, nm)
	switch {
	case apierrors.IsNotFound(err):
		nm = &v1alpha1.NodeMetric{
			ObjectMeta: metav1.ObjectMeta{
				Name:            node.Name,
				OwnerReferences: []metav1.OwnerReference{nodeOwner(node)},
			},
			Spec: want,
		}
		if err := r.Client.Create(ctx, nm); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The agent created it first; the next event updates its spec.
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("creating NodeMetric %s: %w", node.Name, err)
		}
		logger.V(2).Info("Created NodeMetric", "policies", resolved.Sources)
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("getting NodeMetric %s: %w", node.Name, err)
	}

	if apiequality.Semantic.DeepEqual(nm.Spec, want) && hasOwner(nm, node) {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(nm.DeepCopy())
	nm.Spec = want
	if !hasOwner(nm, node) {
		// An agent that created the NodeMetric before the manager ran did
		// not set the owner; adopt it so it goes with the node.
		nm.OwnerReferences = append(nm.OwnerReferences, nodeOwner(node))
	}
	if err := r.Client.Patch(ctx, nm, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating NodeMetric %s spec: %w", node.Name, err)
	}
	logger.V(2).Info("Updated NodeMetric spec", "policies", resolved.Sources)
	return reconcile.Result{}, nil
}

// SetupWithManager registers the controller: it reconciles a node when the
// node is created, deleted or relabelled (labels choose its pool), when its
// NodeMetric changes, and every node when any ColocationPolicy changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(manager.PerNodeOptions()).
		For(&corev1.Node{}, builder.WithPredicates(nodeLifecycleOrLabels())).
		Watches(&v1alpha1.NodeMetric{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, obj client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetName()}}}
			}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.ColocationPolicy{}, handler.EnqueueRequestsFromMapFunc(manager.EnqueueAllNodes(r.Client)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// nodeLifecycleOrLabels lets through node creation, deletion and label
// changes, not the status heartbeats that make up most node updates.
func nodeLifecycleOrLabels() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !apiequality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

func nodeOwner(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "v1",
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
		// Not a controller reference: the agent writes the status.
		BlockOwnerDeletion: ptr.To(false),
	}
}

func hasOwner(nm *v1alpha1.NodeMetric, node *corev1.Node) bool {
	for _, ref := range nm.OwnerReferences {
		if ref.Kind == "Node" && ref.UID == node.UID {
			return true
		}
	}
	return false
}
