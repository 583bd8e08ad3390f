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
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/pkg/crdschema"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestOfflineAdmissionAgreesWithTheServer holds pkg/crdschema (what
// `waterline sim --values` admits its specs with) to the real API server:
// each object is created on the server in dry run, with strict field
// validation as kubectl sends it, and admitted offline; both must accept
// or refuse it, refusals on the same fields, and an accepted object must
// come back with the same defaults.
func TestOfflineAdmissionAgreesWithTheServer(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	client, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]string{"NodeQOS": "nodeqoses", "ColocationPolicy": "colocationpolicies"}
	cases := []struct {
		name, kind, spec string
		fields           []string // refused fields; none when accepted
	}{
		{"empty NodeQOS", "NodeQOS", "{}", nil},
		{"every CPU line, ordered", "NodeQOS", "{cpu: {forbidSchedulingPercent: 70, throttlePercent: 75, restorePercent: 65, evictPercent: 85}}", nil},
		{"memory and eviction tuning", "NodeQOS", "{memory: {forbidSchedulingPercent: 85, evictPercent: 90}, eviction: {maxPerMinute: 3}}", nil},
		{"a line over 100", "NodeQOS", "{cpu: {throttlePercent: 150}}", []string{"spec.cpu.throttlePercent"}},
		{"evict under throttle", "NodeQOS", "{cpu: {throttlePercent: 80, evictPercent: 75}}", []string{"spec.cpu.evictPercent"}},
		{"restore without throttle", "NodeQOS", "{cpu: {restorePercent: 60}}", []string{"spec.cpu.restorePercent"}},
		{"a misspelt field", "NodeQOS", "{cpu: {throttlePercnet: 80}}", []string{"spec.cpu.throttlePercnet"}},
		{"a string for a number", "NodeQOS", "{avoidanceCount: two}", []string{"spec.avoidanceCount"}},
		{"empty ColocationPolicy", "ColocationPolicy", "{}", nil},
		{"tiers and predict policy", "ColocationPolicy", "{tiers: {enabled: true, batchCPUThresholdPercent: 85}, predictPolicy: {model: NSigmaV2}}", nil},
		{"a threshold over 100", "ColocationPolicy", "{tiers: {batchCPUThresholdPercent: 500}}", []string{"spec.tiers.batchCPUThresholdPercent"}},
		{"the mixed Mid variant", "ColocationPolicy", "{tiers: {midIncludeUnallocated: true}}", []string{"spec.tiers.midIncludeUnallocated"}},
		{"an unknown model", "ColocationPolicy", "{predictPolicy: {model: Crystal}}", []string{"spec.predictPolicy.model"}},
		{"selectors of a pool and a profile", "ColocationPolicy", "{nodeSelector: {matchExpressions: [{key: pool, operator: In, values: [a]}]}, profiles: [{name: p, band: batch, namespaceSelector: {matchLabels: {team: data}}, selector: {matchExpressions: [{key: example.com/app, operator: Exists}]}}]}", nil},
		{"an operator in lower case", "ColocationPolicy", "{profiles: [{name: p, band: batch, namespaceSelector: {matchExpressions: [{key: team, operator: in, values: [data]}]}}]}", []string{"spec.profiles[0].namespaceSelector.matchExpressions[0].operator"}},
		{"In without values", "ColocationPolicy", "{profiles: [{name: p, band: batch, selector: {matchExpressions: [{key: app, operator: In}]}}]}", []string{"spec.profiles[0].selector.matchExpressions[0].values"}},
		{"Exists with values", "ColocationPolicy", "{nodeSelector: {matchExpressions: [{key: pool, operator: Exists, values: [a]}]}}", []string{"spec.nodeSelector.matchExpressions[0].values"}},
		{"33 expressions", "ColocationPolicy", "{nodeSelector: {matchExpressions: [" + strings.Repeat("{key: pool, operator: Exists}, ", 32) + "{key: pool, operator: Exists}]}}", []string{"spec.nodeSelector.matchExpressions"}},
		{"a key that is not a label key", "ColocationPolicy", "{profiles: [{name: p, band: batch, selector: {matchExpressions: [{key: 'a b', operator: Exists}]}}]}", []string{"spec.profiles[0].selector.matchExpressions[0].key"}},
		{"a matchLabels key that is not a label key", "ColocationPolicy", "{profiles: [{name: p, band: batch, selector: {matchLabels: {'a b': c}}}]}", []string{"spec.profiles[0].selector.matchLabels"}},
		{"a matchLabels value that is not a label value", "ColocationPolicy", "{profiles: [{name: p, band: batch, selector: {matchLabels: {a: 'b c'}}}]}", []string{"spec.profiles[0].selector.matchLabels.a"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
				t.Fatal(err)
			}
			object := func() map[string]any {
				return map[string]any{
					"apiVersion": "waterline.dev/v1alpha1", "kind": tc.kind,
					"metadata": map[string]any{"name": "case-" + strings.ToLower(string(rune('a'+i)))},
					"spec":     runtimeDeepCopy(spec),
				}
			}

			gvr := schema.GroupVersionResource{Group: "waterline.dev", Version: "v1alpha1", Resource: resources[tc.kind]}
			served, serverErr := client.Resource(gvr).Create(t.Context(), &unstructured.Unstructured{Object: object()},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
			var serverFields []string
			if serverErr != nil {
				// Strict decoding names unknown fields in its message only;
				// validation names each field in a cause ("<nil>" is the
				// summary cause of a type error).
				for _, m := range unknownField.FindAllStringSubmatch(serverErr.Error(), -1) {
					serverFields = append(serverFields, m[1])
				}
				var status apierrors.APIStatus
				if errors.As(serverErr, &status) && status.Status().Details != nil {
					for _, cause := range status.Status().Details.Causes {
						if f := strings.TrimPrefix(cause.Field, "."); f != "" && f != "<nil>" {
							serverFields = append(serverFields, f)
						}
					}
				}
				if len(serverFields) == 0 {
					t.Fatalf("the server refused without naming a field: %v", serverErr)
				}
			}

			s, err := crdschema.For(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			offline := object()
			var offlineFields []string
			for _, e := range s.Admit(t.Context(), nil, offline) {
				offlineFields = append(offlineFields, e.Field)
			}

			norm := func(fs []string) []string {
				fs = slices.Clone(fs)
				slices.Sort(fs)
				return slices.Compact(fs)
			}
			if diff := cmp.Diff(norm(tc.fields), norm(serverFields)); diff != "" {
				t.Errorf("the server's refused fields differ from the case's (-case +server):\n%s\nserver error: %v", diff, serverErr)
			}
			if diff := cmp.Diff(norm(serverFields), norm(offlineFields)); diff != "" {
				t.Errorf("offline admission's refused fields differ from the server's (-server +offline):\n%s", diff)
			}
			if served != nil && len(offlineFields) == 0 {
				if diff := cmp.Diff(served.Object["spec"], offline["spec"]); diff != "" {
					t.Errorf("defaulted spec differs (-server +offline):\n%s", diff)
				}
			}
		})
	}
}

// unknownField finds the fields a strict decoding error names.
var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// runtimeDeepCopy copies a decoded JSON value.
func runtimeDeepCopy(v map[string]any) map[string]any {
	return runtimeDeepCopyValue(v).(map[string]any)
}

func runtimeDeepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = runtimeDeepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = runtimeDeepCopyValue(e)
		}
		return out
	}
	return v
}
