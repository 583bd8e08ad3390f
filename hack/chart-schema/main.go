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

// Command chart-schema writes the specs of the CRDs the chart creates
// objects of (NodeQOS, ColocationPolicy) into charts/waterline's
// values.schema.json, as JSON Schema under "definitions", so that helm
// refuses a values file whose nodeQOS.spec or colocationPolicy.spec the
// API server would refuse on its OpenAPI schema -- an unknown field, a
// number out of range, a value not in an enum -- before installing
// anything. The CRDs' CEL rules are not JSON Schema and stay the API
// server's (the chart checks the NodeQOS lines' order itself).
//
// Everything before the "definitions" key is written by hand and kept as
// it is; "definitions" is the file's last key and is rewritten. Run by
// hack/update-codegen.sh after the CRDs.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// specs are the definitions written: name → the CRD file in config/crd/bases.
var specs = []struct{ name, crd string }{
	{"NodeQOSSpec", "waterline.dev_nodeqoses.yaml"},
	{"ColocationPolicySpec", "waterline.dev_colocationpolicies.yaml"},
}

const marker = "\n  \"definitions\": {"

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	if err := run(root); err != nil {
		fmt.Fprintln(os.Stderr, "chart-schema:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	defs := map[string]any{}
	for _, s := range specs {
		path := filepath.Join(root, "config", "crd", "bases", s.crd)
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
			return fmt.Errorf("%s: want one version with a schema", path)
		}
		spec, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return fmt.Errorf("%s: no spec in the schema", path)
		}
		defs[s.name] = jsonSchema(&spec)
	}

	path := filepath.Join(root, "charts", "waterline", "values.schema.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	head := string(raw)
	if i := strings.Index(head, marker); i >= 0 {
		head = head[:i]
		head = strings.TrimSuffix(head, ",")
	} else {
		// First run: the file ends with the top-level object's "}".
		head = strings.TrimRight(head, "\n")
		if !strings.HasSuffix(head, "\n}") {
			return fmt.Errorf("%s: does not end with the top-level object's closing brace", path)
		}
		head = strings.TrimSuffix(head, "\n}")
	}
	body, err := json.MarshalIndent(defs, "  ", "  ")
	if err != nil {
		return err
	}
	out := head + "," + marker[:len(marker)-1] + string(body) + "\n}\n"
	var check map[string]any
	if err := json.Unmarshal([]byte(out), &check); err != nil {
		return fmt.Errorf("%s: the result is not JSON: %w", path, err)
	}
	if bytes.Equal([]byte(out), raw) {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// jsonSchema converts a CRD's structural OpenAPI v3 schema into JSON Schema
// (draft-07): descriptions, defaults and the x-kubernetes extensions are
// dropped; an object with properties refuses others (the API server's
// strict field validation) unless it preserves unknown fields; an
// int-or-string takes either; nullable admits null.
func jsonSchema(s *apiextensionsv1.JSONSchemaProps) map[string]any {
	out := map[string]any{}
	if s.Type != "" {
		if s.Nullable {
			out["type"] = []string{s.Type, "null"}
		} else {
			out["type"] = s.Type
		}
	}
	if s.XIntOrString {
		delete(out, "type")
		out["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
	} else if len(s.AnyOf) > 0 {
		var alts []any
		for i := range s.AnyOf {
			alts = append(alts, jsonSchema(&s.AnyOf[i]))
		}
		out["anyOf"] = alts
	}
	if len(s.Enum) > 0 {
		var enum []any
		for _, e := range s.Enum {
			var v any
			if err := json.Unmarshal(e.Raw, &v); err == nil {
				enum = append(enum, v)
			}
		}
		out["enum"] = enum
	}
	if s.Pattern != "" {
		out["pattern"] = s.Pattern
	}
	if s.Minimum != nil {
		if s.ExclusiveMinimum {
			out["exclusiveMinimum"] = *s.Minimum
		} else {
			out["minimum"] = *s.Minimum
		}
	}
	if s.Maximum != nil {
		if s.ExclusiveMaximum {
			out["exclusiveMaximum"] = *s.Maximum
		} else {
			out["maximum"] = *s.Maximum
		}
	}
	for key, v := range map[string]*int64{"minLength": s.MinLength, "maxLength": s.MaxLength, "minItems": s.MinItems, "maxItems": s.MaxItems, "minProperties": s.MinProperties, "maxProperties": s.MaxProperties} {
		if v != nil {
			out[key] = *v
		}
	}
	if len(s.Required) > 0 {
		out["required"] = s.Required
	}
	if s.Items != nil && s.Items.Schema != nil {
		out["items"] = jsonSchema(s.Items.Schema)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			props[name] = jsonSchema(&p)
		}
		out["properties"] = props
		if s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields {
			out["additionalProperties"] = false
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out["additionalProperties"] = jsonSchema(s.AdditionalProperties.Schema)
	}
	return out
}
