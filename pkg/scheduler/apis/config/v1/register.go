package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedschemev1 "k8s.io/kube-scheduler/config/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the version users write plugin args in.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: "v1"}

var (
	// localSchemeBuilder is kube-scheduler's v1 builder, for the reason
	// given in the internal config package: the scheduler's private
	// plugin-args scheme is built from it. The generated conversions
	// (zz_generated.conversion.go) register themselves with it too.
	localSchemeBuilder = &schedschemev1.SchemeBuilder
	// AddToScheme adds the v1 plugin args, their defaulting and conversion
	// (and the in-tree v1 types) to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

// addKnownTypes registers the v1 args of every Waterline plugin. A new
// plugin's args are one more line here.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&LoadAwareArgs{},
		&BandPreemptionArgs{},
	)
	return nil
}

func init() {
	// RegisterDefaults is generated (zz_generated.defaults.go) from the
	// SetDefaults_* functions in defaults.go.
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}
