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
	"iter"
	"math"
	"math/bits"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/core/policy"
	"github.com/waterline-dev/waterline/pkg/core/predict"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Resources NodeResourcesFit checks, as positions of a resVec.
const (
	resCPU = iota // millicores
	resMemory
	resMidCPU // millicores, as the tier resource counts them
	resMidMemory
	resBatchCPU
	resBatchMemory
	resPods
	numRes
)

// resVec holds one amount per resource NodeResourcesFit checks.
type resVec [numRes]int64

func (v *resVec) add(o *resVec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v *resVec) sub(o *resVec) {
	for i := range v {
		v[i] -= o[i]
	}
}

// resVecOf reads the resources a resVec tracks from a ResourceList.
func resVecOf(rl corev1.ResourceList) resVec {
	var v resVec
	v[resCPU] = rl.Cpu().MilliValue()
	v[resMemory] = rl.Memory().Value()
	for i, name := range map[int]corev1.ResourceName{
		resMidCPU: extension.ResourceMidCPU, resMidMemory: extension.ResourceMidMemory,
		resBatchCPU: extension.ResourceBatchCPU, resBatchMemory: extension.ResourceBatchMemory,
		resPods: corev1.ResourcePods,
	} {
		if q, ok := rl[name]; ok {
			v[i] = q.Value()
		}
	}
	return v
}

// Requests kube-scheduler counts for a pod that asks for none, when it
// scores (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest).
const (
	nonZeroMilliCPU = 100
	nonZeroMemory   = 200 * 1024 * 1024
)

// tier is the band a pod's usage is reported under: Prod, Mid, or Batch
// and Free.
type tier uint8

const (
	tierProd tier = iota
	tierMid
	tierBatch
	numTiers
)

// st returns the pod's step state: in its node's array while it is on a
// node, its own otherwise.
func (p *pod) st() *podHot {
	if p.node != nil {
		return &p.node.hot[p.nodeIdx]
	}
	return &p.h
}

// kind is what a pod runs.
type kind uint8

const (
	kindService kind = iota // an online (Prod) service
	kindMid                 // a Mid job
	kindBatch               // a Batch job
	numKinds
)

// podHot is what every step reads and writes of a pod, in one 64-byte
// cache line. A node keeps its pods' podHot values side by side
// (node.hot), so that stepping a thousand nodes walks small contiguous
// arrays instead of chasing a pointer per pod. CPU figures are millicores
// in 32 bits: workload.Workload.Validate bounds every figure they come
// from (node CPU, job requests, service limits and peak demand) by
// workload.MaxMilliCPU, and run.derive refuses a pod whose limit exceeds
// it, so every value fits. Sums over pods stay 64-bit.
type podHot struct {
	// left is the work a job pod has still to do, millicore-seconds: its
	// job's work less what it did (on this node and, as EvictedWork says,
	// before an eviction). The pod is done at left ≤ 0.
	left int64
	// avgSum is Σ usageCPU since the pod was placed, for the NodeMetric's
	// averages; the steps it covers are node.usageSteps - placedAt.
	avgSum int64
	quota  int64 // CPU quota node QoS holds the pod at (qos.NoQuota: none)
	// demand is a job's CPU demand, or a service's index in run.demands
	// (kind says which).
	demand     int32
	cpuLimit   int32 // millicores, tier limits counted; 0 is none
	bandCap    int32 // the agent's Batch band cap of the pod (0: none)
	wantCPU    int32 // this step: demand capped at the limit
	allowedCPU int32 // ... and at the quota
	usageCPU   int32 // ... and shared under contention
	// shares are the pod's cpu.shares as kubelet writes them from its CPU
	// request (2 without one), 0 for a BestEffort pod: it lives in the
	// besteffort cgroup, where beShares weigh it (the agent's shares from
	// its tier request, or 2).
	shares, beShares int32
	// placedAt is node.usageSteps when the pod was placed.
	placedAt int32
	tier     tier
	kind     kind
}

