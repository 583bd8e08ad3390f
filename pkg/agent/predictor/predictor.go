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

package predictor

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/core/predict"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
)

// Name is the module's name in logs and metrics.
const Name = "predictor"

// Reasons of the PredictionReady condition.
const (
	ReasonPredicted = "Predicted"
	ReasonNoHistory = "NoHistory"
	ReasonColdStart = "ColdStart"
)

// ReportRequester asks the reporter for an early NodeMetric status write;
// *agent.Agent is one.
type ReportRequester interface {
	RequestReport()
}

// Deps is what the predictor works with.
type Deps struct {
	// Clock is the agent's clock; the predictor reads no other.
	Clock clock.WithTicker
	// Reports receives early-report requests; nil never asks.
	Reports ReportRequester
	// Prometheus, when set, registers the predictor's metrics.
	Prometheus prometheus.Registerer
}

// resourceKind is one predicted resource: its name in the status, its
// series in the metric cache and the bucket layout of its histograms.
type resourceKind struct {
	name  corev1.ResourceName
	cache metriccache.Resource
	// histogram is the layout without the half-life (that comes from the
	// policy). It is fixed: a checkpoint can only be read into the layout
	// it was written with.
	histogram predict.HistogramConfig
}

var resourceKinds = [...]resourceKind{
	// 0.01 core resolution near zero, ~5 % relative error above, up to
	// 1024 cores (175 buckets).
	{corev1.ResourceCPU, metriccache.ResourceCPU, predict.HistogramConfig{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 1024}},
	// 1 MiB resolution near zero, ~5 % above, up to 16 TiB (280 buckets).
	{corev1.ResourceMemory, metriccache.ResourceMemory, predict.HistogramConfig{FirstBucketSize: 1 << 20, Ratio: 1.05, MaxValue: 1 << 44}},
}

const (
	cpuIndex    = 0
	memoryIndex = 1
	numBands    = 4
)

// bandIndex returns the position of b in extension.Bands.
func bandIndex(b extension.Band) int {
	for i, o := range extension.Bands {
		if o == b {
			return i
		}
	}
	return -1
}

// resourceState is what the predictor keeps for one resource.
type resourceState struct {
	layout *predict.Layout
	// prod holds the node-level history (Prod + system: node usage minus
	// the Mid, Batch and Free bands) and one history per Prod pod, plus
	// the system as a pod.
	prod *predict.Tracker
	// bands holds each band's summed usage, in extension.Bands order.
	bands [numBands]*predict.Histogram
	// fed records the Prod + system usage of the latest feed, for the
	// prediction-error metrics.
	fed fedUsage
}

func newResourceState(l *predict.Layout) *resourceState {
	rs := &resourceState{layout: l, prod: predict.NewTracker(l)}
	for i := range rs.bands {
		rs.bands[i] = l.NewHistogram()
	}
	rs.prod.SetPod(predict.SystemPodID, time.Time{}, 0)
	return rs
}

// Amounts are a quantity of CPU and memory in the units the NodeMetric
// status and the tier formulas use.
type Amounts struct {
	// MilliCPU is CPU in millicores.
	MilliCPU int64
	// Memory is memory in bytes.
	Memory int64
}

// ResourceList returns a as a status resource list (cpu, memory).
func (a Amounts) ResourceList() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(a.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(a.Memory, resource.BinarySI),
	}
}

func (a Amounts) String() string { return fmt.Sprintf("cpu=%dm memory=%d", a.MilliCPU, a.Memory) }

func (a *Amounts) set(i int, v float64) {
	if i == cpuIndex {
		a.MilliCPU = int64(math.Round(max(v, 0) * 1000))
	} else {
		a.Memory = int64(math.Round(max(v, 0)))
	}
}

// BandAmounts holds one Amounts per band, in extension.Bands order.
type BandAmounts [numBands]Amounts

// Get returns the amounts of band b (zero for an unknown band).
func (b BandAmounts) Get(band extension.Band) Amounts {
	if i := bandIndex(band); i >= 0 {
		return b[i]
	}
	return Amounts{}
}

