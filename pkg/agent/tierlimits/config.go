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

package tierlimits

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// DefaultBandCapFloorPercent is the default of Config.BandCapFloorPercent.
const DefaultBandCapFloorPercent int32 = 10

// Config tunes the tier enforcer.
type Config struct {
	// BandCap turns the Batch band cap on: the quotas of the pods that
	// request batch-cpu add up to at most the node's allocatable
	// waterline.dev/batch-cpu (see tiers.BandCaps). Off, each pod is held to its
	// own tier limit only. Default true.
	BandCap *bool
	// BandCapFloorPercent is the smallest quota the band cap leaves a pod,
	// in percent (1-100) of its CPU request, and never below 10m (the
	// kernel's minimum quota). Default 10.
	BandCapFloorPercent *int32
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.BandCap == nil {
		c.BandCap = ptr.To(true)
	}
	if c.BandCapFloorPercent == nil {
		c.BandCapFloorPercent = ptr.To(DefaultBandCapFloorPercent)
	}
}

// Validate returns every problem of a defaulted c, each naming its field
// under fldPath and its value.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.BandCap == nil {
		errs = append(errs, field.Required(fldPath.Child("bandCap"), "must be set (SetDefaults sets true)"))
	}
	switch p := c.BandCapFloorPercent; {
	case p == nil:
		errs = append(errs, field.Required(fldPath.Child("bandCapFloorPercent"), "must be set (SetDefaults sets 10)"))
	case *p < 1 || *p > 100:
		errs = append(errs, field.Invalid(fldPath.Child("bandCapFloorPercent"), *p, "must be between 1 and 100"))
	}
	return errs
}