// pod is one simulated pod: the corev1.Pod the cores look at, and what
// the simulation derived from it once, when it was created.
type pod struct {
	// h is the pod's podHot while it is not on a node; on a node it lives
	// in node.hot (see st).
	h podHot
	// mem is the pod's memory usage, bytes (constant; on a node, also in
	// node.mem).
	mem int64
	// podShape is what the pod was admitted as, shared with the other
	// pods of its job template.
	*podShape

	// obj is the pod's object; nil for a job pod copied from a template,
	// which has tmpl, name and created instead (run.jobPod, run.jobObject),
	// and for a placed service, which keeps its name
	// (run.placeServices).
	obj  *corev1.Pod
	tmpl *jobTemplate
	name string
	// created is when the pod was created, from the workload's start;
	// started when it started running on its node, in Unix nanoseconds
	// (preemption orders its victims by it).
	created time.Duration
	started int64
	// seq orders pods by creation.
	seq int64
	// job is the index of the job a Mid or Batch pod runs (-1 for
	// services).
	job int

	// Where the pod is: node and its index in node.pods (and, for a
	// candidate, in node.cands).
	node    *node
	nodeIdx int
	candIdx int

	// pdbRetry is the step until which node QoS leaves the pod out of its
	// plans, after the Eviction API refused to evict it for a
	// PodDisruptionBudget.
	pdbRetry int

	// cpuHist and memHist are the pod's usage histograms in its node's
	// trackers (Prod pods of colocated policies; nil otherwise).
	cpuHist, memHist *predict.Histogram
}

// podShape is what the simulation derives from a pod's object at
// admission, which depends only on what the pod asks for: every pod of a
// job template points at its template's (run.jobPod), so that the tens of
// thousands of pods waiting on a busy cluster carry a pointer each
// instead of these 200 bytes.
type podShape struct {
	// req is what NodeResourcesFit counts; nonZeroCPU and nonZeroMemory
	// what its score counts.
	req                       resVec
	nonZeroCPU, nonZeroMemory int64
	// load is LoadAware's estimate of the pod while it is pending (its
	// view once the pod is on a node is in node.seen).
	load nodeload.PodLoad
	// stand is a pod the QoS core's checks cannot tell from obj, shared
	// by many pods, for a candidate (set by run.derive; see run.standIn).
	stand *corev1.Pod
	// sig identifies what the filters see of the pod.
	sig int
	// priority is spec.priority (0 when unset).
	priority int32
	// vgroup is the pod's victim group for preemption (its priority and
	// class; preemptor.groupOf).
	vgroup int32
	// bestEffort: the pod requests neither cpu nor memory, so kubelet
	// makes it BestEffort (oom_score_adj 1000: the kernel kills it first).
	bestEffort bool
	// candidate says node QoS may act on the pod
	// (extension.QoSProtection and its band).
	candidate bool
}

