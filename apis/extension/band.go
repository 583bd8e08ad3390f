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

package extension

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Band is a priority band. Prod pods own the node; Mid pods run on what Prod
// pods reserved but are predicted not to use; Batch and Free pods run on what
// is really idle and are the only ones node QoS throttles and evicts.
type Band string

// Bands, from the most to the least important.
const (
	BandProd  Band = "prod"
	BandMid   Band = "mid"
	BandBatch Band = "batch"
	BandFree  Band = "free"
)

// Bands lists every band, most important first.
var Bands = []Band{BandProd, BandMid, BandBatch, BandFree}

// BandRange is the priority values [Min, Max] a band covers.
type BandRange struct {
	Band     Band
	Min, Max int32
}

// DefaultBandRanges are the priority values of each band.
var DefaultBandRanges = []BandRange{
	{BandProd, 9000, 9999},
	{BandMid, 7000, 7999},
	{BandBatch, 5000, 5999},
	{BandFree, 3000, 3999},
}

// ParseBand returns the band a string names.
func ParseBand(s string) (Band, error) {
	switch b := Band(s); b {
	case BandProd, BandMid, BandBatch, BandFree:
		return b, nil
	}
	return "", fmt.Errorf("unknown band %q: want one of prod, mid, batch, free", s)
}

// BandForPriority returns the band whose default range holds priority.
func BandForPriority(priority int32) (Band, bool) {
	for _, r := range DefaultBandRanges {
		if priority >= r.Min && priority <= r.Max {
			return r.Band, true
		}
	}
	return "", false
}

// IsLowPriority reports whether node QoS may throttle or evict pods of the
// band: Batch and Free only (the node waterlines exist only for low-priority
// pods; docs/design/node-qos.md#protected-pods).
func (b Band) IsLowPriority() bool { return b == BandBatch || b == BandFree }

// TierResources returns the extended resources pods of the band request
// instead of cpu and memory, and false for bands without a tier (Prod uses
// cpu and memory; Free uses nothing it can be promised).
func (b Band) TierResources() (cpu, memory corev1.ResourceName, ok bool) {
	switch b {
	case BandMid:
		return ResourceMidCPU, ResourceMidMemory, true
	case BandBatch:
		return ResourceBatchCPU, ResourceBatchMemory, true
	}
	return "", "", false
}

// BandOf returns the pod's band. See BandOfExplained for the rules.
func BandOf(pod *corev1.Pod) Band {
	b, _ := BandOfExplained(pod)
	return b
}

// BandOfExplained returns the pod's band, decided by, in order:
//
//  1. the waterline.dev/band label, when it names a band;
//  2. the band whose priority range holds spec.priority;
//  3. the tier resources the pod requests (mid-* → Mid, batch-* → Batch);
//  4. otherwise Prod.
//
// Priority comes before tier resources: a pod at Prod priority that asks
// for batch-cpu is still a Prod pod (and QoSProtection protects it).
//
// Prod is the default because it is the safe one: nothing that was not put in
// a lower band on purpose is ever throttled, evicted or over-committed.
// A malformed label is ignored; the error says so, for the caller to log or
// record as an event.
func BandOfExplained(pod *corev1.Pod) (Band, error) {
	var labelErr error
	if v, ok := pod.Labels[LabelBand]; ok {
		b, err := ParseBand(v)
		if err == nil {
			return b, nil
		}
		labelErr = fmt.Errorf("ignoring label %s of pod %s/%s: %w", LabelBand, pod.Namespace, pod.Name, err)
	}
	if pod.Spec.Priority != nil {
		if b, ok := BandForPriority(*pod.Spec.Priority); ok {
			return b, labelErr
		}
	}
	if b, ok := bandFromTierResources(pod); ok {
		return b, labelErr
	}
	return BandProd, labelErr
}

// TierResourceNames returns the tier resources the manager publishes on
// Node status: Mid then Batch, CPU then memory.
func TierResourceNames() []corev1.ResourceName {
	return []corev1.ResourceName{ResourceMidCPU, ResourceMidMemory, ResourceBatchCPU, ResourceBatchMemory}
}

// RequestsTierResources reports whether a container of pod, init and
// sidecar containers included, requests or limits a tier resource (a limit
// alone defaults an extended resource's request).
func RequestsTierResources(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			for _, rl := range []corev1.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
				for _, name := range TierResourceNames() {
					if _, ok := rl[name]; ok {
						return true
					}
				}
			}
		}
	}
	return false
}

func bandFromTierResources(pod *corev1.Pod) (Band, bool) {
	for i := range pod.Spec.Containers {
		req := pod.Spec.Containers[i].Resources.Requests
		lim := pod.Spec.Containers[i].Resources.Limits
		for _, rl := range []corev1.ResourceList{req, lim} {
			if _, ok := rl[ResourceBatchCPU]; ok {
				return BandBatch, true
			}
			if _, ok := rl[ResourceBatchMemory]; ok {
				return BandBatch, true
			}
			if _, ok := rl[ResourceMidCPU]; ok {
				return BandMid, true
			}
			if _, ok := rl[ResourceMidMemory]; ok {
				return BandMid, true
			}
		}
	}
	return "", false
}
