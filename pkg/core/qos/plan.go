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

package qos

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// NodeState is what the shell measured on the node for one cycle.
type NodeState struct {
	// Usage is the latest node usage per metric; a metric without an entry
	// is missing.
	Usage NodeUsage
	// CPUWindow holds the averages over the CPU eviction window, or nil
	// until the shell has a full window; without it nothing is evicted for
	// CPU.
	CPUWindow *CPUWindow
}

// Mode says how an action was planned for a metric.
type Mode string

// Modes of an Outcome.
const (
	// ModePrecise acted on the shortest sorted prefix of candidates that
	// closes the gap.
	ModePrecise Mode = "Precise"
	// ModeSatisfaction is the satisfaction-based CPU eviction
	// (docs/design/node-qos.md#satisfaction-based-cpu-eviction): the gap is CPU
	// request to remove so the remaining BE pods are satisfied.
	ModeSatisfaction Mode = "Satisfaction"
	// ModeFallback acted without a measurable gap: throttled every
	// candidate one step, or evicted one pod.
	ModeFallback Mode = "Fallback"
	// ModeHold changed nothing on purpose (the reason says why).
	ModeHold Mode = "Hold"
)

// Quota is the CPU quota a candidate should run at.
type Quota struct {
	Pod PodRef
	// CurrentMilli is the quota Waterline held the pod at (NoQuota: none).
	CurrentMilli int64
	// DesiredMilli is the quota it should hold the pod at from now on
	// (NoQuota: none; the pod runs at its own limit).
	DesiredMilli int64
	// Reason says why the quota changes; empty when it does not.
	Reason string
}

// Changed reports whether the quota changes.
func (q Quota) Changed() bool { return q.CurrentMilli != q.DesiredMilli }

// Eviction is a pod to evict.
type Eviction struct {
	Pod PodRef
	// Metric is the metric the eviction relieves.
	Metric MetricName
	// Release is what the plan counted this eviction to release, in the
	// unit of the Outcome it belongs to: the metric's usage, or, for the
	// satisfaction-based CPU eviction, the pod's CPU request in millicores.
	Release int64
	// Reason says why this pod, for the event and the log.
	Reason string
}

// Outcome sums up one action on one metric.
type Outcome struct {
	Action Action
	Metric MetricName
	Mode   Mode
	// Gap is what had to be closed, in the metric's unit (CPU request
	// millicores for ModeSatisfaction, room under the line for
	// ThrottleUp); 0 when unknown (ModeFallback).
	Gap int64
	// Pending is what closes the gap without acting on anyone: pods
	// already terminating, quotas planned earlier that the sample does not
	// show yet, this cycle's evictions for other metrics.
	Pending int64
	// Released is what the pods acted on release (for ThrottleUp: grant).
	Released int64
	// Acted is how many pods the action changed.
	Acted int
}

// Closed reports whether the plan closes the gap.
func (o Outcome) Closed() bool { return o.Pending+o.Released >= o.Gap }

// ReleasedPerGap is the over-action ratio: what the pods acted on release ÷
// what was left to close after Pending. 1 is exact, above 1 is
// over-action, below 1 means the candidates ran out. It is 0 when nothing
// was left to close or the gap is unknown.
func (o Outcome) ReleasedPerGap() float64 {
	need := o.Gap - o.Pending
	if o.Gap <= 0 || need <= 0 {
		return 0
	}
	return float64(o.Released) / float64(need)
}

// Plan is what the node should do this cycle. It is level-triggered: Quotas
// states the desired quota of every eligible candidate, so applying it
// heals whatever drifted (a kubelet that reset a cgroup, an agent restart).
// Pods not in Quotas -- protected pods, pods gone -- must run without a
// Waterline quota.
type Plan struct {
	// ForbidScheduling says new Batch/Free pods must not be scheduled here.
	ForbidScheduling bool
	// Quotas lists every eligible candidate, in the order given.
	Quotas []Quota
	// Evictions lists pods to evict, in the order to evict them. When an
	// eviction is refused (a PDB), drop that pod from the candidates and
	// plan again: the planner then picks the next pod.
	Evictions []Eviction
	// Outcomes sum up each action taken or held, per metric.
	Outcomes []Outcome
	// Reasons explain the plan for the log, one line per decision.
	Reasons []string
	// Hysteresis is the state to pass to the next cycle.
	Hysteresis Hysteresis
}

