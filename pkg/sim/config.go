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
	"runtime"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Policy is a way to run the cluster that a simulation compares.
type Policy string

// Policies.
const (
	// PolicyK8sDefault is plain Kubernetes: pods are placed by requests
	// (NodeResourcesFit's fit and least-allocated score), Batch and Mid
	// jobs ask for cpu and memory like everyone, nothing is over-committed
	// and nothing watches node usage.
	PolicyK8sDefault Policy = "k8s-default"
	// PolicyK8sBestEffort is plain Kubernetes with Batch jobs asking for
	// no CPU (no CPU request, no CPU limit; memory as in k8s-default): the
	// scheduler counts only their memory, and kubelet gives them
	// cpu.shares 2, so they fill every idle core and yield it to pods that
	// request CPU. Mid jobs ask for cpu and memory as in k8s-default. It
	// is the strongest plain-Kubernetes way to fill idle CPU, and what
	// Waterline must be held against.
	PolicyK8sBestEffort Policy = "k8s-besteffort"
	// PolicyWaterline is Waterline: pods queue by priority band, the
	// colocation profiles turn Batch and Mid jobs into tier pods, the
	// scheduler adds LoadAware to the fit, the manager sells Mid and Batch
	// tier resources from predictions and real use, and each node's QoS
	// forbids scheduling, throttles and evicts Batch pods precisely.
	PolicyWaterline Policy = "waterline"
	// PolicyEvictAll is Waterline whose node QoS, at a breach, acts on every
	// Batch pod of the node -- throttles all of them to their floor, evicts all
	// of them -- as agents did before precise action
	// (docs/design/node-qos.md#precise-action): the baseline for over-action.
	PolicyEvictAll Policy = "evict-all"
	// PolicyOracle is k8s-besteffort with a cap no real node can set: each
	// step, knowing that step's Prod demand, it holds each node's non-Prod
	// CPU at the most that keeps every Prod pod of the node within its SLO
	// under the harm model (oracle.go). It measures how much of
	// k8s-besteffort's work is reachable without harm with that placement;
	// docs/design/simulator.md says what it bounds and what it does not.
	PolicyOracle Policy = "oracle"
)

// Policies lists every policy, in the order reports show them.
var Policies = []Policy{PolicyK8sDefault, PolicyK8sBestEffort, PolicyWaterline, PolicyEvictAll, PolicyOracle}

// DefaultPolicies are the policies a Config without Policies compares:
// both plain-Kubernetes baselines and Waterline.
var DefaultPolicies = []Policy{PolicyK8sDefault, PolicyK8sBestEffort, PolicyWaterline}

// colocated reports whether the policy runs Waterline's tiers, LoadAware,
// prediction and node QoS.
func (p Policy) colocated() bool { return p == PolicyWaterline || p == PolicyEvictAll }

// Baseline reports whether the policy is plain Kubernetes.
func (p Policy) Baseline() bool { return p == PolicyK8sDefault || p == PolicyK8sBestEffort }

// EvictedWork says what becomes of the work of an evicted job.
type EvictedWork string

// What an evicted job's new pod starts from.
const (
	// EvictedWorkRestart: the new pod starts the job over (batch work
	// without checkpoints, the common case).
	EvictedWorkRestart EvictedWork = "restart"
	// EvictedWorkContinue: the new pod continues where the evicted one
	// stopped (work that checkpoints).
	EvictedWorkContinue EvictedWork = "continue"
)

