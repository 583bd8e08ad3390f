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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestMixedMidVariantRefused: the mixed Mid variant (Mid + what no Prod pod
// requested) is only safe when Prod pods can preempt Mid pods once the
// mixed allocatable runs out, and BandPreemption does not do that. The API
// server refuses a policy that asks for it, saying why, rather than
// letting the manager sell capacity Prod could not take back.
func TestMixedMidVariantRefused(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	client := c.Waterline.WaterlineV1alpha1().ColocationPolicies()
	_, err := client.Create(t.Context(), &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultColocationPolicyName},
		Spec:       v1alpha1.ColocationPolicySpec{Tiers: &v1alpha1.TierPolicy{MidIncludeUnallocated: true}},
	}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.tiers.midIncludeUnallocated") || !strings.Contains(err.Error(), "preempt Mid pods") {
		t.Fatalf("Create(policy with midIncludeUnallocated) error = %v, want a refusal naming spec.tiers.midIncludeUnallocated and why", err)
	}
	if _, err := client.Create(t.Context(), &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultColocationPolicyName},
		Spec:       v1alpha1.ColocationPolicySpec{Tiers: &v1alpha1.TierPolicy{}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Create(policy without the mixed variant): %v", err)
	}
}
