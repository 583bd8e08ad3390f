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

// Package v1alpha1 holds the waterline.dev/v1alpha1 API: NodeMetric (what a
// node's agent observed and predicted), NodeQOS (the node waterlines and how
// the agent acts on low-priority pods when they are crossed) and
// ColocationPolicy (tiers, collection, prediction and colocation profiles).
//
// +kubebuilder:object:generate=true
// +groupName=waterline.dev
// +k8s:deepcopy-gen=package
package v1alpha1
