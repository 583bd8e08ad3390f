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

package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func pol(name string, precedence int32, sel map[string]v1alpha1.LabelValue, tiers *v1alpha1.TierPolicy, collect *v1alpha1.NodeMetricCollectPolicy) *v1alpha1.ColocationPolicy {
	p := &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ColocationPolicySpec{Precedence: precedence, Tiers: tiers, CollectPolicy: collect},
	}
	if sel != nil {
		p.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: sel}
	}
	return p
}

func TestForNode(t *testing.T) {
	def := pol("default", 0, nil,
		&v1alpha1.TierPolicy{MidCPUThresholdPercent: ptr.To[int32](40), BatchCPUThresholdPercent: ptr.To[int32](70)},
		&v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](30)})
	poolA := pol("pool-a", 0, map[string]v1alpha1.LabelValue{"pool": "a"},
		&v1alpha1.TierPolicy{MidCPUThresholdPercent: ptr.To[int32](10)}, nil)
	poolAHigh := pol("pool-a-high", 5, map[string]v1alpha1.LabelValue{"pool": "a"},
		&v1alpha1.TierPolicy{BatchCPUThresholdPercent: ptr.To[int32](50)}, nil)
	noSelector := pol("no-selector", 100, nil, &v1alpha1.TierPolicy{MidCPUThresholdPercent: ptr.To[int32](99)}, nil)
	bad := &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: v1alpha1.ColocationPolicySpec{Precedence: 1000, NodeSelector: &v1alpha1.LabelSelector{
			MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "pool", Operator: "Sometimes"}},
		}},
	}

	tests := []struct {
		name        string
		labels      map[string]string
		policies    []*v1alpha1.ColocationPolicy
		wantSources []string
		wantMid     int32
		wantBatch   int32
		wantReport  int64
		wantErrs    int
	}{
		{
			name:        "no policy at all: built-in defaults",
			wantMid:     v1alpha1.DefaultMidThresholdPercent,
			wantBatch:   v1alpha1.DefaultBatchCPUThresholdPercent,
			wantReport:  v1alpha1.DefaultReportIntervalSeconds,
			wantSources: nil,
		},
		{
			name:        "default only",
			labels:      map[string]string{"pool": "b"},
			policies:    []*v1alpha1.ColocationPolicy{def, poolA},
			wantSources: []string{"default"},
			wantMid:     40, wantBatch: 70, wantReport: 30,
		},
		{
			name:        "pool overrides only the fields it sets",
			labels:      map[string]string{"pool": "a"},
			policies:    []*v1alpha1.ColocationPolicy{def, poolA},
			wantSources: []string{"default", "pool-a"},
			wantMid:     10, wantBatch: 70, wantReport: 30,
		},
		{
			name:        "higher precedence pool wins, alone",
			labels:      map[string]string{"pool": "a"},
			policies:    []*v1alpha1.ColocationPolicy{poolA, def, poolAHigh},
			wantSources: []string{"default", "pool-a-high"},
			wantMid:     40, wantBatch: 50, wantReport: 30,
		},
		{
			name:        "a pool without selector selects nothing",
			labels:      map[string]string{"pool": "a"},
			policies:    []*v1alpha1.ColocationPolicy{def, noSelector},
			wantSources: []string{"default"},
			wantMid:     40, wantBatch: 70, wantReport: 30,
		},
		{
			name:        "invalid selector is reported and skipped",
			labels:      map[string]string{"pool": "a"},
			policies:    []*v1alpha1.ColocationPolicy{def, bad, poolA},
			wantSources: []string{"default", "pool-a"},
			wantMid:     10, wantBatch: 70, wantReport: 30,
			wantErrs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := ForNode(tt.labels, tt.policies)
			if len(errs) != tt.wantErrs {
				t.Errorf("errors = %v, want %d", errs, tt.wantErrs)
			}
			if diff := cmp.Diff(tt.wantSources, got.Sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			if *got.Tiers.MidCPUThresholdPercent != tt.wantMid {
				t.Errorf("midCPUThresholdPercent = %d, want %d", *got.Tiers.MidCPUThresholdPercent, tt.wantMid)
			}
			if *got.Tiers.BatchCPUThresholdPercent != tt.wantBatch {
				t.Errorf("batchCPUThresholdPercent = %d, want %d", *got.Tiers.BatchCPUThresholdPercent, tt.wantBatch)
			}
			if *got.Collect.ReportIntervalSeconds != tt.wantReport {
				t.Errorf("reportIntervalSeconds = %d, want %d", *got.Collect.ReportIntervalSeconds, tt.wantReport)
			}
			// Everything is defaulted.
			if got.Predict.Model != v1alpha1.DefaultPredictModel || got.Tiers.DegradeSeconds == nil || len(got.Collect.AggregateDurations) != 3 {
				t.Errorf("resolved policy has unset fields: %+v %+v %+v", got.Tiers, got.Collect, got.Predict)
			}
		})
	}
}