// node is one simulated node: what the scheduler, the agent and the
// manager know of it.
type node struct {
	idx  int
	spec *workload.Node
	obj  *corev1.Node

	// alloc is what the node offers (cpu, memory, pods and the tier
	// resources the manager publishes); req what its pods request. fit
	// is what the filters read of them, the node's view in fitIndex
	// (syncFit keeps both up to date).
	alloc, req                resVec
	fit                       *fitView
	fitIndex                  *fitIndex
	nonZeroCPU, nonZeroMemory int64
	// balanceWithout is balanceOf(req, alloc), for the scheduler's
	// NodeResourcesBalancedAllocation score (place and remove keep it;
	// the cpu and memory allocatable never change).
	balanceWithout int64
	// batchReqCPU is Σ the CPU requests (tier or not) of its Batch pods.
	batchReqCPU int64
	// prodReqCPU and prodReqMemory are Σ the cpu and memory requests of
	// its Prod pods, which the manager's tier calculation reads at every
	// report: kept here, the report need not visit each pod's object.
	prodReqCPU, prodReqMemory int64
	// pods are the node's pods; hot[i] is pods[i]'s step state and
	// snaps[i] its sums at the last reports (for the NodeMetric's
	// averages), kept side by side for the same reason. snaps is kept
	// only when the node's agent reports (ownReports).
	pods  []*pod
	hot   []podHot
	snaps []avgSnaps
	// mem[i] is pods[i]'s memory usage, and podMem their sum: runNode
	// needs only the sum, which changes only when a pod comes or goes.
	mem    []int64
	podMem int64
	// seen[i] is what LoadAware knows of pods[i] on the node, kept only
	// with LoadAware on: the plain policies' clusters would spend most of
	// their per-pod memory on it.
	seen []seenPod
	// unsettled has bit i%64 of word i/64 set for each seen[i] that may
	// add excess at a later refreshExcess; the others are settled, and
	// refreshExcess passes over them. A pod settles (refreshExcess) when
	// the node's own report says it needs no estimate
	// (AssignedPod.NeedsEstimateOf false): its forced windows are over,
	// which time does not undo, and the report's average covers a whole
	// window of it. The next reports keep that true: the node's agent
	// lists every pod of the node in each report, their update times only
	// grow and the averaging window is the node's (metricBase), so a
	// settled pod needs no estimate, and adds no excess, until it leaves.
	// Kept only on nodes with ownReports; a pod is unsettled when placed.
	unsettled []uint64
	// groupReq[g] is Σ the requests of the node's job pods of victim
	// group g, so that preemption rules a node out without walking its
	// pods (roomSet).
	groupReq []resVec
	// pdbHeldUntil is the last step until which a pod of the node is left
	// out of node QoS's plans (pod.pdbRetry).
	pdbHeldUntil int

	// LoadAware's view, refreshed lazily like the plugin's cache.
	load nodeload.NodeLoad
	// ownReports: the pods' reports are in reports, kept by the node's
	// agent, and load.Metric lists no pods; otherwise (a Scheduler fed
	// NodeMetrics) they are looked up in load.Metric.
	ownReports bool
	assigned   iter.Seq[*nodeload.AssignedPod]
	// excessFresh says load's excess is up to date until excessUntil
	// (zero: until a pod or the metric changes; the reports and
	// SetNodeMetric clear it). sum is load reduced to what LoadAware's
	// Filter and Score read (nodeload.NodeSummary: a couple of cache
	// lines instead of the NodeLoad and its Metric), made again by
	// loadSummary when load changed (sumFresh false: refreshExcess, the
	// reports, setForbid and SetNodeMetric clear it). The four sit side
	// by side, so that a pick finding them fresh, as it does on most
	// nodes, reads nothing else of the node. sumGen counts the summaries
	// loadSummary made: sum changes only there, so that an answer of
	// FilterSummary or ScoreSummary made at one sumGen holds while it
	// stays, Expired permitting (the scheduler's loadSets).
	sumGen      uint64
	excessFresh bool
	sumFresh    bool
	excessUntil time.Time
	sum         nodeload.NodeSummary

	// Agent state (colocated policies).
	resolved   policy.Resolved
	planner    *qos.Planner
	hysteresis qos.Hysteresis
	counters   [6]qos.Counter // hysteresis.Counters' memory (nodeQoS)
	// cands are the QoS candidates of the node's Batch/Free pods, kept
	// beside candPods and refreshed in place every cycle.
	cands    []qos.Candidate
	candPods []*pod
	// candS[i] is what the step's CPU sample reads of cands[i] besides
	// its pod's step state (sampleCandidates). The agent's cycle samples
	// every node, and only a node that is not quiet plans: the
	// candidates' usage is written into cands (syncCandidates) only then.
	candS     []candSample
	throttled int // pods with a quota
	// qosUnsettled is !hysteresis.Settled(), kept with it: the quiet check
	// of every cycle then reads no counter (nodeQoS).
	qosUnsettled bool
	// be is the candidates' CPU sample sampleCandidates took this step;
	// beFresh says no candidate left since.
	be      qos.BECPU
	beFresh bool
	// bandDirty: the node's Batch band or its Batch allocatable changed
	// since the band caps were last split.
	bandDirty  bool
	forbid     bool
	window     cpuWindow
	tokens     float64
	maxPerMin  float64
	evictLine  int64
	usageSum   int64
	usageSteps int64
	usageAvg   reportSnaps
	// metricBase is the node's NodeMetric as LoadAware reads it before
	// any usage is filled in; each report starts from it.
	metricBase nodeload.Metric
	model      predict.Predictor
	cpuTracker *predict.Tracker
	memTracker *predict.Tracker
	// sysCPUHist and sysMemHist are the trackers' histograms of the
	// system (predict.SystemPodID), once it has a sample.
	sysCPUHist, sysMemHist *predict.Histogram
	// feeds are the Prod pods whose usage feeds the trackers' pod
	// histograms, valid while the trackers are at generation feedsGen
	// and each pod at its slot (predictFeeds); cpuInput and memInput the
	// trackers' Inputs.
	feeds              []histFeed
	feedsGen           [2]uint64
	feedsMade          bool
	cpuInput, memInput trackerInput
	// Published predictions and tiers.
	hasPeak          bool
	peakCPU, peakMem int64
	published        tiers.Allocatable
	hasPublished     bool

	// pressureUntil: the node has MemoryPressure until then, and takes no
	// BestEffort pod.
	pressureUntil time.Time

	// finishing: a job pod of the node did all its work this step.
	finishing bool

	// This step.
	usageCPU, usageMemory int64
	prodCPU, prodPods     int64
	beCPU                 int64
}

