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
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/core/predict"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// nodeQoS is one cycle of the node agent's QoS loop: sample the CPU
// eviction window, plan with the QoS core (or skip planning when the core
// says the node is quiet), apply the quotas, and evict under the rate
// limit. evict-all then widens every action to all Batch/Free pods.
func (r *run) nodeQoS(n *node) {
	r.usage[qos.MetricCPU] = n.usageCPU
	r.usage[qos.MetricMemory] = n.usageMemory
	// runNode sampled the candidates (sampleCandidates) unless a
	// candidate left since.
	// The shell samples the window every cycle with the candidates it
	// plans with, so that the window and the present are measured alike.
	if !n.beFresh {
		r.sampleCandidates(n)
	}
	be := n.be
	n.beFresh = false
	n.window.push(windowSample{node: n.usageCPU, usage: be.UsageMilli, request: be.RequestMilli, allowing: be.AllowanceMilli})
	if r.qosInterval() > 0 {
		n.tokens = min(n.maxPerMin, n.tokens+n.maxPerMin*r.qosInterval().Minutes())
	}
	state := qos.NodeState{Usage: r.usage, CPUWindow: n.window.average(&r.window)}
	// Quiet, with the half that reads the counters kept in n.qosUnsettled.
	if n.throttled == 0 && !n.qosUnsettled && n.planner.QuietUsage(state) {
		r.setForbid(n, false)
		return
	}
	// Most cycles of a node that throttled a while ago hold every quota
	// (between the throttle and restore lines, or over the restore line
	// with throttling off): the core tells so without the candidates, and
	// the plan would only restate their quotas, act on no pod and count
	// nothing in the stats. Its counters go to the plan's memory, which
	// the next plan reuses.
	next, forbid, held := n.planner.Held(state, n.hysteresis, r.plan.Hysteresis.Counters)
	r.plan.Hysteresis = next
	if held {
		n.hysteresis.Counters = append(n.counters[:0], next.Counters...)
		n.qosUnsettled = !n.hysteresis.Settled()
		r.setForbid(n, forbid)
		return
	}
	r.syncCandidates(n)
	cands := n.cands
	if r.step < n.pdbHeldUntil {
		cands = r.plannable(n)
	}
	// The candidates point at their stand-ins (run.standIn): the planner
	// checks them as it would the real pods, and reaches the same verdict,
	// since a stand-in shares everything it reads of a pod.
	plan := &r.plan
	n.planner.PlanInto(plan, state, cands, n.hysteresis)
	// The counters are kept in the node: Quiet reads them every cycle,
	// and a fresh allocation per plan is a cache miss per node and step.
	n.hysteresis.Counters = append(n.counters[:0], plan.Hysteresis.Counters...)
	n.qosUnsettled = !n.hysteresis.Settled()
	r.setForbid(n, plan.ForbidScheduling)
	var wide *widening
	if r.policy == PolicyEvictAll {
		wide = r.widen(n, plan)
	}
	r.stats.planned(n, plan, wide)
	for i := range plan.Quotas {
		q := &plan.Quotas[i]
		if !q.Changed() {
			// CurrentMilli is the pod's quota, read above: nothing to
			// apply, and the pod need not be looked up.
			continue
		}
		p := r.candPod(n, i, q.Pod.UID)
		if p == nil {
			continue
		}
		r.setQuota(n, p, q.DesiredMilli)
	}
	for _, e := range plan.Evictions {
		if n.tokens < 1 {
			// The rate limit holds the rest; the next cycle plans again.
			break
		}
		p := r.podByUID(n, e.Pod.UID)
		if p == nil {
			continue
		}
		if e.Metric != qos.MetricMemory && !r.evictionAllowed(p) {
			// The Eviction API refuses: the agent's token is refunded,
			// and it plans without the pod for EvictionRetryAfter. Memory
			// relief does not ask (it deletes past the budget, as
			// kubelet's eviction does).
			p.pdbRetry = r.step + r.pdbRetrySteps
			n.pdbHeldUntil = max(n.pdbHeldUntil, p.pdbRetry)
			r.stats.evictionRefused()
			continue
		}
		n.tokens--
		r.stats.qosEvicted()
		r.evict(p, removedByQoS)
	}
}

