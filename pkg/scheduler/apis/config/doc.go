// Package config holds the internal (unversioned) arguments of Waterline's
// scheduler plugins, in the kubescheduler.config.k8s.io group so that a
// KubeSchedulerConfiguration's pluginConfig decodes them (v1 is the
// versioned form users write; scheme registers both).
//
// It decides nothing and must never change what users wrote: defaulting is
// in v1, validation in validation, behaviour in the plugins.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
package config
