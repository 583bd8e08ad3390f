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

package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Headroom is an upper bound, for ANY policy, of the Mid and Batch CPU a
// workload can run at a given Prod harm under the harm model. It needs no
// simulation: the services, their nodes and their demand are the
// workload's, the same for every policy, and the harm model's verdict on a
// node-step depends on the node's non-Prod CPU only through its total b
// and the part of it that competes with Prod.
//
// For a node-step whose Prod pods want P millicores in total (each capped
// at its limit) on a node of capacity C and A millicores for pods, a
// policy that keeps every Prod pod of the node within its SLO must give
// each Prod pod at least (1 − s) of what it wants (s = StarvedPercent),
// so Prod uses at least (1 − s)·P, ρ ≥ ρ₀ = (1 − s)·P ÷ A, and non-Prod
// pods use at most A − (1 − s)·P; and L ≤ SLO with L ≥ 1 + κ·b·ρ (the
// queueing factor is at least 1) gives b ≤ (SLO − 1) ÷ (κ·ρ₀). So the
// non-Prod CPU of that node-step is at most
//
//	H = min(A − (1 − s)·P, C·(SLO − 1) ÷ (κ·ρ₀))
//
// whatever the placement, the queue, the tiers or the node QoS. On a
// node-step a policy lets go over the SLO, it costs all the node's Prod
// pods (L is the node's) and non-Prod pods can use at most A − (1 − s)·P
// while Prod is still served, at most A if the policy lets them starve
// Prod. Spending a budget of Prod pod-time over the SLO on the node-steps
// that gain the most per Prod pod (the linear relaxation: the last one
// fractionally) bounds what any policy within that budget can run. Where
// Prod alone wants more than (1 − s)·P ≥ A the node-step is over the SLO
// whatever runs beside it: it counts as free, with its whole A.
//
// The bound is also at most the work the jobs offer: every job running
// at its demand from its arrival to its end or the end of the run.
type Headroom struct {
	// ZeroHarmCoreHours is Σ H over node-steps (plus A on node-steps Prod
	// alone breaks): the non-Prod CPU any policy can run with no harm beyond
	// what Prod does to itself.
	ZeroHarmCoreHours float64 `json:"zeroHarmCoreHours"`
	// OfferedCoreHours is the most the jobs could use by the end of the run.
	OfferedCoreHours float64 `json:"offeredCoreHours"`
	// ProdAloneOverPercent is the share of Prod pod-time on node-steps
	// where Prod alone wants more than the node can serve.
	ProdAloneOverPercent float64 `json:"prodAloneOverPercent"`

	prodPodSteps int64
	stepSeconds  int64
	// served: going over the SLO, Prod still served; starving: non-Prod
	// may take all of A. Both sorted.
	served, starving []budgetItem
}

// NewHeadroom computes the bound of w under cfg's harm model, on cfg's
// step (cfg is defaulted here).
func NewHeadroom(w *workload.Workload, cfg Config) (*Headroom, error) {
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid simulation config: %w", errs.ToAggregate())
	}
	if errs := w.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid workload %s: %w", w.Name, errs.ToAggregate())
	}
	h := cfg.Harm
	stepSec := int64(cfg.Step / time.Second)
	steps := int64(w.Duration / cfg.Step)
	served := 1 - h.StarvedPercent/100
	kappa := h.InterferencePercent / 100
	byNode := make([][]*workload.Service, len(w.Nodes))
	for i := range w.Services {
		s := &w.Services[i]
		byNode[s.Node] = append(byNode[s.Node], s)
	}
	hr := &Headroom{stepSeconds: stepSec}
	var zero float64 // millicore-steps
	var aloneOver int64
	for ni := range w.Nodes {
		nd := &w.Nodes[ni]
		svcs := byNode[ni]
		avail := max(nd.CPUMilli-nd.SystemCPUMilli, 0)
		pods := int64(len(svcs))
		for step := range steps {
			if pods == 0 {
				zero += float64(avail)
				continue
			}
			sec := step * stepSec
			var want int64
			for _, s := range svcs {
				d := s.CPUDemandMilli(w, sec)
				if s.CPULimitMilli > 0 && d > s.CPULimitMilli {
					d = s.CPULimitMilli
				}
				want += d
			}
			hr.prodPodSteps += pods
			prodMin := served * float64(want)
			if prodMin >= float64(avail) {
				zero += float64(avail)
				aloneOver += pods
				continue
			}
			a := float64(avail) - prodMin
			limit := a
			if rho := prodMin / float64(avail); kappa > 0 && rho > 0 {
				limit = min(a, float64(nd.CPUMilli)*(h.SLOLatencyFactor-1)/(kappa*rho))
			}
			limit = math.Floor(limit)
			zero += limit
			if a > limit {
				hr.served = append(hr.served, budgetItem{gain: int64(a - limit), cost: pods})
			}
			if float64(avail) > limit {
				hr.starving = append(hr.starving, budgetItem{gain: int64(float64(avail) - limit), cost: pods})
			}
		}
	}
	sortItems(hr.served)
	sortItems(hr.starving)
	hr.ZeroHarmCoreHours = milliStepsToCoreHours(zero, stepSec)
	if hr.prodPodSteps > 0 {
		hr.ProdAloneOverPercent = 100 * float64(aloneOver) / float64(hr.prodPodSteps)
	}
	var offered float64 // millicore-seconds
	for i := range w.Jobs {
		j := &w.Jobs[i]
		left := max(w.Duration-j.Arrival, 0)
		offered += float64(min(j.WorkMilliSeconds(), j.CPUDemandMilli*int64(left/time.Second)))
	}
	hr.OfferedCoreHours = offered / 1000 / 3600
	return hr, nil
}

// HeadroomBound is the bound at one harm budget.
type HeadroomBound struct {
	// HarmPercent is the budget: Prod SLO-violation time, in percent of
	// Prod pod-time, beyond what Prod alone causes.
	HarmPercent float64 `json:"harmPercent"`
	// ServedCoreHours is the bound for policies that serve Prod what it
	// wants (within StarvedPercent) on every node-step; StarvingCoreHours
	// for policies that may take Prod's CPU on the node-steps they let go
	// over the SLO. Both at most OfferedCoreHours.
	ServedCoreHours   float64 `json:"servedCoreHours"`
	StarvingCoreHours float64 `json:"starvingCoreHours"`
}

// Bound returns the bound at harmPercent of Prod pod-time over the SLO.
func (hr *Headroom) Bound(harmPercent float64) (HeadroomBound, error) {
	if !(harmPercent >= 0 && harmPercent <= 100) {
		return HeadroomBound{}, fmt.Errorf("harm budget %v %%: must be in [0, 100]", harmPercent)
	}
	budget := harmPercent / 100 * float64(hr.prodPodSteps)
	at := func(items []budgetItem) float64 {
		return min(hr.OfferedCoreHours, hr.ZeroHarmCoreHours+milliStepsToCoreHours(spend(items, budget), hr.stepSeconds))
	}
	return HeadroomBound{HarmPercent: harmPercent, ServedCoreHours: at(hr.served), StarvingCoreHours: at(hr.starving)}, nil
}
