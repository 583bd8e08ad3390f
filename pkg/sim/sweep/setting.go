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

package sweep

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/sim"
)

// Setting is one point of the sweep: the CPU waterlines of the NodeQOS
// every node gets, the Batch tier's CPU threshold of the default
// ColocationPolicy, and LoadAware's CPU usage threshold. Everything else
// is the simulation's default.
type Setting struct {
	// ForbidPercent, ThrottlePercent, RestorePercent and EvictPercent are
	// the NodeQOS CPU lines, percent of node CPU. RestorePercent 0 is
	// unset (it then equals ThrottlePercent).
	ForbidPercent   int32 `json:"forbidPercent"`
	ThrottlePercent int32 `json:"throttlePercent"`
	RestorePercent  int32 `json:"restorePercent,omitempty"`
	EvictPercent    int32 `json:"evictPercent"`
	// BatchPercent is tiers.batchCPUThresholdPercent: Batch CPU =
	// allocatable × this − Prod and Mid use − system.
	BatchPercent int32 `json:"batchPercent"`
	// LoadAwarePercent is LoadAware's usageThresholds[cpu]: nodes estimated
	// above it take no pod.
	LoadAwarePercent int64 `json:"loadAwarePercent"`
}

// DefaultSetting is the simulation's defaults (sim.DefaultNodeQOS, the
// ColocationPolicy API's Batch threshold, LoadAware's default CPU
// threshold), so that the sweep's "defaults" row is what `waterline sim`
// runs.
func DefaultSetting() Setting {
	cpu := sim.DefaultNodeQOS()[0].Spec.CPU
	return Setting{
		ForbidPercent:    ptr.Deref(cpu.ForbidSchedulingPercent, 0),
		ThrottlePercent:  ptr.Deref(cpu.ThrottlePercent, 0),
		RestorePercent:   ptr.Deref(cpu.RestorePercent, 0),
		EvictPercent:     ptr.Deref(cpu.EvictPercent, 0),
		BatchPercent:     v1alpha1.DefaultBatchCPUThresholdPercent,
		LoadAwarePercent: sim.DefaultLoadAwareSpec().UsageThresholds[corev1.ResourceCPU],
	}
}

// Grid moves the lines and the thresholds the way the defaults relate
// them: for each throttle line L (also the forbid-scheduling line, as in
// the defaults), restore at L − 10 and evict at L + 10 (at most 100); for
// each threshold T, the Batch threshold and LoadAware's CPU threshold both
// at T. The defaults are the point (70, 65).
func Grid(throttles []int32, thresholds []int32) []Setting {
	var out []Setting
	for _, l := range throttles {
		for _, t := range thresholds {
			out = append(out, Setting{
				ForbidPercent: l, ThrottlePercent: l, RestorePercent: l - 10, EvictPercent: min(l+10, 100),
				BatchPercent: t, LoadAwarePercent: int64(t),
			})
		}
	}
	return out
}

// String is the setting in a table cell: lines throttle/evict, then the
// Batch and LoadAware thresholds.
func (s Setting) String() string {
	return fmt.Sprintf("lines %d/%d, batch %d, LoadAware %d", s.ThrottlePercent, s.EvictPercent, s.BatchPercent, s.LoadAwarePercent)
}

// Validate returns every field out of range, under path.
func (s Setting) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	pct := func(name string, v int64, lo int64) {
		if v < lo || v > 100 {
			errs = append(errs, field.Invalid(path.Child(name), v, fmt.Sprintf("must be in [%d, 100]", lo)))
		}
	}
	pct("forbidPercent", int64(s.ForbidPercent), 1)
	pct("throttlePercent", int64(s.ThrottlePercent), 1)
	if s.RestorePercent != 0 {
		pct("restorePercent", int64(s.RestorePercent), 1)
	}
	pct("evictPercent", int64(s.EvictPercent), 1)
	pct("batchPercent", int64(s.BatchPercent), 0)
	pct("loadAwarePercent", s.LoadAwarePercent, 1)
	if s.ForbidPercent > s.ThrottlePercent {
		errs = append(errs, field.Invalid(path.Child("forbidPercent"), s.ForbidPercent, fmt.Sprintf("must be at most throttlePercent (%d)", s.ThrottlePercent)))
	}
	if s.EvictPercent <= s.ThrottlePercent {
		errs = append(errs, field.Invalid(path.Child("evictPercent"), s.EvictPercent, fmt.Sprintf("must be above throttlePercent (%d)", s.ThrottlePercent)))
	}
	if s.RestorePercent > s.ThrottlePercent {
		errs = append(errs, field.Invalid(path.Child("restorePercent"), s.RestorePercent, fmt.Sprintf("must be at most throttlePercent (%d)", s.ThrottlePercent)))
	}
	return errs
}

// Apply sets cfg's NodeQOS, ColocationPolicies and LoadAware to the
// simulation's defaults changed by s.
func (s Setting) Apply(cfg *sim.Config) {
	nqs := sim.DefaultNodeQOS()
	cpu := nqs[0].Spec.CPU
	cpu.ForbidSchedulingPercent = ptr.To(s.ForbidPercent)
	cpu.ThrottlePercent = ptr.To(s.ThrottlePercent)
	cpu.RestorePercent = nil
	if s.RestorePercent != 0 {
		cpu.RestorePercent = ptr.To(s.RestorePercent)
	}
	cpu.EvictPercent = ptr.To(s.EvictPercent)
	cfg.NodeQOS = nqs

	cps := sim.DefaultColocationPolicies()
	for i := range cps {
		if cps[i].Name != v1alpha1.DefaultColocationPolicyName {
			continue
		}
		tiers := cps[i].Spec.Tiers
		if tiers == nil {
			tiers = &v1alpha1.TierPolicy{}
		}
		tiers.BatchCPUThresholdPercent = ptr.To(s.BatchPercent)
		cps[i].Spec.Tiers = tiers
	}
	cfg.ColocationPolicies = cps

	la := sim.DefaultLoadAwareSpec()
	la.UsageThresholds = maps.Clone(la.UsageThresholds)
	la.UsageThresholds[corev1.ResourceCPU] = s.LoadAwarePercent
	cfg.LoadAware = &la
}