func TestForNodeDoesNotAliasInputs(t *testing.T) {
	def := pol("default", 0, nil, &v1alpha1.TierPolicy{MidCPUThresholdPercent: ptr.To[int32](40)}, nil)
	got, _ := ForNode(nil, []*v1alpha1.ColocationPolicy{def})
	*got.Tiers.MidCPUThresholdPercent = 1
	if *def.Spec.Tiers.MidCPUThresholdPercent != 40 {
		t.Fatalf("changing the resolved policy changed the input policy")
	}
}

// TestForNodeOverlaysEveryField: a pool policy that sets every field gets
// every one of them, none left at the default policy's value.
func TestForNodeOverlaysEveryField(t *testing.T) {
	def := pol("default", 0, nil, v1alpha1.TierPolicyWithDefaults(nil), v1alpha1.CollectPolicyWithDefaults(nil))
	def.Spec.PredictPolicy = v1alpha1.PredictPolicyWithDefaults(nil)
	pool := pol("pool", 0, map[string]v1alpha1.LabelValue{"pool": "a"},
		&v1alpha1.TierPolicy{
			Enabled: ptr.To(false), MidCPUThresholdPercent: ptr.To[int32](11), MidMemoryThresholdPercent: ptr.To[int32](12),
			ReclaimRatioPercent: ptr.To[int32](13), BatchCPUThresholdPercent: ptr.To[int32](14), BatchMemoryThresholdPercent: ptr.To[int32](15),
			DegradeSeconds: ptr.To[int64](16), UpdateThresholdPercent: ptr.To[int32](17),
		},
		&v1alpha1.NodeMetricCollectPolicy{
			AggregateDurationSeconds: ptr.To[int64](21), ReportIntervalSeconds: ptr.To[int64](22),
			AggregateDurations: []metav1.Duration{{Duration: 23}},
		})
	pool.Spec.PredictPolicy = &v1alpha1.PredictPolicy{
		Model: "BorgDefault", MaxOf: []v1alpha1.PredictModel{"BorgDefault", "NSigmaV1"}, NSigma: ptr.To[int32](3), Percentile: ptr.To[int32](90),
		HalfLifeSeconds: ptr.To[int64](120), ColdStartSeconds: ptr.To[int64](60), BorgOvercommitPercent: ptr.To[int32](150),
		SafetyMarginPercent: ptr.To[int32](20), ResourceDiffThresholdPercent: ptr.To[int64](7), ForceUpdateSeconds: ptr.To[int64](300),
	}
	got, _ := ForNode(map[string]string{"pool": "a"}, []*v1alpha1.ColocationPolicy{def, pool})
	if diff := cmp.Diff(pool.Spec.Tiers, got.Tiers); diff != "" {
		t.Errorf("tiers (-pool +resolved):\n%s", diff)
	}
	if diff := cmp.Diff(pool.Spec.CollectPolicy, got.Collect); diff != "" {
		t.Errorf("collect policy (-pool +resolved):\n%s", diff)
	}
	if diff := cmp.Diff(pool.Spec.PredictPolicy, got.Predict); diff != "" {
		t.Errorf("predict policy (-pool +resolved):\n%s", diff)
	}
}
