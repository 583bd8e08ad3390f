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

package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// LoadAwareArgs configures the LoadAware plugin, which places pods by the real
// load of nodes (NodeMetric) rather than by requests
// (docs/design/loadaware.md). Percentages are of the node's status.allocatable,
// or of its waterline.dev/raw-allocatable annotation where set.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type LoadAwareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// NodeMetricExpirationSeconds is how long, in seconds, after its last
	// report (status.updateTime) a NodeMetric is still trusted. A node whose
	// NodeMetric is older is treated as not reporting: refused (unless
	// enableScheduleWhenNodeMetricsExpired) and scored 0.
	// Range: [1, 31536000] (a year). Default: 180.
	NodeMetricExpirationSeconds *int64 `json:"nodeMetricExpirationSeconds,omitempty"`
	// EnableScheduleWhenNodeMetricsExpired lets pods onto nodes whose
	// NodeMetric expired, without a usage check.
	// Default: false (such nodes are refused).
	EnableScheduleWhenNodeMetricsExpired *bool `json:"enableScheduleWhenNodeMetricsExpired,omitempty"`
	// ResourceWeights are the score weights per resource: a node's score
	// is the weighted mean of each resource's least-used score.
	// Range: each in [0, 100], at least one positive.
	// Default (when empty): cpu 1, memory 1.
	ResourceWeights map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
	// DominantResourceWeight weighs the least-used score of the node's most
	// used (dominant) resource into the score, on top of resourceWeights, so
	// that nodes with one nearly exhausted resource rank lower.
	// Range: [0, 100]. Default: 0 (off).
	DominantResourceWeight *int64 `json:"dominantResourceWeight,omitempty"`
	// UsageThresholds refuse a node when its usage with the pod -- node
	// usage + the unreported part of assigned pods + the pod's estimate --
	// would be above them: percent of allocatable per resource. 0 turns a
	// resource's check off.
	// Range: each in [0, 100]. Default (when empty): cpu 65, memory 95.
	UsageThresholds map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	// ProdUsageThresholds, when any is non-zero, judge Prod band pods by the
	// usage of the node's Prod pods instead of by usageThresholds: what
	// lower bands use does not keep Prod pods out.
	// Range: each in [0, 100]. Default: none.
	ProdUsageThresholds map[corev1.ResourceName]int64 `json:"prodUsageThresholds,omitempty"`
	// ProdUsageIncludeSys adds the node's system usage (usage outside pods)
	// to the Prod usage. Default: false.
	ProdUsageIncludeSys *bool `json:"prodUsageIncludeSys,omitempty"`
	// ProdUsageIncludePrediction judges Prod pods by max(Prod usage, the
	// NodeMetric's predicted Prod peak status.prodPeak), so a node whose
	// Prod pods are quiet now but predicted to peak does not take more.
	// Only matters where Prod thresholds apply. Default: false.
	ProdUsageIncludePrediction *bool `json:"prodUsageIncludePrediction,omitempty"`
	// NodeUsageIncludePrediction judges every pod not judged by Prod usage
	// (Mid, Batch and Free pods, and Prod pods where no Prod thresholds
	// apply) by node usage with its Prod part raised to the predicted Prod
	// peak: nodeUsage + max(0, status.prodPeak − Prod usage). Mid and Batch
	// tiers are sold from what Prod is predicted not to use; a node whose
	// Prod pods are quiet now but predicted to peak does not take lower
	// bands into room Prod will want back. Applies to usageThresholds, not
	// to aggregated thresholds (a percentile already holds Prod's peaks).
	// Nothing changes on a node without a reported peak. Default: false.
	NodeUsageIncludePrediction *bool `json:"nodeUsageIncludePrediction,omitempty"`
	// ScoreAccordingPrediction makes Score rank nodes by the same predicted
	// load: nodeUsage + max(0, prodPeak − Prod usage), or max(Prod usage,
	// prodPeak) for Prod pods with scoreAccordingProdUsage. Not used with
	// a score aggregation. Default: false.
	ScoreAccordingPrediction *bool `json:"scoreAccordingPrediction,omitempty"`
	// ScoreAccordingProdUsage scores nodes for Prod pods by Prod usage
	// instead of node usage. Default: false.
	ScoreAccordingProdUsage *bool `json:"scoreAccordingProdUsage,omitempty"`
	// EstimatedScalingFactors are how much of max(request, limit) a pod is
	// estimated to use until the NodeMetric shows its real usage: percent
	// per resource. Mid and Batch pods' tier resources count as cpu and
	// memory. Resources without a factor are estimated at 100 %.
	// Range: each in [1, 100]. Default: cpu 85, memory 70 (each filled in
	// when missing).
	EstimatedScalingFactors map[corev1.ResourceName]int64 `json:"estimatedScalingFactors,omitempty"`
	// EstimatedSecondsAfterPodScheduled forces estimation of an assigned
	// pod for this many seconds after it was scheduled, even once the
	// NodeMetric reports it (for pods whose load ramps up slowly).
	// Range: [0, 31536000] (a year). Default: 0 (off).
	EstimatedSecondsAfterPodScheduled *int64 `json:"estimatedSecondsAfterPodScheduled,omitempty"`
	// EstimatedSecondsAfterInitialized forces estimation of an assigned pod
	// while it initializes and for this many seconds after its Initialized
	// condition turned True.
	// Range: [0, 31536000] (a year). Default: 0 (off).
	EstimatedSecondsAfterInitialized *int64 `json:"estimatedSecondsAfterInitialized,omitempty"`
	// AllowCustomizeEstimation lets pods override estimatedScalingFactors
	// and the two forced windows with the annotations
	// waterline.dev/load-estimated-scaling-factors (JSON map resource →
	// percent), waterline.dev/load-estimated-seconds-after-pod-scheduled and
	// waterline.dev/load-estimated-seconds-after-initialized (seconds).
	// Default: false.
	AllowCustomizeEstimation *bool `json:"allowCustomizeEstimation,omitempty"`
	// Aggregated judges and scores nodes by a percentile aggregate of node
	// usage (status.nodeMetric.aggregatedNodeUsages) instead of the
	// average. Default: nil (off).
	Aggregated *LoadAwareAggregatedArgs `json:"aggregated,omitempty"`
	// SupportedResources are extra resources to track that are named only
	// in node annotations (waterline.dev/usage-thresholds). cpu, memory and
	// every resource named in these args are tracked anyway.
	// Range: at most 8 resources tracked in all. Default: none.
	SupportedResources []corev1.ResourceName `json:"supportedResources,omitempty"`
}

