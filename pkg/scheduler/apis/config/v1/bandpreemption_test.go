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

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

func TestSetDefaultsBandPreemptionArgs(t *testing.T) {
	tests := []struct {
		name string
		in   BandPreemptionArgs
		want BandPreemptionArgs
	}{
		{
			name: "empty gets DefaultPreemption's defaults",
			want: BandPreemptionArgs{MinCandidateNodesPercentage: ptr.To[int32](10), MinCandidateNodesAbsolute: ptr.To[int32](100)},
		},
		{
			name: "set values are kept, even zero and invalid ones",
			in:   BandPreemptionArgs{MinCandidateNodesPercentage: ptr.To[int32](0), MinCandidateNodesAbsolute: ptr.To[int32](-5)},
			want: BandPreemptionArgs{MinCandidateNodesPercentage: ptr.To[int32](0), MinCandidateNodesAbsolute: ptr.To[int32](-5)},
		},
		{
			name: "only the unset field is filled",
			in:   BandPreemptionArgs{MinCandidateNodesAbsolute: ptr.To[int32](7)},
			want: BandPreemptionArgs{MinCandidateNodesPercentage: ptr.To[int32](10), MinCandidateNodesAbsolute: ptr.To[int32](7)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.DeepCopy()
			SetDefaults_BandPreemptionArgs(got)
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("SetDefaults_BandPreemptionArgs() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBandPreemptionArgsRoundTrip(t *testing.T) {
	in := config.BandPreemptionArgs{MinCandidateNodesPercentage: 25, MinCandidateNodesAbsolute: 3}
	var v1args BandPreemptionArgs
	if err := Convert_config_BandPreemptionArgs_To_v1_BandPreemptionArgs(&in, &v1args, nil); err != nil {
		t.Fatal(err)
	}
	var out config.BandPreemptionArgs
	if err := Convert_v1_BandPreemptionArgs_To_config_BandPreemptionArgs(&v1args, &out, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(config.BandPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}, DefaultedBandPreemptionArgs()); diff != "" {
		t.Errorf("DefaultedBandPreemptionArgs() (-want +got):\n%s", diff)
	}
}
