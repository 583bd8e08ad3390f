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
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Spec is a Config in the plain form of the LoadAware args, for callers that
// hold the args (the scheduler plugin) or build them (the simulator). It is
// expected to be defaulted and validated already; NewConfig only refuses
// what cannot be turned into vectors.
type Spec struct {
	NodeMetricExpiration                 time.Duration
	EnableScheduleWhenNodeMetricsExpired bool
	ResourceWeights                      map[corev1.ResourceName]int64
	DominantResourceWeight               int64
	UsageThresholds                      map[corev1.ResourceName]int64
	ProdUsageThresholds                  map[corev1.ResourceName]int64
	ProdUsageIncludeSys                  bool
	ProdUsageIncludePrediction           bool
	NodeUsageIncludePrediction           bool
	ScoreAccordingPrediction             bool
	ScoreAccordingProdUsage              bool
	EstimatedScalingFactors              map[corev1.ResourceName]int64
	EstimatedAfterPodScheduled           time.Duration
	EstimatedAfterInitialized            time.Duration
	AllowCustomizeEstimation             bool
	// AggregatedUsageThresholds, with UsageAggregation, replace
	// UsageThresholds when set.
	AggregatedUsageThresholds map[corev1.ResourceName]int64
	UsageAggregation          Aggregation
	ScoreAggregation          Aggregation
	SupportedResources        []corev1.ResourceName
}

// NewConfig builds the Config of a Spec. A tracked resource without a
// scaling factor is estimated at 100 % of max(request, limit): args
// defaulting gives cpu and memory theirs, and a pod that asks for an
// extended resource (a GPU) is expected to use all of it. NewConfig fails
// when the Spec tracks more than MaxResources resources or a factor is
// outside [MinScalingFactor, MaxScalingFactor].
func NewConfig(s Spec) (*Config, error) {
	var names []corev1.ResourceName
	for _, m := range []map[corev1.ResourceName]int64{
		s.ResourceWeights, s.UsageThresholds, s.ProdUsageThresholds,
		s.EstimatedScalingFactors, s.AggregatedUsageThresholds,
	} {
		names = slices.AppendSeq(names, maps.Keys(m))
	}
	names = append(names, s.SupportedResources...)
	r, err := NewResources(names...)
	if err != nil {
		return nil, err
	}
	c := &Config{
		Resources:                  r,
		Weights:                    r.Percents(s.ResourceWeights),
		DominantWeight:             s.DominantResourceWeight,
		ScalingFactors:             r.Percents(s.EstimatedScalingFactors),
		EstimateAfterScheduled:     s.EstimatedAfterPodScheduled,
		EstimateAfterInitialized:   s.EstimatedAfterInitialized,
		AllowCustomizeEstimation:   s.AllowCustomizeEstimation,
		ProdUsageIncludeSys:        s.ProdUsageIncludeSys,
		ProdUsageIncludePrediction: s.ProdUsageIncludePrediction,
		NodeUsageIncludePrediction: s.NodeUsageIncludePrediction,
		ScoreAccordingPrediction:   s.ScoreAccordingPrediction,
		ScoreAccordingProdUsage:    s.ScoreAccordingProdUsage,
		ScoreAggregation:           s.ScoreAggregation,
		MetricExpiration:           s.NodeMetricExpiration,
		ScheduleWhenMetricExpired:  s.EnableScheduleWhenNodeMetricsExpired,
		Thresholds: Thresholds{
			Usage:       r.Percents(s.UsageThresholds),
			Prod:        r.Percents(s.ProdUsageThresholds),
			Aggregated:  r.Percents(s.AggregatedUsageThresholds),
			Aggregation: s.UsageAggregation,
		},
	}
	var errs []error
	for i := range r.Len() {
		if _, ok := s.EstimatedScalingFactors[r.Name(i)]; !ok {
			c.ScalingFactors[i] = 100
		}
		if c.ScalingFactors[i] < MinScalingFactor || c.ScalingFactors[i] > MaxScalingFactor {
			errs = append(errs, fmt.Errorf("scaling factor of %s is %d, want [%d, %d]", r.Name(i), c.ScalingFactors[i], MinScalingFactor, MaxScalingFactor))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}
