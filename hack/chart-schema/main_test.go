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

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestJSONSchema(t *testing.T) {
	var in apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(`
type: object
description: dropped
properties:
  percent: {type: integer, format: int32, minimum: 1, maximum: 100, default: 70}
  quantity: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, pattern: '^[0-9]+$'}
  mode: {type: string, enum: [a, b]}
  free: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {x: {type: string}}}
  labels: {type: object, additionalProperties: {type: string}}
  maybe: {type: string, nullable: true}
  list: {type: array, maxItems: 3, items: {type: object, required: [name], properties: {name: {type: string, minLength: 1}}}}
x-kubernetes-validations: [{rule: 'true'}]
`), &in); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(jsonSchema(&in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{` +
		`"free":{"properties":{"x":{"type":"string"}},"type":"object"},` +
		`"labels":{"additionalProperties":{"type":"string"},"type":"object"},` +
		`"list":{"items":{"additionalProperties":false,"properties":{"name":{"minLength":1,"type":"string"}},"required":["name"],"type":"object"},"maxItems":3,"type":"array"},` +
		`"maybe":{"type":["string","null"]},` +
		`"mode":{"enum":["a","b"],"type":"string"},` +
		`"percent":{"maximum":100,"minimum":1,"type":"integer"},` +
		`"quantity":{"anyOf":[{"type":"integer"},{"type":"string"}],"pattern":"^[0-9]+$"}` +
		`},"type":"object"}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// valuesSchema reads the chart's values.schema.json.
func valuesSchema(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "waterline", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

// TestValuesKeysSurviveYAML checks that every key values.schema.json
// names (the chart's own and the CRDs' it embeds) can be written unquoted
// in a values file: Helm's YAML 1.1 decoder takes a key such as n, y, on
// or off for a boolean, so such a key would arrive as "false" or "true".
func TestValuesKeysSurviveYAML(t *testing.T) {
	schema := valuesSchema(t)
	checked := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for key := range props {
					checked++
					got, err := yaml.YAMLToJSON([]byte(key + ": 1\n"))
					if want := `{"` + key + `":1}`; err != nil || string(got) != want {
						t.Errorf("%s.%s written unquoted in a values file reads as %s (%v), not %s: rename it", path, key, got, err, want)
					}
				}
			}
			for k, sub := range v {
				walk(path+"/"+k, sub)
			}
		case []any:
			for _, sub := range v {
				walk(path, sub)
			}
		}
	}
	walk("", schema)
	if checked < 100 {
		t.Errorf("checked %d keys, want every key of the chart's values and the CRDs", checked)
	}
}

// TestChartIntegersAreBounded checks that every integer the chart's own
// values take (outside the CRDs' definitions, which it renders with
// toYaml) has a maximum: ci/largest-values.yaml sets the largest, and an
// unbounded one would let a value through that the API server refuses
// (an int32 field) or a template prints in exponent form.
func TestChartIntegersAreBounded(t *testing.T) {
	schema := valuesSchema(t)
	delete(schema, "definitions")
	integers := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "integer" {
				integers++
				if _, ok := v["maximum"]; !ok {
					t.Errorf("%s: an integer without a maximum", path)
				}
			}
			for k, sub := range v {
				walk(path+"/"+k, sub)
			}
		case []any:
			for i, sub := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), sub)
			}
		}
	}
	walk("", schema)
	if integers < 10 {
		t.Errorf("found %d integers in the chart's values schema, want its ports, replicas, timeouts and counts", integers)
	}
}
