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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

func TestSetDefaultsLoadAwareArgs(t *testing.T) {
	tests := []struct {
		name string
		in   *LoadAwareArgs
		want *LoadAwareArgs
	}{{
		name: "empty args get every default",
		in:   &LoadAwareArgs{},
		want: &LoadAwareArgs{
			NodeMetricExpirationSeconds:          ptr.To[int64](180),
			EnableScheduleWhenNodeMetricsExpired: ptr.To(false),
			ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 1, "memory": 1},
			DominantResourceWeight:               ptr.To[int64](0),
			UsageThresholds:                      map[corev1.ResourceName]int64{"cpu": 75, "memory": 95},
			ProdUsageIncludeSys:                  ptr.To(false),
			ProdUsageIncludePrediction:           ptr.To(false),
			ScoreAccordingProdUsage:              ptr.To(false),
			NodeUsageIncludePrediction:           ptr.To(false),
			ScoreAccordingPrediction:             ptr.To(false),
			EstimatedScalingFactors:              map[corev1.ResourceName]int64{"cpu": 85, "memory": 70},
			EstimatedSecondsAfterPodScheduled:    ptr.To[int64](0),
			EstimatedSecondsAfterInitialized:     ptr.To[int64](0),
			AllowCustomizeEstimation:             ptr.To(false),
		},
	}, {
		name: "set fields are kept, even invalid ones",
		in: &LoadAwareArgs{
			NodeMetricExpirationSeconds:          ptr.To[int64](-1),
			EnableScheduleWhenNodeMetricsExpired: ptr.To(true),
			ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 3},
			DominantResourceWeight:               ptr.To[int64](2),
			UsageThresholds:                      map[corev1.ResourceName]int64{"memory": 0},
			ProdUsageThresholds:                  map[corev1.ResourceName]int64{"cpu": 55},
			ProdUsageIncludeSys:                  ptr.To(true),
			ProdUsageIncludePrediction:           ptr.To(true),
			ScoreAccordingProdUsage:              ptr.To(true),
			NodeUsageIncludePrediction:           ptr.To(true),
			ScoreAccordingPrediction:             ptr.To(true),
			EstimatedScalingFactors:              map[corev1.ResourceName]int64{"cpu": 100},
			EstimatedSecondsAfterPodScheduled:    ptr.To[int64](60),
			EstimatedSecondsAfterInitialized:     ptr.To[int64](30),
			AllowCustomizeEstimation:             ptr.To(true),
			Aggregated:                           &LoadAwareAggregatedArgs{UsageThresholds: map[corev1.ResourceName]int64{"cpu": 70}, UsageAggregationType: v1alpha1.AggregationP95},
			SupportedResources:                   []corev1.ResourceName{"nvidia.com/gpu"},
		},
		want: &LoadAwareArgs{
			NodeMetricExpirationSeconds:          ptr.To[int64](-1),
			EnableScheduleWhenNodeMetricsExpired: ptr.To(true),
			ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 3},
			DominantResourceWeight:               ptr.To[int64](2),
			UsageThresholds:                      map[corev1.ResourceName]int64{"memory": 0},
			ProdUsageThresholds:                  map[corev1.ResourceName]int64{"cpu": 55},
			ProdUsageIncludeSys:                  ptr.To(true),
			ProdUsageIncludePrediction:           ptr.To(true),
			ScoreAccordingProdUsage:              ptr.To(true),
			NodeUsageIncludePrediction:           ptr.To(true),
			ScoreAccordingPrediction:             ptr.To(true),
			// memory's factor was missing: filled in; cpu's kept.
			EstimatedScalingFactors:           map[corev1.ResourceName]int64{"cpu": 100, "memory": 70},
			EstimatedSecondsAfterPodScheduled: ptr.To[int64](60),
			EstimatedSecondsAfterInitialized:  ptr.To[int64](30),
			AllowCustomizeEstimation:          ptr.To(true),
			Aggregated:                        &LoadAwareAggregatedArgs{UsageThresholds: map[corev1.ResourceName]int64{"cpu": 70}, UsageAggregationType: v1alpha1.AggregationP95},
			SupportedResources:                []corev1.ResourceName{"nvidia.com/gpu"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			SetDefaults_LoadAwareArgs(tc.in)
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("SetDefaults_LoadAwareArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultsAreNotShared(t *testing.T) {
	a, b := &LoadAwareArgs{}, &LoadAwareArgs{}
	SetDefaults_LoadAwareArgs(a)
	a.UsageThresholds["cpu"] = 1
	SetDefaults_LoadAwareArgs(b)
	if got := b.UsageThresholds["cpu"]; got != 75 {
		t.Errorf("defaulted cpu threshold after another args changed theirs = %d, want 75", got)
	}
}

func TestLoadAwareArgsRoundTrip(t *testing.T) {
	v1Args := &LoadAwareArgs{
		NodeMetricExpirationSeconds:          ptr.To[int64](120),
		EnableScheduleWhenNodeMetricsExpired: ptr.To(true),
		ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 2, "memory": 1},
		DominantResourceWeight:               ptr.To[int64](1),
		UsageThresholds:                      map[corev1.ResourceName]int64{"cpu": 70, "memory": 90},
		ProdUsageThresholds:                  map[corev1.ResourceName]int64{"cpu": 55},
		ProdUsageIncludeSys:                  ptr.To(true),
		ProdUsageIncludePrediction:           ptr.To(true),
		ScoreAccordingProdUsage:              ptr.To(true),
		NodeUsageIncludePrediction:           ptr.To(true),
		ScoreAccordingPrediction:             ptr.To(true),
		EstimatedScalingFactors:              map[corev1.ResourceName]int64{"cpu": 80, "memory": 60},
		EstimatedSecondsAfterPodScheduled:    ptr.To[int64](60),
		EstimatedSecondsAfterInitialized:     ptr.To[int64](30),
		AllowCustomizeEstimation:             ptr.To(true),
		Aggregated: &LoadAwareAggregatedArgs{
			UsageThresholds:         map[corev1.ResourceName]int64{"cpu": 75},
			UsageAggregationType:    v1alpha1.AggregationP95,
			UsageAggregatedDuration: &metav1.Duration{Duration: 5 * time.Minute},
			ScoreAggregationType:    v1alpha1.AggregationAvg,
			ScoreAggregatedDuration: &metav1.Duration{Duration: 10 * time.Minute},
		},
		SupportedResources: []corev1.ResourceName{"nvidia.com/gpu"},
	}
	wantInternal := &config.LoadAwareArgs{
		NodeMetricExpirationSeconds:          120,
		EnableScheduleWhenNodeMetricsExpired: true,
		ResourceWeights:                      map[corev1.ResourceName]int64{"cpu": 2, "memory": 1},
		DominantResourceWeight:               1,
		UsageThresholds:                      map[corev1.ResourceName]int64{"cpu": 70, "memory": 90},
		ProdUsageThresholds:                  map[corev1.ResourceName]int64{"cpu": 55},
		ProdUsageIncludeSys:                  true,
		ProdUsageIncludePrediction:           true,
		NodeUsageIncludePrediction:           true,
		ScoreAccordingPrediction:             true,
		ScoreAccordingProdUsage:              true,
		EstimatedScalingFactors:              map[corev1.ResourceName]int64{"cpu": 80, "memory": 60},
		EstimatedSecondsAfterPodScheduled:    60,
		EstimatedSecondsAfterInitialized:     30,
		AllowCustomizeEstimation:             true,
		Aggregated: &config.LoadAwareAggregatedArgs{
			UsageThresholds:         map[corev1.ResourceName]int64{"cpu": 75},
			UsageAggregationType:    v1alpha1.AggregationP95,
			UsageAggregatedDuration: metav1.Duration{Duration: 5 * time.Minute},
			ScoreAggregationType:    v1alpha1.AggregationAvg,
			ScoreAggregatedDuration: metav1.Duration{Duration: 10 * time.Minute},
		},
		SupportedResources: []corev1.ResourceName{"nvidia.com/gpu"},
	}
	internal := &config.LoadAwareArgs{}
	if err := Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs(v1Args, internal, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantInternal, internal); diff != "" {
		t.Errorf("v1 → internal (-want +got):\n%s", diff)
	}
	back := &LoadAwareArgs{}
	if err := Convert_config_LoadAwareArgs_To_v1_LoadAwareArgs(internal, back, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1Args, back); diff != "" {
		t.Errorf("v1 → internal → v1 (-want +got):\n%s", diff)
	}
}
