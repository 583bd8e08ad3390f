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

package executor

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// Name is the module name of the Executor.
const Name = "qos"

// Source is the intent source of the Executor's CPU quotas.
const Source resctl.Source = "qos"

var (
	_ agent.CycleModule       = &Executor{}
	_ agent.StatusContributor = &Executor{}
	_ agent.Runner            = &Executor{}
)

// Condition reasons the Executor writes.
const (
	ReasonOverWaterline  = "OverWaterline"
	ReasonUnderWaterline = "UnderWaterline"
	ReasonNoWaterline    = "NoWaterline"
	ReasonDryRun         = "DryRun"
	ReasonPodsThrottled  = "PodsThrottled"
	ReasonNoneThrottled  = "NoneThrottled"
)

// Deps are what the Executor acts through.
type Deps struct {
	// Evictor evicts pods; the command passes APIEvictor{Client: kube}.
	Evictor Evictor
	// Reconciler writes the CPU quotas the Executor states.
	Reconciler *resctl.Reconciler
	// Recorder records Events on pods and on the node.
	Recorder record.EventRecorder
	// Clock times the eviction rate limit, retries and conditions.
	Clock clock.PassiveClock
	// Prometheus, when set, receives the executor's own metrics
	// (waterline_agent_qos_*).
	Prometheus prometheus.Registerer
	// RequestReport, when set, is called when the ForbidScheduling or
	// Throttling condition flips, so that the scheduler learns at once
	// (agent.Agent.RequestReport).
	RequestReport func()
	// QoSMetrics are the QoS metrics the planner knows (what NodeQOS
	// lines and rules may name); nil is qos.DefaultRegistry() (cpu_usage
	// and memory_usage).
	QoSMetrics *qos.Registry
}

// Executor is the node QoS cycle module. Add it to the agent after the
// tier enforcer and before the resctl.Reconciler.
type Executor struct {
	cfg     Config
	d       Deps
	metrics *metrics
	qosReg  *qos.Registry

	planner    *qos.Planner
	plannerKey uint64
	refusedKey uint64 // the NodeQOS set whose merge was refused last (merge.go)
	capacity   qos.Capacity
	window     time.Duration
	hasLines   bool
	policy     policy

	// What carries over between cycles, in memory only.
	h       qos.Hysteresis
	applied map[types.UID]int64
	retryAt map[types.UID]time.Time
	// wouldEvict is when a dry-run eviction of a pod was last reported.
	wouldEvict map[types.UID]time.Time
	beWin      beWindow
	// bucket limits the evictions of every metric but memory (NodeQOS
	// eviction.maxPerMinute); memBucket those of memory relief
	// (Config.MemoryEvictionsPerMinute). Both are persisted.
	bucket, memBucket tokenBucket

	// Evictions run beside the loop (see evictions.go).
	flight flight
	// leaving are pods whose eviction the API server accepted, counted as
	// releasing until the informer shows them terminating or gone.
	leaving map[types.UID]time.Time
	// pending are pods whose eviction failed for a reason that says
	// nothing about the pod (timeout, API unreachable): counted as
	// releasing until then, so no other pod is chosen meanwhile, then
	// asked again.
	pending map[types.UID]time.Time

	// static caches candidates' pod-derived fields (see candidate).
	static map[types.UID]qos.Candidate

	// Per-cycle scratch, reused.
	byUID       map[types.UID]*corev1.Pod
	usage       map[types.UID]*collector.PodSample
	nodeUsage   qos.NodeUsage
	cands       []qos.Candidate
	intents     map[types.UID]resctl.Intent
	nextApplied map[types.UID]int64

	mu     sync.Mutex
	status conditions
}

// policy is what the selected NodeQOS objects say about acting.
type policy struct {
	dryRun       bool
	maxPerMinute int32
	grace        *int64
	sources      []string
}

// conditions are the NodeMetric conditions the Executor owns.
type conditions struct {
	known                        bool
	forbid, throttling           bool
	forbidReason, forbidMessage  string
	throttleReason, throttleMsg  string
	forbidSince, throttlingSince time.Time
}

