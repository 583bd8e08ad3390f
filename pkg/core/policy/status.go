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
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Conditions of ColocationPolicy.status the manager writes.
const (
	// ConditionValid is False when part of the policy cannot be applied:
	// a pool policy's node selector that does not parse (the policy is
	// skipped on every node), or a profile's selector that does not parse
	// (the profile webhook refuses the pods it is asked about).
	ConditionValid = "Valid"
	// ConditionOverridden is True when a pool policy selects nodes that
	// another pool policy governs (higher precedence, or the same and an
	// earlier name); there its fields do not apply.
	ConditionOverridden = "Overridden"
)

// Report is what the manager writes in one ColocationPolicy's status.
type Report struct {
	// SelectedNodes is how many nodes the policy governs: every node for
	// the default policy, the nodes where it is the winning pool for a
	// pool policy.
	SelectedNodes int32
	// Invalid lists why parts of the policy cannot be applied, in field
	// order.
	Invalid []string
	// NoSelector: a pool policy without spec.nodeSelector, which selects
	// no node.
	NoSelector bool
	// OverriddenOn counts the nodes the policy selects but another pool
	// governs; OverriddenBy lists those pools, sorted.
	OverriddenOn int32
	OverriddenBy []string
}

// ReportPolicies computes the status of every policy from the nodes'
// labels, with the same selection ForNode makes for each node.
func ReportPolicies(policies []*v1alpha1.ColocationPolicy, nodes []map[string]string) map[string]*Report {
	out := make(map[string]*Report, len(policies))
	for _, p := range policies {
		r := &Report{}
		out[p.Name] = r
		if p.Name == v1alpha1.DefaultColocationPolicyName {
			r.SelectedNodes = int32(len(nodes))
			// Only the default policy's profiles are used (see
			// ColocationPolicySpec.Profiles).
			r.Invalid = profileErrors(p.Spec.Profiles)
			continue
		}
		if p.Spec.NodeSelector == nil {
			r.NoSelector = true
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector.AsMetav1()); err != nil {
			r.Invalid = append(r.Invalid, fmt.Sprintf("%s: %v", field.NewPath("spec", "nodeSelector"), err))
		}
	}
	overriddenBy := map[string]map[string]bool{}
	for _, nodeLabels := range nodes {
		resolved, _ := ForNode(nodeLabels, policies)
		winner := ""
		if len(resolved.Sources) > 0 && resolved.Sources[len(resolved.Sources)-1] != v1alpha1.DefaultColocationPolicyName {
			winner = resolved.Sources[len(resolved.Sources)-1]
			out[winner].SelectedNodes++
		}
		for _, p := range policies {
			if p.Name == v1alpha1.DefaultColocationPolicyName || p.Name == winner {
				continue
			}
			if ok, err := Selects(p, nodeLabels); err != nil || !ok {
				continue
			}
			r := out[p.Name]
			r.OverriddenOn++
			if overriddenBy[p.Name] == nil {
				overriddenBy[p.Name] = map[string]bool{}
			}
			overriddenBy[p.Name][winner] = true
		}
	}
	for name, by := range overriddenBy {
		for w := range by {
			out[name].OverriddenBy = append(out[name].OverriddenBy, w)
		}
		slices.Sort(out[name].OverriddenBy)
	}
	return out
}

// profileErrors lists the profiles' selectors that do not parse.
func profileErrors(profiles []v1alpha1.ColocationProfile) []string {
	var out []string
	for i := range profiles {
		p := field.NewPath("spec", "profiles").Index(i)
		for _, s := range []struct {
			name string
			sel  *metav1.LabelSelector
		}{{"namespaceSelector", profiles[i].NamespaceSelector.AsMetav1()}, {"selector", profiles[i].Selector.AsMetav1()}} {
			if s.sel == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(s.sel); err != nil {
				out = append(out, fmt.Sprintf("%s: %v", p.Child(s.name), err))
			}
		}
	}
	return out
}

// Conditions turns the report into the policy's conditions, with
// transitions at now; a condition whose status does not change keeps its
// transition time from existing. The default policy has no Overridden
// condition.
func (r *Report) Conditions(name string, existing []metav1.Condition, generation int64, now metav1.Time) []metav1.Condition {
	set := func(typ string, status bool, reason, msg string) metav1.Condition {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg,
			ObservedGeneration: generation, LastTransitionTime: now}
		if status {
			c.Status = metav1.ConditionTrue
		}
		for _, e := range existing {
			if e.Type == typ && e.Status == c.Status {
				c.LastTransitionTime = e.LastTransitionTime
			}
		}
		return c
	}
	var out []metav1.Condition
	switch {
	case len(r.Invalid) > 0 && name == v1alpha1.DefaultColocationPolicyName:
		out = append(out, set(ConditionValid, false, "InvalidProfileSelector",
			fmt.Sprintf("The profile webhook refuses the pods it is asked about until this is fixed: %s", strings.Join(r.Invalid, "; "))))
	case len(r.Invalid) > 0:
		out = append(out, set(ConditionValid, false, "InvalidNodeSelector",
			fmt.Sprintf("Skipped on every node: %s", strings.Join(r.Invalid, "; "))))
	case r.NoSelector:
		out = append(out, set(ConditionValid, true, "NoNodeSelector",
			"Has no spec.nodeSelector, so it selects no node (only the default policy applies to every node)"))
	default:
		out = append(out, set(ConditionValid, true, "Valid", "Every selector parses"))
	}
	if name == v1alpha1.DefaultColocationPolicyName {
		return out
	}
	if r.OverriddenOn > 0 {
		out = append(out, set(ConditionOverridden, true, "OtherPoolWins",
			fmt.Sprintf("Selects %d node(s) governed by %s (higher precedence, or the same and an earlier name)",
				r.OverriddenOn, listed(r.OverriddenBy))))
	} else {
		out = append(out, set(ConditionOverridden, false, "NotOverridden", "Governs every node it selects"))
	}
	return out
}

// maxListed caps the names a condition message lists.
const maxListed = 10

func listed(names []string) string {
	if len(names) > maxListed {
		return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}
