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
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"
)

// TestCRDsAreAccepted runs the API server's own validation of a
// CustomResourceDefinition on each embedded CRD, CEL cost estimates
// included: a rule whose worst case costs more than the API server allows
// fails here, in seconds, rather than when a cluster installs the CRD.
func TestCRDsAreAccepted(t *testing.T) {
	defs, err := embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range defs {
		t.Run(def.Name, func(t *testing.T) {
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&def)
			var internal apiextensionsinternal.CustomResourceDefinition
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&def, &internal, nil); err != nil {
				t.Fatal(err)
			}
			for _, e := range crdvalidation.ValidateCustomResourceDefinition(t.Context(), &internal) {
				t.Errorf("%s", e)
			}
		})
	}
}

// crdField is one field of an embedded CRD's schema, for the checks
// below: where it is (CRD, version, dotted path to its parent) and its
// schema.
type crdField struct {
	crd, version, parent, name string
	schema                     *apiextensionsv1.JSONSchemaProps
}

func (f crdField) String() string {
	return fmt.Sprintf("%s %s: %s.%s", f.crd, f.version, f.parent, f.name)
}

// crdFields returns every field of every embedded CRD's served schemas,
// the items of lists and the values of maps included.
func crdFields(t *testing.T) []crdField {
	t.Helper()
	defs, err := embedded()
	if err != nil {
		t.Fatal(err)
	}
	var out []crdField
	for _, def := range defs {
		for _, v := range def.Spec.Versions {
			var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
			walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
				for field, sub := range s.Properties {
					out = append(out, crdField{crd: def.Name, version: v.Name, parent: path, name: field, schema: &sub})
					walk(path+"."+field, &sub)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(path+"[*]", s.Items.Schema)
				}
				if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
					walk(path+"[*]", s.AdditionalProperties.Schema)
				}
			}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				walk(def.Spec.Names.Kind, v.Schema.OpenAPIV3Schema)
			}
		}
	}
	return out
}

// TestCRDFieldsSurviveYAML checks that every field of every CRD can be
// written as it is named, unquoted, in the YAML kubectl and Helm read:
// their YAML 1.1 decoder takes a key such as n, y, on or off for a
// boolean, so a field named that way arrives as "false" or "true" and is
// refused as unknown.
func TestCRDFieldsSurviveYAML(t *testing.T) {
	fields := crdFields(t)
	for _, f := range fields {
		got, err := yaml.YAMLToJSON([]byte(f.name + ": 1\n"))
		if want := `{"` + f.name + `":1}`; err != nil || string(got) != want {
			t.Errorf("%s written unquoted in YAML reads as %s (%v), not %s: rename it", f, got, err, want)
		}
	}
	if len(fields) < 50 {
		t.Errorf("checked %d fields, want every field of the three CRDs", len(fields))
	}
}

// TestCRDSecondsFitADuration checks that every field counting seconds has
// a maximum, and one a time.Duration holds: the agent and the manager
// turn these into durations, and a larger value the API server admitted
// would overflow into a negative one (a predictor refusing a policy the
// cluster accepted, early reports at every check).
func TestCRDSecondsFitADuration(t *testing.T) {
	const longest = float64(math.MaxInt64 / int64(time.Second))
	seconds := 0
	for _, f := range crdFields(t) {
		if !strings.HasSuffix(f.name, "Seconds") || f.schema.Type != "integer" {
			continue
		}
		seconds++
		if m := f.schema.Maximum; m == nil {
			t.Errorf("%s has no maximum, want one of at most %.0f s (a time.Duration)", f, longest)
		} else if *m > longest {
			t.Errorf("%s has maximum %.0f, want at most %.0f s (a time.Duration)", f, *m, longest)
		}
	}
	if seconds < 8 {
		t.Errorf("found %d fields counting seconds, want the collect, predict, tier and QoS intervals", seconds)
	}
}