// newPod derives what the simulation needs of obj; la is nil when
// LoadAware is off.
func newPod(obj *corev1.Pod, la *nodeload.Config, seq int64) *pod {
	p := &pod{
		podShape: new(podShape),
		obj:      obj,
		seq:      seq,
		job:      -1,
	}
	p.h.quota = qos.NoQuota
	if obj.Spec.Priority != nil {
		p.priority = *obj.Spec.Priority
	}
	band := extension.BandOf(obj)
	switch band {
	case extension.BandProd:
		p.h.tier = tierProd
	case extension.BandMid:
		p.h.tier = tierMid
	default:
		p.h.tier = tierBatch
	}
	p.req = resVecOf(resourcehelper.PodRequests(obj, resourcehelper.PodResourcesOptions{}))
	p.req[resPods] = 1
	nz := resourcehelper.PodRequests(obj, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: corev1.ResourceList{
			corev1.ResourceCPU:    *resourceMilli(nonZeroMilliCPU),
			corev1.ResourceMemory: *resourceBytes(nonZeroMemory),
		},
	})
	p.nonZeroCPU, p.nonZeroMemory = nz.Cpu().MilliValue(), nz.Memory().Value()
	if la != nil {
		// A malformed estimation annotation only makes the estimate a
		// default one; the simulation's pods carry none.
		p.load, _ = la.NewPodLoad(obj)
	}
	p.candidate = band.IsLowPriority() && extension.QoSProtection(obj) == extension.NotProtected
	p.h.kind = kindService
	cand := qos.NewCandidate(obj, qos.PodUsage{CPUQuotaMilli: qos.NoQuota})
	// A limit beyond the 32 bits saturates; run.derive refuses it.
	p.h.cpuLimit = int32(min(cand.CPULimitMilli, workload.MaxMilliCPU))
	p.bestEffort = p.req[resCPU] == 0 && p.req[resMemory] == 0
	if !p.bestEffort {
		p.h.shares = int32(milliCPUToShares(p.req[resCPU]))
	} else {
		p.h.beShares = int32(milliCPUToShares(p.req[resMidCPU] + p.req[resBatchCPU]))
	}
	return p
}

// place puts p on n at now.
func (n *node) place(p *pod, la *nodeload.Config, now time.Time) {
	p.node, p.nodeIdx = n, len(n.pods)
	n.pods = append(n.pods, p)
	n.hot = append(n.hot, p.h)
	n.hot[p.nodeIdx].placedAt = int32(n.usageSteps)
	n.mem = append(n.mem, p.mem)
	n.podMem += p.mem
	if n.ownReports {
		n.snaps = append(n.snaps, avgSnaps{})
	}
	n.req.add(&p.req)
	n.nonZeroCPU += p.nonZeroCPU
	n.nonZeroMemory += p.nonZeroMemory
	if p.job >= 0 {
		for int(p.vgroup) >= len(n.groupReq) {
			n.groupReq = append(n.groupReq, resVec{})
		}
		n.groupReq[p.vgroup].add(&p.req)
	}
	n.balanceWithout = balanceOf(&n.req, &n.alloc)
	n.syncFit()
	if p.h.kind == kindBatch {
		n.batchReqCPU += p.req[resCPU] + p.req[resBatchCPU]
	}
	if p.h.tier == tierProd {
		n.prodReqCPU += p.req[resCPU]
		n.prodReqMemory += p.req[resMemory]
	}
	if p.req[resBatchCPU] > 0 {
		n.bandDirty = true
	}
	if la != nil {
		// The scheduler counts the pod at once (Reserve); its estimate
		// stands in for its load until a NodeMetric reports it.
		var s seenPod
		s.assigned, _ = la.NewAssignedPod(p.obj, now)
		n.seen = append(n.seen, s)
		n.addExcess(&n.seen[len(n.seen)-1], now)
		if n.ownReports {
			i := len(n.seen) - 1
			if i>>6 == len(n.unsettled) {
				n.unsettled = append(n.unsettled, 0)
			}
			n.unsettled[i>>6] |= 1 << (i & 63)
		}
	}
	p.candIdx = -1
	if p.candidate && n.planner != nil {
		p.candIdx = len(n.cands)
		c := qos.NewCandidate(p.obj, qos.PodUsage{CPUQuotaMilli: qos.NoQuota})
		c.Pod = p.stand
		n.cands = append(n.cands, c)
		n.candPods = append(n.candPods, p)
		n.candS = append(n.candS, candSample{hot: int32(p.nodeIdx), eligible: qos.SampleEligible(&c), request: c.CPURequestMilli, limit: c.CPULimitMilli})
	}
}

