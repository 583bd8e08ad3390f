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

// Package policy decides which ColocationPolicy settings govern a node: the
// "default" policy, overridden field by field by the pool policy that
// selects the node (highest precedence, then first by name).
//
// It must stay a pure function of the node's labels and the policies: the
// manager writes its answer into NodeMetric specs and Node tiers, and the
// simulator asks it the same question.
package policy

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Resolved is the policy that governs one node, every field set.
type Resolved struct {
	// Sources are the policies that contributed, default first.
	Sources []string
	Tiers   *v1alpha1.TierPolicy
	Collect *v1alpha1.NodeMetricCollectPolicy
	Predict *v1alpha1.PredictPolicy
}

// SelectorError says a pool policy's node selector is invalid; the policy
// is skipped for every node.
type SelectorError struct {
	Policy string
	Err    error
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("ColocationPolicy %s: spec.nodeSelector: %v", e.Policy, e.Err)
}

func (e *SelectorError) Unwrap() error { return e.Err }

// ForNode resolves the policy for a node with the given labels. A missing
// default policy means every setting takes its built-in default. Pool
// policies whose selector is invalid are skipped and reported in errs (the
// caller records them on the policy's status); they never stop the node
// from getting a policy.
func ForNode(nodeLabels map[string]string, policies []*v1alpha1.ColocationPolicy) (Resolved, []error) {
	var (
		def   *v1alpha1.ColocationPolicy
		pools []*v1alpha1.ColocationPolicy
		errs  []error
	)
	set := labels.Set(nodeLabels)
	for _, p := range policies {
		if p.Name == v1alpha1.DefaultColocationPolicyName {
			def = p
			continue
		}
		matches, err := Selects(p, set)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if matches {
			pools = append(pools, p)
		}
	}
	slices.SortFunc(pools, func(a, b *v1alpha1.ColocationPolicy) int {
		if c := cmp.Compare(b.Spec.Precedence, a.Spec.Precedence); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})

	var spec v1alpha1.ColocationPolicySpec
	var sources []string
	if def != nil {
		spec = *def.Spec.DeepCopy()
		sources = append(sources, def.Name)
	}
	if len(pools) > 0 {
		pool := pools[0]
		sources = append(sources, pool.Name)
		spec.Tiers = overlayTiers(spec.Tiers, pool.Spec.Tiers)
		spec.CollectPolicy = overlayCollect(spec.CollectPolicy, pool.Spec.CollectPolicy)
		spec.PredictPolicy = overlayPredict(spec.PredictPolicy, pool.Spec.PredictPolicy)
	}
	return Resolved{
		Sources: sources,
		Tiers:   v1alpha1.TierPolicyWithDefaults(spec.Tiers),
		Collect: v1alpha1.CollectPolicyWithDefaults(spec.CollectPolicy),
		Predict: v1alpha1.PredictPolicyWithDefaults(spec.PredictPolicy),
	}, errs
}

// Selects reports whether a pool policy selects a node. The default policy
// selects every node; a pool policy without a selector selects none (it
// would silently replace the default everywhere).
func Selects(p *v1alpha1.ColocationPolicy, nodeLabels labels.Set) (bool, error) {
	if p.Name == v1alpha1.DefaultColocationPolicyName {
		return true, nil
	}
	if p.Spec.NodeSelector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector.AsMetav1())
	if err != nil {
		return false, &SelectorError{Policy: p.Name, Err: err}
	}
	return sel.Matches(nodeLabels), nil
}

// The overlays copy every field the pool policy sets over the default's.
// Booleans that are not pointers (midIncludeUnallocated) can only be turned
// on by a pool, never off: an unset bool cannot be told from false.

func overlayTiers(base, over *v1alpha1.TierPolicy) *v1alpha1.TierPolicy {
	if over == nil {
		return base
	}
	out := &v1alpha1.TierPolicy{}
	if base != nil {
		out = base.DeepCopy()
	}
	o := over.DeepCopy()
	setIf(&out.Enabled, o.Enabled)
	setIf(&out.MidCPUThresholdPercent, o.MidCPUThresholdPercent)
	setIf(&out.MidMemoryThresholdPercent, o.MidMemoryThresholdPercent)
	setIf(&out.ReclaimRatioPercent, o.ReclaimRatioPercent)
	out.MidIncludeUnallocated = out.MidIncludeUnallocated || o.MidIncludeUnallocated
	setIf(&out.BatchCPUThresholdPercent, o.BatchCPUThresholdPercent)
	setIf(&out.BatchMemoryThresholdPercent, o.BatchMemoryThresholdPercent)
	setIf(&out.DegradeSeconds, o.DegradeSeconds)
	setIf(&out.UpdateThresholdPercent, o.UpdateThresholdPercent)
	return out
}

func overlayCollect(base, over *v1alpha1.NodeMetricCollectPolicy) *v1alpha1.NodeMetricCollectPolicy {
	if over == nil {
		return base
	}
	out := &v1alpha1.NodeMetricCollectPolicy{}
	if base != nil {
		out = base.DeepCopy()
	}
	o := over.DeepCopy()
	setIf(&out.AggregateDurationSeconds, o.AggregateDurationSeconds)
	setIf(&out.ReportIntervalSeconds, o.ReportIntervalSeconds)
	if len(o.AggregateDurations) > 0 {
		out.AggregateDurations = o.AggregateDurations
	}
	return out
}

func overlayPredict(base, over *v1alpha1.PredictPolicy) *v1alpha1.PredictPolicy {
	if over == nil {
		return base
	}
	out := &v1alpha1.PredictPolicy{}
	if base != nil {
		out = base.DeepCopy()
	}
	o := over.DeepCopy()
	if o.Model != "" {
		out.Model = o.Model
	}
	if len(o.MaxOf) > 0 {
		out.MaxOf = o.MaxOf
	}
	setIf(&out.NSigma, o.NSigma)
	setIf(&out.Percentile, o.Percentile)
	setIf(&out.HalfLifeSeconds, o.HalfLifeSeconds)
	setIf(&out.ColdStartSeconds, o.ColdStartSeconds)
	setIf(&out.BorgOvercommitPercent, o.BorgOvercommitPercent)
	setIf(&out.SafetyMarginPercent, o.SafetyMarginPercent)
	setIf(&out.ResourceDiffThresholdPercent, o.ResourceDiffThresholdPercent)
	setIf(&out.ForceUpdateSeconds, o.ForceUpdateSeconds)
	return out
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}
