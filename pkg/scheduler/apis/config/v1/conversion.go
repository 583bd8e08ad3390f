package v1

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// RegisterConversions registers the conversions between the v1 and the
// internal args of every plugin. They are written by hand, as
// scheduler-plugins does, because conversion-gen is not among our tools;
// TestLoadAwareArgsRoundTrip keeps them complete.
func RegisterConversions(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*LoadAwareArgs)(nil), (*config.LoadAwareArgs)(nil), func(a, b any, scope conversion.Scope) error {
		return Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs(a.(*LoadAwareArgs), b.(*config.LoadAwareArgs), scope)
	}); err != nil {
		return fmt.Errorf("registering LoadAwareArgs conversion: %w", err)
	}
	if err := s.AddConversionFunc((*config.LoadAwareArgs)(nil), (*LoadAwareArgs)(nil), func(a, b any, scope conversion.Scope) error {
		return Convert_config_LoadAwareArgs_To_v1_LoadAwareArgs(a.(*config.LoadAwareArgs), b.(*LoadAwareArgs), scope)
	}); err != nil {
		return fmt.Errorf("registering LoadAwareArgs conversion: %w", err)
	}
	return nil
}

// Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs converts defaulted v1
// args to internal ones; unset pointers become zero values.
func Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs(in *LoadAwareArgs, out *config.LoadAwareArgs, _ conversion.Scope) error { //nolint:revive // The scheme's naming convention.
	*out = config.LoadAwareArgs{
		NodeMetricExpirationSeconds:          ptr.Deref(in.NodeMetricExpirationSeconds, 0),
		EnableScheduleWhenNodeMetricsExpired: ptr.Deref(in.EnableScheduleWhenNodeMetricsExpired, false),
		ResourceWeights:                      maps.Clone(in.ResourceWeights),
		DominantResourceWeight:               ptr.Deref(in.DominantResourceWeight, 0),
		UsageThresholds:                      maps.Clone(in.UsageThresholds),
		ProdUsageThresholds:                  maps.Clone(in.ProdUsageThresholds),
		ProdUsageIncludeSys:                  ptr.Deref(in.ProdUsageIncludeSys, false),
		ProdUsageIncludePrediction:           ptr.Deref(in.ProdUsageIncludePrediction, false),
		NodeUsageIncludePrediction:           ptr.Deref(in.NodeUsageIncludePrediction, false),
		ScoreAccordingPrediction:             ptr.Deref(in.ScoreAccordingPrediction, false),
		ScoreAccordingProdUsage:              ptr.Deref(in.ScoreAccordingProdUsage, false),
		EstimatedScalingFactors:              maps.Clone(in.EstimatedScalingFactors),
		EstimatedSecondsAfterPodScheduled:    ptr.Deref(in.EstimatedSecondsAfterPodScheduled, 0),
		EstimatedSecondsAfterInitialized:     ptr.Deref(in.EstimatedSecondsAfterInitialized, 0),
		AllowCustomizeEstimation:             ptr.Deref(in.AllowCustomizeEstimation, false),
		SupportedResources:                   slices.Clone(in.SupportedResources),
	}
	if a := in.Aggregated; a != nil {
		out.Aggregated = &config.LoadAwareAggregatedArgs{
			UsageThresholds:         maps.Clone(a.UsageThresholds),
			UsageAggregationType:    a.UsageAggregationType,
			UsageAggregatedDuration: ptr.Deref(a.UsageAggregatedDuration, metav1.Duration{}),
			ScoreAggregationType:    a.ScoreAggregationType,
			ScoreAggregatedDuration: ptr.Deref(a.ScoreAggregatedDuration, metav1.Duration{}),
		}
	}
	return nil
}

// Convert_config_LoadAwareArgs_To_v1_LoadAwareArgs converts internal args
// to v1 ones, every field set.
func Convert_config_LoadAwareArgs_To_v1_LoadAwareArgs(in *config.LoadAwareArgs, out *LoadAwareArgs, _ conversion.Scope) error { //nolint:revive // The scheme's naming convention.
	*out = LoadAwareArgs{
		NodeMetricExpirationSeconds:          ptr.To(in.NodeMetricExpirationSeconds),
		EnableScheduleWhenNodeMetricsExpired: ptr.To(in.EnableScheduleWhenNodeMetricsExpired),
		ResourceWeights:                      maps.Clone(in.ResourceWeights),
		DominantResourceWeight:               ptr.To(in.DominantResourceWeight),
		UsageThresholds:                      maps.Clone(in.UsageThresholds),
		ProdUsageThresholds:                  maps.Clone(in.ProdUsageThresholds),
		ProdUsageIncludeSys:                  ptr.To(in.ProdUsageIncludeSys),
		ProdUsageIncludePrediction:           ptr.To(in.ProdUsageIncludePrediction),
		NodeUsageIncludePrediction:           ptr.To(in.NodeUsageIncludePrediction),
		ScoreAccordingPrediction:             ptr.To(in.ScoreAccordingPrediction),
		ScoreAccordingProdUsage:              ptr.To(in.ScoreAccordingProdUsage),
		EstimatedScalingFactors:              maps.Clone(in.EstimatedScalingFactors),
		EstimatedSecondsAfterPodScheduled:    ptr.To(in.EstimatedSecondsAfterPodScheduled),
		EstimatedSecondsAfterInitialized:     ptr.To(in.EstimatedSecondsAfterInitialized),
		AllowCustomizeEstimation:             ptr.To(in.AllowCustomizeEstimation),
		SupportedResources:                   slices.Clone(in.SupportedResources),
	}
	if a := in.Aggregated; a != nil {
		out.Aggregated = &LoadAwareAggregatedArgs{
			UsageThresholds:      maps.Clone(a.UsageThresholds),
			UsageAggregationType: a.UsageAggregationType,
			ScoreAggregationType: a.ScoreAggregationType,
		}
		if a.UsageAggregatedDuration.Duration != 0 {
			out.Aggregated.UsageAggregatedDuration = ptr.To(a.UsageAggregatedDuration)
		}
		if a.ScoreAggregatedDuration.Duration != 0 {
			out.Aggregated.ScoreAggregatedDuration = ptr.To(a.ScoreAggregatedDuration)
		}
	}
	return nil
}