// remove takes p off its node at now.
func (n *node) remove(p *pod, now time.Time) {
	p.h = n.hot[p.nodeIdx]
	last := len(n.pods) - 1
	moved := n.pods[last]
	n.pods[p.nodeIdx] = moved
	n.hot[p.nodeIdx] = n.hot[last]
	n.mem[p.nodeIdx] = n.mem[last]
	n.mem = n.mem[:last]
	n.podMem -= p.mem
	if n.ownReports {
		n.snaps[p.nodeIdx] = n.snaps[last]
		n.snaps = n.snaps[:last]
	}
	if len(n.seen) > 0 { // LoadAware is on (place)
		n.subExcess(&n.seen[p.nodeIdx], now)
		n.seen[p.nodeIdx] = n.seen[last]
		n.seen[last] = seenPod{}
		n.seen = n.seen[:last]
		if n.ownReports {
			// The last pod's bit moves with it.
			i := p.nodeIdx
			lastBit := n.unsettled[last>>6] >> (last & 63) & 1
			n.unsettled[i>>6] = n.unsettled[i>>6]&^(1<<(i&63)) | lastBit<<(i&63)
			n.unsettled[last>>6] &^= 1 << (last & 63)
		}
	}
	moved.nodeIdx = p.nodeIdx
	if moved.candIdx >= 0 && moved != p {
		n.candS[moved.candIdx].hot = int32(moved.nodeIdx)
	}
	n.pods[last] = nil
	n.hot[last] = podHot{}
	n.pods = n.pods[:last]
	n.hot = n.hot[:last]
	n.req.sub(&p.req)
	n.nonZeroCPU -= p.nonZeroCPU
	n.nonZeroMemory -= p.nonZeroMemory
	if p.job >= 0 {
		n.groupReq[p.vgroup].sub(&p.req)
	}
	n.balanceWithout = balanceOf(&n.req, &n.alloc)
	n.syncFit()
	if p.h.kind == kindBatch {
		n.batchReqCPU -= p.req[resCPU] + p.req[resBatchCPU]
	}
	if p.h.tier == tierProd {
		n.prodReqCPU -= p.req[resCPU]
		n.prodReqMemory -= p.req[resMemory]
	}
	if p.req[resBatchCPU] > 0 {
		n.bandDirty = true
		p.h.bandCap = 0
	}
	if p.candIdx >= 0 {
		n.beFresh = false
		last := len(n.cands) - 1
		movedPod := n.candPods[last]
		n.cands[p.candIdx] = n.cands[last]
		n.candPods[p.candIdx] = movedPod
		n.candS[p.candIdx] = n.candS[last]
		movedPod.candIdx = p.candIdx
		n.cands[last] = qos.Candidate{}
		n.candPods[last] = nil
		n.cands = n.cands[:last]
		n.candPods = n.candPods[:last]
		n.candS = n.candS[:last]
	}
	if p.h.quota != qos.NoQuota {
		n.throttled--
	}
	p.node = nil
}

// candSample is what qos.SampleBECPU reads of a candidate that is not
// its pod's step state: whether it counts (qos.SampleEligible), its CPU
// request and limit. hot is the index in node.hot of its pod.
type candSample struct {
	hot      int32
	eligible bool
	request  int64
	limit    int64
}

// fitView is what NodeResourcesFit and the MemoryPressure taint read of a
// node, in one cache line: a scheduling cycle checks hundreds of nodes per
// pod, and reading each node's scattered fields cost more than the checks.
type fitView struct {
	// free is alloc − req.
	free resVec
	// pressureUntil is node.pressureUntil in Unix nanoseconds
	// (math.MinInt64 when unset).
	pressureUntil int64
}

