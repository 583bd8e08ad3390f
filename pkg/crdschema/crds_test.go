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
	"io/fs"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/config/crd"
)

// TestCRDsAreAccepted runs the API server's own validation of a
// CustomResourceDefinition on each embedded CRD, CEL cost estimates
// included: a rule whose worst case costs more than the API server allows
// fails here, in seconds, rather than when a cluster installs the CRD.
func TestCRDsAreAccepted(t *testing.T) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded CRDs: %v, %v", files, err)
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			raw, err := fs.ReadFile(crd.Bases, name)
			if err != nil {
				t.Fatal(err)
			}
			var def apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(raw, &def); err != nil {
				t.Fatal(err)
			}
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

// TestCRDFieldsSurviveYAML checks that every field of every CRD can be
// written as it is named, unquoted, in the YAML kubectl and Helm read:
// their YAML 1.1 decoder takes a key such as n, y, on or off for a
// boolean, so a field named that way arrives as "false" or "true" and is
// refused as unknown.
func TestCRDFieldsSurviveYAML(t *testing.T) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded CRDs: %v, %v", files, err)
	}
	checked := 0
	for _, name := range files {
		raw, err := fs.ReadFile(crd.Bases, name)
		if err != nil {
			t.Fatal(err)
		}
		var def apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &def); err != nil {
			t.Fatal(err)
		}
		for _, v := range def.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
			walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
				for field, sub := range s.Properties {
					checked++
					got, err := yaml.YAMLToJSON([]byte(field + ": 1\n"))
					if want := `{"` + field + `":1}`; err != nil || string(got) != want {
						t.Errorf("%s %s: the field %s.%s written unquoted in YAML reads as %s (%v), not %s: rename it", def.Name, v.Name, path, field, got, err, want)
					}
					walk(path+"."+field, &sub)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(path+"[*]", s.Items.Schema)
				}
				if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
					walk(path+"[*]", s.AdditionalProperties.Schema)
				}
			}
			walk(def.Spec.Names.Kind, v.Schema.OpenAPIV3Schema)
		}
	}
	if checked < 50 {
		t.Errorf("checked %d fields, want every field of the three CRDs", checked)
	}
}

// TestCRDSecondsFitADuration checks that every field counting seconds has
// a maximum, and one a time.Duration holds: the agent and the manager
// turn these into durations, and a larger value the API server admitted
// would overflow into a negative one (a predictor refusing a policy the
// cluster accepted, reports forced every cycle).
func TestCRDSecondsFitADuration(t *testing.T) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded CRDs: %v, %v", files, err)
	}
	const longest = float64(math.MaxInt64 / int64(time.Second))
	seconds := 0
	for _, name := range files {
		raw, err := fs.ReadFile(crd.Bases, name)
		if err != nil {
			t.Fatal(err)
		}
		var def apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &def); err != nil {
			t.Fatal(err)
		}
		for _, v := range def.Spec.Versions {
			var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
			walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
				for field, sub := range s.Properties {
					if strings.HasSuffix(field, "Seconds") && sub.Type == "integer" {
						seconds++
						if sub.Maximum == nil || *sub.Maximum > longest {
							t.Errorf("%s %s: %s.%s has maximum %v, want one of at most %.0f s (a time.Duration)", def.Name, v.Name, path, field, ptrString(sub.Maximum), longest)
						}
					}
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
	if seconds < 8 {
		t.Errorf("found %d fields counting seconds, want the collect, predict, tier and QoS intervals", seconds)
	}
}

func ptrString(f *float64) string {
	if f == nil {
		return "none"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
