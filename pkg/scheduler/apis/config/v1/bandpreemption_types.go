package v1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// BandPreemption's defaults: DefaultPreemption's, so that switching from
// DefaultPreemption to BandPreemption examines the same nodes.
const (
	DefaultMinCandidateNodesPercentage int32 = 10
	DefaultMinCandidateNodesAbsolute   int32 = 100
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

// SetDefaults_BandPreemptionArgs fills the fields left unset and never
// changes what is set.
func SetDefaults_BandPreemptionArgs(obj *BandPreemptionArgs) { //nolint:revive // The scheme's naming convention.
	if obj.MinCandidateNodesPercentage == nil {
		obj.MinCandidateNodesPercentage = ptr.To(DefaultMinCandidateNodesPercentage)
	}
	if obj.MinCandidateNodesAbsolute == nil {
		obj.MinCandidateNodesAbsolute = ptr.To(DefaultMinCandidateNodesAbsolute)
	}
}

// Convert_v1_BandPreemptionArgs_To_config_BandPreemptionArgs converts
// defaulted v1 args to internal ones; unset pointers become 0.
func Convert_v1_BandPreemptionArgs_To_config_BandPreemptionArgs(in *BandPreemptionArgs, out *config.BandPreemptionArgs, _ conversion.Scope) error { //nolint:revive // The scheme's naming convention.
	*out = config.BandPreemptionArgs{
		MinCandidateNodesPercentage: ptr.Deref(in.MinCandidateNodesPercentage, 0),
		MinCandidateNodesAbsolute:   ptr.Deref(in.MinCandidateNodesAbsolute, 0),
	}
	return nil
}

// Convert_config_BandPreemptionArgs_To_v1_BandPreemptionArgs converts
// internal args to v1 ones, every field set.
func Convert_config_BandPreemptionArgs_To_v1_BandPreemptionArgs(in *config.BandPreemptionArgs, out *BandPreemptionArgs, _ conversion.Scope) error { //nolint:revive // The scheme's naming convention.
	*out = BandPreemptionArgs{
		MinCandidateNodesPercentage: ptr.To(in.MinCandidateNodesPercentage),
		MinCandidateNodesAbsolute:   ptr.To(in.MinCandidateNodesAbsolute),
	}
	return nil
}

// DefaultedBandPreemptionArgs returns the internal args a configuration
// without pluginConfig for BandPreemption gets.
func DefaultedBandPreemptionArgs() config.BandPreemptionArgs {
	var v1args BandPreemptionArgs
	SetDefaults_BandPreemptionArgs(&v1args)
	var out config.BandPreemptionArgs
	_ = Convert_v1_BandPreemptionArgs_To_config_BandPreemptionArgs(&v1args, &out, nil) // never fails
	return out
}

// registerBandPreemption adds the v1 BandPreemptionArgs, its defaulting and
// its conversions to a scheme.
func registerBandPreemption(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &BandPreemptionArgs{})
	s.AddTypeDefaultingFunc(&BandPreemptionArgs{}, func(obj any) { SetDefaults_BandPreemptionArgs(obj.(*BandPreemptionArgs)) })
	if err := s.AddConversionFunc((*BandPreemptionArgs)(nil), (*config.BandPreemptionArgs)(nil), func(a, b any, scope conversion.Scope) error {
		return Convert_v1_BandPreemptionArgs_To_config_BandPreemptionArgs(a.(*BandPreemptionArgs), b.(*config.BandPreemptionArgs), scope)
	}); err != nil {
		return fmt.Errorf("registering BandPreemptionArgs conversion: %w", err)
	}
	if err := s.AddConversionFunc((*config.BandPreemptionArgs)(nil), (*BandPreemptionArgs)(nil), func(a, b any, scope conversion.Scope) error {
		return Convert_config_BandPreemptionArgs_To_v1_BandPreemptionArgs(a.(*config.BandPreemptionArgs), b.(*BandPreemptionArgs), scope)
	}); err != nil {
		return fmt.Errorf("registering BandPreemptionArgs conversion: %w", err)
	}
	return nil
}
