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
	"testing"

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
