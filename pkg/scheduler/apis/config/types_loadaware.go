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

package config

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// LoadAwareArgs configures the LoadAware plugin (docs/design/loadaware.md,
// Koordinator's LoadAwareSchedulingArgs). Percentages are of the node's
// allocatable (or of its waterline.dev/raw-allocatable annotation). The
// versioned form, v1.LoadAwareArgs, documents the defaults.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type LoadAwareArgs struct {
	metav1.TypeMeta

	// NodeMetricExpirationSeconds is how long, in seconds, after its last
	// report (status.updateTime) a NodeMetric is still trusted; an older one
	// marks the node as not reporting. At least 1.
	NodeMetricExpirationSeconds int64
	// EnableScheduleWhenNodeMetricsExpired lets pods onto nodes whose
	// NodeMetric expired, without a usage check, instead of refusing them.
	EnableScheduleWhenNodeMetricsExpired bool
	// ResourceWeights are the score weights per resource, each in [0, 100];
	// at least one is positive.
	ResourceWeights map[corev1.ResourceName]int64
	// DominantResourceWeight weighs the least-used score of the node's most
	// used resource on top of ResourceWeights; [0, 100], 0 is off.
	DominantResourceWeight int64
	// UsageThresholds refuse a node when its usage with the pod would be
	// above them, percent per resource in [0, 100]; 0 is not checked.
	UsageThresholds map[corev1.ResourceName]int64
	// ProdUsageThresholds, when any is non-zero, judge Prod pods by the
	// usage of the node's Prod pods instead of UsageThresholds; percent per
	// resource in [0, 100].
	ProdUsageThresholds map[corev1.ResourceName]int64
	// ProdUsageIncludeSys adds the node's system usage (usage outside pods)
	// to the Prod usage.
	ProdUsageIncludeSys bool
	// ProdUsageIncludePrediction judges Prod pods by max(Prod usage, the
	// NodeMetric's predicted status.prodPeak) instead of Prod usage alone.
	ProdUsageIncludePrediction bool
	// NodeUsageIncludePrediction judges every pod not judged by Prod usage
	// (Mid, Batch, Free; Prod without Prod thresholds) by node usage with
	// its Prod part raised to the predicted Prod peak:
	// node usage + max(0, prodPeak − Prod usage).
	NodeUsageIncludePrediction bool
	// ScoreAccordingPrediction makes Score use the same predicted load:
	// node usage + max(0, prodPeak − Prod usage), or, for Prod pods with
	// ScoreAccordingProdUsage, max(Prod usage, prodPeak).
	ScoreAccordingPrediction bool
	// ScoreAccordingProdUsage scores nodes for Prod pods by Prod usage
	// instead of node usage.
	ScoreAccordingProdUsage bool
	// EstimatedScalingFactors are the percentages of max(request, limit) a
	// pod is estimated to use, per resource, each in [1, 100].
	EstimatedScalingFactors map[corev1.ResourceName]int64
	// EstimatedSecondsAfterPodScheduled forces estimation of an assigned
	// pod for this many seconds after it was scheduled, even once the
	// NodeMetric reports it; 0 is off; at least 0.
	EstimatedSecondsAfterPodScheduled int64
	// EstimatedSecondsAfterInitialized forces estimation of an assigned pod
	// until this many seconds after it was initialized; 0 is off; at least 0.
	EstimatedSecondsAfterInitialized int64
	// AllowCustomizeEstimation lets pods override EstimatedScalingFactors
	// and the two forced windows with their
	// waterline.dev/load-estimated-* annotations.
	AllowCustomizeEstimation bool
	// Aggregated judges and scores nodes by a percentile aggregate of usage;
	// nil is off.
	Aggregated *LoadAwareAggregatedArgs
	// SupportedResources are extra resources to track that appear only in
	// node annotations. cpu, memory and every resource named in these args
	// are tracked anyway; at most 8 resources in all.
	SupportedResources []corev1.ResourceName
}

// LoadAwareAggregatedArgs judges and scores nodes by percentile aggregates
// of node usage (status.nodeMetric.aggregatedNodeUsages).
type LoadAwareAggregatedArgs struct {
	// UsageThresholds, when any is non-zero, replace
	// LoadAwareArgs.UsageThresholds and judge the UsageAggregationType
	// aggregate; percent per resource in [0, 100].
	UsageThresholds map[corev1.ResourceName]int64
	// UsageAggregationType is the statistic the thresholds judge: avg, p50,
	// p90, p95, p99 or max. Required with UsageThresholds.
	UsageAggregationType v1alpha1.AggregationType
	// UsageAggregatedDuration is the window of that statistic; 0 takes the
	// longest window the agent reports.
	UsageAggregatedDuration metav1.Duration
	// ScoreAggregationType, when set, scores by that statistic instead of
	// average usage.
	ScoreAggregationType v1alpha1.AggregationType
	// ScoreAggregatedDuration is the window of the score statistic; 0 takes
	// the longest.
	ScoreAggregatedDuration metav1.Duration
}
