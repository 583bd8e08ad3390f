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

package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the internal version of the scheduler's config
// group, which plugin args share with the in-tree ones.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: runtime.APIVersionInternal}

var (
	// localSchemeBuilder is kube-scheduler's own builder: the scheduler
	// converts pluginConfig args with a private scheme it builds from that
	// builder on first use, so plugin args must be registered there, before
	// the scheduler starts. That is why this package registers in init: it
	// is the one way in, and it only adds types.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme adds the internal plugin args (and the in-tree ones) to a
	// scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

// addKnownTypes registers the internal args of every Waterline plugin. A
// new plugin's args are one more line here.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&LoadAwareArgs{},
		&BandPreemptionArgs{},
	)
	return nil
}

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}