// sampleCandidates takes the cycle's CPU sample of the node's QoS
// candidates (qos.SampleBECPU, added up as it does from their pods' step
// state). runNode calls it at the end of a step whose cycle is due, while
// the pods' step state is in the cache; node.remove marks it stale when a
// candidate leaves before the cycle, which then samples again.
func (r *run) sampleCandidates(n *node) {
	s := qos.NewBESampler(n.spec.CPUMilli)
	for i := range n.candS {
		if cs := &n.candS[i]; cs.eligible {
			h := &n.hot[cs.hot]
			s.Add(int64(h.usageCPU), cs.request, h.quota, cs.limit)
		}
	}
	n.be, n.beFresh = s.Sample(n.usageCPU), true
}

// syncCandidates gives the node's QoS candidates their pods' usage and
// quota, as the agent's cycle reads them, for a plan. Nothing changes a
// candidate's step state between runNode and the cycle (finishJobs only
// takes pods off, and node.remove keeps each candidate with its pod).
func (r *run) syncCandidates(n *node) {
	for i := range n.candS {
		hi := n.candS[i].hot
		c, h := &n.cands[i], &n.hot[hi]
		c.CPUUsageMilli, c.MemoryUsageBytes, c.CPUQuotaMilli = int64(h.usageCPU), n.mem[hi], h.quota
	}
}

// evictionRetryAfter is how long the agent leaves a pod out of its plans
// after a PodDisruptionBudget refused its eviction
// (executor.DefaultEvictionRetryAfter).
const evictionRetryAfter = 30 * time.Second

// plannable returns the node's candidates without the pods node QoS
// leaves out after a refused eviction, in the run's scratch.
func (r *run) plannable(n *node) []qos.Candidate {
	cands := r.heldCands[:0]
	for i, p := range n.candPods {
		if p.pdbRetry > r.step {
			continue
		}
		cands = append(cands, n.cands[i])
	}
	r.heldCands = cands
	return cands
}

func (r *run) qosInterval() time.Duration { return r.cfg.QoSInterval }

// widen is evict-all's agent, the behaviour before precise action
// (docs/design/node-qos.md#precise-action): once the precise plan says a breach
// needs throttling, every Batch/Free pod is throttled to its floor; once it
// needs an eviction, every Batch/Free pod is evicted. It returns what that
// releases, for the over-action ratio: for throttling, Σ min(usage, current
// quota) − floor; for eviction, Σ usage of the metric (Σ CPU request for the
// satisfaction-based CPU eviction).
func (r *run) widen(n *node, plan *qos.Plan) *widening {
	w := &widening{evictReleased: map[qos.MetricName]int64{}}
	for _, o := range plan.Outcomes {
		switch {
		case o.Action == qos.ActionThrottleDown && o.Acted > 0:
			w.throttle = true
		case o.Action == qos.ActionEvict && o.Acted > 0:
			w.evict = true
		}
	}
	minPercent := n.planner.Waterlines().Throttle.MinCPUPercent
	if w.throttle && len(plan.Quotas) == len(n.cands) {
		for i := range plan.Quotas {
			c := &n.cands[i]
			floor := qos.CPUFloorMilli(c, minPercent)
			capped := c.CPUUsageMilli
			if c.CPUQuotaMilli != qos.NoQuota {
				capped = min(capped, c.CPUQuotaMilli)
			}
			w.throttleReleased += max(0, capped-floor)
			if q := &plan.Quotas[i]; q.DesiredMilli == qos.NoQuota || q.DesiredMilli > floor {
				q.DesiredMilli = floor
			}
		}
	}
	if w.evict {
		plan.Evictions = plan.Evictions[:0]
		for i := range n.cands {
			c := &n.cands[i]
			w.evictReleased[qos.MetricCPU] += c.CPUUsageMilli
			w.evictReleased[qos.MetricMemory] += c.MemoryUsageBytes
			w.evictRequest += c.CPURequestMilli
			plan.Evictions = append(plan.Evictions, qos.Eviction{Pod: c.PodRef, Metric: qos.MetricCPU, Release: c.CPURequestMilli})
		}
	}
	return w
}

