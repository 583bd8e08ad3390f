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

package nodeload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

// Bounds of a scaling factor, in percent of max(request, limit).
const (
	MinScalingFactor = 1
	MaxScalingFactor = 100
)

// PodLoad is what the decisions need to know about the pod being scheduled.
type PodLoad struct {
	// Estimate is the load the pod is expected to put on a node.
	Estimate Vector
	// Prod is true for Prod band pods: they may be judged by Prod usage.
	Prod bool
	// LowPriority is true for Batch and Free band pods: a forbid-scheduling
	// node refuses them.
	LowPriority bool
	// DaemonSet pods must run on their node whatever its load.
	DaemonSet bool
}

// NewPodLoad estimates the pod being scheduled. A malformed estimation
// annotation is ignored and returned as the error, for the caller to log;
// the PodLoad is valid either way.
func (c *Config) NewPodLoad(pod *corev1.Pod) (PodLoad, error) {
	band, bandErr := extension.BandOfExplained(pod)
	est, _, err := c.estimate(pod, band)
	return PodLoad{
		Estimate:    est,
		Prod:        band == extension.BandProd,
		LowPriority: band.IsLowPriority(),
		DaemonSet:   extension.IsDaemonSetPod(pod),
	}, errors.Join(bandErr, err)
}

// AssignedPod is a pod already assigned to a node (bound, or assumed by the
// scheduler), estimated once when the caller learns about it.
type AssignedPod struct {
	// Key is namespace/name, as PodKey builds it and the NodeMetric lists
	// the pod.
	Key string
	// Prod is true for Prod band pods: their load counts towards Prod usage.
	Prod bool
	// Estimate is the estimate before the pod's reported usage is known.
	Estimate Vector
	// Limit is the pod's limit per resource; 0 means unbounded.
	Limit Vector
	// ScheduledAt is when the pod was assigned to the node.
	ScheduledAt time.Time
	// InitializedAt is when the pod's Initialized condition became True;
	// zero while it has not.
	InitializedAt time.Time
	// AfterScheduled and AfterInitialized are the forced estimation windows
	// that apply to this pod (args, or its annotations when allowed).
	AfterScheduled, AfterInitialized time.Duration
}

// NewAssignedPod estimates a pod assigned to a node at scheduledAt. A
// malformed estimation annotation is ignored and returned as the error; the
// AssignedPod is valid either way.
func (c *Config) NewAssignedPod(pod *corev1.Pod, scheduledAt time.Time) (AssignedPod, error) {
	band, bandErr := extension.BandOfExplained(pod)
	est, limit, estErr := c.estimate(pod, band)
	p := AssignedPod{
		Key:              PodKey(pod.Namespace, pod.Name),
		Prod:             band == extension.BandProd,
		Estimate:         est,
		Limit:            limit,
		ScheduledAt:      scheduledAt,
		AfterScheduled:   c.EstimateAfterScheduled,
		AfterInitialized: c.EstimateAfterInitialized,
	}
	for i := range pod.Status.Conditions {
		cond := &pod.Status.Conditions[i]
		if cond.Type == corev1.PodInitialized && cond.Status == corev1.ConditionTrue {
			p.InitializedAt = cond.LastTransitionTime.Time
		}
	}
	var errs []error
	if c.AllowCustomizeEstimation {
		var err error
		if p.AfterScheduled, err = seconds(pod, extension.AnnotationLoadEstimatedSecondsAfterPodScheduled, p.AfterScheduled); err != nil {
			errs = append(errs, err)
		}
		if p.AfterInitialized, err = seconds(pod, extension.AnnotationLoadEstimatedSecondsAfterInitialized, p.AfterInitialized); err != nil {
			errs = append(errs, err)
		}
	}
	return p, errors.Join(append(errs, bandErr, estErr)...)
}

// PodKey is how pods are named in a NodeMetric's podsMetric.
func PodKey(namespace, name string) string { return namespace + "/" + name }

// estimate returns factor × max(request, limit) per resource, and the limit
// (0 when unbounded). Mid and Batch pods ask for their tier resources
// (waterline.dev/{mid,batch}-{cpu,memory}) instead of cpu and memory; those
// count for cpu and memory here, since they are cpu and memory the node
// really spends.
func (c *Config) estimate(pod *corev1.Pod, band extension.Band) (est, limit Vector, err error) {
	factors, err := c.scalingFactors(pod)
	tierCPU, tierMemory, hasTier := band.TierResources()
	for i := range c.Resources.Len() {
		name := c.Resources.Name(i)
		var a amounts
		switch {
		case hasTier && i == CPU:
			// Tier cpu already counts millicores: 500 means 0.5 CPU.
			a = podAmounts(pod, tierCPU, false)
		case hasTier && i == Memory:
			a = podAmounts(pod, tierMemory, false)
		}
		if !a.asked {
			a = podAmounts(pod, name, i == CPU)
		}
		base := max(a.request, a.limit)
		if base == 0 {
			est[i] = defaultQuantity(i)
		} else {
			est[i] = scale(base, factors[i])
		}
		if a.limited && a.limit > 0 {
			limit[i] = a.limit
			est[i] = min(est[i], a.limit)
		}
	}
	return est, limit, err
}

// scale returns round(v × percent / 100) without going through floats, so
// bytes of a large node stay exact. The product is taken in 128 bits: a
// limit of 64Pi (a "no limit" sentinel the API server admits) times 140
// overflows 64 bits and would wrap to a negative estimate.
func scale(v, percent int64) int64 {
	if v <= 0 || percent <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(v), uint64(percent)*2)
	lo, carry := bits.Add64(lo, 100, 0)
	hi += carry
	// percent ≤ MaxScalingFactor, so the quotient fits in 64 bits.
	q, _ := bits.Div64(hi, lo, 200)
	return int64(min(q, math.MaxInt64))
}

