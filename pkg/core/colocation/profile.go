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

// Package colocation decides what a ColocationProfile does to a pod at
// creation: whether it matches, and how the pod's cpu and memory become Mid
// or Batch tier resources.
//
// It must never change a pod into something other than what its owner
// asked for without saying so: anything it cannot translate faithfully is
// an error the webhook returns as a refusal, and what it translates is
// recorded in the pod's waterline.dev/original-resources annotation.
package colocation

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Match returns the first profile that selects a pod with podLabels in a
// namespace with nsLabels, or nil. An invalid selector is an error naming
// the profile: a broken policy must not silently stop matching.
func Match(profiles []v1alpha1.ColocationProfile, nsLabels, podLabels map[string]string) (*v1alpha1.ColocationProfile, error) {
	for i := range profiles {
		p := &profiles[i]
		ok, err := selects(p.NamespaceSelector, nsLabels)
		if err != nil {
			return nil, fmt.Errorf("profile %q: namespaceSelector: %w", p.Name, err)
		}
		if !ok {
			continue
		}
		ok, err = selects(p.Selector, podLabels)
		if err != nil {
			return nil, fmt.Errorf("profile %q: selector: %w", p.Name, err)
		}
		if ok {
			return p, nil
		}
	}
	return nil, nil
}

func selects(sel *v1alpha1.LabelSelector, lbls map[string]string) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel.AsMetav1())
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(lbls)), nil
}

// PriorityClass is what the webhook needs of the profile's PriorityClass:
// the admission plugin that turns a class name into spec.priority has
// already run when mutating webhooks run, so the webhook sets both.
type PriorityClass struct {
	Name             string
	Value            int32
	PreemptionPolicy *corev1.PreemptionPolicy
}

// TranslationError says why a pod cannot be given a profile. The webhook
// refuses the pod with its message.
type TranslationError struct {
	Profile string
	Reason  string
	// Err is the error Reason was written from, if any, for errors.As.
	Err error
}

func (e *TranslationError) Error() string {
	return fmt.Sprintf("colocation profile %q cannot be applied: %s", e.Profile, e.Reason)
}

// Unwrap returns the error the translation failed on, if any.
func (e *TranslationError) Unwrap() error { return e.Err }

// OriginalResources is the JSON kept in the waterline.dev/original-resources
// annotation: the cpu and memory of each container before translation.
type OriginalResources struct {
	Containers     map[string]corev1.ResourceRequirements `json:"containers,omitempty"`
	InitContainers map[string]corev1.ResourceRequirements `json:"initContainers,omitempty"`
}

// Apply gives the pod the profile: band and profile labels, extra labels,
// priority class, scheduler name and, for Mid and Batch, the translation of
// cpu and memory into the band's tier resources. class is nil when the
// profile names no PriorityClass. Apply is idempotent: applying it to a pod
// it produced changes nothing.
//
// Tier resources are extended resources, and Kubernetes requires their
// request to equal their limit. Each container's tier request and limit are
// therefore one value: its limit when it has one, else its request. A pod
// keeps every ceiling it asked for (its limit), and a container that had no
// limit is held to its request -- a colocated pod is bounded by what it
// asked for. The original values are kept in the annotation.
func Apply(pod *corev1.Pod, profile *v1alpha1.ColocationProfile, class *PriorityClass) error {
	band, err := extension.ParseBand(profile.Band)
	if err != nil {
		return &TranslationError{Profile: profile.Name, Reason: err.Error(), Err: err}
	}
	if profile.PriorityClassName != "" && (class == nil || class.Name != profile.PriorityClassName) {
		return &TranslationError{Profile: profile.Name, Reason: fmt.Sprintf("PriorityClass %q does not exist", profile.PriorityClassName)}
	}
	if tierCPU, tierMem, ok := band.TierResources(); ok {
		if err := translatePod(pod, band, tierCPU, tierMem); err != nil {
			return &TranslationError{Profile: profile.Name, Reason: err.Error(), Err: err}
		}
	} else if other := tierBandOf(pod); other != "" && other != band {
		return &TranslationError{Profile: profile.Name, Reason: fmt.Sprintf("the pod requests %s tier resources but the profile puts it in band %s", other, band)}
	}

	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	maps.Copy(pod.Labels, profile.Labels)
	pod.Labels[extension.LabelBand] = string(band)
	pod.Labels[extension.LabelColocationProfile] = profile.Name
	if class != nil {
		pod.Spec.PriorityClassName = class.Name
		v := class.Value
		pod.Spec.Priority = &v
		if class.PreemptionPolicy != nil {
			pp := *class.PreemptionPolicy
			pod.Spec.PreemptionPolicy = &pp
		}
	}
	if profile.SchedulerName != "" {
		pod.Spec.SchedulerName = profile.SchedulerName
	}
	return nil
}

