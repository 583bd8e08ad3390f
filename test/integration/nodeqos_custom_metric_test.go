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

package integration

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestNodeQOSCustomMetricAdmission: on the real API server with our CRDs, a
// rule may name a custom metric (the agents that know it from their
// --custom-metrics file act on it; the others refuse the object with an
// event), but its name must look like one and its threshold is bounded
// like the built-in ones.
func TestNodeQOSCustomMetricAdmission(t *testing.T) {
	c := testutil.StartCluster(t, testutil.Options{})
	tests := []struct {
		name, metric, threshold string
		want                    string // "" means admitted
	}{
		{"custom metric", "user_cpu_millicores", "700", ""},
		{"custom metric at its bound", "page_cache_bytes", "1E", ""},
		{"custom threshold above 1E", "page_cache_bytes", "2E", "a custom metric threshold must not be above 1E"},
		{"custom threshold 0", "page_cache_bytes", "0", "threshold must be greater than 0"},
		{"name with upper case", "PageCache", "10", `spec.rules[0].metric: Invalid value: "PageCache"`},
		{"name too long", strings.Repeat("a", 64), "10", "spec.rules[0].metric: Too long"},
		{"built-in bound still holds", "memory_usage", "10E", "memory_usage threshold must not be above 1Pi"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "custom-" + string(rune('a'+i))}, Spec: v1alpha1.NodeQOSSpec{
				Rules: []v1alpha1.WaterlineRule{{Name: "r", Metric: v1alpha1.QOSMetric(tc.metric), Action: v1alpha1.ActionEvict, Threshold: resource.MustParse(tc.threshold)}},
			}}
			_, err := c.Waterline.WaterlineV1alpha1().NodeQOSs().Create(t.Context(), nq, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Create refused a valid NodeQOS: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("Create admitted the NodeQOS; want a refusal containing %q", tc.want)
			case !apierrors.IsInvalid(err):
				t.Fatalf("Create: %v; want an Invalid error", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("Create refused with %q; want it to contain %q", err, tc.want)
			}
		})
	}
}
