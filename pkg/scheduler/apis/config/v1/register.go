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

package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedschemev1 "k8s.io/kube-scheduler/config/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the version users write plugin args in.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: "v1"}

var (
	// localSchemeBuilder is kube-scheduler's v1 builder, for the reason
	// given in the internal config package: the scheduler's private
	// plugin-args scheme is built from it. The generated conversions
	// (zz_generated.conversion.go) register themselves with it too.
	localSchemeBuilder = &schedschemev1.SchemeBuilder
	// AddToScheme adds the v1 plugin args, their defaulting and conversion
	// (and the in-tree v1 types) to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

// addKnownTypes registers the v1 args of every Waterline plugin. A new
// plugin's args are one more line here.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&LoadAwareArgs{},
		&BandPreemptionArgs{},
	)
	return nil
}

func init() {
	// RegisterDefaults is generated (zz_generated.defaults.go) from the
	// SetDefaults_* functions in defaults.go.
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}