// Acted returns how many distinct pods the plan throttles, restores or
// evicts.
func (p *Plan) Acted() int {
	n := len(p.Evictions)
	for _, q := range p.Quotas {
		if q.Changed() && !slices.ContainsFunc(p.Evictions, func(e Eviction) bool { return e.Pod == q.Pod }) {
			n++
		}
	}
	return n
}

// Outcome returns the outcome of action a on metric m.
func (p *Plan) Outcome(a Action, m MetricName) (Outcome, bool) {
	for _, o := range p.Outcomes {
		if o.Action == a && o.Metric == m {
			return o, true
		}
	}
	return Outcome{}, false
}

// Planner plans one node's actions. It is immutable once built and safe
// for concurrent use; Plan is a pure function of its arguments.
type Planner struct {
	waterlines Waterlines
	metrics    []Metric // by action priority, highest first
	// Lines of each action, ordered by their metric's action priority.
	forbid, throttle, evict []Line
	throttleFallback        *Metric
	evictFallback           *Metric
	// counters are the lines with counters, resolved for advancing them.
	counters counterLines
	// quietUnder[i] is the lowest line with a counter of metric
	// counters.metrics[i]: the node is quiet only at or under it (Quiet).
	quietUnder []int64
	// terse: leave every reason empty (Terse).
	terse bool
}

// NewPlanner returns a planner for the waterlines, with the metrics of reg.
// It copies both, so later changes to either do not reach it. It returns
// every reason the waterlines cannot be planned with reg.
func NewPlanner(reg *Registry, waterlines *Waterlines) (*Planner, error) {
	if reg == nil || waterlines == nil {
		return nil, fmt.Errorf("building QoS planner: registry and waterlines are required")
	}
	if errs := waterlines.Validate(reg); len(errs) > 0 {
		return nil, fmt.Errorf("building QoS planner: %w", errs.ToAggregate())
	}
	p := &Planner{waterlines: *waterlines, metrics: reg.Metrics()}
	p.waterlines.Lines = slices.Clone(waterlines.Lines)
	p.waterlines.ProtectedNamespaces = slices.Clone(waterlines.ProtectedNamespaces)
	p.counters = p.waterlines.counterLines()
	p.quietUnder = make([]int64, len(p.counters.metrics))
	for i := range p.quietUnder {
		p.quietUnder[i] = math.MaxInt64
	}
	for _, l := range p.counters.lines {
		p.quietUnder[l.m] = min(p.quietUnder[l.m], l.trigger)
	}
	for i := range p.metrics {
		m := &p.metrics[i]
		if m.Throttleable && p.throttleFallback == nil {
			p.throttleFallback = m
		}
		if m.Evictable && p.evictFallback == nil {
			p.evictFallback = m
		}
		for _, l := range p.waterlines.Lines {
			if l.Metric != m.Name {
				continue
			}
			switch l.Action {
			case ActionForbidScheduling:
				p.forbid = append(p.forbid, l)
			case ActionThrottleDown:
				p.throttle = append(p.throttle, l)
			case ActionEvict:
				p.evict = append(p.evict, l)
			}
		}
	}
	return p, nil
}

// Terse returns a planner that plans exactly as p does but explains
// nothing: Plan.Reasons, Quota.Reason and Eviction.Reason stay empty.
// Formatting the reasons is most of what a plan allocates; a caller that
// never logs them, like a simulator planning thousands of nodes every
// step, need not pay for them. No decision reads a reason.
func (p *Planner) Terse() *Planner {
	t := *p
	t.terse = true
	return &t
}

