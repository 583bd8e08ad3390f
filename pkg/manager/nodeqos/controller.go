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

// Package nodeqos writes NodeQOS.status: how many nodes each NodeQOS
// selects, and conditions saying where it cannot be applied, which other
// NodeQOS share its nodes, and where its merge with them is out of order
// (the agents there refuse it). The decisions are pkg/core/qos's
// ReportNodeQOS, the same selection and checks the agents make; this
// controller gathers the objects and nodes and writes what changed. It never
// changes a spec.
package nodeqos

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "nodeqos-status"

// allKey is the one request the controller works on: every NodeQOS status
// depends on every node and every other NodeQOS.
var allKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all"}}

// staleRetry is how long the controller waits before recomputing after a
// status write lost to a newer object: long enough for the informer to
// deliver that object, short enough that `kubectl get nqos` does not lag.
const staleRetry = 500 * time.Millisecond

// Reconciler writes the status of every NodeQOS.
type Reconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// +kubebuilder:rbac:groups=waterline.dev,resources=nodeqoses,verbs=get;list;watch
// +kubebuilder:rbac:groups=waterline.dev,resources=nodeqoses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile recomputes every NodeQOS's status and writes those that changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := klog.FromContext(ctx)
	list := &v1alpha1.NodeQOSList{}
	if err := r.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeQOS: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	views := make([]qos.NodeView, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		views = append(views, qos.NodeView{Name: n.Name, Labels: n.Labels, Capacity: qos.Capacity{
			CPUMilli: n.Status.Capacity.Cpu().MilliValue(), MemoryBytes: n.Status.Capacity.Memory().Value()}})
	}
	reports := qos.ReportNodeQOS(list.Items, views)
	now := metav1.NewTime(r.Clock.Now())
	var errs []error
	stale := false
	for i := range list.Items {
		nq := &list.Items[i]
		rep := reports[nq.Name]
		want := v1alpha1.NodeQOSStatus{
			ObservedGeneration: nq.Generation,
			MatchedNodes:       rep.MatchedNodes,
			Conditions:         rep.Conditions(nq.Status.Conditions, nq.Generation, now),
		}
		if apiequality.Semantic.DeepEqual(want, nq.Status) {
			continue
		}
		nq.Status = want
		if err := r.Client.Status().Update(ctx, nq); err != nil {
			if apierrors.IsNotFound(err) {
				// Deleted since the list; its delete event triggers us again.
				continue
			}
			if apierrors.IsConflict(err) {
				// The cache is behind the API server. When only the status
				// moved on (our own last write), no watched event will
				// come, so look again once the cache has caught up.
				stale = true
				continue
			}
			errs = append(errs, fmt.Errorf("writing the status of NodeQOS %s: %w", nq.Name, err))
			continue
		}
		logger.V(2).Info("Updated NodeQOS status", "nodeQOS", klog.KObj(nq), "matchedNodes", rep.MatchedNodes,
			"invalidNodes", rep.InvalidNodes, "overlapsWith", rep.OverlapsWith, "refusedNodes", len(rep.RefusedNodes))
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if stale {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	return reconcile.Result{}, nil
}

// SetupWithManager registers the controller: every NodeQOS is reported
// again when a NodeQOS is created, deleted or its spec changes, and when a
// node comes, goes, or changes its labels or capacity.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	toAll := func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{allKey} }
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&v1alpha1.NodeQOS{}, handler.EnqueueRequestsFromMapFunc(toAll),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(toAll),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: nodeChanged})).
		Complete(r)
}

// nodeChanged ignores heartbeats: labels choose the NodeQOS, capacity
// converts their percents.
func nodeChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
	return !apiequality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!apiequality.Semantic.DeepEqual(o.Status.Capacity, n.Status.Capacity)
}
