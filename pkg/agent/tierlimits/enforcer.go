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
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
)

// Name is the module name of the Enforcer.
const Name = "tierlimits"

// Intent sources of the Enforcer.
const (
	// SourceTier states each tier pod's own limits.
	SourceTier resctl.Source = "tier"
	// SourceBatchBand states the Batch band cap.
	SourceBatchBand resctl.Source = "batch-band"
)

var _ agent.CycleModule = &Enforcer{}

// Enforcer is the cycle module that turns tier resources into cgroup
// intents. Add it to the agent before the resctl.Reconciler it feeds.
type Enforcer struct {
	cfg Config
	rc  *resctl.Reconciler

	tier, band map[types.UID]resctl.Intent
	// tiers caches TierOf per pod object: informer objects are replaced,
	// never changed, on update, so the same pointer has the same spec.
	tiers      map[types.UID]cachedTier
	seen       map[types.UID]struct{}
	members    []tiers.BandMember
	memberUIDs []types.UID
	// binding remembers whether the band cap held any pod below its limit
	// last cycle, to log when that changes.
	binding bool
	// protectedNS are the spec.protectedNamespaces of the NodeQOS objects
	// selecting the node, kept while the Node and NodeQOS objects they
	// came from are the same.
	protectedNS     []string
	protectedNSNode *corev1.Node
	protectedNSFrom []*v1alpha1.NodeQOS
}

type cachedTier struct {
	pod  *corev1.Pod
	tier PodTier
	ok   bool
}

// New validates cfg (after defaulting a copy) and returns an Enforcer
// stating intents to rc.
func New(cfg Config, rc *resctl.Reconciler) (*Enforcer, error) {
	cfg.SetDefaults()
	if errs := cfg.Validate(field.NewPath("tierLimits")); len(errs) > 0 {
		return nil, fmt.Errorf("configuring tier enforcement: %w", errs.ToAggregate())
	}
	if rc == nil {
		return nil, errors.New("configuring tier enforcement: a cgroup limit reconciler is required")
	}
	return &Enforcer{
		cfg: cfg, rc: rc,
		tier: map[types.UID]resctl.Intent{}, band: map[types.UID]resctl.Intent{},
		tiers: map[types.UID]cachedTier{}, seen: map[types.UID]struct{}{},
	}, nil
}

// Name implements agent.CycleModule.
func (e *Enforcer) Name() string { return Name }

// Cycle implements agent.CycleModule: every cycle it states, for every pod
// with tier resources, the limits kubelet would have set, and the Batch
// band cap. Level-triggered: a pod gone from the snapshot loses its
// intents.
func (e *Enforcer) Cycle(ctx context.Context, s *agent.Snapshot) error {
	logger := klog.FromContext(ctx).WithName(Name)
	clear(e.tier)
	clear(e.band)
	e.members = e.members[:0]
	e.memberUIDs = e.memberUIDs[:0]
	var reserved int64
	clear(e.seen)
	protectedNS := e.protectedNamespaces(s)
	for _, pod := range s.Pods {
		e.seen[pod.UID] = struct{}{}
		c, hit := e.tiers[pod.UID]
		if !hit || c.pod != pod {
			c.pod = pod
			c.tier, c.ok = TierOf(pod)
			e.tiers[pod.UID] = c
		}
		t := c.tier
		if !c.ok {
			continue
		}
		if in := t.Intent(); !in.IsZero() {
			e.tier[pod.UID] = in
		}
		if t.BatchCPURequestMilli <= 0 {
			continue
		}
		if extension.QoSProtection(pod) != extension.NotProtected || extension.IsProtectedNamespace(pod.Namespace, protectedNS...) {
			// Never held below its own limit (a DaemonSet, a Prod pod
			// asking batch-cpu, a pod on its way out, a pod of a
			// namespace the NodeQOS protects): it keeps what it asked
			// for, taken off the allocatable first.
			reserved += max(t.CPULimitMilli, t.CPURequestMilli)
			continue
		}
		e.members = append(e.members, tiers.BandMember{RequestMilli: t.CPURequestMilli, LimitMilli: t.CPULimitMilli})
		e.memberUIDs = append(e.memberUIDs, pod.UID)
	}
	if alloc, ok := batchAllocatable(s.Node); ok && *e.cfg.BandCap && len(e.members) > 0 {
		caps := tiers.BandCaps(alloc-reserved, e.members, *e.cfg.BandCapFloorPercent, resctl.MinQuotaMilli)
		var sum int64
		for i, c := range caps {
			sum += c
			if m := e.members[i]; m.LimitMilli == 0 || c < m.LimitMilli {
				e.band[e.memberUIDs[i]] = resctl.Intent{CPUQuotaMilli: c, BelowOwnLimits: true}
			}
		}
		binding := len(e.band) > 0
		if binding != e.binding {
			logger.V(2).Info("Batch band cap changed", "binding", binding, "batchAllocatable", alloc, "reserved", reserved, "pods", len(e.members), "cappedPods", len(e.band), "sumOfCaps", sum)
		}
		e.binding = binding
		logger.V(4).Info("Batch band cap", "batchAllocatable", alloc, "reserved", reserved, "pods", len(e.members), "cappedPods", len(e.band), "sumOfCaps", sum)
	} else {
		e.binding = false
	}
	for uid := range e.tiers {
		if _, ok := e.seen[uid]; !ok {
			delete(e.tiers, uid)
		}
	}
	e.rc.SetIntents(SourceTier, e.tier)
	e.rc.SetIntents(SourceBatchBand, e.band)
	return nil
}

// protectedNamespaces returns the spec.protectedNamespaces of the NodeQOS
// objects selecting the node (docs/design/node-qos.md#protected-pods): the
// band cap holds pods below their own limits, which node QoS never does to
// pods of those namespaces. Informer objects are replaced, never changed,
// on update, so the same pointers select the same namespaces.
func (e *Enforcer) protectedNamespaces(s *agent.Snapshot) []string {
	if s.Node == nil {
		return nil
	}
	if s.Node == e.protectedNSNode && sameObjects(s.NodeQOSes, e.protectedNSFrom) {
		return e.protectedNS
	}
	all := make([]v1alpha1.NodeQOS, len(s.NodeQOSes))
	for i, nq := range s.NodeQOSes {
		all[i] = *nq
	}
	selected, _ := qos.SelectNodeQOS(all, s.Node.Labels)
	var ns []string
	for _, nq := range selected {
		ns = append(ns, nq.Spec.ProtectedNamespaces...)
	}
	e.protectedNS, e.protectedNSNode, e.protectedNSFrom = ns, s.Node, slices.Clone(s.NodeQOSes)
	return ns
}

// sameObjects reports whether a and b hold the same objects in any order
// (an informer lists them in no fixed order); a and b are a handful of
// NodeQOS objects, without duplicates.
func sameObjects(a, b []*v1alpha1.NodeQOS) bool {
	if len(a) != len(b) {
		return false
	}
	for _, o := range a {
		if !slices.Contains(b, o) {
			return false
		}
	}
	return true
}

// batchAllocatable is the node's allocatable batch-cpu in millicores, and
// false when the node publishes none (no tiers on it: no band cap).
func batchAllocatable(node *corev1.Node) (int64, bool) {
	if node == nil {
		return 0, false
	}
	q, ok := node.Status.Allocatable[extension.ResourceBatchCPU]
	if !ok {
		return 0, false
	}
	return q.Value(), true
}
