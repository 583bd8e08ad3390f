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

package configuration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestWebhooksFollowProfiles(t *testing.T) {
	c := Colocation{Name: "x", Client: ClientConfig{URL: "https://127.0.0.1:9443"}, Path: "/p", FailurePolicy: "Fail", TimeoutSeconds: 5,
		ExcludedNamespaces: []string{"waterline-system", "kube-system"}}
	exclusions := []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"waterline-system", "kube-system"}},
		{Key: LabelWebhooks, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}},
	}
	type entry struct {
		Name      string
		Namespace *metav1.LabelSelector
		Object    *metav1.LabelSelector
	}
	for _, tt := range []struct {
		name     string
		profiles []v1alpha1.ColocationProfile
		want     []entry
	}{
		{"no profile, no entry", nil, []entry{}},
		{"selectors carried over", []v1alpha1.ColocationProfile{
			{Name: "Data Batch", NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}}, Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"app": "spark"}}},
			{Name: "free"},
		}, []entry{
			{"data-batch.colocation-profile.waterline.dev", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}, MatchExpressions: exclusions}, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spark"}}},
			{"free.colocation-profile.waterline.dev", &metav1.LabelSelector{MatchExpressions: exclusions}, &metav1.LabelSelector{}},
		}},
		// The schema refuses such a selector (v1alpha1.LabelSelector); one
		// that got past it (stored under an earlier schema) still widens.
		{"a broken selector widens so the handler can refuse with the reason", []v1alpha1.ColocationProfile{
			{Name: "bad", Selector: &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "a", Operator: "Maybe"}}}},
			{Name: "bad"},
		}, []entry{
			{"bad.colocation-profile.waterline.dev", &metav1.LabelSelector{MatchExpressions: exclusions}, &metav1.LabelSelector{}},
			{"profile-1.colocation-profile.waterline.dev", &metav1.LabelSelector{MatchExpressions: exclusions}, &metav1.LabelSelector{}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := []entry{}
			for _, w := range c.Webhooks(tt.profiles, []byte("ca")) {
				got = append(got, entry{w.Name, w.NamespaceSelector, w.ObjectSelector})
				if *w.ClientConfig.URL != "https://127.0.0.1:9443/p" || string(w.ClientConfig.CABundle) != "ca" {
					t.Errorf("clientConfig = %+v", w.ClientConfig)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Webhooks() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWebhookNamesUnique: the API server refuses a configuration with two
// webhooks of one name, and then the syncer can update neither the
// profiles nor the CA bundle; the fallback name must not take a name an
// earlier profile already has.
func TestWebhookNamesUnique(t *testing.T) {
	c := Colocation{Name: "x", Client: ClientConfig{URL: "https://127.0.0.1:9443"}, Path: "/p", FailurePolicy: "Fail", TimeoutSeconds: 5}
	for _, profiles := range [][]v1alpha1.ColocationProfile{
		{{Name: "profile-1"}, {Name: "_"}},
		{{Name: "profile-2"}, {Name: "A"}, {Name: "a"}},
		{{Name: "profile-1"}, {Name: "_"}, {Name: "profile-1-1"}, {Name: "Profile-1"}},
	} {
		seen := map[string]bool{}
		for _, w := range c.Webhooks(profiles, nil) {
			if seen[w.Name] {
				t.Errorf("profiles %v: webhook name %q twice", profiles, w.Name)
			}
			seen[w.Name] = true
		}
	}
}
