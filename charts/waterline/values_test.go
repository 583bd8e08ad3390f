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

package waterline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// schemaObject is the part of values.schema.json this test reads.
type schemaObject struct {
	AdditionalProperties any                      `json:"additionalProperties"`
	Required             []string                 `json:"required"`
	Properties           map[string]*schemaObject `json:"properties"`
}

// TestSchemaRequiresEveryDefault: every value values.yaml sets (not null)
// in an object whose properties the schema lists is required by the
// schema, unless a file in ci/ sets it to null. `helm upgrade
// --reuse-values` renders the new chart with the old chart's values.yaml
// in place of the new one's, so a value added since is missing: the
// templates would read nil (a nil pointer error, or a safety switch such
// as secureMetrics silently off). Required, the schema refuses such values
// naming each missing one. A value a user may remove with null is listed
// by setting it to null in a ci/ values file, which make verify renders
// and TestChartCIValuesAreAdmitted installs.
func TestSchemaRequiresEveryDefault(t *testing.T) {
	var schema schemaObject
	if err := json.Unmarshal(ValuesSchema, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(Values, &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	nullable := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci/*-values.yaml: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		nulls(v, "", nullable)
	}
	if len(nullable) == 0 {
		t.Fatal("no ci/ values file sets a value to null: the test would not see an exemption")
	}

	var missing, needless []string
	checked := 0
	var walk func(s *schemaObject, v map[string]any, path string)
	walk = func(s *schemaObject, v map[string]any, path string) {
		if s == nil || len(s.Properties) == 0 || s.AdditionalProperties != false {
			return
		}
		for name, prop := range s.Properties {
			p := join(path, name)
			def, set := v[name]
			required := slices.Contains(s.Required, name)
			switch {
			case nullable[p] && required:
				needless = append(needless, p)
			case set && def != nil && !nullable[p]:
				checked++
				if !required {
					missing = append(missing, p)
				}
			}
			if m, ok := def.(map[string]any); ok {
				walk(prop, m, p)
			}
		}
	}
	walk(&schema, values, "")
	sort.Strings(missing)
	sort.Strings(needless)
	for _, p := range missing {
		t.Errorf("values.yaml sets %s, but values.schema.json does not require it: add it to its object's \"required\" (or, if a user may remove it with null, set it to null in a ci/ values file)", p)
	}
	for _, p := range needless {
		t.Errorf("a ci/ values file sets %s to null, but values.schema.json requires it: helm would refuse that file", p)
	}
	if checked < 100 {
		t.Errorf("checked %d values, want the chart's every value (over 100): the walk did not reach them", checked)
	}
	for p := range nullable {
		if _, ok := lookup(values, p); !ok {
			t.Errorf("a ci/ values file sets %s to null, but values.yaml has no such value", p)
		}
	}
}

// nulls records the path of every key set to null in v.
func nulls(v map[string]any, path string, out map[string]bool) {
	for k, x := range v {
		switch x := x.(type) {
		case nil:
			out[join(path, k)] = true
		case map[string]any:
			nulls(x, join(path, k), out)
		}
	}
}

// lookup reads a dotted path of map keys (no key here has a dot).
func lookup(v map[string]any, path string) (any, bool) {
	var cur any = v
	for _, key := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
