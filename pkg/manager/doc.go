// Package manager holds waterline-manager's controllers (the NodeMetric
// lifecycle, tier allocatable) and admission webhooks (colocation profiles,
// priority-class quota), one subpackage each. cmd/waterline-manager wires
// them into a controller-runtime manager.
//
// The RBAC markers below cover what the manager itself needs beyond its
// controllers: leader election and events.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
package manager
