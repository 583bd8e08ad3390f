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