// Result is one prediction.
type Result struct {
	// Time is when it was computed (status.predictionTime).
	Time time.Time
	// Model names the model and its parameters, e.g. "NSigmaV2(n=5)".
	Model string
	// ProdPeak is the predicted peak of the Prod pods plus the system,
	// safety margin included (status.prodPeak).
	ProdPeak Amounts
	// ProdRequests is Σ requests of the Prod pods (as the scheduler and
	// the manager count them: tiers.PodRequests).
	ProdRequests Amounts
	// ProdReclaimable is tiers.ReclaimableOf(ReclaimRatioPercent,
	// ProdRequests, ProdPeak) per resource (status.prodReclaimable).
	ProdReclaimable Amounts
	// ReclaimRatioPercent is the NodeMetric's spec.tiers.reclaimRatioPercent
	// (100 when absent), the ColocationPolicy's ratio.
	ReclaimRatioPercent int32
	// BandPeaks is, per band, N-sigma (the policy's N and safety margin)
	// of the band's own summed usage: what the band as a whole peaks at.
	// No status field carries it yet; it is for other modules and logs.
	BandPeaks BandAmounts
	// Ready is PredictionReady: every input the model uses had history.
	Ready bool
	// Reason and Message explain Ready (ReasonPredicted, ReasonNoHistory,
	// ReasonColdStart).
	Reason, Message string
	// ProdPods is how many Prod pods the node runs; ColdStartPods how many
	// of them count at their request (younger than the cold-start period,
	// or without usage history).
	ProdPods, ColdStartPods int
}

// Predictor is the predict server, an agent module: CycleModule (feeding
// and predicting on the agent's loop), StatusContributor and Runner (the
// checkpoint loop).
type Predictor struct {
	cfg     Config
	deps    Deps
	metrics *metrics

	// checkpointMu serialises checkpoint writes; never held with mu
	// during disk I/O.
	checkpointMu sync.Mutex

	mu sync.Mutex
	// policy is the last predict policy seen (defaulted); params and
	// model what is in force (the last valid policy's).
	policy *v1alpha1.PredictPolicy
	// reclaimRatio is the NodeMetric's spec.tiers.reclaimRatioPercent
	// (the ColocationPolicy's), which status.prodReclaimable is reported at.
	reclaimRatio int32
	params       predict.Params
	model        predict.Predictor
	bandModel    predict.Predictor
	modelName    string
	halfLife     time.Duration
	// res is nil until the first cycle: the half-life, and so the
	// layout, comes with the policy.
	res [len(resourceKinds)]*resourceState
	// tracked maps the UID of every tracked Prod pod to its start.
	tracked map[string]time.Time
	seen    map[string]struct{}
	// pending is the checkpoint read at start, restored at the first
	// cycle, once the policy's half-life is known.
	pending *checkpointState
	// fedUntil is the end of the last window fed to the histograms;
	// zero before the first.
	fedUntil  time.Time
	lastCheck time.Time
	requests  Amounts
	prodPods  int

	result Result
	// readySince is when result.Ready last changed.
	readySince time.Time
	// reported is the result last handed to the reporter, at reportedAt.
	reported   Result
	reportedAt time.Time

	// Scratch of feed and predict, reused every update.
	bandInput predict.Input
	values    []metriccache.TimedValue
	counts    []int
	avg       [numScratch][]float64
}

var (
	_ agent.CycleModule       = &Predictor{}
	_ agent.StatusContributor = &Predictor{}
	_ agent.Runner            = &Predictor{}
)

// CheckpointFile is the predictor's checkpoint in the agent's state
// directory.
const CheckpointFile = "predictor.json"