// syncFit writes the node's fitView from its fields, and the node's
// place in the scheduler's fitSets and roomSets from that; it makes the
// scheduler forget the node's requestScores. Every change of the node's
// requests (its groupReq with them) or allocatable calls it, after the
// change.
func (n *node) syncFit() {
	f := n.fit
	f.free = n.alloc
	f.free.sub(&n.req)
	f.pressureUntil = math.MinInt64
	if !n.pressureUntil.IsZero() {
		f.pressureUntil = n.pressureUntil.UnixNano()
	}
	n.fitIndex.synced(n)
}

// loadSummary is the node's LoadAware view at now as la's Filter and
// Score read it: FilterSummary and ScoreSummary give their answers.
func (n *node) loadSummary(la *nodeload.Config, now time.Time) *nodeload.NodeSummary {
	// Fresh excess makes refreshExcess return at once: the check is
	// made here first, without reading the metric.
	if !n.sumFresh || !n.excessFresh || !n.excessUntil.IsZero() && !now.Before(n.excessUntil) {
		n.refreshExcess(now)
		if !n.sumFresh {
			n.sum, n.sumFresh = la.Summarize(&n.load), true
			n.sumGen++
		}
	}
	return &n.sum
}

// addExcess counts the excess of a pod just placed, s, into the node's
// at now, when that is fresh: what refreshExcess would sum at now (the
// sums are plain additions and Until a minimum, in any order), without
// walking the node's other pods, whose excess has not changed before
// Until. Otherwise, and on nodes fed NodeMetrics, refreshExcess sums
// again when asked.
func (n *node) addExcess(s *seenPod, now time.Time) {
	m := n.load.Metric
	if !n.ownReports || m == nil || !n.excessFresh || !n.excessUntil.IsZero() && !now.Before(n.excessUntil) {
		n.excessFresh = false
		return
	}
	sum := nodeload.ExcessSum{All: n.load.Excess, Prod: n.load.ProdExcess, Until: n.excessUntil}
	e, until := s.assigned.ExcessOf(m, s.report, now)
	sum.Add(&s.assigned, e, until)
	n.load.Excess, n.load.ProdExcess, n.excessUntil = sum.All, sum.Prod, sum.Until
	n.sumFresh = false
}

// subExcess takes the excess of s, a pod leaving, out of the node's at
// now, when that is fresh: s's excess has not changed since it was
// summed (before Until; a report since makes it stale), and Until, kept,
// only makes refreshExcess sum again sooner than it need. Otherwise
// refreshExcess sums again when asked.
func (n *node) subExcess(s *seenPod, now time.Time) {
	m := n.load.Metric
	if !n.ownReports || m == nil || !n.excessFresh || !n.excessUntil.IsZero() && !now.Before(n.excessUntil) {
		n.excessFresh = false
		return
	}
	e, _ := s.assigned.ExcessOf(m, s.report, now)
	for i := range e {
		n.load.Excess[i] -= e[i]
		if s.assigned.Prod {
			n.load.ProdExcess[i] -= e[i]
		}
	}
	n.sumFresh = false
}

// refreshExcess brings LoadAware's excess of the node's pods up to now,
// as the plugin's cache does before Filter and Score read it.
func (n *node) refreshExcess(now time.Time) {
	m := n.load.Metric
	if m == nil {
		return
	}
	if n.excessFresh && (n.excessUntil.IsZero() || now.Before(n.excessUntil)) {
		return
	}
	n.excessFresh, n.sumFresh = true, false
	if !n.ownReports {
		n.load.Excess, n.load.ProdExcess, n.excessUntil = nodeload.NodeExcess(n.assigned, m, now)
		return
	}
	// The settled pods add no excess, and adding none without a time
	// limit leaves the sums as they are: the unsettled pods alone, in
	// the same order, make the sums of every pod.
	var sum nodeload.ExcessSum
	for w, word := range n.unsettled {
		for ; word != 0; word &= word - 1 {
			i := w<<6 | bits.TrailingZeros64(word)
			s := &n.seen[i]
			e, until := s.assigned.ExcessOf(m, s.report, now)
			if e == (nodeload.Vector{}) && until.IsZero() {
				if needed, _ := s.assigned.NeedsEstimateOf(m, s.report, now); !needed {
					n.unsettled[w] &^= 1 << (i & 63)
				}
				continue
			}
			sum.Add(&s.assigned, e, until)
		}
	}
	n.load.Excess, n.load.ProdExcess, n.excessUntil = sum.All, sum.Prod, sum.Until
}