// Waterlines returns a copy of the planner's waterlines.
func (p *Planner) Waterlines() Waterlines {
	w := p.waterlines
	w.Lines = slices.Clone(p.waterlines.Lines)
	return w
}

func (p *Planner) metric(name MetricName) *Metric {
	for i := range p.metrics {
		if p.metrics[i].Name == name {
			return &p.metrics[i]
		}
	}
	return nil
}

// slot is the planner's working copy of one eligible candidate.
type slot struct {
	c       *Candidate
	quota   int64
	evicted bool
	reason  string
}

// cycle is the scratch state of one Plan call.
type cycle struct {
	p     *Planner
	node  NodeState
	h     Hysteresis
	all   []Candidate
	slots []slot
	order []*slot
	// pending is throttlePrecise's scratch.
	pending []int64
	plan    *Plan
}

// cycles keeps the scratch of finished Plan calls for the next ones: a
// node plans every few seconds, a simulator thousands of nodes a step, and
// the planner is shared by goroutines.
var cycles = sync.Pool{New: func() any { return new(cycle) }}

// Plan decides this cycle's actions from the node's state, the candidate
// pods (every pod of the node may be passed: protected pods are ignored
// here whatever the caller did) and the hysteresis of the previous cycle,
// which it advances with this cycle's usage into Plan.Hysteresis.
//
// Order of decisions: forbid scheduling; evictions, by metric, highest
// action priority first; then throttling down, or restoring, on the pods
// not being evicted.
func (p *Planner) Plan(node NodeState, candidates []Candidate, h Hysteresis) Plan {
	var plan Plan
	p.PlanInto(&plan, node, candidates, h)
	return plan
}

// PlanInto is Plan writing the plan into dst, whose previous contents it
// overwrites, reusing the memory of its Quotas, Evictions, Outcomes,
// Reasons and Hysteresis: for a caller that plans many nodes and is done
// with each plan before the next. Where Plan leaves a slice nil, PlanInto
// may leave it empty. h may be dst.Hysteresis (its memory is then not
// reused) but must not share memory with it otherwise.
func (p *Planner) PlanInto(dst *Plan, node NodeState, candidates []Candidate, h Hysteresis) {
	quotas := dst.Quotas
	counters := dst.Hysteresis.Counters
	if len(h.Counters) > 0 && cap(counters) > 0 && &h.Counters[0] == &counters[:1][0] {
		counters = nil
	}
	*dst = Plan{
		Hysteresis: p.advance(counters, h, node.Usage),
		Evictions:  dst.Evictions[:0],
		Outcomes:   dst.Outcomes[:0],
		Reasons:    dst.Reasons[:0],
	}
	plan := dst
	cy := cycles.Get().(*cycle)
	defer func() {
		// Drop the references to the caller's data before pooling.
		clear(cy.slots)
		clear(cy.order)
		*cy = cycle{slots: cy.slots[:0], order: cy.order[:0], pending: cy.pending[:0]}
		cycles.Put(cy)
	}()
	cy.p, cy.node, cy.h, cy.all, cy.plan = p, node, plan.Hysteresis, candidates, plan
	cy.slots = slices.Grow(cy.slots[:0], len(candidates))
	memo := eligibleMemo{namespaces: p.waterlines.ProtectedNamespaces}
	for i := range candidates {
		c := &candidates[i]
		if memo.eligible(c) {
			cy.slots = append(cy.slots, slot{c: c, quota: c.CPUQuotaMilli})
		}
	}
	cy.order = slices.Grow(cy.order[:0], len(cy.slots))[:len(cy.slots)]
	if n := len(candidates) - len(cy.slots); n > 0 {
		cy.reasonf("Ignored %d of %d pods: protected from node QoS (Prod/Mid band, DaemonSet, static/mirror, system-critical, terminating, kube-system or a protected namespace)", n, len(candidates))
	}

	cy.forbidScheduling()
	cy.evictions()
	if !cy.throttleDown() {
		cy.restore()
	}

	if quotas == nil || cap(quotas) < len(cy.slots) {
		quotas = make([]Quota, len(cy.slots))
	}
	plan.Quotas = quotas[:len(cy.slots)]
	for i := range cy.slots {
		s := &cy.slots[i]
		plan.Quotas[i] = Quota{Pod: s.c.PodRef, CurrentMilli: s.c.CPUQuotaMilli, DesiredMilli: s.quota, Reason: s.reason}
	}
}

