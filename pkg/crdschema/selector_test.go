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

package crdschema

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzSelectorSchemaAgreesWithParser: the ColocationPolicy schema admits
// a profile's selector exactly when metav1.LabelSelectorAsSelector parses
// it, so what the webhook and the manager read never fails to parse
// (apis/v1alpha1 LabelSelector; docs/design/tiers.md, "Selectors"). The
// seeds run with every go test; make fuzz explores.
func FuzzSelectorSchemaAgreesWithParser(f *testing.F) {
	policy, err := For("ColocationPolicy")
	if err != nil {
		f.Fatal(err)
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, seed := range []struct {
		key, operator, value string
		asLabel              bool // also as matchLabels {key: value}
	}{
		{"app", "In", "spark", true},
		{"waterline.dev/colocation", "NotIn", "batch", true},
		{"kubernetes.io/metadata.name", "In", "", true},
		{"app", "in", "spark", false},
		{"app", "Exists", "", false},
		{"app", "Exists", "x", false},
		{"app", "DoesNotExist", "", false},
		{"app", "Near", "", false},
		{"", "Exists", "", true},
		{"/app", "Exists", "", true},
		{"a/b/c", "Exists", "", true},
		{"App.Example/x", "Exists", "", true},
		{"a..b/x", "Exists", "", true},
		{"-a/x", "Exists", "", true},
		{"a/_x", "Exists", "", true},
		{"a/x_", "Exists", "", true},
		{"a/x_.y-z", "In", "a_.b-c", true},
		{"app name", "In", "v", true},
		{"app", "In", "-v", true},
		{"app", "In", "v.", true},
		{"app", "In", "v\n", true},
		{"app\n", "In", "v", true},
		{"ä", "In", "v", true},
		{"app", "In", "ä", true},
		{long(63), "In", long(63), true},
		{long(64), "In", long(64), true},
		{long(253) + "/" + long(63), "Exists", "", true},
		{long(254) + "/" + long(62), "Exists", "", true},
		{long(252) + "/" + long(64), "Exists", "", true},
		{strings.Repeat("a.", 126) + "a/" + long(63), "Exists", "", true},
	} {
		f.Add(seed.key, seed.operator, seed.value, seed.asLabel)
	}
	f.Fuzz(func(t *testing.T, key, operator, value string, asLabel bool) {
		sel := &metav1.LabelSelector{}
		req := map[string]any{"key": key, "operator": operator}
		r := metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOperator(operator)}
		if value != "" || operator == "In" || operator == "NotIn" {
			req["values"] = []any{value}
			r.Values = []string{value}
		}
		yamlSel := map[string]any{"matchExpressions": []any{req}}
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{r}
		if asLabel {
			yamlSel = map[string]any{"matchLabels": map[string]any{key: value}}
			sel = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
		}
		obj := map[string]any{
			"apiVersion": "waterline.dev/v1alpha1", "kind": "ColocationPolicy",
			"metadata": map[string]any{"name": "default"},
			"spec": map[string]any{"profiles": []any{map[string]any{
				"name": "p", "band": "batch", "selector": yamlSel,
			}}},
		}
		errs := policy.Admit(t.Context(), nil, obj)
		_, parseErr := metav1.LabelSelectorAsSelector(sel)
		if (len(errs) == 0) != (parseErr == nil) {
			t.Errorf("selector %+v: admission errors %v, parse error %v; want both or neither", sel, errs, parseErr)
		}
	})
}
