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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Defaults: what components use when a field is unset (a NodeMetric created
// before its policy existed, a nested struct left out, a field a policy
// leaves to the default policy or to these). The NodeQOS schema declares the
// same values in +kubebuilder:default markers so that `kubectl get -o yaml`
// shows them, and TestCRDDefaultsMatchGo keeps the two in step. The
// ColocationPolicy and NodeMetric schemas declare none: stored in a pool
// policy they would override the default policy's fields
// (TestPolicyCRDsSetNoDefaults).
const (
	DefaultAggregateDurationSeconds int64 = 300
	DefaultReportIntervalSeconds    int64 = 60

	DefaultPredictModel                       = PredictNSigmaV2
	DefaultPredictNSigma                int32 = 10
	DefaultPredictPercentile            int32 = 99
	DefaultHalfLifeSeconds              int64 = 3600
	DefaultColdStartSeconds             int64 = 3600
	DefaultSafetyMarginPercent          int32 = 10
	DefaultBorgOvercommitPercent        int32 = 110
	DefaultResourceDiffThresholdPercent int64 = 5
	DefaultForceUpdateSeconds           int64 = 600

	DefaultMidThresholdPercent         int32 = 30
	DefaultReclaimRatioPercent         int32 = 100
	DefaultBatchCPUThresholdPercent    int32 = 75
	DefaultBatchMemoryThresholdPercent int32 = 65
	DefaultDegradeSeconds              int64 = 600
	DefaultUpdateThresholdPercent      int32 = 5

	DefaultAvoidanceCount           int32 = 2
	DefaultRestoreCount             int32 = 3
	DefaultCPUEvictWindowSeconds    int64 = 300
	DefaultSatisfactionLowerPercent int32 = 60
	DefaultSatisfactionUpperPercent int32 = 80
	DefaultBEUsageThresholdPercent  int32 = 90
	DefaultThrottleStepPercent      int32 = 10
	DefaultThrottleMinCPUPercent    int32 = 10
	DefaultEvictionMaxPerMinute     int32 = 10
)

// DefaultMaxOf are the models the Max model combines by default.
var DefaultMaxOf = []PredictModel{PredictNSigmaV2, PredictResourceCentral}

// DefaultAggregateDurations are the windows of status.nodeMetric.aggregatedNodeUsages.
var DefaultAggregateDurations = []time.Duration{5 * time.Minute, 10 * time.Minute, 30 * time.Minute}

// CollectPolicyWithDefaults returns a copy of in with every unset field set
// to its default; in may be nil.
func CollectPolicyWithDefaults(in *NodeMetricCollectPolicy) *NodeMetricCollectPolicy {
	out := &NodeMetricCollectPolicy{}
	if in != nil {
		out = in.DeepCopy()
	}
	if out.AggregateDurationSeconds == nil {
		out.AggregateDurationSeconds = ptr.To(DefaultAggregateDurationSeconds)
	}
	if out.ReportIntervalSeconds == nil {
		out.ReportIntervalSeconds = ptr.To(DefaultReportIntervalSeconds)
	}
	if len(out.AggregateDurations) == 0 {
		for _, d := range DefaultAggregateDurations {
			out.AggregateDurations = append(out.AggregateDurations, metav1.Duration{Duration: d})
		}
	}
	return out
}

// PredictPolicyWithDefaults returns a copy of in with every unset field set
// to its default; in may be nil.
func PredictPolicyWithDefaults(in *PredictPolicy) *PredictPolicy {
	out := &PredictPolicy{}
	if in != nil {
		out = in.DeepCopy()
	}
	if out.Model == "" {
		out.Model = DefaultPredictModel
	}
	if len(out.MaxOf) == 0 {
		out.MaxOf = append([]PredictModel(nil), DefaultMaxOf...)
	}
	setDefault(&out.NSigma, DefaultPredictNSigma)
	setDefault(&out.Percentile, DefaultPredictPercentile)
	setDefault(&out.HalfLifeSeconds, DefaultHalfLifeSeconds)
	setDefault(&out.ColdStartSeconds, DefaultColdStartSeconds)
	setDefault(&out.SafetyMarginPercent, DefaultSafetyMarginPercent)
	setDefault(&out.BorgOvercommitPercent, DefaultBorgOvercommitPercent)
	setDefault(&out.ResourceDiffThresholdPercent, DefaultResourceDiffThresholdPercent)
	setDefault(&out.ForceUpdateSeconds, DefaultForceUpdateSeconds)
	return out
}

// TierPolicyWithDefaults returns a copy of in with every unset field set to
// its default; in may be nil.
func TierPolicyWithDefaults(in *TierPolicy) *TierPolicy {
	out := &TierPolicy{}
	if in != nil {
		out = in.DeepCopy()
	}
	setDefault(&out.Enabled, true)
	setDefault(&out.MidCPUThresholdPercent, DefaultMidThresholdPercent)
	setDefault(&out.MidMemoryThresholdPercent, DefaultMidThresholdPercent)
	setDefault(&out.ReclaimRatioPercent, DefaultReclaimRatioPercent)
	setDefault(&out.BatchCPUThresholdPercent, DefaultBatchCPUThresholdPercent)
	setDefault(&out.BatchMemoryThresholdPercent, DefaultBatchMemoryThresholdPercent)
	setDefault(&out.DegradeSeconds, DefaultDegradeSeconds)
	setDefault(&out.UpdateThresholdPercent, DefaultUpdateThresholdPercent)
	return out
}

// NodeQOSSpecWithDefaults returns a copy of in with every unset tuning field
// set to its default. Waterlines stay unset: an unset waterline is off.
func NodeQOSSpecWithDefaults(in *NodeQOSSpec) *NodeQOSSpec {
	out := &NodeQOSSpec{}
	if in != nil {
		out = in.DeepCopy()
	}
	setDefault(&out.AvoidanceCount, DefaultAvoidanceCount)
	setDefault(&out.RestoreCount, DefaultRestoreCount)
	if out.CPUEviction == nil {
		out.CPUEviction = &CPUEvictionPolicy{}
	}
	setDefault(&out.CPUEviction.WindowSeconds, DefaultCPUEvictWindowSeconds)
	setDefault(&out.CPUEviction.SatisfactionLowerPercent, DefaultSatisfactionLowerPercent)
	setDefault(&out.CPUEviction.SatisfactionUpperPercent, DefaultSatisfactionUpperPercent)
	setDefault(&out.CPUEviction.BEUsageThresholdPercent, DefaultBEUsageThresholdPercent)
	if out.Throttle == nil {
		out.Throttle = &ThrottlePolicy{}
	}
	setDefault(&out.Throttle.StepPercent, DefaultThrottleStepPercent)
	setDefault(&out.Throttle.MinCPUPercent, DefaultThrottleMinCPUPercent)
	if out.Eviction == nil {
		out.Eviction = &EvictionPolicy{}
	}
	setDefault(&out.Eviction.MaxPerMinute, DefaultEvictionMaxPerMinute)
	for i := range out.Rules {
		setDefault(&out.Rules[i].AvoidanceCount, *out.AvoidanceCount)
		setDefault(&out.Rules[i].RestoreCount, *out.RestoreCount)
	}
	return out
}

func setDefault[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}
