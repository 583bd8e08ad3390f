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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BandPreemptionArgs configures the BandPreemption plugin
// (docs/design/preemption.md#victim-rules). It carries DefaultPreemption's
// args, which BandPreemption hands to the default preemption it wraps; the
// victim rules themselves take no arguments: they come from PriorityClass
// annotations. The versioned form, v1.BandPreemptionArgs, documents the
// defaults.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type BandPreemptionArgs struct {
	metav1.TypeMeta

	// MinCandidateNodesPercentage is the share of nodes, in percent of the
	// cluster in [0, 100], the preemption dry-runs at least before choosing
	// a node.
	MinCandidateNodesPercentage int32
	// MinCandidateNodesAbsolute is the least number of nodes (at least 0)
	// the preemption dry-runs; it and MinCandidateNodesPercentage may not
	// both be 0.
	MinCandidateNodesAbsolute int32
}