// scalingFactors returns the args' factors, overridden by the pod's
// annotation when allowed. A malformed annotation is ignored as a whole.
func (c *Config) scalingFactors(pod *corev1.Pod) (Vector, error) {
	factors := c.ScalingFactors
	if !c.AllowCustomizeEstimation {
		return factors, nil
	}
	raw, ok := pod.Annotations[extension.AnnotationLoadEstimatedScalingFactors]
	if !ok {
		return factors, nil
	}
	var m map[corev1.ResourceName]int64
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return factors, fmt.Errorf("ignoring annotation %s=%q of pod %s/%s: %w", extension.AnnotationLoadEstimatedScalingFactors, raw, pod.Namespace, pod.Name, err)
	}
	for name, p := range m {
		if p < MinScalingFactor || p > MaxScalingFactor {
			return factors, fmt.Errorf("ignoring annotation %s=%q of pod %s/%s: factor %d for %s is outside [%d, %d]",
				extension.AnnotationLoadEstimatedScalingFactors, raw, pod.Namespace, pod.Name, p, name, MinScalingFactor, MaxScalingFactor)
		}
	}
	// Factors for resources the scheduler does not track change nothing.
	for name, p := range m {
		if i, ok := c.Resources.Index(name); ok {
			factors[i] = p
		}
	}
	return factors, nil
}

// MaxSeconds bounds every duration given in seconds, in the args or a pod
// annotation: a year is longer than any estimation window or NodeMetric
// expiry, and past 292 years a time.Duration wraps negative, which would
// silently close a window or expire every NodeMetric at once.
const MaxSeconds = 365 * 24 * 3600

// seconds reads a forced-estimation annotation: whole seconds, at least 0.
func seconds(pod *corev1.Pod, key string, def time.Duration) (time.Duration, error) {
	raw, ok := pod.Annotations[key]
	if !ok {
		return def, nil
	}
	s, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case err != nil:
	case s < 0:
		err = errors.New("must be at least 0")
	case s > MaxSeconds:
		err = fmt.Errorf("must be at most %d (a year)", MaxSeconds)
	}
	if err != nil {
		return def, fmt.Errorf("ignoring annotation %s=%q of pod %s/%s: %w", key, raw, pod.Namespace, pod.Name, err)
	}
	return time.Duration(s) * time.Second, nil
}

// amounts is what a pod asks for of one resource.
type amounts struct {
	request, limit int64
	// limited is false when some long-running container may use the
	// resource without bound.
	limited bool
	// asked is true when any container or the pod names the resource.
	asked bool
}

// podAmounts follows the kubelet's arithmetic for the effective request
// and limit of a pod: pod-level resources win; otherwise the sum over
// containers and restartable (sidecar) init containers, or the largest
// init-container step if that is more, plus the pod overhead. milli asks
// for millicores instead of the base unit.
//
// A run-to-completion init container without a limit does not make the pod
// unbounded: it is gone before the pod's steady state that estimation is
// about.
func podAmounts(pod *corev1.Pod, name corev1.ResourceName, milli bool) amounts {
	get := func(rl corev1.ResourceList) (int64, bool) {
		q, ok := rl[name]
		if !ok {
			return 0, false
		}
		if milli {
			return q.MilliValue(), true
		}
		return q.Value(), true
	}
	// requestLimit applies the API's defaulting (request = limit when only
	// the limit is set), which objects built outside the API server lack.
	requestLimit := func(r corev1.ResourceRequirements) (req, lim int64, hasReq, hasLim bool) {
		req, hasReq = get(r.Requests)
		lim, hasLim = get(r.Limits)
		if !hasReq && hasLim {
			req = lim
		}
		return req, lim, hasReq, hasLim
	}

	if pod.Spec.Resources != nil {
		req, lim, hasReq, hasLim := requestLimit(*pod.Spec.Resources)
		if hasReq || hasLim {
			return amounts{request: req, limit: lim, limited: hasLim, asked: true}
		}
	}

	a := amounts{limited: true}
	var sumReq, sumLim int64
	for i := range pod.Spec.Containers {
		req, lim, hasReq, hasLim := requestLimit(pod.Spec.Containers[i].Resources)
		a.asked = a.asked || hasReq || hasLim
		// Saturating: two containers of 5Ei would wrap to a negative sum.
		sumReq = addSat(sumReq, req)
		sumLim = addSat(sumLim, lim)
		a.limited = a.limited && hasLim
	}
	var initReq, initLim, sideReq, sideLim int64
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		req, lim, hasReq, hasLim := requestLimit(ic.Resources)
		a.asked = a.asked || hasReq || hasLim
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sideReq = addSat(sideReq, req)
			sideLim = addSat(sideLim, lim)
			a.limited = a.limited && hasLim
			initReq = max(initReq, sideReq)
			initLim = max(initLim, sideLim)
			continue
		}
		initReq = max(initReq, addSat(sideReq, req))
		if hasLim {
			initLim = max(initLim, addSat(sideLim, lim))
		}
	}
	a.request = max(addSat(sumReq, sideReq), initReq)
	a.limit = max(addSat(sumLim, sideLim), initLim)
	if o, ok := get(pod.Spec.Overhead); ok && a.asked {
		a.request = addSat(a.request, o)
		if a.limited {
			a.limit = addSat(a.limit, o)
		}
	}
	if !a.limited {
		a.limit = 0
	}
	return a
}
