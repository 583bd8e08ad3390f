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

package executor

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// How long the executor waits on a pod whose eviction it cannot judge.
const (
	// leavingFor is how long a pod whose eviction the API server accepted
	// counts as releasing while the informer does not show it terminating
	// (a partition can hide that for long); then it is a candidate again
	// and a second eviction finds it gone or terminating.
	leavingFor = time.Minute
	// pendingFor is how long a pod whose eviction failed without an
	// answer about the pod (timeout, connection refused, 5xx) counts as
	// releasing before it is asked again.
	pendingFor = 5 * time.Second
	// throttledFor is how long a pod whose eviction request API Priority
	// and Fairness shed waits before it is asked again.
	throttledFor = 5 * time.Second
)

// flight holds the evictions running beside the loop and their results.
// Each eviction has a goroutine of its own, bounded by the token buckets
// (a few a minute) and by Config.EvictionTimeout, and stopped by the
// agent's context.
type flight struct {
	mu       sync.Mutex
	inflight map[types.UID]struct{}
	done     []evictionResult
	wg       sync.WaitGroup
}

type evictionResult struct {
	pod    *corev1.Pod
	ev     qos.Eviction
	memory bool
	// err is the eviction's (or, for memory relief past a PDB, the
	// delete's) error; nil when the pod is on its way out.
	err error
	// deleted says memory relief deleted the pod after the Eviction API
	// refused it for a PodDisruptionBudget.
	deleted bool
	took    time.Duration
}

// Run implements agent.Runner: it waits for ctx to end, then for the
// evictions still running (their requests end with ctx).
func (e *Executor) Run(ctx context.Context) {
	<-ctx.Done()
	e.flight.wg.Wait()
}

