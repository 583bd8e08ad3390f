package loadaware

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

// DefaultUsageThresholds are the filter thresholds: cpu 65 %, memory 95 %.
func DefaultUsageThresholds() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95}
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
