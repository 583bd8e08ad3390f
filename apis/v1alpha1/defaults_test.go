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
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestCRDDefaultsMatchGo keeps the +kubebuilder:default markers (what the
// API server fills in) and the Go defaults (what components use for unset
// fields) the same: every schema default must equal the Go default at the
// same path.
func TestCRDDefaultsMatchGo(t *testing.T) {
	tests := []struct {
		crd        string
		path       []string
		goDefaults any
	}{
		{"waterline.dev_nodeqoses.yaml", []string{"spec"}, NodeQOSSpecWithDefaults(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.crd+"/"+filepath.Join(tt.path...), func(t *testing.T) {
			schema := loadSchema(t, tt.crd)
			for _, p := range tt.path {
				next, ok := schema.Properties[p]
				if !ok {
					t.Fatalf("schema has no property %q", p)
				}
				schema = &next
			}
			raw, err := json.Marshal(tt.goDefaults)
			if err != nil {
				t.Fatal(err)
			}
			var goValues map[string]any
			if err := json.Unmarshal(raw, &goValues); err != nil {
				t.Fatal(err)
			}
			if n := compareDefaults(t, filepath.Join(tt.path...), schema, goValues); n == 0 {
				t.Errorf("no schema defaults found under %v: the markers are missing", tt.path)
			}
		})
	}
}

// TestPolicyCRDsSetNoDefaults: the ColocationPolicy (and NodeMetric)
// tiers, collectPolicy and predictPolicy have no schema defaults. The API
// server would store them in a pool policy, and the pool would then
// override every field of the default policy's, not only those it sets.
func TestPolicyCRDsSetNoDefaults(t *testing.T) {
	for _, tt := range []struct {
		crd  string
		path []string
	}{
		{"waterline.dev_nodemetrics.yaml", []string{"spec", "collectPolicy"}},
		{"waterline.dev_nodemetrics.yaml", []string{"spec", "predictPolicy"}},
		{"waterline.dev_colocationpolicies.yaml", []string{"spec", "collectPolicy"}},
		{"waterline.dev_colocationpolicies.yaml", []string{"spec", "predictPolicy"}},
		{"waterline.dev_colocationpolicies.yaml", []string{"spec", "tiers"}},
	} {
		schema := loadSchema(t, tt.crd)
		for _, p := range tt.path {
			next, ok := schema.Properties[p]
			if !ok {
				t.Fatalf("%s: schema has no property %q", tt.crd, p)
			}
			schema = &next
		}
		for name, prop := range schema.Properties {
			if prop.Default != nil {
				t.Errorf("%s: %s.%s has the schema default %s", tt.crd, filepath.Join(tt.path...), name, prop.Default.Raw)
			}
		}
	}
}

// compareDefaults checks every default under schema against goValues and
// returns how many it checked.
func compareDefaults(t *testing.T, path string, schema *apiextensionsv1.JSONSchemaProps, goValues map[string]any) int {
	t.Helper()
	checked := 0
	for name, prop := range schema.Properties {
		field := path + "." + name
		if prop.Default != nil {
			var want any
			if err := json.Unmarshal(prop.Default.Raw, &want); err != nil {
				t.Fatalf("%s: schema default %s: %v", field, prop.Default.Raw, err)
			}
			got, ok := goValues[name]
			if !ok {
				t.Errorf("%s: schema default %v, but the Go defaults leave it unset", field, want)
			} else if gj, wj := mustJSON(t, got), mustJSON(t, want); gj != wj {
				t.Errorf("%s: schema default %s, Go default %s", field, wj, gj)
			}
			checked++
		}
		if sub, ok := goValues[name].(map[string]any); ok {
			p := prop
			checked += compareDefaults(t, field, &p, sub)
		}
	}
	return checked
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func loadSchema(t *testing.T, file string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}
