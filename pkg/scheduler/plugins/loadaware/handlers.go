package loadaware

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// podHandler keeps the cache's assigned pods in step with the API server:
// a bound, unfinished pod is counted on its node (moved if it is counted
// elsewhere); a finished or deleted one is not counted any more. Pods not
// bound yet are left alone, so an assumed pod stays counted while its
// binding is in flight.
func (pl *LoadAware) podHandler(logger klog.Logger) cache.ResourceEventHandler {
	upsert := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			pl.cache.remove(pod.UID, false)
			return
		}
		if err := pl.cache.assign(pod, pod.Spec.NodeName, false, pl.scheduledAt(pod)); err != nil {
			logger.V(2).Info("Estimating pod load with defaults", "pod", klog.KObj(pod), "err", err)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { upsert(obj) },
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				pl.cache.remove(pod.UID, false)
			}
		},
	}
}

// scheduledAt is when a bound pod was assigned: its PodScheduled condition
// (the API server sets it on binding), else when LoadAware first counted
// it, else now.
func (pl *LoadAware) scheduledAt(pod *corev1.Pod) time.Time {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if t, ok := pl.cache.scheduledAt(pod.UID); ok {
		return t
	}
	return pl.clock.Now()
}

// metricHandler converts each NodeMetric once, when it arrives.
func (pl *LoadAware) metricHandler(logger klog.Logger) cache.ResourceEventHandler {
	set := func(obj any) {
		if nm, ok := obj.(*v1alpha1.NodeMetric); ok {
			pl.cache.setMetric(nm.Name, pl.cfg.NewMetric(nm))
			logger.V(5).Info("NodeMetric updated", "node", klog.KRef("", nm.Name))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if nm, ok := obj.(*v1alpha1.NodeMetric); ok {
				pl.cache.setMetric(nm.Name, nil)
			}
		},
	}
}