// explain reports whether the plan gives its reasons (the planner is not
// Terse).
func (cy *cycle) explain() bool { return !cy.p.terse }

// reasonf adds a line to Plan.Reasons.
func (cy *cycle) reasonf(format string, args ...any) {
	if cy.explain() {
		cy.plan.Reasons = append(cy.plan.Reasons, fmt.Sprintf(format, args...))
	}
}

// sprintf formats a pod's reason: empty when the plan explains nothing.
func (cy *cycle) sprintf(format string, args ...any) string {
	if !cy.explain() {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

func (cy *cycle) outcome(o Outcome) { cy.plan.Outcomes = append(cy.plan.Outcomes, o) }

// sorted orders the slots not being evicted with s.
func (cy *cycle) sorted(s Sorter) []*slot {
	order := cy.order[:0]
	for i := range cy.slots {
		if !cy.slots[i].evicted {
			order = append(order, &cy.slots[i])
		}
	}
	slices.SortFunc(order, func(a, b *slot) int { return s.Compare(a.c, b.c) })
	return order
}

func (cy *cycle) throttleContext(quota, remaining int64) ThrottleContext {
	return ThrottleContext{
		QuotaMilli:    quota,
		Remaining:     remaining,
		StepPercent:   cy.p.waterlines.Throttle.StepPercent,
		MinCPUPercent: cy.p.waterlines.Throttle.MinCPUPercent,
		NodeCPUMilli:  cy.p.waterlines.Capacity.CPUMilli,
	}
}

func (cy *cycle) forbidScheduling() {
	for _, l := range cy.p.forbid {
		c := cy.h.Counter(ActionForbidScheduling, l.Metric)
		if !c.Active {
			continue
		}
		cy.plan.ForbidScheduling = true
		u, ok := cy.node.Usage[l.Metric]
		usage := "missing"
		if ok && cy.explain() {
			usage = fmt.Sprint(u)
		}
		cy.reasonf("ForbidScheduling %s: on (usage %s, line %d from %s; released after %d samples at or under it, %d so far)",
			l.Metric, usage, l.Value, l.Source, l.RestoreCount, c.Under)
	}
}

// evictions plans evictions for every evict line whose action is on.
func (cy *cycle) evictions() {
	var notQuantified []MetricName
	for _, l := range cy.p.evict {
		if !cy.h.Active(ActionEvict, l.Metric) {
			continue
		}
		m := cy.p.metric(l.Metric)
		u, ok := cy.node.Usage[l.Metric]
		switch {
		case !ok:
			// A missing metric cannot confirm its breach, and eviction
			// cannot be undone: evict nothing for it (a peer evicts every
			// candidate here).
			cy.reasonf("Evict %s: usage missing; evicting nothing for it, the breach cannot be confirmed", l.Metric)
			cy.outcome(Outcome{Action: ActionEvict, Metric: l.Metric, Mode: ModeHold})
		case l.Metric == MetricCPU && m.Evictable:
			cy.evictCPU(l, m, u)
		case !m.EvictQuantified:
			notQuantified = append(notQuantified, l.Metric)
		default:
			cy.evictPrecise(l, m, u)
		}
	}
	if len(notQuantified) > 0 {
		cy.evictFallback(notQuantified)
	}
}

// pendingRelease is what Batch/Free pods already terminating will release
// of metric m without any action: an earlier cycle's evictions whose pods
// have not exited yet. Counting it keeps a slow graceful exit from
// triggering a second round of evictions.
func (cy *cycle) pendingRelease(m *Metric) int64 {
	if !m.Evictable {
		return 0
	}
	var sum int64
	for i := range cy.all {
		if c := &cy.all[i]; terminatingLowPriority(c) {
			sum += max(0, m.Evict(c))
		}
	}
	return sum
}

// evictedRelease is what this cycle's evictions release of metric m.
func (cy *cycle) evictedRelease(m *Metric) int64 {
	if !m.Evictable {
		return 0
	}
	var sum int64
	for i := range cy.slots {
		if s := &cy.slots[i]; s.evicted {
			sum += max(0, m.Evict(s.c))
		}
	}
	return sum
}

func (cy *cycle) evict(s *slot, m MetricName, release int64, reason string) {
	s.evicted = true
	cy.plan.Evictions = append(cy.plan.Evictions, Eviction{Pod: s.c.PodRef, Metric: m, Release: release, Reason: reason})
}

// evictPrecise evicts, in the metric's order, the shortest prefix of pods
// whose release closes usage − line.
func (cy *cycle) evictPrecise(l Line, m *Metric, usage int64) {
	gap := usage - l.Value
	out := Outcome{Action: ActionEvict, Metric: l.Metric, Mode: ModePrecise, Gap: gap}
	pending := cy.pendingRelease(m)
	already := cy.evictedRelease(m)
	out.Pending = pending + already
	remaining := gap - out.Pending
	order := m.sorter()
	if l.PriorityFirst {
		order = PriorityReleaseSorter(l.Metric)
	}
	if remaining > 0 {
		for _, s := range cy.sorted(order) {
			rel := m.Evict(s.c)
			if rel <= 0 {
				// Evicting a pod that releases nothing of the metric is
				// pure over-action.
				continue
			}
			cy.evict(s, l.Metric, rel, cy.sprintf("%s usage %d over evict line %d (%s) by %d; pod releases %d, %d left",
				l.Metric, usage, l.Value, l.Source, gap, rel, max(0, remaining-rel)))
			out.Released += rel
			out.Acted++
			remaining -= rel
			if remaining <= 0 {
				break
			}
		}
	}
	cy.outcome(out)
	cy.reasonf("Evict %s: usage %d over line %d (%s) by %d; %d pending from terminating pods, %d from other evictions; evicting %d pods releasing %d%s",
		l.Metric, usage, l.Value, l.Source, gap, pending, already, out.Acted, out.Released, unclosed(remaining))
}

func unclosed(remaining int64) string {
	if remaining > 0 {
		return fmt.Sprintf("; %d still open: no candidate left", remaining)
	}
	return ""
}

// evictCPU is the satisfaction-based CPU eviction
// (docs/design/node-qos.md#satisfaction-based-cpu-eviction).
func (cy *cycle) evictCPU(l Line, m *Metric, usage int64) {
	out := Outcome{Action: ActionEvict, Metric: l.Metric, Mode: ModeSatisfaction}
	if cy.node.CPUWindow == nil {
		out.Mode = ModeHold
		cy.outcome(out)
		cy.reasonf("Evict %s: usage %d over line %d (%s) but no full %ds window yet; evicting nothing",
			l.Metric, usage, l.Value, l.Source, cy.p.waterlines.CPUEviction.WindowSeconds)
		return
	}
	now := cy.p.SampleBECPU(usage, cy.all)
	chk := CheckSatisfaction(cy.p.waterlines.CPUEviction, l.Value, *cy.node.CPUWindow, now)
	if !chk.Evict() {
		out.Mode = ModeHold
		cy.outcome(out)
		cy.reasonf("Evict %s: usage %d over line %d (%s) but BE pods are not starved: %s; evicting nothing",
			l.Metric, usage, l.Value, l.Source, chk)
		return
	}
	out.Gap = chk.NeededRequestMilli
	for i := range cy.slots {
		if s := &cy.slots[i]; s.evicted {
			out.Pending += s.c.CPURequestMilli
		}
	}
	remaining := out.Gap - out.Pending
	if remaining > 0 {
		order := m.sorter()
		if l.PriorityFirst {
			order = CPUEvictionSorter()
		}
		for _, s := range cy.sorted(order) {
			if s.c.CPURequestMilli <= 0 {
				// Without a request the pod does not count in satisfaction;
				// evicting it would not move it.
				continue
			}
			cy.evict(s, l.Metric, s.c.CPURequestMilli, cy.sprintf(
				"BE CPU satisfaction %d%% under %d%% for %ds over evict line %d (%s); removing %dm of request, %dm left",
				pct(now.UsageMilli, now.RequestMilli), cy.p.waterlines.CPUEviction.SatisfactionLowerPercent,
				cy.p.waterlines.CPUEviction.WindowSeconds, l.Value, l.Source, s.c.CPURequestMilli, max(0, remaining-s.c.CPURequestMilli)))
			out.Released += s.c.CPURequestMilli
			out.Acted++
			remaining -= s.c.CPURequestMilli
			if remaining <= 0 {
				break
			}
		}
	}
	cy.outcome(out)
	cy.reasonf("Evict %s: BE usage %dm of request %dm (allowance %dm), window node average %dm over line %d (%s); need %dm of request removed to reach %d%%: evicting %d pods%s",
		l.Metric, now.UsageMilli, now.RequestMilli, now.AllowanceMilli, cy.node.CPUWindow.NodeCPUMilli, l.Value, l.Source,
		out.Gap, cy.p.waterlines.CPUEviction.SatisfactionUpperPercent, out.Acted, unclosed(remaining))
}

func pct(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return a * 100 / b
}

// evictFallback handles breached metrics whose release cannot be quantified.
// Crane precise execution acts on every candidate then
// (docs/design/node-qos.md#non-quantifiable-fallback); eviction cannot be
// undone, so this evicts one pod per cycle, in the order of the
// highest-priority evictable metric, and lets the next cycle re-evaluate. When
// a precise eviction already runs this cycle it relieves the node too, and the
// fallback adds nothing.
func (cy *cycle) evictFallback(metrics []MetricName) {
	fb := cy.p.evictFallback
	for _, name := range metrics {
		out := Outcome{Action: ActionEvict, Metric: name, Mode: ModeFallback}
		switch {
		case fb == nil:
			out.Mode = ModeHold
			cy.reasonf("Evict %s: not evict-quantified and no evictable metric is registered; evicting nothing", name)
		case len(cy.plan.Evictions) > 0:
			out.Mode = ModeHold
			cy.reasonf("Evict %s: not evict-quantified; %d evictions already planned this cycle, re-evaluating next cycle", name, len(cy.plan.Evictions))
		default:
			order := cy.sorted(fb.sorter())
			if len(order) == 0 {
				cy.reasonf("Evict %s: not evict-quantified; no candidate to evict", name)
				break
			}
			s := order[0]
			rel := fb.Evict(s.c)
			cy.evict(s, name, rel, cy.sprintf("%s over its evict line and not quantifiable: evicting one pod per cycle, first in %s order", name, fb.Name))
			out.Acted = 1
			out.Released = rel
			cy.reasonf("Evict %s: not evict-quantified; evicting one pod (%s) in %s order, re-evaluating next cycle", name, s.c.PodRef, fb.Name)
		}
		cy.outcome(out)
	}
}

// throttleDown plans lower quotas for every throttle line whose action is
// on. It reports whether any throttle action is on, in which case nothing
// is restored.
func (cy *cycle) throttleDown() bool {
	var precise []Line
	var fallbackWhy []string
	on := false
	for _, l := range cy.p.throttle {
		if !cy.h.Active(ActionThrottleDown, l.Metric) {
			continue
		}
		on = true
		m := cy.p.metric(l.Metric)
		u, ok := cy.node.Usage[l.Metric]
		switch {
		case !ok:
			fallbackWhy = append(fallbackWhy, fmt.Sprintf("%s usage missing", l.Metric))
		case u <= l.Value:
			cy.outcome(Outcome{Action: ActionThrottleDown, Metric: l.Metric, Mode: ModeHold})
			cy.reasonf("ThrottleDown %s: on, usage %d at or under line %d; holding quotas until %d samples at or under the restore line",
				l.Metric, u, l.Value, l.RestoreCount)
		case !m.ThrottleQuantified:
			fallbackWhy = append(fallbackWhy, fmt.Sprintf("%s usage %d over line %d (%s) is not throttle-quantified", l.Metric, u, l.Value, l.Source))
		default:
			precise = append(precise, l)
		}
	}
	if len(fallbackWhy) > 0 {
		cy.throttleFallback(fallbackWhy)
		return on
	}
	for _, l := range precise {
		cy.throttlePrecise(l, cy.p.metric(l.Metric), cy.node.Usage[l.Metric])
	}
	return on
}

// throttleFallback is Crane precise execution's fallback
// (docs/design/node-qos.md#non-quantifiable-fallback), kept for throttling
// because it can be undone: every candidate is throttled one step by the
// highest-priority throttleable metric.
func (cy *cycle) throttleFallback(why []string) {
	fb := cy.p.throttleFallback
	if fb == nil {
		cy.reasonf("ThrottleDown: %v; no throttleable metric is registered, throttling nothing", why)
		return
	}
	out := Outcome{Action: ActionThrottleDown, Metric: fb.Name, Mode: ModeFallback}
	reason := cy.sprintf("fallback (%v): every candidate one step down by %s", why, fb.Name)
	order := cy.sorted(fb.sorter())
	for _, s := range order {
		q, rel := fb.Throttle(s.c, cy.throttleContext(s.quota, GapUnknown))
		out.Released += rel
		if q != s.quota {
			s.quota, s.reason = q, reason
			out.Acted++
		}
	}
	cy.outcome(out)
	cy.reasonf("ThrottleDown: %v; precise throttling impossible, throttling all %d candidates one step by %s (%d changed)",
		why, len(order), fb.Name, out.Acted)
}

// throttlePrecise lowers quotas, in the metric's order, on the shortest
// prefix of pods whose release closes usage − line.
func (cy *cycle) throttlePrecise(l Line, m *Metric, usage int64) {
	gap := usage - l.Value
	out := Outcome{Action: ActionThrottleDown, Metric: l.Metric, Mode: ModePrecise, Gap: gap}
	// Pods leaving this cycle release their usage too.
	out.Pending = cy.evictedRelease(m)
	order := cy.sorted(m.sorter())
	// What quotas planned earlier release before the sample shows it is
	// counted first, so no pod is throttled for a gap already closing.
	cy.pending = slices.Grow(cy.pending[:0], len(order))[:len(order)]
	pending := cy.pending
	var pendingSum int64
	for i, s := range order {
		_, pending[i] = m.Throttle(s.c, cy.throttleContext(s.quota, 0))
		pendingSum += pending[i]
	}
	out.Pending += pendingSum
	remaining := gap - out.Pending
	for i, s := range order {
		if remaining <= 0 {
			break
		}
		q, rel := m.Throttle(s.c, cy.throttleContext(s.quota, remaining+pending[i]))
		if q == s.quota {
			continue
		}
		add := rel - pending[i]
		if cy.explain() {
			s.reason = fmt.Sprintf("%s usage %d over throttle line %d (%s) by %d: quota %s -> %dm releases %d, %d left",
				l.Metric, usage, l.Value, l.Source, gap, quotaString(s.quota), q, add, max(0, remaining-add))
		}
		s.quota = q
		out.Acted++
		out.Released += add
		remaining -= add
	}
	cy.outcome(out)
	cy.reasonf("ThrottleDown %s: usage %d over line %d (%s) by %d; %d pending from earlier quotas and evictions; throttling %d pods%s",
		l.Metric, usage, l.Value, l.Source, gap, out.Pending, out.Acted, unclosed(remaining))
}

func quotaString(q int64) string {
	if q == NoQuota {
		return "none"
	}
	return fmt.Sprintf("%dm", q)
}

// restore gives throttled CPU back, most important pods first, while every
// throttle metric is at or under its restore line. Without any throttle
// line no pod is held down at all.
func (cy *cycle) restore() {
	if len(cy.p.throttle) == 0 {
		n := 0
		for i := range cy.slots {
			if s := &cy.slots[i]; !s.evicted && s.quota != NoQuota {
				s.quota, s.reason = NoQuota, "no throttle waterline applies to the node"
				n++
			}
		}
		if n > 0 {
			cy.reasonf("ThrottleUp: no throttle waterline applies; releasing %d quotas", n)
		}
		return
	}
	throttled := 0
	for i := range cy.slots {
		if s := &cy.slots[i]; !s.evicted && s.quota != NoQuota {
			throttled++
		}
	}
	if throttled == 0 {
		return
	}
	fb := cy.p.throttleFallback
	gap := GapUnknown
	var gapLine Line
	for _, l := range cy.p.throttle {
		up, ok := cy.p.waterlines.Line(ActionThrottleUp, l.Metric)
		if !ok {
			up = l
		}
		u, ok := cy.node.Usage[l.Metric]
		if !ok || u > up.Value {
			usage := "missing"
			if ok && cy.explain() {
				usage = fmt.Sprint(u)
			}
			cy.outcome(Outcome{Action: ActionThrottleUp, Metric: l.Metric, Mode: ModeHold})
			cy.reasonf("ThrottleUp %s: usage %s not at or under restore line %d (%s); holding %d quotas",
				l.Metric, usage, up.Value, up.Source, throttled)
			return
		}
		if fb != nil && l.Metric == fb.Name && cy.p.metric(l.Metric).ThrottleQuantified {
			gap, gapLine = up.Value-u, up
		}
	}
	if fb == nil {
		cy.reasonf("ThrottleUp: no throttleable metric is registered; holding %d quotas", throttled)
		return
	}
	out := Outcome{Action: ActionThrottleUp, Metric: fb.Name, Mode: ModePrecise, Gap: max(gap, 0)}
	if gap == GapUnknown {
		out.Mode = ModeFallback
	}
	remaining := gap
	// The room is shared in sort order, each pod charged what it can use
	// of its raise (RestoreCPU): a pod not held by its quota is raised for
	// nothing, even once the room is used up.
	for _, s := range cy.sorted(GeneralSorter().Reverse()) {
		if s.quota == NoQuota {
			continue
		}
		room := remaining
		if room != GapUnknown {
			room = max(room, 0)
		}
		q, granted := fb.Restore(s.c, cy.throttleContext(s.quota, room))
		if q == s.quota {
			continue
		}
		switch {
		case !cy.explain():
		case gap == GapUnknown:
			s.reason = fmt.Sprintf("usage under every restore line: quota %s -> %s (one step)", quotaString(s.quota), quotaString(q))
		default:
			s.reason = fmt.Sprintf("%s usage %d under restore line %d (%s) by %d: quota %s -> %s",
				fb.Name, gapLine.Value-gap, gapLine.Value, gapLine.Source, gap, quotaString(s.quota), quotaString(q))
		}
		if gap != GapUnknown {
			remaining -= granted
		}
		s.quota = q
		out.Acted++
		out.Released += granted
	}
	cy.outcome(out)
	cy.reasonf("ThrottleUp %s: under every restore line (room %d); restoring %d of %d throttled pods", fb.Name, out.Gap, out.Acted, throttled)
}
