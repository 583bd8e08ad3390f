// Package v1 is the versioned form of Waterline's scheduler plugin args
// (kubescheduler.config.k8s.io/v1, next to the in-tree args): what users
// write in a KubeSchedulerConfiguration's pluginConfig. Defaulting only
// fills fields left unset; conversion to the internal form is by hand.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
package v1