// candPod returns the pod of candidate i, checking it is the one the plan
// names.
func (r *run) candPod(n *node, i int, uid types.UID) *pod {
	if i < len(n.cands) && n.cands[i].PodRef.UID == uid {
		return n.candPods[i]
	}
	// The plan left pods out (plannable).
	return r.podByUID(n, uid)
}

// podByUID returns the node's candidate pod with uid, nil if none.
func (r *run) podByUID(n *node, uid types.UID) *pod {
	for i := range n.cands {
		if n.cands[i].PodRef.UID == uid {
			return n.candPods[i]
		}
	}
	return nil
}

func (r *run) setQuota(n *node, p *pod, q int64) {
	h := p.st()
	if (h.quota == qos.NoQuota) != (q == qos.NoQuota) {
		if q == qos.NoQuota {
			n.throttled--
		} else {
			n.throttled++
		}
	}
	h.quota = q
}

// setForbid reports the ForbidScheduling condition, as the agent patches
// its NodeMetric when it changes.
func (r *run) setForbid(n *node, forbid bool) {
	if n.forbid == forbid {
		// The metric says so already (newMetric copies n.forbid): the
		// common case, every cycle of a quiet node, settled without
		// reading the metric.
		return
	}
	n.forbid = forbid
	if n.load.Metric != nil {
		n.load.Metric.ForbidScheduling, n.sumFresh = forbid, false
	}
}

// metricBase is the LoadAware view of the node's NodeMetric before the
// agent fills in its status: its collect policy. A report starts from it
// and fills in the usage as vectors (building the NodeMetric's
// ResourceLists for a thousand nodes every minute would cost more than the
// rest of the step). The agent keeps what it reports of each pod in
// node.reports, so the view lists no pods.
func (r *run) metricBase(n *node) nodeload.Metric {
	return *r.la.NewMetric(&v1alpha1.NodeMetric{Spec: v1alpha1.NodeMetricSpec{CollectPolicy: n.resolved.Collect}})
}

// newMetric sets m to the LoadAware view of the NodeMetric the agent
// reports at now, usage not filled in yet.
func (r *run) newMetric(n *node, m *nodeload.Metric, now time.Time) {
	*m = n.metricBase
	r.la.SetUpdateTime(m, now)
	m.ForbidScheduling = n.forbid
}