// Config is how a simulation runs. Every field is documented with its
// unit, range and default; WithDefaults fills unset (zero) fields only,
// and Validate returns every bad field.
type Config struct {
	// Policies are compared on the same workload, each in its own
	// goroutine. Default: DefaultPolicies.
	Policies []Policy
	// Parallel is how many policies are simulated at once, each with its
	// own cluster in memory: peak memory grows with it (about 300 MiB per
	// policy at 1,000 nodes), results do not change. Default (0):
	// GOMAXPROCS.
	Parallel int
	// Step is the simulated time between two steps: usage is computed,
	// pending pods are scheduled and node QoS may act once per step. In
	// [1s, 5m]; it divides every interval below. Default 10s.
	Step time.Duration
	// Seed seeds the scheduler's tie-breaking between equally scored
	// nodes. The same workload, config and seed give the same result.
	// Default 0.
	Seed int64
	// QoSInterval is how often each node's agent plans its QoS actions, a
	// multiple of Step. Default 10s.
	QoSInterval time.Duration
	// RetryInterval is how often pods that did not fit are tried again, a
	// multiple of Step. kube-scheduler retries them on cluster events
	// after a backoff of at most 10 s, and a busy cluster has events all
	// the time. Default 10s.
	RetryInterval time.Duration
	// PredictInterval is how often each node's agent adds a sample to its
	// Prod usage histograms and predicts the Prod peak, a multiple of
	// Step. The agent does it every 30-60 s; a sample every few minutes
	// predicts nearly the same peaks at a fraction of the cost for a
	// thousand nodes (pkg/sim/README.md measures 30 s against 5 min).
	// Default 5m.
	PredictInterval time.Duration
	// LoadAware are the LoadAware args of the waterline policies (they
	// must be valid LoadAware args, without the percentile aggregation the
	// simulated agents do not report). Default DefaultLoadAwareSpec().
	LoadAware *nodeload.Spec
	// LoadAwareWeight is LoadAware's score weight in the waterline
	// policies' scheduler profile, against the default plugins' request
	// scores (weight 1 each), as the chart's scheduler.loadAwareWeight
	// sets it. In [1, 100]. Default DefaultLoadAwareWeight.
	LoadAwareWeight int64
	// NodeQOS are the NodeQOS objects node agents enforce (each selects
	// nodes by their labels; sim nodes carry kubernetes.io/hostname and
	// the workload's node name). The CPU evict line they give a node is
	// also the line prod contention is measured against, for every
	// policy. Default DefaultNodeQOS().
	NodeQOS []v1alpha1.NodeQOS
	// ColocationPolicies are the ColocationPolicy objects: the "default"
	// one's profiles turn pods into colocated pods, and each node's
	// resolved policy gives its tiers, report interval and predictor. The
	// report interval must be a multiple of Step. Default
	// DefaultColocationPolicies().
	ColocationPolicies []v1alpha1.ColocationPolicy
	// PriorityClasses are the classes profiles may name, as the cluster
	// holds them: value, preemptionPolicy, and the Waterline annotations
	// that make a class NonPreemptible (read by preemption.ParseClass;
	// honoured by the colocated policies' BandPreemption only). The
	// baselines give their pods the same classes by the same profiles'
	// namespaces (a plain cluster whose teams name a PriorityClass), as
	// Kubernetes' Priority admission plugin does, without the Waterline
	// annotations' meaning. Default DefaultPriorityClasses().
	PriorityClasses []schedulingv1.PriorityClass
	// Preemption says whether the scheduler preempts: a pending pod that
	// fits no node evicts pods of lower priority, chosen the way
	// kube-scheduler's default preemption chooses them. The colocated
	// policies run BandPreemption (NonPreemptible classes and the other
	// victim rules of pkg/core/preemption), the others plain
	// DefaultPreemption. The chart installs waterline-scheduler with
	// preemption disabled (the rollout's first step,
	// docs/design/preemption.md#safe-rollout); the simulation models the
	// end of the rollout, and a plain cluster's kube-scheduler, where it
	// is on. Default true.
	Preemption *bool
	// DisruptionBudgets are the PodDisruptionBudgets of the workload's
	// pods (DisruptionBudget). The Eviction API refuses node QoS's CPU
	// evictions that would break one; memory relief and the OOM killer
	// ignore them; preemption prefers victims that break none. Nil means
	// DefaultDisruptionBudgets(); an empty, non-nil slice means none.
	DisruptionBudgets []DisruptionBudget
	// EvictedWork is what an evicted job's new pod starts from: restart
	// or continue. Default restart.
	EvictedWork EvictedWork
	// BandCap says whether node agents cap the Batch band as a whole at
	// the node's Batch allocatable (pkg/agent/tierlimits; the agent's
	// default is on). Default true.
	BandCap *bool
	// Harm is the model of what co-running work costs the online (Prod)
	// services. Default DefaultHarm().
	Harm *Harm
	// OracleHarmBudgetPercent is the harm budget, in percent of Prod
	// pod-time, that the oracle policy's budget figure spends
	// (OracleResult.Budget), in [0, 100]; 0 is none. Default 0.
	OracleHarmBudgetPercent float64
	// ChartPoints is how many points the time series of the result have,
	// in [2, 10000]. Default 288 (5 minutes each over 24 h).
	ChartPoints int
	// Progress, when set, is called from the policies' goroutines as they
	// advance, about every 1 % of the run: done of total steps of policy.
	Progress func(policy Policy, done, total int)
}

// Default names of the objects DefaultNodeQOS and
// DefaultColocationPolicies return, and the namespaces the simulation
// puts pods in.
const (
	NamespaceOnline = "online"
	NamespaceMid    = "mid"
	NamespaceBatch  = "batch"
)

// DefaultLoadAwareWeight is the chart's scheduler.loadAwareWeight
// (charts/waterline/values.yaml).
const DefaultLoadAwareWeight = 2

// DefaultLoadAwareSpec returns LoadAware's default args
// (docs/design/loadaware.md#args-and-defaults, as the scheduler defaults them:
// nodeload.DefaultSpec).
func DefaultLoadAwareSpec() nodeload.Spec { return nodeload.DefaultSpec() }

