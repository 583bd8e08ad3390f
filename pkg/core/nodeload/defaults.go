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
	"time"

	corev1 "k8s.io/api/core/v1"
)

// LoadAware's defaults, those of Koordinator load-aware scheduling
// (docs/design/loadaware.md#args-and-defaults). The scheduler's LoadAwareArgs
// defaulting and the simulator take them from here, so the two cannot drift.

// DefaultNodeMetricExpiration is how old a NodeMetric may get before its
// node is treated as not reporting.
const DefaultNodeMetricExpiration = 180 * time.Second

// DefaultResourceWeights are the score weights: cpu 1, memory 1.
func DefaultResourceWeights() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}
}

// DefaultUsageThresholds are the filter thresholds: cpu 75 %, memory 95 %.
// Koordinator's cpu default is 65 %; Waterline's node QoS already holds a
// node's Batch work under its 70 % throttle line, and a lower scheduling
// threshold refuses pods on nodes whose load is mostly that throttleable
// Batch work (docs/design/loadaware.md#args-and-defaults).
func DefaultUsageThresholds() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 75, corev1.ResourceMemory: 95}
}

// DefaultEstimatedScalingFactors are the estimation factors: cpu 85 %,
// memory 70 %.
func DefaultEstimatedScalingFactors() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70}
}

// DefaultSpec is the Spec of LoadAware with every argument at its default.
// Each call returns fresh maps.
func DefaultSpec() Spec {
	return Spec{
		NodeMetricExpiration:    DefaultNodeMetricExpiration,
		ResourceWeights:         DefaultResourceWeights(),
		UsageThresholds:         DefaultUsageThresholds(),
		EstimatedScalingFactors: DefaultEstimatedScalingFactors(),
	}
}
