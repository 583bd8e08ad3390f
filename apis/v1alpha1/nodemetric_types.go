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

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeMetric condition types. The agent owns all of them.
const (
	// ConditionForbidScheduling is True while the node's usage is over a
	// forbid-scheduling waterline of its NodeQOS: the scheduler then refuses
	// new Batch and Free band pods on the node; Prod and Mid pods are not
	// affected.
	ConditionForbidScheduling = "ForbidScheduling"
	// ConditionThrottling is True while the agent holds at least one
	// low-priority pod's CPU below what it asked for.
	ConditionThrottling = "Throttling"
	// ConditionPredictionReady is True once the agent's predictor has enough
	// history to report a Prod peak that is not a cold-start fallback.
	ConditionPredictionReady = "PredictionReady"
)

// AggregationType names a statistic over a window of samples.
// +kubebuilder:validation:Enum=avg;p50;p90;p95;p99;max
type AggregationType string

// Aggregation types the agent reports and the scheduler can use.
const (
	AggregationAvg AggregationType = "avg"
	AggregationP50 AggregationType = "p50"
	AggregationP90 AggregationType = "p90"
	AggregationP95 AggregationType = "p95"
	AggregationP99 AggregationType = "p99"
	AggregationMax AggregationType = "max"
)

// PredictModel names a peak-prediction model of the agent.
// +kubebuilder:validation:Enum=NSigmaV1;NSigmaV2;BorgDefault;ResourceCentral;PercentilePeak;Max
type PredictModel string

// Prediction models (docs/design/prediction.md#models; the Koordinator node
// prediction proposal and Bashir et al., EuroSys'21).
const (
	// PredictNSigmaV1 predicts mean + N·stdev of the Prod usage of the node.
	PredictNSigmaV1 PredictModel = "NSigmaV1"
	// PredictNSigmaV2 is the larger of NSigmaV1 and Σ per pod (mean + N·stdev).
	PredictNSigmaV2 PredictModel = "NSigmaV2"
	// PredictBorgDefault is Σ requests ÷ a, a = 1.1.
	PredictBorgDefault PredictModel = "BorgDefault"
	// PredictResourceCentral is Σ per pod of a percentile of its usage.
	PredictResourceCentral PredictModel = "ResourceCentral"
	// PredictPercentilePeak is a percentile of the Prod usage of the node.
	PredictPercentilePeak PredictModel = "PercentilePeak"
	// PredictMax is the largest of the models listed in maxOf.
	PredictMax PredictModel = "Max"
)

// NodeMetricCollectPolicy says how often the agent reports and over which
// windows it aggregates.
//
// An unset field takes, on a pool policy, the default policy's value, and
// otherwise the built-in default ("Default:" below). The schema sets no
// defaults: the API server would store them, and every field of a pool's
// collectPolicy would override the default policy's (docs/design/tiers.md).
type NodeMetricCollectPolicy struct {
	// AggregateDurationSeconds is the window, in seconds, that
	// status.nodeMetric.nodeUsage averages over.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// Default: 300.
	// +optional
	AggregateDurationSeconds *int64 `json:"aggregateDurationSeconds,omitempty"`
	// ReportIntervalSeconds is how often, in seconds, the agent writes the
	// NodeMetric status. The scheduler treats a NodeMetric not updated for
	// its nodeMetricExpirationSeconds (default 180) as stale, so keep this
	// well below that.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// Default: 60.
	// +optional
	ReportIntervalSeconds *int64 `json:"reportIntervalSeconds,omitempty"`
	// AggregateDurations are the windows for which the agent reports
	// percentile aggregates of node usage (status.nodeMetric.aggregatedNodeUsages).
	// The agent keeps at most its retention (default 30m) of raw samples;
	// longer windows are answered from what it has.
	// Default: 5m, 10m, 30m.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	AggregateDurations []metav1.Duration `json:"aggregateDurations,omitempty"`
}