// DefaultNodeQOS returns the simulation's NodeQOS: for every node, CPU forbid
// scheduling and throttle at 70 % (production merges the two lines,
// docs/design/node-qos.md#the-three-waterlines), restore at 60 %, evict
// (satisfaction-based) at 80 %; memory forbid scheduling at 85 % and evict at
// 90 %; everything else at the API defaults.
func DefaultNodeQOS() []v1alpha1.NodeQOS {
	return []v1alpha1.NodeQOS{{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.NodeQOSSpec{
			CPU: &v1alpha1.CPUWaterlines{
				ForbidSchedulingPercent: ptr.To[int32](70),
				ThrottlePercent:         ptr.To[int32](70),
				RestorePercent:          ptr.To[int32](60),
				EvictPercent:            ptr.To[int32](80),
			},
			Memory: &v1alpha1.MemoryWaterlines{
				ForbidSchedulingPercent: ptr.To[int32](85),
				EvictPercent:            ptr.To[int32](90),
			},
		},
	}}
}

// DefaultColocationPolicies returns the "default" ColocationPolicy with
// the API's tier, collect and predict defaults and one profile per
// namespace of the simulation: pods in "online" become Prod
// (waterline-prod), in "mid" Mid (waterline-mid), in "batch" Batch
// (waterline-batch).
func DefaultColocationPolicies() []v1alpha1.ColocationPolicy {
	profile := func(ns string, band extension.Band, class string) v1alpha1.ColocationProfile {
		return v1alpha1.ColocationProfile{
			Name:              ns,
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{corev1.LabelMetadataName: v1alpha1.LabelValue(ns)}},
			Band:              string(band),
			PriorityClassName: class,
		}
	}
	return []v1alpha1.ColocationPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultColocationPolicyName},
		Spec: v1alpha1.ColocationPolicySpec{Profiles: []v1alpha1.ColocationProfile{
			profile(NamespaceOnline, extension.BandProd, "waterline-prod"),
			profile(NamespaceMid, extension.BandMid, "waterline-mid"),
			profile(NamespaceBatch, extension.BandBatch, "waterline-batch"),
		}},
	}}
}

// DefaultPriorityClasses returns the classes config/priorityclasses ships
// (TestDefaultPriorityClassesAreShipped holds them together): the band
// classes the default profiles name, waterline-mid-nonpreemptible (which a
// profile may name instead of waterline-mid), waterline-free and
// waterline-daemonset.
func DefaultPriorityClasses() []schedulingv1.PriorityClass {
	class := func(name string, value int32) schedulingv1.PriorityClass {
		return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	}
	nonPreemptible := class("waterline-mid-nonpreemptible", 7800)
	nonPreemptible.Annotations = map[string]string{
		extension.AnnotationPreemptionPolicy:      extension.PreemptionPolicyNonPreemptible,
		extension.AnnotationPreemptibleByPriority: "100000",
	}
	free := class("waterline-free", 3500)
	free.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	return []schedulingv1.PriorityClass{
		class("waterline-daemonset", 100000),
		class("waterline-prod", 9500),
		nonPreemptible,
		class("waterline-mid", 7500),
		class("waterline-batch", 5500),
		free,
	}
}

// WithDefaults returns a copy of c with every unset field set to its
// default.
func (c Config) WithDefaults() Config {
	if len(c.Policies) == 0 {
		c.Policies = slices.Clone(DefaultPolicies)
	}
	if c.Parallel == 0 {
		c.Parallel = runtime.GOMAXPROCS(0)
	}
	if c.Step == 0 {
		c.Step = 10 * time.Second
	}
	if c.QoSInterval == 0 {
		c.QoSInterval = 10 * time.Second
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = 10 * time.Second
	}
	if c.PredictInterval == 0 {
		c.PredictInterval = 5 * time.Minute
	}
	if c.LoadAware == nil {
		c.LoadAware = ptr.To(DefaultLoadAwareSpec())
	}
	if c.LoadAwareWeight == 0 {
		c.LoadAwareWeight = DefaultLoadAwareWeight
	}
	if c.NodeQOS == nil {
		c.NodeQOS = DefaultNodeQOS()
	}
	if c.ColocationPolicies == nil {
		c.ColocationPolicies = DefaultColocationPolicies()
	}
	if c.PriorityClasses == nil {
		c.PriorityClasses = DefaultPriorityClasses()
	}
	if c.EvictedWork == "" {
		c.EvictedWork = EvictedWorkRestart
	}
	if c.ChartPoints == 0 {
		c.ChartPoints = 288
	}
	if c.Harm == nil {
		c.Harm = ptr.To(DefaultHarm())
	}
	if c.BandCap == nil {
		c.BandCap = ptr.To(true)
	}
	if c.Preemption == nil {
		c.Preemption = ptr.To(true)
	}
	if c.DisruptionBudgets == nil {
		c.DisruptionBudgets = DefaultDisruptionBudgets()
	}
	return c
}