// WaitForEvictions returns when no eviction is running (their results are
// taken in by the next cycle) or ctx ends. Tests use it to make cycles
// deterministic; the loop never waits for an eviction.
func (e *Executor) WaitForEvictions(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		e.flight.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (e *Executor) inFlight(uid types.UID) bool {
	e.flight.mu.Lock()
	defer e.flight.mu.Unlock()
	_, ok := e.flight.inflight[uid]
	return ok
}

// collectEvictions takes in what the evictions that finished since the
// last cycle say: accepted (the pod is leaving), refused by a
// PodDisruptionBudget (left out for EvictionRetryAfter; the planner picks
// the next pod), shed by API Priority and Fairness, gone, or failed.
func (e *Executor) collectEvictions(logger klog.Logger, node *corev1.Node, now time.Time) {
	e.flight.mu.Lock()
	results := e.flight.done
	e.flight.done = nil
	for _, r := range results {
		delete(e.flight.inflight, r.pod.UID)
	}
	e.flight.mu.Unlock()
	refunded := false
	for _, r := range results {
		pod, ev := r.pod, r.ev
		bucket := &e.bucket
		if r.memory {
			bucket = &e.memBucket
		}
		switch {
		case r.err == nil && r.deleted:
			e.leaving[pod.UID] = now
			e.metrics.evictions.WithLabelValues(resultDeleted).Inc()
			logger.V(2).Info("Deleted pod for memory relief past a PodDisruptionBudget", "pod", klog.KObj(pod), "release", ev.Release, "gracePeriodSeconds", e.policy.grace, "reason", ev.Reason, "took", r.took)
			e.d.Recorder.Eventf(pod, corev1.EventTypeWarning, "EvictedPastDisruptionBudget",
				"Deleted by node QoS on %s for memory relief although a PodDisruptionBudget refused the eviction (memory pressure does not wait, as kubelet's eviction does not): %s", node.Name, ev.Reason)
			e.d.Recorder.Eventf(node, corev1.EventTypeWarning, "EvictedPod", "Node QoS deleted pod %s/%s for memory relief past a PodDisruptionBudget: %s", pod.Namespace, pod.Name, ev.Reason)
		case r.err == nil:
			e.leaving[pod.UID] = now
			e.metrics.evictions.WithLabelValues(resultEvicted).Inc()
			logger.V(2).Info("Evicted pod", "pod", klog.KObj(pod), "metric", ev.Metric, "release", ev.Release, "gracePeriodSeconds", e.policy.grace, "reason", ev.Reason, "took", r.took)
			e.d.Recorder.Eventf(pod, corev1.EventTypeWarning, "Evicted", "Evicted by node QoS on %s: %s", node.Name, ev.Reason)
			e.d.Recorder.Eventf(node, corev1.EventTypeWarning, "EvictedPod", "Node QoS evicted pod %s/%s: %s", pod.Namespace, pod.Name, ev.Reason)
		case errors.Is(r.err, ErrEvictionBlocked):
			bucket.refund()
			refunded = true
			e.retryAt[pod.UID] = now.Add(*e.cfg.EvictionRetryAfter)
			e.metrics.evictions.WithLabelValues(resultBlocked).Inc()
			logger.V(2).Info("Eviction blocked by a PodDisruptionBudget; planning again without the pod", "pod", klog.KObj(pod), "retryAfter", *e.cfg.EvictionRetryAfter, "err", r.err)
			e.d.Recorder.Eventf(pod, corev1.EventTypeWarning, "EvictionBlocked", "Node QoS could not evict this pod: a PodDisruptionBudget forbids it; evicting another pod instead")
		case errors.Is(r.err, ErrAPIThrottled):
			bucket.refund()
			refunded = true
			e.pending[pod.UID] = now.Add(throttledFor)
			e.metrics.evictions.WithLabelValues(resultThrottled).Inc()
			logger.V(2).Info("The API server shed the eviction request (429, not a PodDisruptionBudget); asking again shortly", "pod", klog.KObj(pod), "after", throttledFor, "err", r.err)
		case errors.Is(r.err, ErrPodGone):
			bucket.refund()
			refunded = true
			e.leaving[pod.UID] = now
			e.metrics.evictions.WithLabelValues(resultGone).Inc()
			logger.V(4).Info("Pod to evict is already gone", "pod", klog.KObj(pod))
		default:
			// The request may have been carried out: the token stays
			// spent.
			e.pending[pod.UID] = now.Add(pendingFor)
			e.metrics.evictions.WithLabelValues(resultError).Inc()
			logger.Error(r.err, "Evicting pod failed; asking again shortly", "pod", klog.KObj(pod), "after", pendingFor, "took", r.took)
		}
	}
	if refunded {
		e.saveBudgets(logger)
	}
}

// markLeaving makes the candidates whose eviction runs, was accepted, or
// waits out a failure look terminating to the planner (copies; the
// informer's objects are read-only), so it counts what they release
// instead of choosing them, or another pod, again.
func (e *Executor) markLeaving(now time.Time) {
	for uid, t := range e.leaving {
		p := e.byUID[uid]
		if p == nil || p.DeletionTimestamp != nil || now.Sub(t) >= leavingFor {
			delete(e.leaving, uid)
		}
	}
	for uid, until := range e.pending {
		if _, ok := e.byUID[uid]; !ok || !now.Before(until) {
			delete(e.pending, uid)
		}
	}
	for i, c := range e.cands {
		if c.Pod.DeletionTimestamp != nil {
			continue
		}
		_, leaving := e.leaving[c.UID]
		_, pending := e.pending[c.UID]
		if !leaving && !pending && !e.inFlight(c.UID) {
			continue
		}
		p := c.Pod.DeepCopy()
		p.DeletionTimestamp = &metav1.Time{Time: now}
		e.cands[i].Pod = p
	}
}

// startEvictions hands the plan's evictions to goroutines of their own, in
// order, within the budgets: memory relief spends the memory budget, every
// other eviction the NodeQOS one. It never waits for the API server.
func (e *Executor) startEvictions(ctx context.Context, logger klog.Logger, plan *qos.Plan, now time.Time) {
	limited := [2]bool{}
	took := false
	for _, ev := range plan.Evictions {
		pod := e.byUID[ev.Pod.UID]
		if pod == nil || e.inFlight(pod.UID) {
			continue
		}
		if r := extension.QoSProtection(pod); r != extension.NotProtected {
			logger.Error(nil, "Refusing to evict a protected pod the planner chose", "pod", klog.KObj(pod), "reason", string(r))
			continue
		}
		if e.policy.dryRun {
			// The plan asks again every cycle while the pod stays;
			// say so once a minute, not every second.
			if last, ok := e.wouldEvict[ev.Pod.UID]; !ok || now.Sub(last) >= time.Minute {
				e.wouldEvict[ev.Pod.UID] = now
				e.metrics.evictions.WithLabelValues(resultDryRun).Inc()
				logger.V(2).Info("Dry run: would evict pod", "pod", klog.KObj(pod), "metric", ev.Metric, "reason", ev.Reason)
				e.d.Recorder.Eventf(pod, corev1.EventTypeNormal, "WouldEvict", "Dry run: node QoS would evict this pod: %s", ev.Reason)
			}
			continue
		}
		memory := ev.Metric == qos.MetricMemory
		bucket, which, perMinute := &e.bucket, 0, e.policy.maxPerMinute
		if memory {
			bucket, which, perMinute = &e.memBucket, 1, *e.cfg.MemoryEvictionsPerMinute
		}
		if limited[which] {
			continue
		}
		if !bucket.take(now) {
			limited[which] = true
			e.metrics.evictions.WithLabelValues(resultRateLimited).Inc()
			logger.V(2).Info("Eviction rate limit reached; evicting again next cycle", "pod", klog.KObj(pod), "memory", memory, "maxPerMinute", perMinute)
			continue
		}
		took = true
		e.startEviction(ctx, pod, ev, memory)
	}
	if took {
		e.saveBudgets(logger)
	}
}

func (e *Executor) startEviction(ctx context.Context, pod *corev1.Pod, ev qos.Eviction, memory bool) {
	e.flight.mu.Lock()
	e.flight.inflight[pod.UID] = struct{}{}
	e.flight.mu.Unlock()
	grace, timeout, clk := e.policy.grace, *e.cfg.EvictionTimeout, e.d.Clock
	e.flight.wg.Add(1)
	go func() {
		defer e.flight.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		start := clk.Now()
		r := evictionResult{pod: pod, ev: ev, memory: memory}
		r.err = e.d.Evictor.Evict(ctx, pod, grace)
		if memory && errors.Is(r.err, ErrEvictionBlocked) {
			// Memory relief does not wait on PodDisruptionBudgets, as
			// kubelet's eviction does not: the next stop is the OOM
			// killer, which does not spare Prod.
			r.err = e.d.Evictor.Delete(ctx, pod, grace)
			r.deleted = r.err == nil
		}
		r.took = clk.Since(start)
		e.flight.mu.Lock()
		e.flight.done = append(e.flight.done, r)
		e.flight.mu.Unlock()
	}()
}

// loadBudgets restores the eviction budgets from the state file: a restart
// must not hand out a fresh burst. An unreadable file starts both budgets
// empty (they refill at their rate), the safe side.
func (e *Executor) loadBudgets() {
	if e.cfg.StatePath == "" {
		return
	}
	s, ok, err := loadState(e.cfg.StatePath)
	switch {
	case err != nil:
		klog.Background().Error(err, "Starting with empty eviction budgets")
		now := e.d.Clock.Now()
		e.bucket.restore(emptyBucket(now))
		e.memBucket.restore(emptyBucket(now))
	case ok:
		e.bucket.restore(s.All)
		e.memBucket.restore(s.Memory)
	}
}

func (e *Executor) saveBudgets(logger klog.Logger) {
	if e.cfg.StatePath == "" {
		return
	}
	if err := saveState(e.cfg.StatePath, evictionState{All: e.bucket.state(), Memory: e.memBucket.state()}); err != nil {
		logger.Error(err, "Saving the eviction budgets; a restart now would allow a fresh burst")
	}
}
