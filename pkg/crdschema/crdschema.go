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

// Package crdschema admits Waterline objects offline as the API server
// does when one is created: it refuses unknown fields, applies the CRD's
// defaults, and validates the result against the CRD's OpenAPI schema and
// its CEL rules (x-kubernetes-validations), with the API server's own
// libraries and the CRDs `make generate` writes (config/crd). Tools that
// take Waterline objects from a file (waterline sim --values) use it so
// that a value the cluster would refuse is refused the same way, naming
// the field.
package crdschema

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/config/crd"
)

// Schema is one kind's admission: its CRD's served version's schema.
type Schema struct {
	kind       string
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator // nil: the schema has no CEL rules
}

// For returns the Schema of kind (NodeQOS, ColocationPolicy, NodeMetric)
// at v1alpha1 from the embedded CRDs.
func For(kind string) (*Schema, error) {
	defs, err := embedded()
	if err != nil {
		return nil, err
	}
	for _, def := range defs {
		if def.Spec.Names.Kind != kind {
			continue
		}
		for i := range def.Spec.Versions {
			v := &def.Spec.Versions[i]
			if v.Name != v1alpha1.SchemeGroupVersion.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			return newSchema(kind, v.Schema.OpenAPIV3Schema)
		}
		return nil, fmt.Errorf("%s: no %s schema", def.Name, v1alpha1.SchemeGroupVersion.Version)
	}
	return nil, fmt.Errorf("no CustomResourceDefinition of kind %s", kind)
}

// embedded returns the CRDs `make generate` writes (config/crd), as this
// binary embeds them.
func embedded() ([]apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition embedded")
	}
	defs := make([]apiextensionsv1.CustomResourceDefinition, len(files))
	for i, name := range files {
		raw, err := fs.ReadFile(crd.Bases, name)
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(raw, &defs[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return defs, nil
}

func newSchema(kind string, props *apiextensionsv1.JSONSchemaProps) (*Schema, error) {
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, &internal, nil); err != nil {
		return nil, fmt.Errorf("%s schema: %w", kind, err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("%s schema: %w", kind, err)
	}
	validator, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("%s schema: %w", kind, err)
	}
	return &Schema{
		kind:       kind,
		structural: structural,
		validator:  validator,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// Admit admits obj (a decoded JSON object: apiVersion, kind, metadata,
// spec) as the API server creates one: a field the schema does not know is
// an error (kubectl's strict field validation), the CRD's defaults are
// set in obj, and the schema's and the CEL rules' errors are returned,
// their fields under fldPath (e.g. "nodeQOS.spec.cpu.throttlePercent" for
// fldPath "nodeQOS").
func (s *Schema) Admit(ctx context.Context, fldPath *field.Path, obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	integers(obj)
	unknown := structuralpruning.PruneWithOptions(obj, s.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, path := range unknown {
		errs = append(errs, field.Forbidden(childPath(fldPath, path), "unknown field: the "+s.kind+" CRD's schema has no such field"))
	}
	structuraldefaulting.Default(obj, s.structural)
	errs = append(errs, validation.ValidateCustomResource(fldPath, obj, s.validator)...)
	if s.cel != nil {
		celErrs, _ := s.cel.Validate(ctx, fldPath, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// integers turns the whole float64 numbers in v into int64 in place, as
// the API server's JSON decoding (k8s.io/apimachinery/pkg/util/json) gives
// them: the CEL rules compare integer fields as int.
func integers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = integers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = integers(e)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	return v
}

// childPath is fldPath followed by a dotted path the pruning reports.
func childPath(fldPath *field.Path, dotted string) *field.Path {
	p := fldPath
	for _, part := range strings.Split(dotted, ".") {
		if p == nil {
			p = field.NewPath(part)
		} else {
			p = p.Child(part)
		}
	}
	return p
}
