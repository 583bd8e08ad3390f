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

// Package scheme adds Waterline's plugin args to kube-scheduler's scheme, so
// that the scheduler decodes, defaults and converts them when it reads a
// KubeSchedulerConfiguration. Import it for that effect; it decides nothing.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
)

var (
	// Scheme is kube-scheduler's own scheme, which reads the configuration
	// file.
	Scheme = kubeschedulerscheme.Scheme
	// Codecs decodes strictly: an unknown field in the args is an error.
	Codecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)
)

// kube-scheduler builds its scheme in its own init, before ours runs; add
// our args to it once the package is imported.
func init() {
	AddToScheme(Scheme)
}

// AddToScheme adds the internal and v1 plugin args to a scheme.
func AddToScheme(scheme *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))
}
