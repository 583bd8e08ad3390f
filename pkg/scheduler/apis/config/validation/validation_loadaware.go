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

// Package validation checks Waterline's scheduler plugin args and reports
// every problem at once, each naming its field and value, so that a bad
// configuration stops the scheduler at start with the whole list.
// It never repairs args.
package validation

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// ValidateLoadAwareArgs returns every problem with defaulted LoadAware args,
// or nil.
func ValidateLoadAwareArgs(path *field.Path, args *config.LoadAwareArgs) field.ErrorList {
	var errs field.ErrorList
	if s := args.NodeMetricExpirationSeconds; s < 1 || s > nodeload.MaxSeconds {
		errs = append(errs, field.Invalid(path.Child("nodeMetricExpirationSeconds"), s, fmt.Sprintf("must be in [1, %d] (a year)", nodeload.MaxSeconds)))
	}

	errs = append(errs, percents(path.Child("resourceWeights"), args.ResourceWeights, 0, 100)...)
	if positive := slices.ContainsFunc(slices.Collect(maps.Values(args.ResourceWeights)), func(w int64) bool { return w > 0 }); !positive {
		errs = append(errs, field.Invalid(path.Child("resourceWeights"), args.ResourceWeights, "at least one weight must be positive"))
	}
	if w := args.DominantResourceWeight; w < 0 || w > 100 {
		errs = append(errs, field.Invalid(path.Child("dominantResourceWeight"), w, "must be in [0, 100]"))
	}
	errs = append(errs, percents(path.Child("usageThresholds"), args.UsageThresholds, 0, 100)...)
	errs = append(errs, percents(path.Child("prodUsageThresholds"), args.ProdUsageThresholds, 0, 100)...)
	errs = append(errs, percents(path.Child("estimatedScalingFactors"), args.EstimatedScalingFactors, nodeload.MinScalingFactor, nodeload.MaxScalingFactor)...)
	if s := args.EstimatedSecondsAfterPodScheduled; s < 0 || s > nodeload.MaxSeconds {
		errs = append(errs, field.Invalid(path.Child("estimatedSecondsAfterPodScheduled"), s, fmt.Sprintf("must be in [0, %d] (a year)", nodeload.MaxSeconds)))
	}
	if s := args.EstimatedSecondsAfterInitialized; s < 0 || s > nodeload.MaxSeconds {
		errs = append(errs, field.Invalid(path.Child("estimatedSecondsAfterInitialized"), s, fmt.Sprintf("must be in [0, %d] (a year)", nodeload.MaxSeconds)))
	}
	for i, name := range args.SupportedResources {
		errs = append(errs, resourceName(path.Child("supportedResources").Index(i), name)...)
	}
	if agg := args.Aggregated; agg != nil {
		aggPath := path.Child("aggregated")
		errs = append(errs, percents(aggPath.Child("usageThresholds"), agg.UsageThresholds, 0, 100)...)
		if len(agg.UsageThresholds) > 0 && agg.UsageAggregationType == "" {
			errs = append(errs, field.Required(aggPath.Child("usageAggregationType"), "must be set with usageThresholds"))
		}
		errs = append(errs, aggregationType(aggPath.Child("usageAggregationType"), agg.UsageAggregationType)...)
		errs = append(errs, aggregationType(aggPath.Child("scoreAggregationType"), agg.ScoreAggregationType)...)
		if d := agg.UsageAggregatedDuration.Duration; d < 0 {
			errs = append(errs, field.Invalid(aggPath.Child("usageAggregatedDuration"), d.String(), "must not be negative"))
		}
		if d := agg.ScoreAggregatedDuration.Duration; d < 0 {
			errs = append(errs, field.Invalid(aggPath.Child("scoreAggregatedDuration"), d.String(), "must not be negative"))
		}
	}
	if _, err := nodeload.NewResources(trackedResources(args)...); err != nil {
		errs = append(errs, field.TooMany(path.Child("supportedResources"), len(trackedResources(args))+2, nodeload.MaxResources))
	}
	return errs
}

// trackedResources are the resources the args name besides cpu and memory.
func trackedResources(args *config.LoadAwareArgs) []corev1.ResourceName {
	set := map[corev1.ResourceName]bool{}
	add := func(m map[corev1.ResourceName]int64) {
		for name := range m {
			set[name] = true
		}
	}
	add(args.ResourceWeights)
	add(args.UsageThresholds)
	add(args.ProdUsageThresholds)
	add(args.EstimatedScalingFactors)
	if args.Aggregated != nil {
		add(args.Aggregated.UsageThresholds)
	}
	for _, name := range args.SupportedResources {
		set[name] = true
	}
	delete(set, corev1.ResourceCPU)
	delete(set, corev1.ResourceMemory)
	return slices.Sorted(maps.Keys(set))
}

// percents checks every value of a per-resource map, in name order so the
// errors read the same on every run.
func percents(path *field.Path, m map[corev1.ResourceName]int64, lo, hi int64) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(m)) {
		errs = append(errs, resourceName(path.Key(string(name)), name)...)
		if v := m[name]; v < lo || v > hi {
			errs = append(errs, field.Invalid(path.Key(string(name)), v, fmt.Sprintf("must be in [%d, %d]", lo, hi)))
		}
	}
	return errs
}

func resourceName(path *field.Path, name corev1.ResourceName) field.ErrorList {
	return metav1validation.ValidateLabelName(string(name), path)
}

func aggregationType(path *field.Path, t v1alpha1.AggregationType) field.ErrorList {
	if t == "" || slices.Contains(nodeload.AggregationTypes, t) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, t, nodeload.AggregationTypes)}
}
