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

package scheme

import (
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
)

// TestEveryPluginArgsRegistered: every Waterline plugin args kind is in the
// one scheme in both forms, the scheme defaults its v1 form (generated
// RegisterDefaults) and converts it to the internal form and back
// (generated RegisterConversions). A plugin whose args miss a
// SetDefaults_ function, or a type added to one package and not the
// other, fails here.
func TestEveryPluginArgsRegistered(t *testing.T) {
	kinds := func(pkg string, version string) []string {
		var out []string
		for gvk, typ := range Scheme.AllKnownTypes() {
			if gvk.Version == version && typ.PkgPath() == pkg {
				out = append(out, gvk.Kind)
			}
		}
		slices.Sort(out)
		return out
	}
	internalPkg := reflect.TypeFor[config.LoadAwareArgs]().PkgPath()
	v1Pkg := reflect.TypeFor[configv1.LoadAwareArgs]().PkgPath()
	want := []string{"BandPreemptionArgs", "LoadAwareArgs"}
	if diff := cmp.Diff(want, kinds(internalPkg, runtime.APIVersionInternal)); diff != "" {
		t.Errorf("internal plugin args in the scheme (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, kinds(v1Pkg, configv1.SchemeGroupVersion.Version)); diff != "" {
		t.Errorf("v1 plugin args in the scheme (-want +got):\n%s", diff)
	}
	for _, kind := range want {
		t.Run(kind, func(t *testing.T) {
			obj, err := Scheme.New(configv1.SchemeGroupVersion.WithKind(kind))
			if err != nil {
				t.Fatal(err)
			}
			empty := obj.DeepCopyObject()
			Scheme.Default(obj)
			if reflect.DeepEqual(empty, obj) {
				t.Errorf("the scheme does not default v1 %s", kind)
			}
			internal, err := Scheme.New(config.SchemeGroupVersion.WithKind(kind))
			if err != nil {
				t.Fatal(err)
			}
			if err := Scheme.Convert(obj, internal, nil); err != nil {
				t.Fatalf("converting v1 %s to internal: %v", kind, err)
			}
			back, err := Scheme.New(configv1.SchemeGroupVersion.WithKind(kind))
			if err != nil {
				t.Fatal(err)
			}
			if err := Scheme.Convert(internal, back, nil); err != nil {
				t.Fatalf("converting internal %s to v1: %v", kind, err)
			}
			// TypeMeta is set by the encoder, not by conversion.
			back.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
			if diff := cmp.Diff(obj, back); diff != "" {
				t.Errorf("defaulted v1 %s → internal → v1 (-want +got):\n%s", kind, diff)
			}
		})
	}
}
