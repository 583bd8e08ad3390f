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

// Package v1 is the versioned form of Waterline's scheduler plugin args
// (kubescheduler.config.k8s.io/v1, next to the in-tree args): what users
// write in a KubeSchedulerConfiguration's pluginConfig. Defaulting only
// fills fields left unset (SetDefaults_* in defaults.go); conversion to the
// internal form and RegisterDefaults are generated (conversion-gen,
// defaulter-gen: make generate).
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/waterline-dev/waterline/pkg/scheduler/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
// +kubebuilder:object:generate=true
package v1
