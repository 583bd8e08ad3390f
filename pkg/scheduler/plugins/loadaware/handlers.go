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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

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
		if !ok {
			return
		}
		if pod.Spec.NodeName == "" {
			if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				pl.pending.set(pod)
			} else {
				pl.pending.remove(pod.UID)
			}
			return
		}
		pl.pending.remove(pod.UID)
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
				pl.pending.remove(pod.UID)
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

// metricHandler converts each NodeMetric once, when it arrives (aging it
// from then: nodeload.Config.Observe), and wakes
// the activation of refused pods when the change may admit more
// (core.Config.MayAdmitMore, less excess of the pods estimated on the
// node, or a deletion).
func (pl *LoadAware) metricHandler(logger klog.Logger) cache.ResourceEventHandler {
	set := func(obj any) {
		nm, ok := obj.(*v1alpha1.NodeMetric)
		if !ok {
			return
		}
		m := pl.cfg.NewMetric(nm)
		// Aged from when this scheduler saw each report, not by the
		// node's clock (nodeload.Config.Observe). This handler is the
		// only writer of the node's metric, so what it reads here is
		// what setMetric replaces.
		pl.cfg.Observe(pl.cache.metricOf(nm.Name), m, pl.clock.Now())
		prev := pl.cache.setMetric(nm.Name, m)
		logger.V(5).Info("NodeMetric updated", "node", klog.KRef("", nm.Name))
		// A report that lowers neither usage nor the excess of the pods
		// estimated on the node cannot turn a refusal into a fit.
		if pl.cfg.MayAdmitMore(prev, m) || pl.cache.excessShrinks(nm.Name, prev, m, pl.clock.Now()) {
			pl.wakeActivation()
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
				if prev := pl.cache.setMetric(nm.Name, nil); prev != nil {
					pl.wakeActivation()
				}
			}
		},
	}
}

// wakeActivation asks the activation loop to run; wakes coalesce.
func (pl *LoadAware) wakeActivation() {
	select {
	case pl.wake <- struct{}{}:
	default:
	}
}

// activationInterval is the least time between two activations: NodeMetric
// changes come from every node, and a pod activated once per interval at
// most is not kept from its backoff for long.
const activationInterval = time.Second

// noteWindowEnd records that Filter refused a pod on a node whose load
// drops by time alone at end (Unix nanoseconds), when a forced estimation
// window there ends: no report or pod event comes then, so runActivation
// wakes itself. Only the earliest end is kept; the pods activated then
// that are refused again on a node still inside a window note its end.
func (pl *LoadAware) noteWindowEnd(end int64) {
	for {
		cur := pl.windowEnd.Load()
		if cur != 0 && cur <= end {
			return
		}
		if pl.windowEnd.CompareAndSwap(cur, end) {
			break
		}
	}
	select {
	case pl.rearm <- struct{}{}:
	default:
	}
}

// runActivation activates refused pods when woken or when a forced
// estimation window noted by Filter ends, at most once per
// activationInterval, until ctx ends.
func (pl *LoadAware) runActivation(ctx context.Context, logger klog.Logger) {
	interval := time.NewTimer(0)
	defer interval.Stop()
	for {
		if !pl.waitForActivation(ctx) {
			return
		}
		pl.activateRefused(logger)
		interval.Reset(activationInterval)
		select {
		case <-ctx.Done():
			return
		case <-interval.C:
		}
	}
}

// waitForActivation waits until activation is due: a wake, or the noted
// window end on the plugin's clock. It returns false when ctx ended.
func (pl *LoadAware) waitForActivation(ctx context.Context) bool {
	for {
		end := pl.windowEnd.Load()
		var timer clock.Timer
		var due <-chan time.Time
		if end != 0 {
			d := time.Duration(end - pl.clock.Now().UnixNano())
			if d <= 0 {
				pl.windowEnd.CompareAndSwap(end, 0)
				return true
			}
			timer = pl.clock.NewTimer(d)
			due = timer.C()
		}
		woken, done := false, false
		select {
		case <-ctx.Done():
			done = true
		case <-pl.wake:
			woken = true
		case <-pl.rearm:
			// An earlier end was noted: wait for it instead.
		case <-due:
			pl.windowEnd.CompareAndSwap(end, 0)
			woken = true
		}
		if timer != nil {
			timer.Stop()
		}
		if done || woken {
			return !done
		}
	}
}

// activateRefused hands the scheduling queue the pending pods LoadAware
// may have refused: those whose PodScheduled=False message names one of
// its reasons, and those not refused yet (possibly in their first cycle,
// judged on the view this plugin just replaced; the queue records the
// activation and requeues them when they come back). The queue ignores
// pods it does not hold (other schedulers', already active).
func (pl *LoadAware) activateRefused(logger klog.Logger) {
	pods := pl.pending.matching(pl.reasons.mayHaveRefused)
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Activating pods LoadAware may have refused", "count", len(pods))
	pl.activator.Activate(logger, pods)
}

// pendingPods are the pods not bound to a node yet, by UID.
type pendingPods struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func (p *pendingPods) set(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods == nil {
		p.pods = map[types.UID]*corev1.Pod{}
	}
	p.pods[pod.UID] = pod
}

func (p *pendingPods) remove(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, uid)
}

func (p *pendingPods) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pods)
}

// matching returns the pending pods for which keep is true, by
// namespace/name, as the PodActivator takes them.
func (p *pendingPods) matching(keep func(*corev1.Pod) bool) map[string]*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]*corev1.Pod{}
	for _, pod := range p.pods {
		if keep(pod) {
			out[pod.Namespace+"/"+pod.Name] = pod
		}
	}
	return out
}