// report is the node agent's NodeMetric report, followed by what the
// reporting sets off: the predictor's histogram update and prediction, and
// the manager's tier calculation for the node.
func (r *run) report(n *node) {
	now := r.now
	// Only the scheduler reads the node's metric, and only after this
	// report: it is refreshed in place.
	m := n.load.Metric
	r.newMetric(n, m, now)
	k := r.aggReports
	avg, slot, sinceK := n.usageAvg.report(k, n.usageSum, n.usageSteps)
	m.NodeUsage[nodeload.CPU] = avg
	m.NodeUsage[nodeload.Memory] = n.usageMemory
	// Pods placed from now on are not in the report: place adds them
	// unreported.
	var prodMidCPU, prodMidMem, prodCPU, prodMem int64
	for i := range n.hot {
		h := &n.hot[i]
		cpu, mem := n.snaps[i].report(k, slot, h.avgSum, sinceK, n.usageSteps-int64(h.placedAt)), n.mem[i]
		n.seen[i].report = nodeload.PodReport{Usage: nodeload.Vector{nodeload.CPU: cpu, nodeload.Memory: mem}, Reported: true}
		if h.tier == tierProd || h.tier == tierMid {
			prodMidCPU += cpu
			prodMidMem += mem
		}
		if h.tier == tierProd {
			prodCPU += cpu
			prodMem += mem
		}
	}
	// The pods' usage has only these two resources; the sums wrap as
	// Vector.Add does, so adding them once is the same.
	m.ProdUsage[nodeload.CPU] += prodCPU
	m.ProdUsage[nodeload.Memory] += prodMem
	if r.la.ProdUsageIncludeSys {
		m.ProdUsage[nodeload.CPU] += n.spec.SystemCPUMilli
		m.ProdUsage[nodeload.Memory] += n.spec.SystemMemoryBytes
	}

	if n.hasPeak {
		m.ProdPeak[nodeload.CPU], m.ProdPeak[nodeload.Memory] = n.peakCPU, n.peakMem
		m.HasProdPeak = true
	}
	r.la.SetPredictedNodeUsage(m)
	n.excessFresh, n.sumFresh = false, false

	in := tiers.NodeInput{
		CPU: tiers.ResourceState{
			Allocatable: n.spec.CPUMilli, ProdAllocated: n.prodReqCPU, ProdPeak: n.peakCPU, ProdPeakKnown: n.hasPeak,
			ProdMidUsage: prodMidCPU, SystemUsage: n.spec.SystemCPUMilli,
		},
		Memory: tiers.ResourceState{
			Allocatable: n.spec.MemoryBytes, ProdAllocated: n.prodReqMemory, ProdPeak: n.peakMem, ProdPeakKnown: n.hasPeak,
			ProdMidUsage: prodMidMem, SystemUsage: n.spec.SystemMemoryBytes,
		},
		UpdateTime: now,
	}
	// policy.ForNode resolved the tier policy with its defaults.
	res := tiers.CalculateDefaulted(n.resolved.Tiers, in, now)
	var published *tiers.Allocatable
	if n.hasPublished {
		published = &n.published
	}
	if ok, _ := tiers.ShouldUpdateDefaulted(n.resolved.Tiers, n.spec.CPUMilli, n.spec.MemoryBytes, published, res.Allocatable); ok {
		n.published, n.hasPublished = res.Allocatable, true
		n.alloc[resMidCPU], n.alloc[resMidMemory] = res.MidCPU, res.MidMemory
		if n.alloc[resBatchCPU] != res.BatchCPU {
			n.bandDirty = true
		}
		n.alloc[resBatchCPU], n.alloc[resBatchMemory] = res.BatchCPU, res.BatchMemory
		n.syncFit()
	}
}

// splitBandCaps is the agent's Batch band cap (pkg/agent/tierlimits): the
// node's Batch pods together may not use more CPU than the Batch
// allocatable the manager published; tiers.BandCaps splits it among them
// by request, within their limits, and each pod's share caps its CPU.
// Pods QoS protects keep their own limit, taken off the allocatable first.
func (r *run) splitBandCaps(n *node) {
	n.bandDirty = false
	if !r.policy.colocated() {
		return
	}
	members, idx := r.bandMembers[:0], r.bandIdx[:0]
	var reserved int64
	for i, p := range n.pods {
		h := &n.hot[i]
		h.bandCap = 0
		if p.req[resBatchCPU] <= 0 {
			continue
		}
		if !p.candidate {
			reserved += max(int64(h.cpuLimit), p.req[resBatchCPU])
			continue
		}
		members = append(members, tiers.BandMember{RequestMilli: p.req[resBatchCPU], LimitMilli: int64(h.cpuLimit)})
		idx = append(idx, i)
	}
	r.bandMembers, r.bandIdx = members, idx
	if len(members) == 0 || !*r.cfg.BandCap {
		return
	}
	caps := tiers.BandCaps(n.alloc[resBatchCPU]-reserved, members, tierlimits.DefaultBandCapFloorPercent, resctl.MinQuotaMilli)
	for j, c := range caps {
		if m := members[j]; m.LimitMilli == 0 || c < m.LimitMilli {
			// A cap beyond the 32 bits caps nothing: no demand reaches
			// it (podHot).
			n.hot[idx[j]].bandCap = int32(min(c, workload.MaxMilliCPU))
		}
	}
}

