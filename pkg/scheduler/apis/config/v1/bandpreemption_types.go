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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BandPreemptionArgs configures the BandPreemption plugin
// (docs/design/preemption.md#victim-rules): the default preemption with
// Waterline's victim rules (NonPreemptible PriorityClasses, DaemonSet and
// static pods spared, preemptionPolicy Never honoured). The rules come from
// PriorityClass annotations; these args only tune the default preemption it
// wraps, with the same meaning as DefaultPreemptionArgs.
//
// The preemption dry-runs about max(numNodes × minCandidateNodesPercentage
// / 100, minCandidateNodesAbsolute) nodes, capped at the nodes where the
// pod failed for reasons preemption could fix, before it picks one.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type BandPreemptionArgs struct {
	metav1.TypeMeta `json:",inline"`

	// MinCandidateNodesPercentage is the least share of the cluster's nodes
	// the preemption dry-runs, in percent. Range [0, 100]; default 10.
	// +optional
	MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
	// MinCandidateNodesAbsolute is the least number of nodes the preemption
	// dry-runs. At least 0, and not 0 together with
	// minCandidateNodesPercentage; default 100.
	// +optional
	MinCandidateNodesAbsolute *int32 `json:"minCandidateNodesAbsolute,omitempty"`
}
