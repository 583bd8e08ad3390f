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

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, kind, spec string) map[string]any {
	t.Helper()
	var obj map[string]any
	doc := "apiVersion: waterline.dev/v1alpha1\nkind: " + kind + "\nmetadata: {name: default}\nspec:\n" + spec
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

// TestAdmit checks each kind of refusal names its field under the given
// root, and that the CRD's defaults are set. That it agrees with the API
// server itself is test/integration's
// TestOfflineAdmissionAgreesWithTheServer.
func TestAdmit(t *testing.T) {
	nodeQOS, err := For("NodeQOS")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := For("ColocationPolicy")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema *Schema
		kind   string
		spec   string
		want   []string
		detail string // in the first error's detail, when set
	}{{
		name: "valid NodeQOS", schema: nodeQOS, kind: "NodeQOS",
		spec: "  cpu: {forbidSchedulingPercent: 70, throttlePercent: 75, restorePercent: 65, evictPercent: 85}\n",
	}, {
		name: "out of range (OpenAPI)", schema: nodeQOS, kind: "NodeQOS",
		spec: "  cpu: {throttlePercent: 150}\n",
		want: []string{"nodeQOS.spec.cpu.throttlePercent"},
	}, {
		name: "lines out of order (CEL)", schema: nodeQOS, kind: "NodeQOS",
		spec: "  cpu: {throttlePercent: 80, evictPercent: 70}\n",
		want: []string{"nodeQOS.spec.cpu.evictPercent"}, detail: "evictPercent must be greater than throttlePercent",
	}, {
		name: "unknown field", schema: nodeQOS, kind: "NodeQOS",
		spec: "  cpu: {throttlePercent: 80, throttlePercnet: 90}\n",
		want: []string{"nodeQOS.spec.cpu.throttlePercnet"}, detail: "unknown field",
	}, {
		name: "the mixed Mid variant (CEL)", schema: policy, kind: "ColocationPolicy",
		spec: "  tiers: {midIncludeUnallocated: true}\n",
		want: []string{"nodeQOS.spec.tiers.midIncludeUnallocated"}, detail: "not supported yet",
	}, {
		name: "a wrong type", schema: policy, kind: "ColocationPolicy",
		spec: "  tiers: {batchCPUThresholdPercent: high}\n",
		want: []string{"nodeQOS.spec.tiers.batchCPUThresholdPercent"},
	}, {
		name: "a valid profile's selectors", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n" +
			"    namespaceSelector: {matchLabels: {waterline.dev/colocation: batch, team: ''}, matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [a, b]}]}\n" +
			"    selector: {matchExpressions: [{key: app, operator: Exists}]}\n",
	}, {
		name: "an operator in lower case", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    namespaceSelector: {matchExpressions: [{key: team, operator: in, values: [data]}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].namespaceSelector.matchExpressions[0].operator"}, detail: `supported values: "In", "NotIn", "Exists", "DoesNotExist"`,
	}, {
		name: "In without values", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    selector: {matchExpressions: [{key: app, operator: In}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].selector.matchExpressions[0].values"}, detail: "need at least one value",
	}, {
		name: "Exists with values", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    selector: {matchExpressions: [{key: app, operator: Exists, values: [x]}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].selector.matchExpressions[0].values"}, detail: "take no values",
	}, {
		name: "too many expressions", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    selector: {matchExpressions: [" +
			strings.Repeat("{key: app, operator: Exists}, ", 32) + "{key: app, operator: Exists}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].selector.matchExpressions"}, detail: "must have at most 32 items",
	}, {
		name: "a key that is not a label key", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    selector: {matchExpressions: [{key: 'app name', operator: Exists}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].selector.matchExpressions[0].key"},
	}, {
		name: "a prefix longer than 253", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    selector: {matchExpressions: [{key: " + strings.Repeat("a", 254) + "/b, operator: Exists}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].selector.matchExpressions[0].key"}, detail: "at most 253",
	}, {
		name: "a value that is not a label value", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    selector: {matchExpressions: [{key: app, operator: In, values: [ok, -bad]}]}\n",
		want: []string{"nodeQOS.spec.profiles[0].selector.matchExpressions[0].values[1]"},
	}, {
		name: "a label key that is not a label key", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    namespaceSelector: {matchLabels: {'team/': data}}\n",
		want: []string{"nodeQOS.spec.profiles[0].namespaceSelector.matchLabels"}, detail: "every key must be a label key",
	}, {
		name: "a label value too long", schema: policy, kind: "ColocationPolicy",
		spec: "  profiles:\n  - name: p\n    band: batch\n    namespaceSelector: {matchLabels: {team: " + strings.Repeat("d", 64) + "}}\n",
		want: []string{"nodeQOS.spec.profiles[0].namespaceSelector.matchLabels.team"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.schema.Admit(t.Context(), field.NewPath("nodeQOS"), object(t, tt.kind, tt.spec))
			if diff := cmp.Diff(tt.want, fields(errs)); diff != "" {
				t.Fatalf("fields refused (-want +got):\n%s\nerrors: %v", diff, errs)
			}
			if tt.detail != "" && !strings.Contains(errs[0].Error(), tt.detail) {
				t.Errorf("error %q does not say %q", errs[0].Error(), tt.detail)
			}
		})
	}

	// The CRD's defaults are set: a NodeQOS with one line gets its
	// hysteresis counts.
	obj := object(t, "NodeQOS", "  cpu: {throttlePercent: 80}\n")
	if errs := nodeQOS.Admit(t.Context(), nil, obj); len(errs) > 0 {
		t.Fatal(errs)
	}
	spec := obj["spec"].(map[string]any)
	if spec["avoidanceCount"] == nil || spec["restoreCount"] == nil {
		t.Errorf("defaulted spec %v: no avoidanceCount or restoreCount", spec)
	}
	if _, err := For("NoSuchKind"); err == nil {
		t.Error("For(NoSuchKind): no error")
	}
}