// PredictPolicy configures the agent's Prod peak prediction
// (docs/design/prediction.md).
//
// An unset field takes, on a pool policy, the default policy's value, and
// otherwise the built-in default ("Default:" below). The schema sets no
// defaults: the API server would store them, and every field of a pool's
// predictPolicy would override the default policy's (docs/design/tiers.md).
type PredictPolicy struct {
	// Model is the peak-prediction model.
	// Default: NSigmaV2.
	// +optional
	Model PredictModel `json:"model,omitempty"`
	// MaxOf lists the models the Max model takes the largest of. Default:
	// NSigmaV2 and ResourceCentral. (BorgDefault, Σ requests ÷ 1.1, caps
	// the savings at 9 % wherever requests equal limits, so it is not in
	// the default.)
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:Enum=NSigmaV1;NSigmaV2;BorgDefault;ResourceCentral;PercentilePeak
	// +listType=atomic
	// +optional
	MaxOf []PredictModel `json:"maxOf,omitempty"`
	// NSigma is the number of standard deviations (the N of N-sigma) the
	// N-sigma models add to the mean. (Not "n": YAML 1.1, which kubectl
	// and Helm read, takes an unquoted key n for false.)
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// Default: 10.
	// +optional
	NSigma *int32 `json:"nSigma,omitempty"`
	// Percentile is the percentile (1-100) of usage the ResourceCentral and
	// PercentilePeak models take.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// Default: 99.
	// +optional
	Percentile *int32 `json:"percentile,omitempty"`
	// HalfLifeSeconds is the half-life of the decaying usage histograms: a
	// sample's weight halves every half-life. At most 30 days.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=2592000
	// Default: 3600.
	// +optional
	HalfLifeSeconds *int64 `json:"halfLifeSeconds,omitempty"`
	// ColdStartSeconds is how long a new pod's requests stand in for its
	// usage history in the prediction. At most 7 days.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	// Default: 3600.
	// +optional
	ColdStartSeconds *int64 `json:"coldStartSeconds,omitempty"`
	// BorgOvercommitPercent is the BorgDefault model's over-commit rate a,
	// in percent: the predicted peak is Σ requests ÷ (this / 100). The
	// safety margin is not added to it: a is the margin the operator
	// chose.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=1000
	// Default: 110.
	// +optional
	BorgOvercommitPercent *int32 `json:"borgOvercommitPercent,omitempty"`
	// SafetyMarginPercent is added on top of the peak the usage-based
	// models (NSigmaV1, NSigmaV2, ResourceCentral, PercentilePeak)
	// predict; BorgDefault, which reads no usage, takes none.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 10.
	// +optional
	SafetyMarginPercent *int32 `json:"safetyMarginPercent,omitempty"`
	// ResourceDiffThresholdPercent makes the agent report a new prediction
	// before the next report interval when it moved by more than this
	// percentage.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 5.
	// +optional
	ResourceDiffThresholdPercent *int64 `json:"resourceDiffThresholdPercent,omitempty"`
	// ForceUpdateSeconds makes the agent report the prediction at least this
	// often even when it did not move. At most a day.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// Default: 600.
	// +optional
	ForceUpdateSeconds *int64 `json:"forceUpdateSeconds,omitempty"`
}

// NodeMetricSpec is written by waterline-manager from the ColocationPolicy
// that selects the node; the agent reads it.
type NodeMetricSpec struct {
	// CollectPolicy says how often the agent reports and over which windows.
	// +optional
	CollectPolicy *NodeMetricCollectPolicy `json:"collectPolicy,omitempty"`
	// PredictPolicy configures the Prod peak prediction.
	// +optional
	PredictPolicy *PredictPolicy `json:"predictPolicy,omitempty"`
	// Tiers is what the agent needs of the policy's tier settings to
	// report what the manager sells.
	// +optional
	Tiers *NodeMetricTiers `json:"tiers,omitempty"`
}

// NodeMetricTiers is the part of a ColocationPolicy's spec.tiers that the
// agent reports with, written by waterline-manager.
type NodeMetricTiers struct {
	// ReclaimRatioPercent is the ColocationPolicy's
	// spec.tiers.reclaimRatioPercent: the agent reports
	// status.prodReclaimable = max(0, ratio × Σ Prod requests − prodPeak),
	// the Reclaimable the manager sells Mid from (docs/design/tiers.md).
	// Absent: 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ReclaimRatioPercent *int32 `json:"reclaimRatioPercent,omitempty"`
}

// ReclaimRatioPercent is spec.tiers.reclaimRatioPercent, 100 when absent.
func (s *NodeMetricSpec) ReclaimRatioPercent() int32 {
	if s == nil || s.Tiers == nil || s.Tiers.ReclaimRatioPercent == nil {
		return DefaultReclaimRatioPercent
	}
	return *s.Tiers.ReclaimRatioPercent
}

