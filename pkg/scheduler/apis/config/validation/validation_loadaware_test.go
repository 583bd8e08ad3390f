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

package validation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
)

// defaulted returns the default args in internal form.
func defaulted(t *testing.T) *config.LoadAwareArgs {
	t.Helper()
	v1Args := &configv1.LoadAwareArgs{}
	configv1.SetDefaults_LoadAwareArgs(v1Args)
	out := &config.LoadAwareArgs{}
	if err := configv1.Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs(v1Args, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValidateLoadAwareArgs(t *testing.T) {
	root := field.NewPath("args")
	tests := []struct {
		name   string
		change func(*config.LoadAwareArgs)
		want   field.ErrorList
	}{{
		name:   "defaults are valid",
		change: func(*config.LoadAwareArgs) {},
	}, {
		name:   "expiration below 1",
		change: func(a *config.LoadAwareArgs) { a.NodeMetricExpirationSeconds = 0 },
		want:   field.ErrorList{field.Invalid(root.Child("nodeMetricExpirationSeconds"), int64(0), "")},
	}, {
		name:   "threshold above 100",
		change: func(a *config.LoadAwareArgs) { a.UsageThresholds["cpu"] = 101 },
		want:   field.ErrorList{field.Invalid(root.Child("usageThresholds").Key("cpu"), int64(101), "")},
	}, {
		name:   "negative prod threshold",
		change: func(a *config.LoadAwareArgs) { a.ProdUsageThresholds = map[corev1.ResourceName]int64{"memory": -1} },
		want:   field.ErrorList{field.Invalid(root.Child("prodUsageThresholds").Key("memory"), int64(-1), "")},
	}, {
		name:   "scaling factor 0",
		change: func(a *config.LoadAwareArgs) { a.EstimatedScalingFactors["memory"] = 0 },
		want:   field.ErrorList{field.Invalid(root.Child("estimatedScalingFactors").Key("memory"), int64(0), "")},
	}, {
		name:   "no positive weight",
		change: func(a *config.LoadAwareArgs) { a.ResourceWeights = map[corev1.ResourceName]int64{"cpu": 0} },
		want:   field.ErrorList{field.Invalid(root.Child("resourceWeights"), nil, "")},
	}, {
		name:   "dominant weight above 100",
		change: func(a *config.LoadAwareArgs) { a.DominantResourceWeight = 101 },
		want:   field.ErrorList{field.Invalid(root.Child("dominantResourceWeight"), int64(101), "")},
	}, {
		name: "negative windows",
		change: func(a *config.LoadAwareArgs) {
			a.EstimatedSecondsAfterPodScheduled = -1
			a.EstimatedSecondsAfterInitialized = -2
		},
		want: field.ErrorList{
			field.Invalid(root.Child("estimatedSecondsAfterPodScheduled"), int64(-1), ""),
			field.Invalid(root.Child("estimatedSecondsAfterInitialized"), int64(-2), ""),
		},
	}, {
		// Beyond a year -- and past 292 years a time.Duration wraps
		// negative: every node expired, the windows silently off.
		name: "durations past a year",
		change: func(a *config.LoadAwareArgs) {
			a.NodeMetricExpirationSeconds = 10_000_000_000
			a.EstimatedSecondsAfterPodScheduled = 10_000_000_000
			a.EstimatedSecondsAfterInitialized = 365*24*3600 + 1
		},
		want: field.ErrorList{
			field.Invalid(root.Child("nodeMetricExpirationSeconds"), int64(10_000_000_000), ""),
			field.Invalid(root.Child("estimatedSecondsAfterPodScheduled"), int64(10_000_000_000), ""),
			field.Invalid(root.Child("estimatedSecondsAfterInitialized"), int64(365*24*3600+1), ""),
		},
	}, {
		name: "durations of a year",
		change: func(a *config.LoadAwareArgs) {
			a.NodeMetricExpirationSeconds = 365 * 24 * 3600
			a.EstimatedSecondsAfterPodScheduled = 365 * 24 * 3600
			a.EstimatedSecondsAfterInitialized = 365 * 24 * 3600
		},
	}, {
		name:   "bad resource name",
		change: func(a *config.LoadAwareArgs) { a.SupportedResources = []corev1.ResourceName{"not a name"} },
		want:   field.ErrorList{field.Invalid(root.Child("supportedResources").Index(0), "not a name", "")},
	}, {
		name: "aggregated thresholds without a type, unknown score type, negative window",
		change: func(a *config.LoadAwareArgs) {
			a.Aggregated = &config.LoadAwareAggregatedArgs{
				UsageThresholds:         map[corev1.ResourceName]int64{"cpu": 70},
				ScoreAggregationType:    "p42",
				ScoreAggregatedDuration: metav1.Duration{Duration: -time.Minute},
			}
		},
		want: field.ErrorList{
			field.Required(root.Child("aggregated", "usageAggregationType"), ""),
			field.NotSupported[v1alpha1.AggregationType](root.Child("aggregated", "scoreAggregationType"), v1alpha1.AggregationType("p42"), nil),
			field.Invalid(root.Child("aggregated", "scoreAggregatedDuration"), "-1m0s", ""),
		},
	}, {
		name: "too many resources",
		change: func(a *config.LoadAwareArgs) {
			a.SupportedResources = []corev1.ResourceName{"r.io/1", "r.io/2", "r.io/3", "r.io/4", "r.io/5", "r.io/6", "r.io/7"}
		},
		// cpu + memory + 7 = 9 > 8.
		want: field.ErrorList{field.TooMany(root.Child("supportedResources"), 9, 8)},
	}, {
		name: "every error at once",
		change: func(a *config.LoadAwareArgs) {
			a.NodeMetricExpirationSeconds = -5
			a.UsageThresholds["memory"] = 200
			a.EstimatedScalingFactors["cpu"] = 101
		},
		want: field.ErrorList{
			field.Invalid(root.Child("nodeMetricExpirationSeconds"), int64(-5), ""),
			field.Invalid(root.Child("usageThresholds").Key("memory"), int64(200), ""),
			field.Invalid(root.Child("estimatedScalingFactors").Key("cpu"), int64(101), ""),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := defaulted(t)
			tc.change(args)
			got := ValidateLoadAwareArgs(root, args)
			// Compare type, field and value; details are prose.
			opts := cmp.Options{
				cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue", "Origin", "CoveredByDeclarative"),
				cmpopts.EquateEmpty(),
			}
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("ValidateLoadAwareArgs (-want +got):\n%s", diff)
			}
			for i := range min(len(tc.want), len(got)) {
				if tc.want[i].BadValue != nil && cmp.Diff(tc.want[i].BadValue, got[i].BadValue) != "" {
					t.Errorf("error %d value = %#v, want %#v", i, got[i].BadValue, tc.want[i].BadValue)
				}
			}
		})
	}
}