// Validate returns every field of c (defaulted) that is out of range,
// naming the field and its value.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("config")
	if c.Parallel < 1 {
		errs = append(errs, field.Invalid(root.Child("parallel"), c.Parallel, "must be at least 1 (0 defaults to GOMAXPROCS)"))
	}
	seen := map[Policy]bool{}
	for i, p := range c.Policies {
		if !slices.Contains(Policies, p) {
			errs = append(errs, field.NotSupported(root.Child("policies").Index(i), p, Policies))
		} else if seen[p] {
			errs = append(errs, field.Duplicate(root.Child("policies").Index(i), p))
		}
		seen[p] = true
	}
	if c.Step < time.Second || c.Step > 5*time.Minute || c.Step%time.Second != 0 {
		errs = append(errs, field.Invalid(root.Child("step"), c.Step.String(), "must be whole seconds in [1s, 5m]"))
	}
	multiple := func(name string, d time.Duration) {
		if d <= 0 || c.Step > 0 && d%c.Step != 0 {
			errs = append(errs, field.Invalid(root.Child(name), d.String(), fmt.Sprintf("must be a positive multiple of the step (%s)", c.Step)))
		}
	}
	multiple("qosInterval", c.QoSInterval)
	multiple("retryInterval", c.RetryInterval)
	multiple("predictInterval", c.PredictInterval)
	if la := c.LoadAware; la != nil {
		if _, err := nodeload.NewConfig(*la); err != nil {
			errs = append(errs, field.Invalid(root.Child("loadAware"), "", err.Error()))
		}
		// The simulated agents report averages only: LoadAware would judge
		// and score by them where these ask for a percentile, and say
		// nothing.
		const noAggregates = "the simulator's agents report no percentile aggregates of node usage"
		if la.UsageAggregation.Enabled() || len(la.AggregatedUsageThresholds) > 0 {
			errs = append(errs, field.Forbidden(root.Child("loadAware", "aggregatedUsageThresholds"), noAggregates))
		}
		if la.ScoreAggregation.Enabled() {
			errs = append(errs, field.Forbidden(root.Child("loadAware", "scoreAggregation"), noAggregates))
		}
	}
	if c.LoadAwareWeight < 1 || c.LoadAwareWeight > 100 {
		errs = append(errs, field.Invalid(root.Child("loadAwareWeight"), c.LoadAwareWeight, "must be in [1, 100]"))
	}
	for i := range c.ColocationPolicies {
		p := &c.ColocationPolicies[i]
		if p.Spec.CollectPolicy == nil || p.Spec.CollectPolicy.ReportIntervalSeconds == nil {
			continue
		}
		multiple(fmt.Sprintf("colocationPolicies[%s].spec.collectPolicy.reportIntervalSeconds", p.Name),
			time.Duration(*p.Spec.CollectPolicy.ReportIntervalSeconds)*time.Second)
	}
	classes := map[string]bool{}
	for i, pc := range c.PriorityClasses {
		if pc.Name == "" || classes[pc.Name] {
			errs = append(errs, field.Invalid(root.Child("priorityClasses").Index(i).Child("name"), pc.Name, "must be set and unique"))
		}
		classes[pc.Name] = true
	}
	budgetClasses := map[workload.Class]bool{}
	for i := range c.DisruptionBudgets {
		b := &c.DisruptionBudgets[i]
		path := root.Child("disruptionBudgets").Index(i)
		errs = append(errs, b.validate(path)...)
		if budgetClasses[b.Class] {
			errs = append(errs, field.Duplicate(path.Child("class"), b.Class))
		}
		budgetClasses[b.Class] = true
	}
	if c.EvictedWork != EvictedWorkRestart && c.EvictedWork != EvictedWorkContinue {
		errs = append(errs, field.NotSupported(root.Child("evictedWork"), c.EvictedWork, []EvictedWork{EvictedWorkRestart, EvictedWorkContinue}))
	}
	if c.Harm != nil {
		errs = append(errs, c.Harm.validate(root.Child("harm"))...)
	}
	if !(c.OracleHarmBudgetPercent >= 0 && c.OracleHarmBudgetPercent <= 100) {
		errs = append(errs, field.Invalid(root.Child("oracleHarmBudgetPercent"), c.OracleHarmBudgetPercent, "must be in [0, 100]"))
	}
	if c.ChartPoints < 2 || c.ChartPoints > 10000 {
		errs = append(errs, field.Invalid(root.Child("chartPoints"), c.ChartPoints, "must be in [2, 10000]"))
	}
	return errs
}
