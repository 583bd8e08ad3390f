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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestColocationPolicySelectorsCheckedAtAdmission: a selector that would
// not parse is refused by the API server, naming the field, instead of
// being stored and turning the profile's webhook entry into one that sees
// (and refuses) every pod (docs/design/tiers.md, "Selectors"); a valid
// policy with expressions is admitted and its profile applies to the pods
// it selects only.
func TestColocationPolicySelectorsCheckedAtAdmission(t *testing.T) {
	t.Parallel()
	c := startWithWebhooks(t, false)
	ctx := t.Context()
	policies := c.Waterline.WaterlineV1alpha1().ColocationPolicies()

	expr := func(key string, op metav1.LabelSelectorOperator, values ...string) *v1alpha1.LabelSelector {
		return &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	profile := func(ns, pod *v1alpha1.LabelSelector) v1alpha1.ColocationPolicySpec {
		return v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{{
			Name: "data-batch", NamespaceSelector: ns, Selector: pod, Band: "batch",
		}}}
	}
	many := &v1alpha1.LabelSelector{}
	for i := range 33 {
		many.MatchExpressions = append(many.MatchExpressions, v1alpha1.LabelSelectorRequirement{Key: fmt.Sprintf("k%d", i), Operator: metav1.LabelSelectorOpExists})
	}
	for _, tc := range []struct {
		name, policy string
		spec         v1alpha1.ColocationPolicySpec
		field        string
		detail       string
	}{
		{"an operator in lower case", "default", profile(expr("team", "in", "data"), nil),
			"spec.profiles[0].namespaceSelector.matchExpressions[0].operator", `supported values: "In", "NotIn", "Exists", "DoesNotExist"`},
		{"In without values", "default", profile(nil, expr("app", metav1.LabelSelectorOpIn)),
			"spec.profiles[0].selector.matchExpressions[0].values", "need at least one value"},
		{"Exists with values", "default", profile(nil, expr("app", metav1.LabelSelectorOpExists, "spark")),
			"spec.profiles[0].selector.matchExpressions[0].values", "take no values"},
		{"33 expressions", "default", profile(many, nil),
			"spec.profiles[0].namespaceSelector.matchExpressions", "must have at most 32 items"},
		{"a key that is not a label key", "default", profile(expr("team name", metav1.LabelSelectorOpExists), nil),
			"spec.profiles[0].namespaceSelector.matchExpressions[0].key", "should match"},
		{"a matchLabels value that is not a label value", "default",
			profile(&v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data science"}}, nil),
			"spec.profiles[0].namespaceSelector.matchLabels.team", "should match"},
		{"a pool's node selector operator", "pool-a", v1alpha1.ColocationPolicySpec{NodeSelector: expr("pool", "Equals", "a")},
			"spec.nodeSelector.matchExpressions[0].operator", "supported values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policies.Create(ctx, &v1alpha1.ColocationPolicy{ObjectMeta: metav1.ObjectMeta{Name: tc.policy}, Spec: tc.spec}, metav1.CreateOptions{})
			var status apierrors.APIStatus
			if err == nil || !errors.As(err, &status) || status.Status().Details == nil {
				t.Fatalf("Create() error = %v, want a refusal naming %s", err, tc.field)
			}
			var fields []string
			for _, cause := range status.Status().Details.Causes {
				fields = append(fields, cause.Field)
			}
			if !slices.Contains(fields, tc.field) || !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("Create() refused fields %q with %v; want %s refused, saying %q", fields, err, tc.field, tc.detail)
			}
		})
	}

	// A valid policy with expressions is admitted and applies to the pods
	// it selects, and only those.
	c.CreateNamespace(t, "data", map[string]string{"team": "data"})
	c.CreateNamespace(t, "web", map[string]string{"team": "web"})
	if _, err := policies.Create(ctx, &v1alpha1.ColocationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: profile(expr("team", metav1.LabelSelectorOpIn, "data", "ml"),
			&v1alpha1.LabelSelector{
				MatchLabels:      map[string]v1alpha1.LabelValue{"tier": "batch"},
				MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "example.com/app", Operator: metav1.LabelSelectorOpExists}},
			}),
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Create(a valid policy with expressions): %v", err)
	}
	pod := func(ns string, lbls map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "p-", Namespace: ns, Labels: lbls},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	selected := map[string]string{"tier": "batch", "example.com/app": "spark"}
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		got, err := c.Kube.CoreV1().Pods("data").Create(ctx, pod("data", selected), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Labels[extension.LabelBand] == "batch", fmt.Errorf("not mutated yet")
	}, "waiting for the profile to apply")
	for _, tc := range []struct {
		ns     string
		labels map[string]string
	}{
		{"data", map[string]string{"tier": "batch"}},
		{"web", selected},
		{"default", selected},
	} {
		got, err := c.Kube.CoreV1().Pods(tc.ns).Create(ctx, pod(tc.ns, tc.labels), metav1.CreateOptions{})
		if err != nil {
			t.Errorf("a pod in %s with labels %v, which the profile does not select, was refused: %v", tc.ns, tc.labels, err)
			continue
		}
		if band, ok := got.Labels[extension.LabelBand]; ok {
			t.Errorf("a pod in %s with labels %v, which the profile does not select, got band %q", tc.ns, tc.labels, band)
		}
	}
}
