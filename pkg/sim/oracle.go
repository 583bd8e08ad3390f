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
	"slices"

	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// placedAs is the policy whose scheduler stream (the tie-breaking between
// equally scored nodes) p draws from. The oracle places exactly as
// k8s-besteffort does, so that without its cap it is k8s-besteffort to
// the last pod.
func (p Policy) placedAs() Policy {
	if p == PolicyOracle {
		return PolicyK8sBestEffort
	}
	return p
}

// batchWithoutCPU reports whether the policy's Batch jobs ask for no CPU
// (cpu.shares 2).
func (p Policy) batchWithoutCPU() bool { return p == PolicyK8sBestEffort || p == PolicyOracle }

// oracle is PolicyOracle's cap. Each step, on each node, after every pod's
// demand is known and before CFS shares the node, it holds the node's
// non-Prod pods to the largest total CPU B for which the harm model puts
// no more of the node's Prod pods over their SLO than it would with no
// non-Prod CPU at all (usually none). No agent can do this: it reads the
// step's Prod demand before the step runs.
//
// The cap is shared as a cgroup quota over the non-Prod pods would be,
// with one refinement in the cap's favour: the pods at two shares, which
// do not compete with Prod on equal CFS terms (no queueing term in L),
// get the cap first, by weight; pods with a CPU request (k8s-besteffort's
// Mid) get what is left. B is searched to the millicore, evaluating the
// model exactly as runNode does: first at the closed-form solution of
// L = SLO for an uncontended node (checked at B and B + 1), then by
// bisection when that check fails. While the node is not contended the
// verdict only worsens as B grows, so there B is the largest clear cap.
// Past the point where it becomes contended the verdict need not be
// monotone (CFS may trim Prod by less than StarvedPercent, which lowers ρ
// and so L), and a larger clear cap may exist that the oracle does not
// look for: bisecting the whole range instead found 0.2 % more work on
// the 50-node synthetic day (24 799 against 24 752 core-h) and the same
// on alibaba at 30 nodes.
//
// The cap is applied as a CPU quota on each pod it holds back, the way
// node QoS throttles, so the "throttled" figures of an oracle run are the
// cap's. Where the cap binds it records what giving it up at that node-step
// would have added (the non-Prod CPU of the uncapped step) and cost (the
// Prod pods it would have put over their SLO): OracleResult.Budget spends
// a harm budget on them.
type oracle struct {
	// Scratch: each pod's allowed CPU before the cap, and cfsShare's.
	orig, demand, weight, got []int64
	active                    []int

	items     []budgetItem
	capped    int64 // node-steps where the cap bound
	prodSteps int64 // node-steps with Prod pods and non-Prod demand
	nodeSteps int64 // node-steps with Prod pods
	heldMilli int64 // Σ what the cap held back, millicore-steps
}

func newOracle(p Policy) *oracle {
	if p != PolicyOracle {
		return nil
	}
	return &oracle{}
}

// oracleVerdict is what the harm model says of one node-step with a cap.
type oracleVerdict struct {
	violating  int64 // Prod pods over their SLO
	nonProdUse int64 // millicores
}