// New returns a predictor; cfg is defaulted and validated. The checkpoint
// at cfg.CheckpointPath is read and restored at the first cycle, once the
// policy's half-life is known; one that cannot be used is logged and
// ignored.
func New(cfg Config, deps Deps) (*Predictor, error) {
	cfg.SetDefaults()
	errs := cfg.Validate(field.NewPath("predictor"))
	if deps.Clock == nil {
		errs = append(errs, field.Required(field.NewPath("clock"), "must be set"))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	m, err := newMetrics(deps.Prometheus)
	if err != nil {
		return nil, err
	}
	p := &Predictor{
		cfg:          cfg,
		deps:         deps,
		metrics:      m,
		tracked:      map[string]time.Time{},
		reclaimRatio: v1alpha1.DefaultReclaimRatioPercent,
		seen:         map[string]struct{}{},
	}
	return p, nil
}

// Name implements agent.CycleModule.
func (p *Predictor) Name() string { return Name }

// Cycle implements agent.CycleModule. Most cycles only look at the clock:
// every UpdateInterval it feeds the histograms with the windows that ended,
// every CheckInterval it recomputes the prediction and decides whether to
// ask for an early report.
func (p *Predictor) Cycle(ctx context.Context, s *agent.Snapshot) error {
	logger := klog.FromContext(ctx).WithValues("module", Name)
	now := p.deps.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.applyPolicyLocked(logger, s.PredictPolicy()); err != nil {
		return err
	}
	var spec *v1alpha1.NodeMetricSpec
	if s.NodeMetric != nil {
		spec = &s.NodeMetric.Spec
	}
	if ratio := spec.ReclaimRatioPercent(); ratio != p.reclaimRatio {
		// Report at the new ratio now, not at the next check.
		p.reclaimRatio, p.lastCheck = ratio, time.Time{}
	}
	checkDue := p.lastCheck.IsZero() || now.Sub(p.lastCheck) >= p.cfg.CheckInterval
	updateDue := p.fedUntil.IsZero() || now.Sub(p.fedUntil) >= p.cfg.UpdateInterval
	if !checkDue && !updateDue {
		return nil
	}
	p.syncPodsLocked(s.Pods, now)
	if n := p.feedLocked(logger, s.Cache, now); n > 0 {
		p.metrics.windows.Add(float64(n))
		p.metrics.observeFed(&p.res, &p.result)
		logger.V(4).Info("Fed the usage histograms", "windows", n, "until", p.fedUntil, "prodPods", p.prodPods)
	}
	p.predictLocked(now)
	if checkDue {
		p.lastCheck = now
		p.checkLocked(logger, now)
	}
	return nil
}

// applyPolicyLocked puts the policy into force when it changed. A model
// change rebuilds the predictor and keeps the histograms; a half-life
// change rebuilds the histograms, which then start again from what the
// metric cache still holds. The first call also restores the checkpoint.
func (p *Predictor) applyPolicyLocked(logger klog.Logger, pol *v1alpha1.PredictPolicy) error {
	if p.policy != nil && reflect.DeepEqual(pol, p.policy) {
		return nil
	}
	first := p.policy == nil
	p.policy = pol
	if first && p.cfg.CheckpointPath != "" {
		// Once, on the loop: a small file, read before anything is fed.
		p.pending = readCheckpoint(logger, p.cfg.CheckpointPath)
	}
	params := predict.ParamsFromPolicy(pol)
	model, err := predict.New(pol.Model, params)
	halfLife := time.Duration(*pol.HalfLifeSeconds) * time.Second
	var layouts [len(resourceKinds)]*predict.Layout
	if err == nil {
		layouts, err = newLayouts(halfLife)
	}
	if err != nil {
		err = fmt.Errorf("ignoring the predict policy: %w", err)
		if p.model != nil {
			// Keep predicting with the last valid policy; say so once.
			logger.Error(err, "Keeping the previous predict policy", "model", p.model.String(), "halfLife", p.halfLife)
			return nil
		}
		// Nothing valid yet: the defaults, which always build.
		def := v1alpha1.PredictPolicyWithDefaults(nil)
		logger.Error(err, "Predicting with the default predict policy", "model", def.Model)
		params = predict.ParamsFromPolicy(def)
		halfLife = time.Duration(*def.HalfLifeSeconds) * time.Second
		if model, err = predict.New(def.Model, params); err == nil {
			layouts, err = newLayouts(halfLife)
		}
		if err != nil {
			return fmt.Errorf("building the default predictor: %w", err)
		}
	}
	p.params, p.model, p.modelName = params, model, model.String()
	p.bandModel = predict.NSigmaV1{Params: params}
	p.lastCheck = time.Time{} // predict and check with the new model now
	if !first && halfLife == p.halfLife {
		logger.Info("Applying a new predict policy", "model", model.String(), "coldStart", params.ColdStart, "safetyMarginPercent", params.SafetyMarginPercent)
		return nil
	}
	if !first {
		logger.Info("The predict policy changed the histograms' half-life, starting them again from the metric cache",
			"model", model.String(), "oldHalfLife", p.halfLife, "halfLife", halfLife)
	}
	p.halfLife = halfLife
	p.resetLocked(layouts)
	if p.pending != nil {
		cp := p.pending
		p.pending = nil
		if err := p.restoreLocked(cp, layouts); err != nil {
			logger.Error(err, "Ignoring the predictor checkpoint, starting the histograms from the metric cache", "path", p.cfg.CheckpointPath)
			p.resetLocked(layouts)
		} else {
			logger.Info("Restored the usage histograms from the predictor checkpoint", "path", p.cfg.CheckpointPath,
				"savedAt", cp.SavedAt, "fedUntil", cp.FedUntil, "prodPods", len(p.tracked))
		}
	}
	if first {
		logger.Info("Predicting the Prod peak", "model", model.String(), "halfLife", halfLife,
			"coldStart", params.ColdStart, "safetyMarginPercent", params.SafetyMarginPercent, "updateInterval", p.cfg.UpdateInterval)
	}
	return nil
}

func newLayouts(halfLife time.Duration) ([len(resourceKinds)]*predict.Layout, error) {
	var out [len(resourceKinds)]*predict.Layout
	for i, k := range resourceKinds {
		c := k.histogram
		c.HalfLife = halfLife
		l, err := predict.NewLayout(c)
		if err != nil {
			return out, fmt.Errorf("%s histogram: %w", k.name, err)
		}
		out[i] = l
	}
	return out, nil
}

// resetLocked starts empty histograms; the next feed fills them from
// everything the metric cache holds.
func (p *Predictor) resetLocked(layouts [len(resourceKinds)]*predict.Layout) {
	for i, l := range layouts {
		p.res[i] = newResourceState(l)
	}
	clear(p.tracked)
	p.fedUntil = time.Time{}
}

// syncPodsLocked makes the Prod trackers follow the node's Prod pods: new
// pods are added with their start and requests, pods that went (or left
// the Prod band) are forgotten with their history.
func (p *Predictor) syncPodsLocked(pods []*corev1.Pod, now time.Time) {
	clear(p.seen)
	var req Amounts
	for _, pod := range pods {
		if pod.UID == "" || extension.BandOf(pod) != extension.BandProd {
			continue
		}
		id := string(pod.UID)
		if _, dup := p.seen[id]; dup {
			continue
		}
		p.seen[id] = struct{}{}
		milliCPU, memory := tiers.PodRequests(pod)
		req.MilliCPU += milliCPU
		req.Memory += memory
		start := podStart(pod, now)
		p.res[cpuIndex].prod.SetPod(id, start, float64(milliCPU)/1000)
		p.res[memoryIndex].prod.SetPod(id, start, float64(memory))
		p.tracked[id] = start
	}
	for id := range p.tracked {
		if _, ok := p.seen[id]; ok {
			continue
		}
		delete(p.tracked, id)
		for _, rs := range p.res {
			rs.prod.RemovePod(id)
		}
	}
	p.requests = req
	p.prodPods = len(p.seen)
}

// podStart is when the pod started running; a pod not started yet counts
// from its creation (it is in cold start either way).
func podStart(pod *corev1.Pod, now time.Time) time.Time {
	switch {
	case pod.Status.StartTime != nil:
		return pod.Status.StartTime.Time
	case !pod.CreationTimestamp.IsZero():
		return pod.CreationTimestamp.Time
	}
	return now
}

// predictLocked computes the prediction at now.
func (p *Predictor) predictLocked(now time.Time) {
	r := Result{Time: now, Model: p.modelName, ProdRequests: p.requests, ProdPods: p.prodPods, Ready: true}
	noHistory, systemCold := false, false
	for i, rs := range p.res {
		pred := p.model.Predict(rs.prod.Input(now))
		r.ProdPeak.set(i, pred.Peak)
		r.Ready = r.Ready && pred.Ready
		noHistory = noHistory || rs.prod.Node().IsEmpty()
		systemCold = systemCold || rs.prod.Pod(predict.SystemPodID).IsEmpty()
		for b, h := range rs.bands {
			p.bandInput = predict.Input{Now: now, Node: h}
			r.BandPeaks[b].set(i, p.bandModel.Predict(&p.bandInput).Peak)
		}
	}
	// The one definition of reclaimable, at the reclaim ratio the manager
	// wrote into the NodeMetric's spec from the ColocationPolicy: the
	// manager sells Mid from the same function at the same ratio.
	r.ReclaimRatioPercent = p.reclaimRatio
	r.ProdReclaimable = Amounts{
		MilliCPU: tiers.ReclaimableOf(p.reclaimRatio, r.ProdRequests.MilliCPU, r.ProdPeak.MilliCPU),
		Memory:   tiers.ReclaimableOf(p.reclaimRatio, r.ProdRequests.Memory, r.ProdPeak.Memory),
	}
	for id, start := range p.tracked {
		if now.Sub(start) < p.params.ColdStart || p.res[cpuIndex].prod.Pod(id).IsEmpty() || p.res[memoryIndex].prod.Pod(id).IsEmpty() {
			r.ColdStartPods++
		}
	}
	switch {
	case r.Ready:
		r.Reason = ReasonPredicted
		r.Message = fmt.Sprintf("%s predicts from the usage history of the node and its %d Prod pods", r.Model, r.ProdPods)
	case noHistory:
		r.Reason = ReasonNoHistory
		r.Message = "No usage history yet: the Prod pods' requests stand in for their usage"
	default:
		r.Reason = ReasonColdStart
		r.Message = fmt.Sprintf("%d of %d Prod pods started less than %s ago or have no usage history yet: their requests stand in for their usage",
			r.ColdStartPods, r.ProdPods, p.params.ColdStart)
		if systemCold {
			r.Message += "; the system's usage has no history yet"
		}
	}
	if p.result.Time.IsZero() || p.result.Ready != r.Ready {
		p.readySince = now
	}
	p.result = r
	p.metrics.observe(&r)
}

// checkLocked asks for an early report when the prediction is due for
// one (fast reporting: docs/design/prediction.md#reporting).
func (p *Predictor) checkLocked(logger klog.Logger, now time.Time) {
	var last *Result
	if !p.reportedAt.IsZero() {
		last = &p.reported
	}
	reason, detail := earlyReportReason(&p.result, last, p.reportedAt, now,
		*p.policy.ResourceDiffThresholdPercent, time.Duration(*p.policy.ForceUpdateSeconds)*time.Second)
	if reason == "" {
		return
	}
	p.metrics.earlyReports.WithLabelValues(reason).Inc()
	logger.V(2).Info("Asking for an early NodeMetric report", "reason", reason, "detail", detail,
		"prodPeak", p.result.ProdPeak, "ready", p.result.Ready)
	if p.deps.Reports != nil {
		p.deps.Reports.RequestReport()
	}
}

// Early-report reasons (the label of waterline_agent_predictor_early_reports_total).
const (
	EarlyFirst     = "FirstPrediction"
	EarlyForce     = "ForceUpdate"
	EarlyReadiness = "ReadinessChanged"
	EarlyMoved     = "PeakMoved"
)

// earlyReportReason decides whether cur must be reported before the
// reporter's next interval: nothing reported yet, forceUpdate passed since
// the last report at lastAt, readiness changed, or the peak of a resource
// moved by more than thresholdPercent of the reported value (any change
// from or to zero counts). It returns the reason and a detail for the log,
// or "" when no report is due.
func earlyReportReason(cur, last *Result, lastAt, now time.Time, thresholdPercent int64, forceUpdate time.Duration) (string, string) {
	if last == nil {
		return EarlyFirst, "no prediction reported yet"
	}
	if since := now.Sub(lastAt); since >= forceUpdate {
		return EarlyForce, fmt.Sprintf("last reported %s ago, forceUpdateSeconds is %s", since, forceUpdate)
	}
	if cur.Ready != last.Ready {
		return EarlyReadiness, fmt.Sprintf("PredictionReady went from %t to %t (%s)", last.Ready, cur.Ready, cur.Reason)
	}
	for _, d := range []struct {
		name      corev1.ResourceName
		cur, last int64
	}{
		{corev1.ResourceCPU, cur.ProdPeak.MilliCPU, last.ProdPeak.MilliCPU},
		{corev1.ResourceMemory, cur.ProdPeak.Memory, last.ProdPeak.Memory},
	} {
		if moved(d.cur, d.last, thresholdPercent) {
			return EarlyMoved, fmt.Sprintf("prodPeak %s moved from %d to %d, more than %d%%", d.name, d.last, d.cur, thresholdPercent)
		}
	}
	return "", ""
}

// moved reports whether cur differs from last by more than pct percent of
// last, in integers so that the boundary is exact: |cur − last|·100 >
// pct·last.
func moved(cur, last, pct int64) bool {
	if last == 0 {
		return cur != 0
	}
	d := cur - last
	if d < 0 {
		d = -d
	}
	return d*100 > pct*last
}

// ContributeStatus implements agent.StatusContributor: prodPeak,
// prodReclaimable, predictionTime and PredictionReady. Before the first
// prediction (the first cycle) it leaves the status as it is. What it
// hands out is what the early-report check compares with.
func (p *Predictor) ContributeStatus(st *v1alpha1.NodeMetricStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.result
	if r.Time.IsZero() {
		return
	}
	st.ProdPeak = r.ProdPeak.ResourceList()
	st.ProdReclaimable = r.ProdReclaimable.ResourceList()
	st.PredictionTime = &metav1.Time{Time: r.Time}
	cond := metav1.Condition{
		Type:               v1alpha1.ConditionPredictionReady,
		Status:             metav1.ConditionFalse,
		Reason:             r.Reason,
		Message:            r.Message,
		LastTransitionTime: metav1.Time{Time: p.readySince},
	}
	if r.Ready {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	p.reported = r
	p.reportedAt = p.deps.Clock.Now()
}

// Latest returns the latest prediction, and false before the first.
func (p *Predictor) Latest() (Result, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result, !p.result.Time.IsZero()
}

// Run implements agent.Runner: it checkpoints every CheckpointInterval
// until ctx ends, then once more, so a graceful shutdown loses nothing.
func (p *Predictor) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("module", Name)
	if p.cfg.CheckpointPath == "" {
		<-ctx.Done()
		return
	}
	ticker := p.deps.Clock.NewTicker(p.cfg.CheckpointInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			if wrote, err := p.Checkpoint(); err != nil {
				logger.Error(err, "Cannot write the final predictor checkpoint", "path", p.cfg.CheckpointPath)
			} else if wrote {
				logger.Info("Wrote the final predictor checkpoint", "path", p.cfg.CheckpointPath)
			}
			return
		case <-ticker.C():
			if _, err := p.Checkpoint(); err != nil {
				logger.Error(err, "Cannot write the predictor checkpoint", "path", p.cfg.CheckpointPath)
			}
		}
	}
}