// New validates cfg (after defaulting a copy) and returns an Executor.
func New(cfg Config, d Deps) (*Executor, error) {
	cfg.SetDefaults()
	errs := cfg.Validate(field.NewPath("qos"))
	if d.Evictor == nil {
		errs = append(errs, field.Required(field.NewPath("deps", "evictor"), "an Evictor is required"))
	}
	if d.Reconciler == nil {
		errs = append(errs, field.Required(field.NewPath("deps", "reconciler"), "a cgroup limit reconciler is required"))
	}
	if d.Recorder == nil {
		errs = append(errs, field.Required(field.NewPath("deps", "recorder"), "an event recorder is required"))
	}
	if d.Clock == nil {
		errs = append(errs, field.Required(field.NewPath("deps", "clock"), "a clock is required"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("configuring the node QoS executor: %w", errs.ToAggregate())
	}
	m, err := newMetrics(d.Prometheus)
	if err != nil {
		return nil, err
	}
	reg := d.QoSMetrics
	if reg == nil {
		reg = qos.DefaultRegistry()
	}
	e := &Executor{
		cfg: cfg, d: d, metrics: m, qosReg: reg,
		leaving: map[types.UID]time.Time{}, pending: map[types.UID]time.Time{},
		applied: map[types.UID]int64{}, retryAt: map[types.UID]time.Time{}, static: map[types.UID]qos.Candidate{},
		wouldEvict: map[types.UID]time.Time{},
		byUID:      map[types.UID]*corev1.Pod{}, usage: map[types.UID]*collector.PodSample{},
		nodeUsage: qos.NodeUsage{}, intents: map[types.UID]resctl.Intent{},
		nextApplied: map[types.UID]int64{},
	}
	e.flight.inflight = map[types.UID]struct{}{}
	e.loadBudgets()
	return e, nil
}

// Name implements agent.CycleModule.
func (e *Executor) Name() string { return Name }

// Cycle implements agent.CycleModule: plan with this cycle's sample, evict
// (re-planning past PodDisruptionBudget refusals), state the CPU quotas to
// the reconciler and update the conditions.
func (e *Executor) Cycle(ctx context.Context, s *agent.Snapshot) error {
	logger := klog.FromContext(ctx).WithName(Name)
	if s.Node == nil {
		logger.V(4).Info("Node not known yet; node QoS waits")
		return nil
	}
	var errs []error
	if err := e.refresh(logger, s); err != nil {
		if e.planner == nil {
			return err
		}
		// Keep acting on the last good waterlines.
		errs = append(errs, err)
	}
	now := e.d.Clock.Now()
	e.collectEvictions(logger, s.Node, now)
	e.measure(s, now)
	for m, v := range e.nodeUsage {
		e.metrics.nodeUsage.WithLabelValues(string(m)).Set(float64(v))
	}
	e.markLeaving(now)
	if cpu, ok := e.nodeUsage[qos.MetricCPU]; ok {
		e.beWin.add(s.Time, cpu, e.planner.SampleBECPU(cpu, e.cands), e.window)
	}
	node := qos.NodeState{Usage: e.nodeUsage, CPUWindow: e.beWin.average(s.Time, e.window)}
	prev := e.h
	plan := e.planner.Plan(node, e.cands, prev)
	if s.FromNodeSnapshot {
		// The pods and NodeQOS objects are what a previous run saved,
		// possibly long ago: an eviction cannot be undone, so it waits
		// for the API server's view (docs/design/node-qos.md#faults-restarts-and-uninstall).
		if len(plan.Evictions) > 0 {
			logger.V(4).Info("Not evicting from the node snapshot; waiting for the API server's view", "evictions", len(plan.Evictions))
		}
	} else {
		e.startEvictions(ctx, logger, &plan, now)
	}
	e.h = plan.Hysteresis
	e.applyQuotas(logger, &plan, now)
	e.setConditions(s.NodeMetric, &plan, now)
	if logger.V(4).Enabled() {
		logger.V(4).Info("Node QoS cycle", "usage", e.nodeUsage, "throttled", len(e.intents), "evictions", len(plan.Evictions), "reasons", plan.Reasons)
	}
	return errors.Join(errs...)
}

// refresh rebuilds the planner when the NodeQOS objects, the node's labels
// or its capacity changed.
func (e *Executor) refresh(logger klog.Logger, s *agent.Snapshot) error {
	capacity := qos.Capacity{
		CPUMilli:    s.Node.Status.Capacity.Cpu().MilliValue(),
		MemoryBytes: s.Node.Status.Capacity.Memory().Value(),
	}
	key := plannerKey(s, capacity)
	if e.planner != nil && key == e.plannerKey {
		return nil
	}
	all := make([]v1alpha1.NodeQOS, len(s.NodeQOSes))
	for i, nq := range s.NodeQOSes {
		all[i] = *nq
	}
	selected, errs := qos.SelectNodeQOS(all, s.Node.Labels)
	waterlines, buildErrs := qos.BuildWaterlinesWithRegistry(selected, capacity, e.qosReg)
	errs = append(errs, buildErrs...)
	if err := waterlines.CheckOrder(); err != nil {
		return e.refuseMerge(logger, s, key, err)
	}
	if len(errs) > 0 {
		logger.Error(errs.ToAggregate(), "Ignoring NodeQOS objects that cannot be applied; the valid ones still apply")
		e.d.Recorder.Eventf(s.Node, corev1.EventTypeWarning, "InvalidNodeQOS", "Ignoring NodeQOS objects that cannot be applied: %v", errs.ToAggregate())
	}
	planner, err := qos.NewPlanner(e.qosReg, waterlines)
	if err != nil {
		return fmt.Errorf("planning with the waterlines of node %s: %w", s.Node.Name, err)
	}
	e.planner, e.plannerKey, e.capacity = planner, key, capacity
	e.window = time.Duration(waterlines.CPUEviction.WindowSeconds) * time.Second
	e.hasLines = len(waterlines.Lines) > 0
	e.policy = policyOf(selected)
	e.bucket.setRate(e.policy.maxPerMinute, e.d.Clock.Now())
	e.memBucket.setRate(*e.cfg.MemoryEvictionsPerMinute, e.d.Clock.Now())
	lines := make([]string, 0, len(waterlines.Lines))
	e.metrics.waterlines.Reset()
	for _, l := range waterlines.Lines {
		e.metrics.waterlines.WithLabelValues(string(l.Action), string(l.Metric)).Set(float64(l.Value))
		lines = append(lines, fmt.Sprintf("%s %s %d (%s)", l.Action, l.Metric, l.Value, l.Source))
	}
	logger.V(2).Info("Node waterlines", "nodeQOS", e.policy.sources, "lines", lines, "capacity", capacity,
		"dryRun", e.policy.dryRun, "maxEvictionsPerMinute", e.policy.maxPerMinute)
	return nil
}

// plannerKey hashes what the planner is built from.
func plannerKey(s *agent.Snapshot, c qos.Capacity) uint64 {
	h := fnv.New64a()
	var buf [20]byte
	write := func(v string) {
		_, _ = h.Write([]byte(v))
		_, _ = h.Write([]byte{0})
	}
	write(string(strconv.AppendInt(buf[:0], c.CPUMilli, 10)))
	write(string(strconv.AppendInt(buf[:0], c.MemoryBytes, 10)))
	for _, k := range slices.Sorted(maps.Keys(s.Node.Labels)) {
		write(k)
		write(s.Node.Labels[k])
	}
	// The informer lists NodeQOS objects in no fixed order: add up a hash
	// of each, so the same objects in another order are the same key.
	var objects uint64
	for _, nq := range s.NodeQOSes {
		oh := fnv.New64a()
		_, _ = oh.Write([]byte(nq.UID))
		_, _ = oh.Write([]byte{0})
		_, _ = oh.Write([]byte(nq.ResourceVersion))
		objects += oh.Sum64()
	}
	write(string(strconv.AppendUint(buf[:0], objects, 10)))
	write(string(strconv.AppendInt(buf[:0], int64(len(s.NodeQOSes)), 10)))
	return h.Sum64()
}

// policyOf merges how the selected NodeQOS objects want to act: dry run
// when any asks for it (their lines are merged into one set, so acting on
// lines somebody declared a trial would be the surprise), the lowest
// eviction rate, the shortest grace period any sets (unset: the pods' own).
func policyOf(nqs []*v1alpha1.NodeQOS) policy {
	p := policy{maxPerMinute: v1alpha1.DefaultEvictionMaxPerMinute}
	first := true
	for _, nq := range nqs {
		spec := v1alpha1.NodeQOSSpecWithDefaults(&nq.Spec)
		p.sources = append(p.sources, nq.Name)
		p.dryRun = p.dryRun || spec.DryRun
		if first || *spec.Eviction.MaxPerMinute < p.maxPerMinute {
			p.maxPerMinute = *spec.Eviction.MaxPerMinute
		}
		first = false
		if g := spec.Eviction.GracePeriodSeconds; g != nil && (p.grace == nil || *g < *p.grace) {
			p.grace = g
		}
	}
	return p
}

// measure fills the node usage and the candidates from the cycle's sample:
// every pod of the node (the planner filters protected ones and counts
// terminating ones as releasing), with the quota the Executor applied.
// Pods whose eviction a PodDisruptionBudget refused recently are left out.
func (e *Executor) measure(s *agent.Snapshot, now time.Time) {
	clear(e.nodeUsage)
	clear(e.usage)
	clear(e.byUID)
	if s.Sample != nil {
		if s.Sample.Node.HasCPU {
			e.nodeUsage[qos.MetricCPU] = milli(s.Sample.Node.CPU)
		}
		if s.Sample.Node.HasMemory {
			e.nodeUsage[qos.MetricMemory] = int64(s.Sample.Node.Memory)
		}
		// Custom metrics the collector reads (agent --custom-metrics): the
		// node's value is the sum over its pods.
		for name, v := range s.Sample.Custom {
			e.nodeUsage[qos.MetricName(name)] = v
		}
		for i := range s.Sample.Pods {
			e.usage[s.Sample.Pods[i].Pod.UID] = &s.Sample.Pods[i]
		}
	}
	e.cands = e.cands[:0]
	for _, pod := range s.Pods {
		e.byUID[pod.UID] = pod
		if t, ok := e.retryAt[pod.UID]; ok {
			if now.Before(t) {
				continue
			}
			delete(e.retryAt, pod.UID)
		}
		u := qos.PodUsage{CPUQuotaMilli: qos.NoQuota}
		if q, ok := e.applied[pod.UID]; ok {
			u.CPUQuotaMilli = q
		}
		if pu := e.usage[pod.UID]; pu != nil {
			if pu.HasCPU {
				u.CPUMilli = milli(pu.CPU)
			}
			if pu.HasMemory {
				u.MemoryBytes = int64(pu.Memory)
			}
			if len(pu.Custom) > 0 {
				u.Metrics = make(map[qos.MetricName]int64, len(pu.Custom))
				for name, v := range pu.Custom {
					u.Metrics[qos.MetricName(name)] = v
				}
			}
		}
		e.cands = append(e.cands, e.candidate(pod, u))
	}
	for uid := range e.retryAt {
		if _, ok := e.byUID[uid]; !ok {
			delete(e.retryAt, uid)
		}
	}
	for uid := range e.static {
		if _, ok := e.byUID[uid]; !ok {
			delete(e.static, uid)
		}
	}
	for uid := range e.wouldEvict {
		if _, ok := e.byUID[uid]; !ok {
			delete(e.wouldEvict, uid)
		}
	}
}

// candidate is qos.NewCandidate(pod, u), with what depends on the pod
// alone (band, class, requests and limits summed over containers) kept per
// pod object: informer objects are replaced, never changed, on update, so
// the same pointer has the same spec and status.
func (e *Executor) candidate(pod *corev1.Pod, u qos.PodUsage) qos.Candidate {
	c, ok := e.static[pod.UID]
	if !ok || c.Pod != pod {
		c = qos.NewCandidate(pod, qos.PodUsage{CPUQuotaMilli: qos.NoQuota})
		e.static[pod.UID] = c
	}
	c.CPUUsageMilli, c.MemoryUsageBytes, c.CPUQuotaMilli = u.CPUMilli, u.MemoryBytes, u.CPUQuotaMilli
	c.Metrics = u.Metrics
	return c
}

func milli(cores float64) int64 { return int64(math.Round(cores * 1000)) }

// applyQuotas remembers the plan's quotas, states them to the reconciler
// (none in dry run) and reports every change.
func (e *Executor) applyQuotas(logger klog.Logger, plan *qos.Plan, now time.Time) {
	clear(e.intents)
	next := e.nextApplied
	clear(next)
	for _, q := range plan.Quotas {
		pod := e.byUID[q.Pod.UID]
		if pod == nil {
			continue
		}
		if q.DesiredMilli != qos.NoQuota {
			if r := extension.QoSProtection(pod); r != extension.NotProtected {
				logger.Error(nil, "Refusing to throttle a protected pod the planner chose", "pod", klog.KObj(pod), "reason", string(r))
				continue
			}
			next[q.Pod.UID] = q.DesiredMilli
			if !e.policy.dryRun {
				e.intents[q.Pod.UID] = resctl.Intent{CPUQuotaMilli: q.DesiredMilli, BelowOwnLimits: true}
			}
		}
		if q.Changed() {
			e.reportQuota(logger, pod, q)
		}
	}
	// A pod left out of this plan while a refusal runs out keeps its
	// quota, unless it has become protected meanwhile (the planner, which
	// did not see it, checks the NodeQOS protected namespaces too).
	var protectedNS []string
	if len(e.retryAt) > 0 {
		protectedNS = e.planner.Waterlines().ProtectedNamespaces
	}
	for uid, until := range e.retryAt {
		q, ok := e.applied[uid]
		if !ok || !now.Before(until) {
			continue
		}
		if pod := e.byUID[uid]; pod != nil && extension.QoSProtection(pod) == extension.NotProtected &&
			!extension.IsProtectedNamespace(pod.Namespace, protectedNS...) {
			next[uid] = q
			if !e.policy.dryRun {
				e.intents[uid] = resctl.Intent{CPUQuotaMilli: q, BelowOwnLimits: true}
			}
		}
	}
	e.applied, e.nextApplied = next, e.applied
	e.d.Reconciler.SetIntents(Source, e.intents)
	e.metrics.throttledPods.Set(float64(len(e.intents)))
}

func (e *Executor) reportQuota(logger klog.Logger, pod *corev1.Pod, q qos.Quota) {
	dry := strconv.FormatBool(e.policy.dryRun)
	from, to := quotaString(q.CurrentMilli), quotaString(q.DesiredMilli)
	msg := fmt.Sprintf("CPU quota %s -> %s: %s", from, to, q.Reason)
	if e.policy.dryRun {
		msg = "Dry run, not applied: " + msg
	}
	down := q.DesiredMilli != qos.NoQuota && (q.CurrentMilli == qos.NoQuota || q.DesiredMilli < q.CurrentMilli)
	switch {
	case down:
		e.metrics.throttles.WithLabelValues(dry).Inc()
		logger.V(2).Info(pick(e.policy.dryRun, "Dry run: would throttle pod", "Throttling pod"), "pod", klog.KObj(pod), "from", from, "to", to, "reason", q.Reason)
		e.d.Recorder.Event(pod, corev1.EventTypeNormal, pick(e.policy.dryRun, "WouldThrottle", "Throttled"), msg)
	default:
		e.metrics.restores.WithLabelValues(dry).Inc()
		logger.V(2).Info(pick(e.policy.dryRun, "Dry run: would restore pod CPU", "Restoring pod CPU"), "pod", klog.KObj(pod), "from", from, "to", to, "reason", q.Reason)
		if q.DesiredMilli == qos.NoQuota {
			e.d.Recorder.Event(pod, corev1.EventTypeNormal, pick(e.policy.dryRun, "WouldReleaseThrottle", "ThrottleReleased"), msg)
		}
	}
}

func pick(dry bool, ifDry, otherwise string) string {
	if dry {
		return ifDry
	}
	return otherwise
}

func quotaString(q int64) string {
	if q == qos.NoQuota {
		return "none"
	}
	return strconv.FormatInt(q, 10) + "m"
}

// setConditions updates the conditions and asks for an early report when
// one flips, or when the NodeMetric shows another value than ours -- after
// a restart, the previous process's conditions until the next report.
func (e *Executor) setConditions(nm *v1alpha1.NodeMetric, plan *qos.Plan, now time.Time) {
	c := conditions{known: true}
	switch {
	case !e.hasLines:
		c.forbidReason, c.forbidMessage = ReasonNoWaterline, "No NodeQOS sets a waterline for this node"
	case plan.ForbidScheduling && e.policy.dryRun:
		c.forbidReason, c.forbidMessage = ReasonDryRun, "Dry run: would forbid scheduling Batch and Free pods: "+forbidReasons(plan)
	case plan.ForbidScheduling:
		c.forbid = true
		c.forbidReason, c.forbidMessage = ReasonOverWaterline, forbidReasons(plan)
	default:
		c.forbidReason, c.forbidMessage = ReasonUnderWaterline, "Usage is under every forbid-scheduling waterline"
	}
	c.throttling = len(e.intents) > 0
	if c.throttling {
		c.throttleReason, c.throttleMsg = ReasonPodsThrottled, e.throttledMessage()
	} else {
		c.throttleReason, c.throttleMsg = ReasonNoneThrottled, "No pod is held at a node QoS CPU quota"
	}
	e.mu.Lock()
	old := e.status
	c.forbidSince, c.throttlingSince = old.forbidSince, old.throttlingSince
	if !old.known || old.forbid != c.forbid {
		c.forbidSince = now
	}
	if !old.known || old.throttling != c.throttling {
		c.throttlingSince = now
	}
	e.status = c
	e.mu.Unlock()
	if c.forbid {
		e.metrics.forbid.Set(1)
	} else {
		e.metrics.forbid.Set(0)
	}
	flipped := old.known && (old.forbid != c.forbid || old.throttling != c.throttling)
	if (flipped || stale(nm, c)) && e.d.RequestReport != nil {
		e.d.RequestReport()
	}
}

// stale reports whether the NodeMetric publishes another status of our
// conditions than c (or none at all). The reporter spaces early reports, so
// asking every cycle until it shows ours costs nothing more.
func stale(nm *v1alpha1.NodeMetric, c conditions) bool {
	if nm == nil {
		return c.forbid || c.throttling
	}
	for _, want := range []struct {
		typ string
		on  bool
	}{{v1alpha1.ConditionForbidScheduling, c.forbid}, {v1alpha1.ConditionThrottling, c.throttling}} {
		got := meta.FindStatusCondition(nm.Status.Conditions, want.typ)
		if got == nil || got.Status != conditionStatus(want.on) {
			return true
		}
	}
	return false
}

func forbidReasons(plan *qos.Plan) string {
	var out []string
	for _, r := range plan.Reasons {
		if strings.HasPrefix(r, string(qos.ActionForbidScheduling)) {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

// throttledMessage names up to ten throttled pods with their quotas.
func (e *Executor) throttledMessage() string {
	uids := slices.Collect(maps.Keys(e.intents))
	names := make([]string, 0, len(uids))
	for _, uid := range uids {
		if p := e.byUID[uid]; p != nil {
			names = append(names, fmt.Sprintf("%s/%s at %dm", p.Namespace, p.Name, e.intents[uid].CPUQuotaMilli))
		}
	}
	slices.Sort(names)
	more := ""
	if len(names) > 10 {
		more = fmt.Sprintf(" and %d more", len(names)-10)
		names = names[:10]
	}
	return fmt.Sprintf("%d pods held at a node QoS CPU quota: %s%s", len(uids), strings.Join(names, ", "), more)
}

// ContributeStatus implements agent.StatusContributor: the ForbidScheduling
// and Throttling conditions, once a cycle has planned.
func (e *Executor) ContributeStatus(status *v1alpha1.NodeMetricStatus) {
	e.mu.Lock()
	c := e.status
	e.mu.Unlock()
	if !c.known {
		return
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionForbidScheduling, Status: conditionStatus(c.forbid),
		Reason: c.forbidReason, Message: c.forbidMessage, LastTransitionTime: metav1.NewTime(c.forbidSince),
	})
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionThrottling, Status: conditionStatus(c.throttling),
		Reason: c.throttleReason, Message: c.throttleMsg, LastTransitionTime: metav1.NewTime(c.throttlingSince),
	})
}

func conditionStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}
