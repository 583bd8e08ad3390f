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

package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelSelector is metav1.LabelSelector with the same JSON, bounded so that
// the API server can check it at admission: a selector that would not parse
// (an operator "in", In without values, a key that is not a label key) is
// refused, naming the field, instead of being stored and breaking whatever
// reads it. The upstream schema has no bounds, which makes CEL rules over it
// cost more than the API server allows (docs/design/tiers.md, "Selectors").
//
// The bounds are far above any real selector: 64 labels, 32 expressions of
// 256 values each. Keys and values follow the Kubernetes label syntax
// (k8s.io/apimachinery/pkg/util/validation IsQualifiedName, IsValidLabelValue).
type LabelSelector struct {
	// MatchLabels is a map of label key to value; each pair is the expression
	// "key In (value)". The pairs are ANDed with each other and with
	// MatchExpressions. Keys are label keys (an optional DNS subdomain
	// prefix of at most 253 characters and "/", then a name of at most 63
	// characters), values label values (at most 63 characters).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="every key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters of letters, digits, '-', '_' and '.' that starts and ends with a letter or digit"
	// +optional
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// MatchExpressions is a list of label selector requirements, ANDed.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is metav1.LabelSelectorRequirement, bounded:
// a key, an operator, and the values it compares with.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="operators In and NotIn need at least one value",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="operators Exists and DoesNotExist take no values",fieldPath=".values"
type LabelSelectorRequirement struct {
	// Key is the label key the selector applies to: an optional DNS
	// subdomain prefix of at most 253 characters and "/", then a name of
	// at most 63 characters of letters, digits, "-", "_" and "." that
	// starts and ends with a letter or digit.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.indexOf('/') <= 253",message="the prefix (before '/') must be at most 253 characters"
	Key string `json:"key"`
	// Operator is how the key's value is compared with Values: In,
	// NotIn, Exists or DoesNotExist (case matters).
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values: at least one for In and NotIn, none for Exists and
	// DoesNotExist. Each is a label value: empty, or at most 63 characters
	// of letters, digits, "-", "_" and "." that starts and ends with a
	// letter or digit.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// LabelValue is a label value: empty, or at most 63 characters of letters,
// digits, "-", "_" and "." that starts and ends with a letter or digit
// (a named type so that the schema of MatchLabels' values says so).
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// AsMetav1 returns the selector as a metav1.LabelSelector (a copy), nil
// for nil, for labels.Selector and webhook configurations to use.
func (s *LabelSelector) AsMetav1() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = string(v)
		}
	}
	if s.MatchExpressions != nil {
		out.MatchExpressions = make([]metav1.LabelSelectorRequirement, len(s.MatchExpressions))
		for i, r := range s.MatchExpressions {
			out.MatchExpressions[i] = metav1.LabelSelectorRequirement{
				Key: r.Key, Operator: r.Operator, Values: slices.Clone(r.Values),
			}
		}
	}
	return out
}
