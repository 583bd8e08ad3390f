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

// Package policystatus writes ColocationPolicy.status: how many nodes each
// policy governs (the Nodes column of `kubectl get cp`), and conditions
// saying which selectors do not parse and which pool policies another pool
// overrides. The decisions are pkg/core/policy's ReportPolicies, the same
// selection the tiers and NodeMetric controllers make for every node; this
// controller gathers the objects and nodes and writes what changed. It
// never changes a spec.
package policystatus

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
	"github.com/waterline-dev/waterline/pkg/core/policy"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "colocationpolicy-status"

// allKey is the one request the controller works on: every policy's status
// depends on every node and every other policy.
var allKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all"}}

// staleRetry is how long the controller waits before recomputing after a
// status write lost to a newer object (see nodeqos.Reconciler).
const staleRetry = 500 * time.Millisecond

// Reconciler writes the status of every ColocationPolicy.
type Reconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// +kubebuilder:rbac:groups=waterline.dev,resources=colocationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=waterline.dev,resources=colocationpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile recomputes every policy's status and writes those that changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := klog.FromContext(ctx)
	list := &v1alpha1.ColocationPolicyList{}
	if err := r.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing ColocationPolicies: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	policies := make([]*v1alpha1.ColocationPolicy, len(list.Items))
	for i := range list.Items {
		policies[i] = &list.Items[i]
	}
	nodeLabels := make([]map[string]string, len(nodes.Items))
	for i := range nodes.Items {
		nodeLabels[i] = nodes.Items[i].Labels
	}
	reports := policy.ReportPolicies(policies, nodeLabels)
	now := metav1.NewTime(r.Clock.Now())
	var errs []error
	stale := false
	for _, p := range policies {
		rep := reports[p.Name]
		want := v1alpha1.ColocationPolicyStatus{
			ObservedGeneration: p.Generation,
			SelectedNodes:      rep.SelectedNodes,
			Conditions:         rep.Conditions(p.Name, p.Status.Conditions, p.Generation, now),
		}
		if apiequality.Semantic.DeepEqual(want, p.Status) {
			continue
		}
		p.Status = want
		if err := r.Client.Status().Update(ctx, p); err != nil {
			if apierrors.IsNotFound(err) {
				// Deleted since the list; its delete event triggers us again.
				continue
			}
			if apierrors.IsConflict(err) {
				// The cache is behind the API server; look again once it
				// has caught up (no watched event comes for our own write).
				stale = true
				continue
			}
			errs = append(errs, fmt.Errorf("writing the status of ColocationPolicy %s: %w", p.Name, err))
			continue
		}
		logger.V(2).Info("Updated ColocationPolicy status", "colocationPolicy", klog.KObj(p),
			"selectedNodes", rep.SelectedNodes, "invalid", rep.Invalid, "overriddenOn", rep.OverriddenOn)
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if stale {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	return reconcile.Result{}, nil
}

// SetupWithManager registers the controller: every policy is reported
// again when a policy is created, deleted or its spec changes, and when a
// node comes, goes or changes its labels.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	toAll := func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{allKey} }
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&v1alpha1.ColocationPolicy{}, handler.EnqueueRequestsFromMapFunc(toAll),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(toAll),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: labelsChanged})).
		Complete(r)
}

// labelsChanged ignores heartbeats: labels choose the policy.
func labelsChanged(e event.UpdateEvent) bool {
	return !apiequality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}
