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

// Package manager holds waterline-manager's controllers (the NodeMetric
// lifecycle, tier allocatable, NodeQOS and ColocationPolicy status) and
// admission webhooks (colocation profiles, priority-class quota), one
// subpackage each. cmd/waterline-manager wires
// them into a controller-runtime manager.
//
// The RBAC markers below cover what the manager itself needs beyond its
// controllers: leader election and events.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
package manager