// predict feeds the node's Prod histograms with this sample and predicts
// the Prod peak with the node's predict policy.
func (r *run) predict(n *node, now time.Time) {
	sysCPU, sysMem := n.spec.SystemCPUMilli, n.spec.SystemMemoryBytes
	var prodCPU, prodMem int64
	for i := range n.hot {
		if n.hot[i].tier == tierProd {
			prodCPU += int64(n.hot[i].usageCPU)
			prodMem += n.mem[i]
		}
	}
	// The tracker's AddPodSample, without looking the pod up by name.
	// The node's histograms all had their first sample at its first
	// prediction: the sampler works out their decay once.
	s := predict.NewSampler(now)
	for _, f := range predictFeeds(n) {
		s.Add(f.cpu, float64(n.hot[f.slot].usageCPU)/1000, 1)
		s.Add(f.mem, float64(n.mem[f.slot])/gib, 1)
	}
	n.cpuTracker.AddNodeSample(float64(prodCPU+sysCPU)/1000, 1, now)
	n.memTracker.AddNodeSample(float64(prodMem+sysMem)/gib, 1, now)
	if n.sysCPUHist == nil {
		// The first sample tracks the system as a pod, after the
		// services; later ones go to its histograms without the
		// trackers' lookups by name (as AddSystemSample would: the
		// simulation never removes a pod from a tracker).
		n.cpuTracker.AddSystemSample(float64(sysCPU)/1000, 1, now)
		n.memTracker.AddSystemSample(float64(sysMem)/gib, 1, now)
		n.sysCPUHist, n.sysMemHist = n.cpuTracker.Pod(predict.SystemPodID), n.memTracker.Pod(predict.SystemPodID)
	} else {
		s.Add(n.sysCPUHist, float64(sysCPU)/1000, 1)
		s.Add(n.sysMemHist, float64(sysMem)/gib, 1)
	}
	model := n.model
	cpu := model.Predict(n.cpuInput.at(n.cpuTracker, now))
	mem := model.Predict(n.memInput.at(n.memTracker, now))
	n.peakCPU, n.peakMem = int64(cpu.Peak*1000), int64(mem.Peak*gib)
	n.hasPeak = true
}

// histFeed is a Prod pod of a node whose usage feeds a pod history of
// each of the node's trackers, at its slot in the node's pods.
type histFeed struct {
	pod      *pod
	slot     int
	cpu, mem *predict.Histogram
}

// predictFeeds returns the Prod pods of the node with histograms, in the
// order of their slots. They are kept in n.feeds from one prediction to
// the next, so that a prediction reads the node's slices and the
// histograms, not every pod's object: a pod has histograms only once the
// trackers track it (run.placeServices), and changes slots only when
// another pod leaves the node, so the list is made again only when a
// tracker changed or a listed pod is no longer at its slot.
func predictFeeds(n *node) []histFeed {
	gen := [2]uint64{n.cpuTracker.Generation(), n.memTracker.Generation()}
	fresh := n.feedsMade && gen == n.feedsGen
	for i := 0; fresh && i < len(n.feeds); i++ {
		f := &n.feeds[i]
		fresh = f.slot < len(n.pods) && n.pods[f.slot] == f.pod
	}
	if fresh {
		return n.feeds
	}
	n.feeds = n.feeds[:0]
	for i, p := range n.pods {
		if n.hot[i].tier == tierProd && p.cpuHist != nil {
			n.feeds = append(n.feeds, histFeed{pod: p, slot: i, cpu: p.cpuHist, mem: p.memHist})
		}
	}
	n.feedsGen, n.feedsMade = gen, true
	return n.feeds
}

// trackerInput is a copy of a tracker's Input, made again only when the
// tracker's pods changed (predict.Tracker.Generation): between changes
// only the time differs, and copying every pod's start, request and
// history into the tracker's Input at each prediction cost more than the
// models that read it.
type trackerInput struct {
	in   predict.Input
	gen  uint64
	made bool
}

// at returns t's Input at now.
func (c *trackerInput) at(t *predict.Tracker, now time.Time) *predict.Input {
	if !c.made || c.gen != t.Generation() {
		in := t.Input(now)
		c.in.Node, c.in.Pods = in.Node, append(c.in.Pods[:0], in.Pods...)
		c.gen, c.made = t.Generation(), true
	}
	c.in.Now = now
	return &c.in
}
