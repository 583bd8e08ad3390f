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

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

func TestValidateBandPreemptionArgs(t *testing.T) {
	p := field.NewPath("args")
	tests := []struct {
		name string
		args config.BandPreemptionArgs
		want field.ErrorList
	}{
		{name: "defaults", args: config.BandPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}},
		{name: "percentage alone", args: config.BandPreemptionArgs{MinCandidateNodesPercentage: 100}},
		{name: "absolute alone", args: config.BandPreemptionArgs{MinCandidateNodesAbsolute: 1}},
		{
			name: "both out of range",
			args: config.BandPreemptionArgs{MinCandidateNodesPercentage: 101, MinCandidateNodesAbsolute: -1},
			want: field.ErrorList{
				field.Invalid(p.Child("minCandidateNodesPercentage"), int32(101), "must be in [0, 100]"),
				field.Invalid(p.Child("minCandidateNodesAbsolute"), int32(-1), "must be at least 0"),
			},
		},
		{
			name: "negative percentage",
			args: config.BandPreemptionArgs{MinCandidateNodesPercentage: -1, MinCandidateNodesAbsolute: 5},
			want: field.ErrorList{field.Invalid(p.Child("minCandidateNodesPercentage"), int32(-1), "must be in [0, 100]")},
		},
		{
			name: "both zero",
			want: field.ErrorList{
				field.Invalid(p.Child("minCandidateNodesPercentage"), int32(0), "may not be 0 when minCandidateNodesAbsolute is 0"),
				field.Invalid(p.Child("minCandidateNodesAbsolute"), int32(0), "may not be 0 when minCandidateNodesPercentage is 0"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateBandPreemptionArgs(p, &tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateBandPreemptionArgs() (-want +got):\n%s", diff)
			}
		})
	}
}
