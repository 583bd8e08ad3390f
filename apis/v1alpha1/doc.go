// Package v1alpha1 holds the waterline.dev/v1alpha1 API: NodeMetric (what a
// node's agent observed and predicted), NodeQOS (the node waterlines and how
// the agent acts on low-priority pods when they are crossed) and
// ColocationPolicy (tiers, collection, prediction and colocation profiles).
//
// +kubebuilder:object:generate=true
// +groupName=waterline.dev
// +k8s:deepcopy-gen=package
package v1alpha1
