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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// NodeMetricEvents is the event resource of NodeMetrics: plural.version.group,
// which the scheduler watches with a dynamic informer.
const NodeMetricEvents fwk.EventResource = "nodemetrics.v1alpha1.waterline.dev"

// EventsToRegister returns the events that may turn a LoadAware refusal
// into a fit, each with a hint that skips the ones that cannot:
//
//   - a NodeMetric added or deleted, or updated so that the node reports
//     again, left forbid-scheduling, or shows less load
//     (nodeload.Config.MayAdmitMore);
//   - an assigned pod deleted (its excess goes at once), or any pod scaled
//     down;
//   - a node added, or its allocatable or LoadAware annotations changed.
func (pl *LoadAware) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: NodeMetricEvents, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterNodeMetricChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown}, QueueingHintFn: isSchedulableAfterPodChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeAnnotation}, QueueingHintFn: isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterNodeMetricChange answers from the objects alone: it
// must not change the plugin's view, since the framework does not promise
// to ask it. The plugin's own informer updates the view and, should it
// learn of a change after this hint requeued a pod that was then refused
// on the older view, activates the pods LoadAware refused
// (activateRefused).
func (pl *LoadAware) isSchedulableAfterNodeMetricChange(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if newObj == nil {
		// Deleted: the node has no NodeMetric any more and fits unchecked.
		logger.V(5).Info("NodeMetric deletion may make the pod schedulable", "pod", klog.KObj(pod))
		return fwk.Queue, nil
	}
	cur, err := toNodeMetric(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	var old *nodeload.Metric
	if oldObj != nil {
		prev, err := toNodeMetric(oldObj)
		if err != nil {
			return fwk.Queue, err
		}
		old = pl.cfg.NewMetric(prev)
	}
	if pl.cfg.MayAdmitMore(old, pl.cfg.NewMetric(cur)) {
		logger.V(5).Info("NodeMetric change may make the pod schedulable", "pod", klog.KObj(pod), "node", klog.KRef("", cur.Name))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// toNodeMetric accepts the scheduler's dynamic-informer objects and typed
// ones.
func toNodeMetric(obj any) (*v1alpha1.NodeMetric, error) {
	switch o := obj.(type) {
	case *v1alpha1.NodeMetric:
		return o, nil
	case *unstructured.Unstructured:
		nm := &v1alpha1.NodeMetric{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, nm); err != nil {
			return nil, fmt.Errorf("converting NodeMetric %s: %w", o.GetName(), err)
		}
		return nm, nil
	case cache.DeletedFinalStateUnknown:
		return toNodeMetric(o.Obj)
	}
	return nil, fmt.Errorf("want a NodeMetric, got %T", obj)
}

func isSchedulableAfterPodChange(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if newObj != nil {
		// Scaled down: a smaller pod (this one, or one already on a node)
		// means a smaller estimate.
		return fwk.Queue, nil
	}
	deleted, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("want a deleted Pod, got %T", oldObj)
	}
	if deleted.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Deleted pod frees load", "pod", klog.KObj(pod), "deleted", klog.KObj(deleted), "node", deleted.Spec.NodeName)
	return fwk.Queue, nil
}

func isSchedulableAfterNodeChange(_ klog.Logger, _ *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	cur, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("want a Node, got %T", newObj)
	}
	old, ok := oldObj.(*corev1.Node)
	if !ok || old == nil {
		return fwk.Queue, nil
	}
	for _, key := range []string{extension.AnnotationUsageThresholds, extension.AnnotationRawAllocatable} {
		if old.Annotations[key] != cur.Annotations[key] {
			return fwk.Queue, nil
		}
	}
	for name, q := range cur.Status.Allocatable {
		if prev, ok := old.Status.Allocatable[name]; !ok || q.Cmp(prev) > 0 {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}
