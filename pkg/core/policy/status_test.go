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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestReportPolicies(t *testing.T) {
	broken := pol("broken", 9, nil, nil, nil)
	broken.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{
		{Key: "pool", Operator: "in", Values: []string{"gpu"}}}}
	def := pol(v1alpha1.DefaultColocationPolicyName, 0, nil, nil, nil)
	def.Spec.Profiles = []v1alpha1.ColocationProfile{
		{Name: "ok", NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}}},
		{Name: "typo", Selector: &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}}}}},
	}
	policies := []*v1alpha1.ColocationPolicy{
		def,
		pol("colo-high", 10, map[string]v1alpha1.LabelValue{"pool": "colo"}, nil, nil),
		pol("colo-low", 1, map[string]v1alpha1.LabelValue{"pool": "colo"}, nil, nil),
		pol("web", 0, map[string]v1alpha1.LabelValue{"pool": "web"}, nil, nil),
		pol("unselective", 0, nil, nil, nil),
		broken,
	}
	nodes := []map[string]string{{"pool": "colo"}, {"pool": "colo"}, {"pool": "web"}, {}}
	got := ReportPolicies(policies, nodes)

	want := map[string]int32{"default": 4, "colo-high": 2, "colo-low": 0, "web": 1, "unselective": 0, "broken": 0}
	for name, n := range want {
		if got[name].SelectedNodes != n {
			t.Errorf("%s: selectedNodes %d, want %d", name, got[name].SelectedNodes, n)
		}
	}
	if r := got["colo-low"]; r.OverriddenOn != 2 || !cmp.Equal(r.OverriddenBy, []string{"colo-high"}) {
		t.Errorf("colo-low: overridden on %d by %v, want 2 by [colo-high]", r.OverriddenOn, r.OverriddenBy)
	}
	if r := got["colo-high"]; r.OverriddenOn != 0 {
		t.Errorf("colo-high: overridden on %d nodes, want 0", r.OverriddenOn)
	}
	if r := got["broken"]; len(r.Invalid) != 1 || !strings.HasPrefix(r.Invalid[0], "spec.nodeSelector: ") {
		t.Errorf("broken: invalid %q, want one error on spec.nodeSelector", r.Invalid)
	}
	if r := got["default"]; len(r.Invalid) != 1 || !strings.HasPrefix(r.Invalid[0], "spec.profiles[1].selector: ") {
		t.Errorf("default: invalid %q, want one error on spec.profiles[1].selector", r.Invalid)
	}
	if !got["unselective"].NoSelector {
		t.Error("unselective: NoSelector false, want true")
	}

	now := metav1.NewTime(time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	type cond struct{ Type, Status, Reason string }
	conds := func(name string, existing []metav1.Condition) []cond {
		var out []cond
		for _, c := range got[name].Conditions(name, existing, 3, now) {
			if c.ObservedGeneration != 3 {
				t.Errorf("%s %s: observedGeneration %d, want 3", name, c.Type, c.ObservedGeneration)
			}
			out = append(out, cond{c.Type, string(c.Status), c.Reason})
		}
		return out
	}
	for name, want := range map[string][]cond{
		"default":     {{ConditionValid, "False", "InvalidProfileSelector"}},
		"colo-high":   {{ConditionValid, "True", "Valid"}, {ConditionOverridden, "False", "NotOverridden"}},
		"colo-low":    {{ConditionValid, "True", "Valid"}, {ConditionOverridden, "True", "OtherPoolWins"}},
		"unselective": {{ConditionValid, "True", "NoNodeSelector"}, {ConditionOverridden, "False", "NotOverridden"}},
		"broken":      {{ConditionValid, "False", "InvalidNodeSelector"}, {ConditionOverridden, "False", "NotOverridden"}},
	} {
		if diff := cmp.Diff(want, conds(name, nil)); diff != "" {
			t.Errorf("%s conditions (-want +got):\n%s", name, diff)
		}
	}

	// A condition that keeps its status keeps its transition time; one
	// that changes gets now.
	existing := []metav1.Condition{
		{Type: ConditionValid, Status: metav1.ConditionTrue, LastTransitionTime: earlier},
		{Type: ConditionOverridden, Status: metav1.ConditionFalse, LastTransitionTime: earlier},
	}
	for _, c := range got["colo-low"].Conditions("colo-low", existing, 3, now) {
		wantTime := map[string]metav1.Time{ConditionValid: earlier, ConditionOverridden: now}[c.Type]
		if !c.LastTransitionTime.Equal(&wantTime) {
			t.Errorf("colo-low %s: lastTransitionTime %s, want %s", c.Type, c.LastTransitionTime, wantTime)
		}
	}
	msg := got["colo-low"].Conditions("colo-low", nil, 3, now)[1].Message
	if !strings.Contains(msg, "2 node(s) governed by colo-high") {
		t.Errorf("colo-low Overridden message %q, want it to name the 2 nodes and colo-high", msg)
	}
}