// AggregatedUsage is node usage summarised over one window.
type AggregatedUsage struct {
	// Duration is the window the statistics cover.
	Duration metav1.Duration `json:"duration"`
	// Usage maps a statistic (avg, p50, p90, p95, p99, max) to the usage it
	// gives over the window.
	// +optional
	Usage map[AggregationType]corev1.ResourceList `json:"usage,omitempty"`
}

// NodeMetricInfo is the node-level usage the agent observed.
type NodeMetricInfo struct {
	// NodeUsage is the node's usage averaged over
	// spec.collectPolicy.aggregateDurationSeconds: cpu in cores, memory in
	// bytes (MemTotal − MemAvailable).
	// +optional
	NodeUsage corev1.ResourceList `json:"nodeUsage,omitempty"`
	// SystemUsage is node usage not accounted to any pod (node − Σ pods),
	// over the same window.
	// +optional
	SystemUsage corev1.ResourceList `json:"systemUsage,omitempty"`
	// AggregatedNodeUsages are percentile aggregates of node usage over the
	// windows of spec.collectPolicy.aggregateDurations.
	// +listType=atomic
	// +optional
	AggregatedNodeUsages []AggregatedUsage `json:"aggregatedNodeUsages,omitempty"`
}

// PodMetricInfo is one pod's usage.
type PodMetricInfo struct {
	// Namespace of the pod.
	Namespace string `json:"namespace"`
	// Name of the pod.
	Name string `json:"name"`
	// Band is the pod's priority band (prod, mid, batch, free).
	// +optional
	Band string `json:"band,omitempty"`
	// Usage is the pod's usage averaged over the same window as nodeUsage.
	// +optional
	Usage corev1.ResourceList `json:"usage,omitempty"`
}

// NodeMetricStatus is written by the node's waterline-agent.
type NodeMetricStatus struct {
	// UpdateTime is when the agent last wrote this status. The scheduler
	// and the manager treat an old updateTime as a node whose agent is not
	// reporting.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
	// NodeMetric is the node-level usage.
	// +optional
	NodeMetric *NodeMetricInfo `json:"nodeMetric,omitempty"`
	// PodsMetric is each running pod's usage and band.
	// +listType=atomic
	// +optional
	PodsMetric []PodMetricInfo `json:"podsMetric,omitempty"`
	// ProdPeak is the predicted peak usage of the node's Prod pods (plus
	// the system), including the safety margin.
	// +optional
	ProdPeak corev1.ResourceList `json:"prodPeak,omitempty"`
	// ProdReclaimable is what the Prod pods requested but are predicted not
	// to use, at the reclaim ratio of spec.tiers.reclaimRatioPercent (the
	// ColocationPolicy's; 100 when absent): max(0, ratio × Σ Prod requests −
	// prodPeak). The manager sells Mid from at most this: from the same
	// formula over the Prod pods bound now where it is smaller (a Prod pod
	// went since the report); never from a Prod pod bound since. Mid is
	// further capped by the policy's threshold and the node's unused
	// capacity (docs/design/tiers.md).
	// +optional
	ProdReclaimable corev1.ResourceList `json:"prodReclaimable,omitempty"`
	// PredictionTime is when prodPeak was last computed.
	// +optional
	PredictionTime *metav1.Time `json:"predictionTime,omitempty"`
	// Conditions: ForbidScheduling, Throttling, PredictionReady.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// NodeMetric is what a node's waterline-agent observed and predicted, one
// per node, named after it. waterline-manager creates and deletes it with
// the Node and writes its spec; the agent writes its status.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nm
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.nodeMetric.nodeUsage.cpu`,description="Node CPU usage (cores)"
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.status.nodeMetric.nodeUsage.memory`,description="Node memory usage"
// +kubebuilder:printcolumn:name="Prod-Peak-CPU",type=string,JSONPath=`.status.prodPeak.cpu`,description="Predicted Prod CPU peak"
// +kubebuilder:printcolumn:name="Reclaimable-CPU",type=string,JSONPath=`.status.prodReclaimable.cpu`,description="Prod CPU reclaimable at the policy's reclaim ratio: what Mid CPU is sold from"
// +kubebuilder:printcolumn:name="Forbid",type=string,JSONPath=`.status.conditions[?(@.type=="ForbidScheduling")].status`,description="Low-priority scheduling forbidden"
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.updateTime`
type NodeMetric struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodeMetricSpec `json:"spec,omitempty"`
	// +optional
	Status NodeMetricStatus `json:"status,omitempty"`
}

// NodeMetricList is a list of NodeMetrics.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NodeMetricList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeMetric `json:"items"`
}