// capNode caps n's non-Prod pods for the step about to run: it sets the
// CPU quota of each pod the cap holds back (the quota runNode applies, as
// it applies node QoS's; n.throttled counts them) and lifts last step's.
// It runs before runNode computes the step, on the same demand
// (run.demandCPU).
func (o *oracle) capNode(r *run, n *node) {
	hot := n.hot
	o.orig = o.orig[:0]
	var nonProd, prodPods, prodWant int64
	for i := range hot {
		p := &hot[i]
		if p.quota != qos.NoQuota {
			p.quota = qos.NoQuota
			n.throttled--
		}
		// What runNode will compute: the oracle's pods have no band cap
		// and, but for the oracle's, no quota.
		d := int64(p.demand)
		if p.kind == kindService {
			d = r.demandCPU[p.demand]
		}
		if p.cpuLimit > 0 && d > int64(p.cpuLimit) {
			d = int64(p.cpuLimit)
		}
		p.wantCPU = int32(d)
		o.orig = append(o.orig, d)
		if p.kind == kindService {
			prodPods++
			prodWant += d
		} else {
			nonProd += d
		}
	}
	if prodPods == 0 {
		return
	}
	o.nodeSteps++
	if nonProd == 0 {
		return
	}
	o.prodSteps++
	avail := max(n.spec.CPUMilli-n.spec.SystemCPUMilli, 0)
	full := o.eval(r, n, avail, nonProd)
	if full.violating == 0 {
		return
	}
	// Prod alone: when it fits the node nothing is starved and L is 1.
	base := oracleVerdict{}
	if prodWant > avail {
		base = o.eval(r, n, avail, 0)
	}
	if full.violating <= base.violating {
		// Prod alone is over the node: no cap helps it.
		return
	}
	lo, hi, best := int64(0), nonProd, base
	// Where the node is not contended and no competing pod gets CPU, L is
	// 1 + κ·(B ÷ C)·ρ: try the B that solves L = SLO first, and bisect
	// only when the model says otherwise at B or B + 1.
	if h := r.cfg.Harm; prodWant > 0 && prodWant < avail && h.InterferencePercent > 0 {
		rho := float64(prodWant) / float64(avail)
		guess := min(nonProd-1, avail-prodWant, int64((h.SLOLatencyFactor-1)/(h.InterferencePercent/100*rho)*float64(n.spec.CPUMilli)))
		if guess > 0 {
			if v := o.eval(r, n, avail, guess); v.violating <= base.violating {
				lo, best = guess, v
				if o.eval(r, n, avail, guess+1).violating > base.violating {
					hi = guess + 1
				}
			} else {
				hi = guess
			}
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if v := o.eval(r, n, avail, mid); v.violating <= base.violating {
			lo, best = mid, v
		} else {
			hi = mid
		}
	}
	o.apply(n, lo)
	for i := range hot {
		if p := &hot[i]; p.kind != kindService && int64(p.allowedCPU) < o.orig[i] {
			p.quota = int64(p.allowedCPU)
			n.throttled++
		}
	}
	o.capped++
	o.heldMilli += full.nonProdUse - best.nonProdUse
	o.items = append(o.items, budgetItem{gain: full.nonProdUse - best.nonProdUse, cost: full.violating - base.violating})
}

// eval applies the cap capMilli, shares the node as runNode does and
// returns the harm model's verdict on the step, computed as runNode
// computes it.
func (o *oracle) eval(r *run, n *node, avail, capMilli int64) oracleVerdict {
	total := o.apply(n, capMilli)
	hot := n.hot
	for i := range hot {
		hot[i].usageCPU = hot[i].allowedCPU
	}
	if total > avail {
		r.shareCPU(n, avail)
	}
	h := r.cfg.Harm
	var prodUse, nonProdUse, competing, prodPods, starved int64
	for i := range hot {
		p := &hot[i]
		u := int64(p.usageCPU)
		if p.kind == kindService {
			prodUse += u
			prodPods++
			if float64(u) < float64(p.wantCPU)*(1-h.StarvedPercent/100) {
				starved++
			}
			continue
		}
		nonProdUse += u
		if p.shares > minShares {
			competing += u
		}
	}
	v := oracleVerdict{violating: starved, nonProdUse: nonProdUse}
	if h.latencyFactor(prodUse, nonProdUse, competing, avail, n.spec.CPUMilli) > h.SLOLatencyFactor {
		v.violating = prodPods
	}
	return v
}

// apply sets the non-Prod pods' allowedCPU to their share of capMilli
// (the pods at two shares first, by weight, then the others by their
// cpu.shares), Prod pods' to what they were allowed before the cap, and
// returns the node's allowed total.
func (o *oracle) apply(n *node, capMilli int64) int64 {
	hot := n.hot
	k := len(hot)
	if cap(o.demand) < k {
		o.demand, o.weight, o.got, o.active = make([]int64, k), make([]int64, k), make([]int64, k), make([]int, 0, k)
	}
	o.demand, o.weight, o.got = o.demand[:k], o.weight[:k], o.got[:k]
	var total int64
	left := capMilli
	for _, competing := range [2]bool{false, true} {
		for i := range hot {
			p := &hot[i]
			o.demand[i], o.weight[i] = 0, int64(max(p.shares, p.beShares, 1))
			if p.kind != kindService && (p.shares > minShares) == competing {
				o.demand[i] = o.orig[i]
			}
		}
		cfsShare(max(left, 0), o.demand, o.weight, o.got, o.active)
		for i := range hot {
			p := &hot[i]
			if p.kind != kindService && (p.shares > minShares) == competing {
				p.allowedCPU = int32(o.got[i])
				left -= o.got[i]
				total += o.got[i]
			}
		}
	}
	for i := range hot {
		if p := &hot[i]; p.kind == kindService {
			p.allowedCPU = int32(o.orig[i])
			total += o.orig[i]
		}
	}
	return total
}

// result is the oracle's account for the PolicyResult (nil for other
// policies).
func (o *oracle) result(r *run) *OracleResult {
	if o == nil {
		return nil
	}
	res := &OracleResult{HeldBackCoreHours: milliStepsToCoreHours(float64(o.heldMilli), r.stepSec)}
	if o.nodeSteps > 0 {
		res.CappedPercent = 100 * float64(o.capped) / float64(o.nodeSteps)
	}
	if pct := r.cfg.OracleHarmBudgetPercent; pct > 0 {
		sortItems(o.items)
		extra := spend(o.items, pct/100*float64(r.stats.prodPodSteps))
		res.Budget = &Budget{HarmPercent: pct, ExtraCoreHours: milliStepsToCoreHours(extra, r.stepSec)}
	}
	return res
}

// OracleResult is what PolicyOracle's caps did, beside its Summary (whose
// Prod SLO-violation time is what no cap could avoid: Prod alone over its
// node).
type OracleResult struct {
	// CappedPercent is the share of node-steps with Prod pods in which the
	// cap held non-Prod CPU back.
	CappedPercent float64 `json:"cappedPercent"`
	// HeldBackCoreHours is Σ, over those node-steps, of what the node's
	// non-Prod pods would have used in that step without the cap less what
	// they used, in core-hours: the step-by-step price of zero harm. (The
	// runs' later steps differ, so it is not the difference of the oracle's
	// and k8s-besteffort's work.)
	HeldBackCoreHours float64 `json:"heldBackCoreHours"`
	// Budget is what Config.OracleHarmBudgetPercent buys, when set.
	Budget *Budget `json:"budget,omitempty"`
}

// Budget is what a harm budget buys: giving up the oracle's cap on the
// node-steps where that adds the most non-Prod CPU per Prod pod put over
// its SLO, best ratio first and the last one fractionally (so the figure
// is the linear relaxation's, an upper bound of the all-or-nothing
// choice), until the budget is spent. Each node-step is counted as it was
// in the oracle's run: what the extra CPU would have changed in later
// steps is not followed.
type Budget struct {
	// HarmPercent is the budget: Prod SLO-violation time, in percent of
	// Prod pod-time, on top of the harm no policy avoids.
	HarmPercent float64 `json:"harmPercent"`
	// ExtraCoreHours is the non-Prod CPU it buys, in core-hours.
	ExtraCoreHours float64 `json:"extraCoreHours"`
}

// budgetItem is one node-step where more non-Prod CPU (gain, millicores
// for one step) costs harm (cost, Prod pods put over their SLO).
type budgetItem struct {
	gain, cost int64
}

// sortItems orders items by gain per cost, best first; items that cost
// nothing come first.
func sortItems(items []budgetItem) {
	slices.SortFunc(items, func(a, b budgetItem) int {
		// a.gain/a.cost > b.gain/b.cost, without dividing.
		l, r := a.gain*b.cost, b.gain*a.cost
		switch {
		case l > r:
			return -1
		case l < r:
			return 1
		}
		return 0
	})
}

// spend takes sorted items in order while their cost fits the budget
// (pod-steps) and a fraction of the first that does not, and returns the
// gain, in millicore-steps.
func spend(items []budgetItem, budget float64) float64 {
	var gain float64
	for _, it := range items {
		if float64(it.cost) <= budget {
			gain += float64(it.gain)
			budget -= float64(it.cost)
			continue
		}
		if budget > 0 {
			gain += float64(it.gain) * budget / float64(it.cost)
		}
		break
	}
	return gain
}

func milliStepsToCoreHours(milliSteps float64, stepSeconds int64) float64 {
	return milliSteps * float64(stepSeconds) / 1000 / 3600
}
