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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultColocationPolicyName is the policy that applies to every node no
// other policy selects.
const DefaultColocationPolicyName = "default"

// TierPolicy says how much of a node is sold as Mid and Batch tier resources
// (docs/design/tiers.md).
//
// An unset field takes, on a pool policy, the default policy's value, and
// otherwise the built-in default ("Default:" below). The schema sets no
// defaults: the API server would store them, and every field of a pool's
// tiers would override the default policy's (docs/design/tiers.md).
type TierPolicy struct {
	// Enabled turns the Mid and Batch allocatable on. When false the manager
	// sets both to zero on the selected nodes.
	// Default: true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MidCPUThresholdPercent caps Mid CPU at this share of node allocatable:
	// Mid = min(Reclaimable, Allocatable × threshold%).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 30.
	// +optional
	MidCPUThresholdPercent *int32 `json:"midCPUThresholdPercent,omitempty"`
	// MidMemoryThresholdPercent caps Mid memory likewise.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 30.
	// +optional
	MidMemoryThresholdPercent *int32 `json:"midMemoryThresholdPercent,omitempty"`
	// ReclaimRatioPercent is the share of what Prod pods requested that may
	// be reclaimed: Reclaimable = max(0, ratio × Allocated[Prod] − Peak[Prod]).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 100.
	// +optional
	ReclaimRatioPercent *int32 `json:"reclaimRatioPercent,omitempty"`
	// MidIncludeUnallocated would add what no Prod pod requested to Mid
	// (the mixed variant of docs/design/tiers.md). It is refused: the
	// variant is only safe when Prod pods can preempt Mid pods once the
	// mixed allocatable is exhausted, and Mid pods ask for
	// waterline.dev/mid-* resources that Prod pods never compete for, so
	// no preemption would fire. It stays in the API for when BandPreemption
	// implements that.
	// +kubebuilder:validation:XValidation:rule="!self",message="midIncludeUnallocated (the mixed Mid variant) is not supported yet: it is only safe if Prod pods can preempt Mid pods when the mixed allocatable is exhausted, which BandPreemption does not do; leave it false"
	// +optional
	MidIncludeUnallocated bool `json:"midIncludeUnallocated,omitempty"`
	// BatchCPUThresholdPercent: Batch CPU = max(0, Allocatable × threshold%
	// − real use of Prod and Mid pods − system use).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 75.
	// +optional
	BatchCPUThresholdPercent *int32 `json:"batchCPUThresholdPercent,omitempty"`
	// BatchMemoryThresholdPercent: Batch memory likewise.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 65.
	// +optional
	BatchMemoryThresholdPercent *int32 `json:"batchMemoryThresholdPercent,omitempty"`
	// DegradeSeconds: a NodeMetric older than this resets the node's tier
	// allocatable to zero, so nothing is sold on a node whose agent is silent.
	// At most a year (365 days).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31536000
	// Default: 600.
	// +optional
	DegradeSeconds *int64 `json:"degradeSeconds,omitempty"`
	// UpdateThresholdPercent: the manager rewrites a node's tier allocatable
	// only when it moves by more than this share of node allocatable (or
	// drops to or rises from zero), to spare the API server.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// Default: 5.
	// +optional
	UpdateThresholdPercent *int32 `json:"updateThresholdPercent,omitempty"`
}

// ColocationProfile turns matching pods into colocated pods at creation
// (the manager's mutating webhook applies it).
type ColocationProfile struct {
	// Name identifies the profile in the pod annotation that records it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// NamespaceSelector selects pods by the labels of their namespace.
	// Unset matches every namespace. A selector that would not parse (an
	// unknown operator, In without values, a key that is not a label key)
	// is refused.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	// Selector selects pods by their labels. Unset matches every pod.
	// Checked as NamespaceSelector is.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`
	// Band given to matching pods (the waterline.dev/band label). For mid and
	// batch the containers' cpu and memory are rewritten into the tier's
	// extended resources.
	// +kubebuilder:validation:Enum=prod;mid;batch;free
	Band string `json:"band"`
	// PriorityClassName set on matching pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// SchedulerName set on matching pods.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
	// Labels added to matching pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ColocationPolicySpec is how colocation runs on the nodes a policy selects.
type ColocationPolicySpec struct {
	// NodeSelector picks the nodes of a pool. The policy named "default"
	// must leave it empty and applies to every node; another policy's
	// fields override the default's on the nodes it selects. When several
	// non-default policies select a node, the one with the highest
	// precedence wins, then the first by name. A selector that would not
	// parse is refused.
	// +optional
	NodeSelector *LabelSelector `json:"nodeSelector,omitempty"`
	// Precedence orders pool policies that select the same node.
	// +optional
	Precedence int32 `json:"precedence,omitempty"`
	// Tiers is the Mid/Batch over-commitment policy.
	// +optional
	Tiers *TierPolicy `json:"tiers,omitempty"`
	// CollectPolicy is written into the NodeMetric spec of selected nodes.
	// +optional
	CollectPolicy *NodeMetricCollectPolicy `json:"collectPolicy,omitempty"`
	// PredictPolicy is written into the NodeMetric spec of selected nodes.
	// +optional
	PredictPolicy *PredictPolicy `json:"predictPolicy,omitempty"`
	// Profiles turn pods into colocated pods at creation; the first profile
	// that matches a pod applies. Only the default policy's profiles are
	// used, since a pod has no node when it is created.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Profiles []ColocationProfile `json:"profiles,omitempty"`
}

// ColocationPolicyStatus is written by waterline-manager.
type ColocationPolicyStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SelectedNodes is how many nodes this policy governs.
	// +optional
	SelectedNodes int32 `json:"selectedNodes,omitempty"`
	// Conditions of the policy.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ColocationPolicy configures colocation for a pool of nodes: how much is
// sold as Mid and Batch tier resources, how agents collect and predict, and
// which pods become colocated pods. "default" covers every node; others
// override it for the nodes they select.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cp
// +kubebuilder:validation:XValidation:rule="self.metadata.name != 'default' || !has(self.spec.nodeSelector)",message="the default policy applies to every node and must not set spec.nodeSelector",fieldPath=".spec.nodeSelector"
// +kubebuilder:printcolumn:name="Precedence",type=integer,JSONPath=`.spec.precedence`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.selectedNodes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ColocationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ColocationPolicySpec `json:"spec,omitempty"`
	// +optional
	Status ColocationPolicyStatus `json:"status,omitempty"`
}

// ColocationPolicyList is a list of ColocationPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ColocationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ColocationPolicy `json:"items"`
}