// LoadAwareAggregatedArgs judges and scores nodes by percentile aggregates
// of node usage.
type LoadAwareAggregatedArgs struct {
	// UsageThresholds, when any is non-zero, replace the top-level
	// usageThresholds and judge the usageAggregationType aggregate instead
	// of average usage: percent per resource.
	// Range: each in [0, 100]. Default: none.
	UsageThresholds map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	// UsageAggregationType is the statistic usageThresholds judge: avg,
	// p50, p90, p95, p99 or max. Required when usageThresholds is set.
	UsageAggregationType v1alpha1.AggregationType `json:"usageAggregationType,omitempty"`
	// UsageAggregatedDuration is the window of that statistic; it must be
	// one of the NodeMetric's spec.collectPolicy.aggregateDurations.
	// Default: unset, which takes the longest window reported.
	UsageAggregatedDuration *metav1.Duration `json:"usageAggregatedDuration,omitempty"`
	// ScoreAggregationType, when set, scores nodes by that statistic
	// instead of average usage. Default: unset.
	ScoreAggregationType v1alpha1.AggregationType `json:"scoreAggregationType,omitempty"`
	// ScoreAggregatedDuration is the window of the score statistic.
	// Default: unset, which takes the longest window reported.
	ScoreAggregatedDuration *metav1.Duration `json:"scoreAggregatedDuration,omitempty"`
}
