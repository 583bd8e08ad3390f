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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// DefaultNodeMetricExpirationSeconds is LoadAware's default
// nodeMetricExpirationSeconds (docs/design/loadaware.md#args-and-defaults); the
// defaults live in the core.
const DefaultNodeMetricExpirationSeconds = int64(nodeload.DefaultNodeMetricExpiration / time.Second)

// BandPreemption's defaults: DefaultPreemption's, so that switching from
// DefaultPreemption to BandPreemption examines the same nodes.
const (
	DefaultMinCandidateNodesPercentage int32 = 10
	DefaultMinCandidateNodesAbsolute   int32 = 100
)

// The scheme defaults args when the scheduler decodes a configuration:
// defaulter-gen finds the SetDefaults_<Type> functions below and registers
// them in RegisterDefaults (zz_generated.defaults.go). A new knob with a
// non-zero default is one more line in its SetDefaults function.

// SetDefaults_LoadAwareArgs fills the fields left unset; it never changes
// what is set, even when it is invalid (validation says so instead).
// Threshold and weight maps are defaulted as a whole when empty: a user who
// lists thresholds listed the ones they want. Scaling factors are filled
// per resource, since every resource needs one.
func SetDefaults_LoadAwareArgs(obj *LoadAwareArgs) { //nolint:revive // The scheme's naming convention.
	if obj.NodeMetricExpirationSeconds == nil {
		obj.NodeMetricExpirationSeconds = ptr.To(DefaultNodeMetricExpirationSeconds)
	}
	if obj.EnableScheduleWhenNodeMetricsExpired == nil {
		obj.EnableScheduleWhenNodeMetricsExpired = ptr.To(false)
	}
	if len(obj.ResourceWeights) == 0 {
		obj.ResourceWeights = nodeload.DefaultResourceWeights()
	}
	if obj.DominantResourceWeight == nil {
		obj.DominantResourceWeight = ptr.To[int64](0)
	}
	if len(obj.UsageThresholds) == 0 {
		obj.UsageThresholds = nodeload.DefaultUsageThresholds()
	}
	if obj.ProdUsageIncludeSys == nil {
		obj.ProdUsageIncludeSys = ptr.To(false)
	}
	if obj.ProdUsageIncludePrediction == nil {
		obj.ProdUsageIncludePrediction = ptr.To(false)
	}
	if obj.ScoreAccordingProdUsage == nil {
		obj.ScoreAccordingProdUsage = ptr.To(false)
	}
	if obj.NodeUsageIncludePrediction == nil {
		obj.NodeUsageIncludePrediction = ptr.To(false)
	}
	if obj.ScoreAccordingPrediction == nil {
		obj.ScoreAccordingPrediction = ptr.To(false)
	}
	if obj.EstimatedScalingFactors == nil {
		obj.EstimatedScalingFactors = map[corev1.ResourceName]int64{}
	}
	for name, factor := range nodeload.DefaultEstimatedScalingFactors() {
		if _, ok := obj.EstimatedScalingFactors[name]; !ok {
			obj.EstimatedScalingFactors[name] = factor
		}
	}
	if obj.EstimatedSecondsAfterPodScheduled == nil {
		obj.EstimatedSecondsAfterPodScheduled = ptr.To[int64](0)
	}
	if obj.EstimatedSecondsAfterInitialized == nil {
		obj.EstimatedSecondsAfterInitialized = ptr.To[int64](0)
	}
	if obj.AllowCustomizeEstimation == nil {
		obj.AllowCustomizeEstimation = ptr.To(false)
	}
}

// DefaultedLoadAwareArgs returns the default LoadAware args in internal
// form, for a plugin configured without args.
func DefaultedLoadAwareArgs() config.LoadAwareArgs {
	v1Args := &LoadAwareArgs{}
	SetDefaults_LoadAwareArgs(v1Args)
	var out config.LoadAwareArgs
	// The conversion cannot fail: it only copies fields.
	_ = Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs(v1Args, &out, nil)
	return out
}

// SetDefaults_BandPreemptionArgs fills the fields left unset and never
// changes what is set.
func SetDefaults_BandPreemptionArgs(obj *BandPreemptionArgs) { //nolint:revive // The scheme's naming convention.
	if obj.MinCandidateNodesPercentage == nil {
		obj.MinCandidateNodesPercentage = ptr.To(DefaultMinCandidateNodesPercentage)
	}
	if obj.MinCandidateNodesAbsolute == nil {
		obj.MinCandidateNodesAbsolute = ptr.To(DefaultMinCandidateNodesAbsolute)
	}
}

// DefaultedBandPreemptionArgs returns the internal args a configuration
// without pluginConfig for BandPreemption gets.
func DefaultedBandPreemptionArgs() config.BandPreemptionArgs {
	var v1args BandPreemptionArgs
	SetDefaults_BandPreemptionArgs(&v1args)
	var out config.BandPreemptionArgs
	_ = Convert_v1_BandPreemptionArgs_To_config_BandPreemptionArgs(&v1args, &out, nil) // never fails
	return out
}
