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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestNodeThresholds(t *testing.T) {
	s := defaultSpec()
	s.SupportedResources = []corev1.ResourceName{"nvidia.com/gpu"}
	s.AggregatedUsageThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 70}
	s.UsageAggregation = Aggregation{Type: v1alpha1.AggregationP95, Duration: 5 * time.Minute}
	c := mustConfig(t, s)
	// Positions: cpu 0, memory 1, nvidia.com/gpu 2.
	args := Thresholds{
		Usage:       Vector{65, 95},
		Aggregated:  Vector{70},
		Aggregation: Aggregation{Type: v1alpha1.AggregationP95, Duration: 5 * time.Minute},
	}
	tests := []struct {
		name       string
		annotation *string
		want       Thresholds
		wantErr    bool
	}{{
		name: "no annotation: the args",
		want: args,
	}, {
		name:       "usage thresholds replaced as a whole",
		annotation: ptr(`{"usageThresholds":{"cpu":80,"nvidia.com/gpu":90}}`),
		want:       Thresholds{Usage: Vector{80, 0, 90}, Aggregated: args.Aggregated, Aggregation: args.Aggregation},
	}, {
		name:       "prod thresholds added",
		annotation: ptr(`{"prodUsageThresholds":{"cpu":55}}`),
		want:       Thresholds{Usage: args.Usage, Prod: Vector{55}, Aggregated: args.Aggregated, Aggregation: args.Aggregation},
	}, {
		name:       "aggregated usage replaced field by field",
		annotation: ptr(`{"aggregatedUsage":{"usageAggregationType":"p99","usageAggregatedDuration":"10m"}}`),
		want:       Thresholds{Usage: args.Usage, Aggregated: args.Aggregated, Aggregation: Aggregation{Type: v1alpha1.AggregationP99, Duration: 10 * time.Minute}},
	}, {
		name:       "malformed JSON is ignored",
		annotation: ptr(`{"usageThresholds":`),
		want:       args,
		wantErr:    true,
	}, {
		name:       "percentage out of range ignores the whole annotation",
		annotation: ptr(`{"usageThresholds":{"cpu":80},"prodUsageThresholds":{"cpu":101}}`),
		want:       args,
		wantErr:    true,
	}, {
		name:       "untracked resource ignores the whole annotation",
		annotation: ptr(`{"usageThresholds":{"cpu":80,"example.com/foo":50}}`),
		want:       args,
		wantErr:    true,
	}, {
		name:       "unknown aggregation type ignores the whole annotation",
		annotation: ptr(`{"aggregatedUsage":{"usageAggregationType":"p42"}}`),
		want:       args,
		wantErr:    true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			annotations := map[string]string{}
			if tc.annotation != nil {
				annotations[extension.AnnotationUsageThresholds] = *tc.annotation
			}
			got, err := c.NodeThresholds(makeNode("n", annotations))
			if (err != nil) != tc.wantErr {
				t.Errorf("NodeThresholds error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NodeThresholds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllocatable(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	tests := []struct {
		name        string
		annotations map[string]string
		want        Vector
		wantErr     bool
	}{
		{"status allocatable", nil, vec(16000, 64*Gi), false},
		{"raw allocatable replaces what it names", map[string]string{extension.AnnotationRawAllocatable: `{"cpu":"32"}`}, vec(32000, 64*Gi), false},
		{"malformed raw allocatable is ignored", map[string]string{extension.AnnotationRawAllocatable: `{"cpu":"lots"}`}, vec(16000, 64*Gi), true},
		// A non-positive allocatable would skip the threshold: the node
		// would take any load. The annotation is ignored as a whole.
		{"negative raw allocatable is ignored", map[string]string{extension.AnnotationRawAllocatable: `{"cpu":"-32"}`}, vec(16000, 64*Gi), true},
		{"zero raw allocatable is ignored", map[string]string{extension.AnnotationRawAllocatable: `{"cpu":"32","memory":"0"}`}, vec(16000, 64*Gi), true},
		{"bare negative number is ignored", map[string]string{extension.AnnotationRawAllocatable: `{"memory":-32}`}, vec(16000, 64*Gi), true},
		{"exabytes are taken as they are", map[string]string{extension.AnnotationRawAllocatable: `{"memory":"1E"}`}, vec(16000, 1_000_000_000_000_000_000), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Allocatable(makeNode("n", tc.annotations, "cpu", "16", "memory", "64Gi"))
			if (err != nil) != tc.wantErr {
				t.Errorf("Allocatable error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Allocatable (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