func translatePod(pod *corev1.Pod, band extension.Band, tierCPU, tierMem corev1.ResourceName) error {
	if other := tierBandOf(pod); other != "" && other != band {
		return fmt.Errorf("the pod requests %s tier resources but the profile puts it in band %s", other, band)
	}
	if names := podLevelCPUMemory(pod); names != "" {
		// Pod-level resources take only cpu, memory and hugepages, not
		// extended resources: left there, the scheduler and kubelet
		// would count them as the pod's own, against Prod's allocatable.
		return fmt.Errorf("spec.resources sets pod-level %s, which cannot become %s tier resources (pod-level resources take no extended resources); set them on the containers instead", names, band)
	}
	orig := OriginalResources{}
	if v, ok := pod.Annotations[extension.AnnotationOriginalResources]; ok {
		// Translated before (webhook reinvocation): keep the first record.
		if err := json.Unmarshal([]byte(v), &orig); err != nil {
			return fmt.Errorf("annotation %s is not valid JSON: %w", extension.AnnotationOriginalResources, err)
		}
	}
	changed := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		moved, err := translateContainer(c, tierCPU, tierMem)
		if err != nil {
			return fmt.Errorf("init container %q: %w", c.Name, err)
		}
		if moved != nil {
			if orig.InitContainers == nil {
				orig.InitContainers = map[string]corev1.ResourceRequirements{}
			}
			orig.InitContainers[c.Name] = *moved
			changed = true
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		moved, err := translateContainer(c, tierCPU, tierMem)
		if err != nil {
			return fmt.Errorf("container %q: %w", c.Name, err)
		}
		if moved != nil {
			if orig.Containers == nil {
				orig.Containers = map[string]corev1.ResourceRequirements{}
			}
			orig.Containers[c.Name] = *moved
			changed = true
		}
	}
	if changed {
		data, err := json.Marshal(orig)
		if err != nil {
			return err
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[extension.AnnotationOriginalResources] = string(data)
	}
	return nil
}

// translateContainer moves the container's cpu and memory into the tier
// resources and returns what it moved, or nil when it moved nothing.
func translateContainer(c *corev1.Container, tierCPU, tierMem corev1.ResourceName) (*corev1.ResourceRequirements, error) {
	orig := corev1.ResourceRequirements{}
	moved := false
	for _, pair := range []struct {
		from, to corev1.ResourceName
		milli    bool
	}{{corev1.ResourceCPU, tierCPU, true}, {corev1.ResourceMemory, tierMem, false}} {
		req, hasReq := c.Resources.Requests[pair.from]
		lim, hasLim := c.Resources.Limits[pair.from]
		if !hasReq && !hasLim {
			continue
		}
		if _, ok := c.Resources.Requests[pair.to]; ok {
			return nil, fmt.Errorf("asks for both %s and %s", pair.from, pair.to)
		}
		if _, ok := c.Resources.Limits[pair.to]; ok {
			return nil, fmt.Errorf("asks for both %s and %s", pair.from, pair.to)
		}
		value := req
		if hasLim {
			value = lim
		}
		// A tier resource counts whole millicores or bytes in an int64.
		// The float comes first: comparing a quantity such as 1e8888888
		// exactly computes 10 to its exponent (over a second of CPU for
		// that one, minutes for longer ones), and the API server sends
		// the mutating webhooks a pod before validating it.
		if most := tierMost(pair.milli); value.AsApproximateFloat64() > 2*most.AsApproximateFloat64() || value.Cmp(most) > 0 {
			return nil, fmt.Errorf("%s %s is more than a tier resource holds (%s)", pair.from, value.String(), most.String())
		}
		var tier resource.Quantity
		if pair.milli {
			// Tier CPU counts millicores, so 1.5 CPU becomes 1500.
			m := value.MilliValue()
			if resource.NewMilliQuantity(m, resource.DecimalSI).Cmp(value) != 0 {
				return nil, fmt.Errorf("%s %s is not a whole number of millicores", pair.from, value.String())
			}
			tier = *resource.NewQuantity(m, resource.DecimalSI)
		} else {
			// Kubernetes admits fractional bytes of memory (with a
			// warning) but not in an extended resource.
			if resource.NewQuantity(value.Value(), resource.BinarySI).Cmp(value) != 0 {
				return nil, fmt.Errorf("%s %s is not a whole number of bytes", pair.from, value.String())
			}
			tier = value.DeepCopy()
		}
		if hasReq {
			setRL(&orig.Requests, pair.from, req)
		}
		if hasLim {
			setRL(&orig.Limits, pair.from, lim)
		}
		delete(c.Resources.Requests, pair.from)
		delete(c.Resources.Limits, pair.from)
		setRL(&c.Resources.Requests, pair.to, tier)
		setRL(&c.Resources.Limits, pair.to, tier)
		moved = true
	}
	if !moved {
		return nil, nil
	}
	return &orig, nil
}

// tierMost is the largest amount a tier resource holds: math.MaxInt64
// millicores of CPU (milli), or bytes of memory.
func tierMost(milli bool) resource.Quantity {
	if milli {
		return *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
	}
	return *resource.NewQuantity(math.MaxInt64, resource.BinarySI)
}

func setRL(rl *corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if *rl == nil {
		*rl = corev1.ResourceList{}
	}
	(*rl)[name] = q
}

// podLevelCPUMemory names the pod-level resources (spec.resources) among
// cpu and memory the pod sets, requests or limits, or returns "".
func podLevelCPUMemory(pod *corev1.Pod) string {
	if pod.Spec.Resources == nil {
		return ""
	}
	var names []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		_, req := pod.Spec.Resources.Requests[name]
		_, lim := pod.Spec.Resources.Limits[name]
		if req || lim {
			names = append(names, string(name))
		}
	}
	return strings.Join(names, " and ")
}

// tierBandOf returns the band whose tier resources the pod already asks
// for, or "".
func tierBandOf(pod *corev1.Pod) extension.Band {
	for _, b := range []extension.Band{extension.BandMid, extension.BandBatch} {
		cpu, mem, _ := b.TierResources()
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				for _, rl := range []corev1.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
					if _, ok := rl[cpu]; ok {
						return b
					}
					if _, ok := rl[mem]; ok {
						return b
					}
				}
			}
		}
	}
	return ""
}