// assignedSeq walks the node's pods for LoadAware, without allocating per
// call: the closure is made once per node.
func (n *node) assignedSeq() iter.Seq[*nodeload.AssignedPod] {
	return func(yield func(*nodeload.AssignedPod) bool) {
		for i := range n.seen {
			if !yield(&n.seen[i].assigned) {
				return
			}
		}
	}
}

// seenPod is what LoadAware knows of a pod on a node: the pod as assigned
// (counted from the moment it was placed, as Reserve does) and what the
// node's last report said of it (kept by the run's agents; see
// node.ownReports).
type seenPod struct {
	assigned nodeload.AssignedPod
	report   nodeload.PodReport
}

// maxSnaps bounds how many report intervals an average covers.
const maxSnaps = 8

// reportSnaps averages a node's per-step value over its last k reports
// (k ≤ maxSnaps): the caller keeps a running sum and step count (every
// step adds one value), and reportSnaps the sum and the step count at each
// of the last k reports, so averaging costs one addition per step and a
// subtraction per report. The node's pods average their own values over
// the same reports (avgSnaps) with the slot and the step count it
// returns.
type reportSnaps struct {
	sum, steps [maxSnaps]int64
	reports    int
}

// report returns the average per step since k reports ago (or since the
// start, when there were fewer), given the running sum and step count,
// and starts a new report interval. It also returns the slot this
// report's sums go to and the steps since k reports ago (since the start,
// when there were fewer), for the pods' averages.
func (a *reportSnaps) report(k int, sum, steps int64) (avg int64, slot int, sinceK int64) {
	slot = a.reports % k
	var baseSum, baseSteps int64
	if a.reports >= k {
		baseSum, baseSteps = a.sum[slot], a.steps[slot]
	}
	a.sum[slot], a.steps[slot] = sum, steps
	a.reports++
	sinceK = steps - baseSteps
	if sinceK == 0 {
		return 0, slot, sinceK
	}
	return (sum - baseSum) / sinceK, slot, sinceK
}

// avgSnaps averages a pod's per-step value over its node's last k reports,
// as reportSnaps does the node's: the pod keeps a running sum, and
// avgSnaps the sum at each of the last k reports that had the pod. The
// step counts are the node's: a pod is in every report of its node from
// the first after it was placed, so the step count k of its reports ago
// is the node's k reports ago (the slot's), less the steps before the pod
// was placed, which cancel out of the difference.
type avgSnaps struct {
	reports int
	sum     [maxSnaps]int64
}

// report returns the pod's average per step since k reports ago, or since
// it was placed when it was in fewer, and keeps sum in slot; slot and
// sinceK are what reportSnaps.report returned for the node's report,
// sincePlaced the steps since the pod was placed.
func (a *avgSnaps) report(k, slot int, sum, sinceK, sincePlaced int64) int64 {
	var base int64
	steps := sincePlaced
	if a.reports >= k {
		base, steps = a.sum[slot], sinceK
	}
	a.sum[slot] = sum
	a.reports++
	if steps == 0 {
		return 0
	}
	return (sum - base) / steps
}

// cpuWindow averages node CPU and the BE picture over the CPU eviction
// window, as the agent's shell does for the planner.
type cpuWindow struct {
	samples []windowSample
	next    int
	full    bool
	sum     windowSample
}

type windowSample struct {
	node                     int64
	usage, request, allowing int64
}

func (w *cpuWindow) push(s windowSample) {
	old := w.samples[w.next]
	w.sum.node += s.node - old.node
	w.sum.usage += s.usage - old.usage
	w.sum.request += s.request - old.request
	w.sum.allowing += s.allowing - old.allowing
	w.samples[w.next] = s
	w.next++
	if w.next == len(w.samples) {
		w.next, w.full = 0, true
	}
}

// average is the window's CPUWindow, nil until the window is full.
func (w *cpuWindow) average(dst *qos.CPUWindow) *qos.CPUWindow {
	if !w.full {
		return nil
	}
	n := int64(len(w.samples))
	*dst = qos.CPUWindow{
		NodeCPUMilli: w.sum.node / n,
		BE:           qos.BECPU{UsageMilli: w.sum.usage / n, RequestMilli: w.sum.request / n, AllowanceMilli: w.sum.allowing / n},
	}
	return dst
}
