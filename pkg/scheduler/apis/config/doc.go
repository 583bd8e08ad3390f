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

// Package config holds the internal (unversioned) arguments of Waterline's
// scheduler plugins, in the kubescheduler.config.k8s.io group so that a
// KubeSchedulerConfiguration's pluginConfig decodes them (v1 is the
// versioned form users write; scheme registers both).
//
// It decides nothing and must never change what users wrote: defaulting is
// in v1, validation in validation, behaviour in the plugins.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
package config
