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
)

func TestNewResources(t *testing.T) {
	tests := []struct {
		name    string
		extra   []corev1.ResourceName
		want    []corev1.ResourceName
		wantErr bool
	}{
		{"cpu and memory always first", nil, []corev1.ResourceName{"cpu", "memory"}, false},
		{"extras sorted, duplicates dropped", []corev1.ResourceName{"z.io/b", "memory", "a.io/a", "z.io/b", "cpu"}, []corev1.ResourceName{"cpu", "memory", "a.io/a", "z.io/b"}, false},
		{"eight fit", []corev1.ResourceName{"r/1", "r/2", "r/3", "r/4", "r/5", "r/6"}, []corev1.ResourceName{"cpu", "memory", "r/1", "r/2", "r/3", "r/4", "r/5", "r/6"}, false},
		{"nine do not", []corev1.ResourceName{"r/1", "r/2", "r/3", "r/4", "r/5", "r/6", "r/7"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewResources(tc.extra...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NewResources error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, r.Names()); diff != "" {
				t.Errorf("Names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourcesVector(t *testing.T) {
	r, err := NewResources("nvidia.com/gpu")
	if err != nil {
		t.Fatal(err)
	}
	// cpu in millicores, everything else in base units; unknown names dropped.
	got := r.Vector(rl("cpu", "1500m", "memory", "1Gi", "nvidia.com/gpu", "2", "example.com/x", "7"))
	if diff := cmp.Diff(Vector{1500, 1 * Gi, 2}, got); diff != "" {
		t.Errorf("Vector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rl("cpu", "1500m", "memory", "1Gi", "nvidia.com/gpu", "2"), r.List(got)); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestNewConfig(t *testing.T) {
	s := defaultSpec()
	s.SupportedResources = []corev1.ResourceName{"nvidia.com/gpu"}
	s.DominantResourceWeight = 2
	s.EstimatedAfterPodScheduled = time.Minute
	c, err := NewConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Resources:      c.Resources,
		Weights:        Vector{1, 1},
		DominantWeight: 2,
		Thresholds:     Thresholds{Usage: Vector{65, 95}},
		// gpu has no factor: 100 %.
		ScalingFactors:         Vector{85, 70, 100},
		EstimateAfterScheduled: time.Minute,
		MetricExpiration:       180 * time.Second,
	}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(Resources{})); diff != "" {
		t.Errorf("NewConfig (-want +got):\n%s", diff)
	}

	s.EstimatedScalingFactors = map[corev1.ResourceName]int64{corev1.ResourceCPU: 150}
	if _, err := NewConfig(s); err == nil {
		t.Errorf("NewConfig with a 150 %% factor: want an error")
	}
}
