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
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/colocation"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/core/policy"
	"github.com/waterline-dev/waterline/pkg/core/predict"
	"github.com/waterline-dev/waterline/pkg/core/preemption"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/core/tiers"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// run is one policy's simulation: the whole cluster, stepped in virtual
// time. It is single-threaded and deterministic: nodes and pods are
// walked in slice order, and randomness comes from its own seeded
// generator.
type run struct {
	cfg    *Config
	w      *workload.Workload
	policy Policy

	la    *nodeload.Config // nil for k8s-default
	sched scheduler
	nodes []*node
	// finishing are the nodes with a job pod that did all its work this
	// step, in node order (runNode lists them for finishJobs).
	finishing []*node
	// demands computes the services' demand, by service index
	// (podHot.demand), into demandCPU each step; services are the
	// services themselves.
	demands   *workload.DemandSet
	demandCPU []int64
	services  []*workload.Service
	// waits[i] remembers the harm model's queueing terms for nodes[i]'s
	// shape (nil: computed each time), from waitTables.
	waits      []*waitTable
	waitTables waitTables

	steps        int
	stepSec      int64
	qosEvery     int
	retryEvery   int
	predictEvery int
	reportEvery  int // steps between a node's reports
	aggReports   int // reports a NodeMetric average covers
	step         int
	now          time.Time

	jobs    []jobState
	nextJob int
	queue   pendingQueue
	seq     int64

	profiles []v1alpha1.ColocationProfile
	classes  map[string]*colocation.PriorityClass

	// Scratch, reused every cycle so that steps do not allocate.
	cfs         cfsScratch
	bandMembers []tiers.BandMember
	bandIdx     []int
	usage       qos.NodeUsage
	window      qos.CPUWindow
	// signatures interns pods' signatures (signatureID).
	signatures map[signature]int
	standIns   map[standInKey]*corev1.Pod
	profileOf  map[string]*v1alpha1.ColocationProfile
	// jobTemplates are the admitted pods jobPod copies.
	jobTemplates map[jobKey]*jobTemplate

	stats *collector
	// oracle caps non-Prod CPU for PolicyOracle (nil otherwise).
	oracle *oracle

	// preemptor is the scheduler's preemption (nil when it is off);
	// lastCandidate the figures of the node victimsOn looked at last.
	preemptor     *preemptor
	lastCandidate preemptCandidate
	// budgets are the PodDisruptionBudgets; budgetOf[kind] the one that
	// covers pods of a kind (noBudget: none).
	budgets  []budgetState
	budgetOf [numKinds]int
	// pdbRetrySteps is how long node QoS leaves a pod out of its plans
	// after a budget refused its eviction; heldCands are the plannable
	// candidates meanwhile (scratch).
	pdbRetrySteps int
	heldCands     []qos.Candidate
	// plan is node QoS's plan, reused from node to node (PlanInto).
	plan qos.Plan
	// bindObj is the object bind places a job pod with.
	bindObj corev1.Pod
}

// jobState is what became of one job of the workload.
type jobState struct {
	spec     *workload.Job
	pod      *pod
	attempts int
	// done carries work over evictions when EvictedWork is continue.
	done       int64
	finishedAt time.Duration
	finished   bool
	// disrupted: the job's pod was evicted, preempted or killed, and its
	// next pod does not run yet (it counts as unavailable in its
	// PodDisruptionBudget). Beside finished, so that the two share a word
	// (a run keeps one jobState per job of the workload).
	disrupted bool
}

func newRun(cfg *Config, w *workload.Workload, p Policy) (*run, error) {
	r := &run{
		cfg:          cfg,
		w:            w,
		policy:       p,
		stepSec:      int64(cfg.Step / time.Second),
		steps:        int(w.Duration / cfg.Step),
		usage:        qos.NodeUsage{qos.MetricCPU: 0, qos.MetricMemory: 0},
		classes:      map[string]*colocation.PriorityClass{},
		signatures:   map[signature]int{},
		standIns:     map[standInKey]*corev1.Pod{},
		profileOf:    map[string]*v1alpha1.ColocationProfile{},
		jobTemplates: map[jobKey]*jobTemplate{},
		sched:        scheduler{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), policySeed(p.placedAs())))},
		oracle:       newOracle(p),
	}
	r.qosEvery = int(cfg.QoSInterval / cfg.Step)
	r.retryEvery = int(cfg.RetryInterval / cfg.Step)
	r.predictEvery = int(cfg.PredictInterval / cfg.Step)
	r.stats = newCollector(r)
	pcs := make([]*schedulingv1.PriorityClass, len(cfg.PriorityClasses))
	for i := range cfg.PriorityClasses {
		pc := &cfg.PriorityClasses[i]
		pcs[i] = pc
		r.classes[pc.Name] = &colocation.PriorityClass{Name: pc.Name, Value: pc.Value, PreemptionPolicy: pc.PreemptionPolicy}
	}
	classes, err := preemption.ParseClasses(pcs)
	if err != nil {
		return nil, fmt.Errorf("PriorityClasses: %w", err)
	}
	if *cfg.Preemption {
		r.preemptor = newPreemptor(r, classes)
	}
	r.newBudgets()
	r.pdbRetrySteps = int((evictionRetryAfter + cfg.Step - 1) / cfg.Step)
	// Every policy's pods get their PriorityClass by the default
	// ColocationPolicy's profiles; only the colocated policies apply the
	// rest of a profile (newPod).
	for i := range cfg.ColocationPolicies {
		if cp := &cfg.ColocationPolicies[i]; cp.Name == v1alpha1.DefaultColocationPolicyName {
			r.profiles = cp.Spec.Profiles
		}
	}
	if p.colocated() {
		la, err := nodeload.NewConfig(*cfg.LoadAware)
		if err != nil {
			return nil, fmt.Errorf("LoadAware args: %w", err)
		}
		r.la, r.sched.la, r.sched.laWeight = la, la, cfg.LoadAwareWeight
	}
	if err := r.buildNodes(); err != nil {
		return nil, err
	}
	r.waits = make([]*waitTable, len(r.nodes))
	for i, n := range r.nodes {
		r.waits[i] = r.waitTables.forNode(n.spec.CPUMilli, max(n.spec.CPUMilli-n.spec.SystemCPUMilli, 0))
	}
	r.jobs = make([]jobState, len(w.Jobs))
	for i := range w.Jobs {
		r.jobs[i].spec = &w.Jobs[i]
	}
	if err := r.placeServices(); err != nil {
		return nil, err
	}
	return r, nil
}

// policySeed gives each policy its own stream of the run's seed.
func policySeed(p Policy) uint64 {
	var h uint64 = 14695981039346656037
	for i := range len(p) {
		h = (h ^ uint64(p[i])) * 1099511628211
	}
	return h
}

// buildNodes makes the nodes and, for the colocated policies, their
// agents: NodeQOS waterlines and planner, the resolved ColocationPolicy,
// the predictor's trackers.
func (r *run) buildNodes() error {
	cfg := r.cfg
	policies := make([]*v1alpha1.ColocationPolicy, len(cfg.ColocationPolicies))
	for i := range cfg.ColocationPolicies {
		policies[i] = &cfg.ColocationPolicies[i]
	}
	planners := map[qos.Capacity]*qos.Planner{}
	r.sched.index = newFitIndex(len(r.w.Nodes))
	layouts := map[int64]*predict.Layout{}
	r.reportEvery = 0
	// The nodes side by side, in the order every step walks them.
	backing := make([]node, len(r.w.Nodes))
	var windows []windowSample
	for i := range r.w.Nodes {
		spec := &r.w.Nodes[i]
		obj := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: map[string]string{corev1.LabelHostname: spec.Name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(spec.CPUMilli, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(spec.MemoryBytes, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(spec.Pods, resource.DecimalSI),
			}},
		}
		obj.Status.Capacity = obj.Status.Allocatable.DeepCopy()
		n := &backing[i]
		*n = node{idx: i, spec: spec, obj: obj, alloc: resVecOf(obj.Status.Allocatable), fit: &r.sched.index.views[i], fitIndex: &r.sched.index}
		n.balanceWithout = balanceOf(&n.req, &n.alloc)
		n.syncFit()
		n.assigned = n.assignedSeq()
		resolved, errs := policy.ForNode(obj.Labels, policies)
		if len(errs) > 0 {
			return fmt.Errorf("ColocationPolicies: %w", errors.Join(errs...))
		}
		n.resolved = resolved
		report := int(time.Duration(*resolved.Collect.ReportIntervalSeconds) * time.Second / cfg.Step)
		if r.reportEvery == 0 {
			r.reportEvery = report
			r.aggReports = int(min(maxSnaps, max(1, (*resolved.Collect.AggregateDurationSeconds+*resolved.Collect.ReportIntervalSeconds-1) / *resolved.Collect.ReportIntervalSeconds)))
		} else if report != r.reportEvery {
			return fmt.Errorf("ColocationPolicies: node %s reports every %ds, others every %ds: the simulation needs one report interval",
				spec.Name, *resolved.Collect.ReportIntervalSeconds, r.reportEvery*int(r.stepSec))
		}

		selected, selErrs := qos.SelectNodeQOS(cfg.NodeQOS, obj.Labels)
		if len(selErrs) > 0 {
			return fmt.Errorf("NodeQOS: %w", selErrs.ToAggregate())
		}
		capacity := qos.Capacity{CPUMilli: spec.CPUMilli, MemoryBytes: spec.MemoryBytes}
		planner, ok := planners[capacity]
		if !ok {
			waterlines, errs := qos.BuildWaterlines(selected, capacity)
			if len(errs) > 0 {
				return fmt.Errorf("NodeQOS: %w", errs.ToAggregate())
			}
			var err error
			if planner, err = qos.NewPlanner(qos.DefaultRegistry(), waterlines); err != nil {
				return err
			}
			// Nothing reads the plans' reasons.
			planner = planner.Terse()
			planners[capacity] = planner
		}
		waterlines := planner.Waterlines()
		n.evictLine = spec.CPUMilli
		if l, ok := waterlines.Line(qos.ActionEvict, qos.MetricCPU); ok {
			n.evictLine = l.Value
		}
		if r.policy.colocated() {
			n.planner = planner
			// The windows side by side too: every QoS cycle pushes a
			// sample into each, in node order.
			k := max(int(time.Duration(waterlines.CPUEviction.WindowSeconds)*time.Second/cfg.QoSInterval), 1)
			if len(windows) < k {
				windows = make([]windowSample, k*(len(r.w.Nodes)-i))
			}
			n.window = cpuWindow{samples: windows[:k:k]}
			windows = windows[k:]
			n.maxPerMin = float64(v1alpha1.DefaultEvictionMaxPerMinute)
			for j, nq := range selected {
				m := float64(*v1alpha1.NodeQOSSpecWithDefaults(&nq.Spec).Eviction.MaxPerMinute)
				if j == 0 || m < n.maxPerMin {
					n.maxPerMin = m
				}
			}
			n.tokens = n.maxPerMin
			halfLife := *resolved.Predict.HalfLifeSeconds
			layout, ok := layouts[halfLife]
			if !ok {
				var err error
				if layout, err = predict.NewLayout(predict.HistogramConfig{
					FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 4096, HalfLife: time.Duration(halfLife) * time.Second,
				}); err != nil {
					return fmt.Errorf("predictor histograms: %w", err)
				}
				layouts[halfLife] = layout
			}
			// Cores for CPU, GiB for memory: one layout serves both.
			n.cpuTracker, n.memTracker = predict.NewTracker(layout), predict.NewTracker(layout)
			model, err := predict.New(resolved.Predict.Model, predict.ParamsFromPolicy(resolved.Predict))
			if err != nil {
				return fmt.Errorf("predict policy of node %s: %w", spec.Name, err)
			}
			n.model = model
			// The NodeMetric the agent reported before the run: nothing
			// yet, so LoadAware counts every pod by its estimate.
			n.ownReports = true
			n.metricBase = r.metricBase(n)
			n.load.Metric = new(nodeload.Metric)
			r.newMetric(n, n.load.Metric, r.w.Start)
			n.load.Allocatable, _ = r.la.Allocatable(obj)
			n.load.Thresholds, _ = r.la.NodeThresholds(obj)
		}
		r.nodes = append(r.nodes, n)
	}
	if r.reportEvery <= 0 {
		r.reportEvery = 1
	}
	return nil
}

// placeServices puts the online services on their nodes before the run:
// the cluster's existing layout, the same for every policy.
func (r *run) placeServices() error {
	r.demands = workload.NewDemandSet(r.w.Demands())
	for i := range r.w.Services {
		s := &r.w.Services[i]
		r.services = append(r.services, s)
		r.seq++
		obj, err := r.serviceObject(s, r.seq)
		if err != nil {
			return err
		}
		p, err := r.derive(obj)
		if err != nil {
			return err
		}
		p.h.demand = int32(i)
		p.mem = s.MemoryUsageBytes
		n := r.nodes[s.Node]
		// The services were running long before the simulation: their
		// load is in the first NodeMetric, nothing is estimated for them.
		start := obj.Status.StartTime.Time
		n.place(p, r.la, start)
		if n.cpuTracker != nil {
			key := nodeload.PodKey(obj.Namespace, obj.Name)
			n.cpuTracker.SetPod(key, start, float64(p.req[resCPU])/1000)
			n.memTracker.SetPod(key, start, float64(p.req[resMemory])/gib)
			p.cpuHist, p.memHist = n.cpuTracker.Pod(key), n.memTracker.Pod(key)
		}
		// A service never leaves its node, and nothing reads its object
		// once it is placed: dropped, it no longer holds a quarter of
		// the cluster's memory (its object, container and request
		// maps, some 2 KB a service).
		p.obj, p.name = nil, s.Name
	}
	return nil
}

// serviceObject is the object of service s's pod as it runs: the run's
// seq-th pod, created before the run, admitted, bound to its node and
// started a week before the run. placeServices makes it once.
func (r *run) serviceObject(s *workload.Service, seq int64) (*corev1.Pod, error) {
	obj := r.objectOf(seq, time.Time{}, NamespaceOnline, s.Name, corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(s.CPURequestMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(s.MemoryRequestBytes, resource.BinarySI),
	}, nil)
	if s.CPULimitMilli > 0 {
		obj.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewMilliQuantity(s.CPULimitMilli, resource.DecimalSI),
		}
	}
	if err := r.admit(obj); err != nil {
		return nil, err
	}
	obj.Spec.NodeName = r.nodes[s.Node].spec.Name
	obj.Status.Phase = corev1.PodRunning
	obj.Status.StartTime = &metav1.Time{Time: r.w.Start.Add(-7 * 24 * time.Hour)}
	return obj, nil
}

const gib = 1 << 30

// podObject is a pod as its owner would submit it now, the run's next:
// one container requesting requests (and limited to limits).
func (r *run) podObject(ns, name string, requests, limits corev1.ResourceList) *corev1.Pod {
	r.seq++
	return r.objectOf(r.seq, r.now, ns, name, requests, limits)
}

// objectOf is podObject's pod, as the run's seq-th pod created at created.
func (r *run) objectOf(seq int64, created time.Time, ns, name string, requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("%s-%d", r.policy, seq)),
			CreationTimestamp: metav1.NewTime(created),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// newPod admits obj and derives the simulation's pod from it.
func (r *run) newPod(obj *corev1.Pod) (*pod, error) {
	if err := r.admit(obj); err != nil {
		return nil, err
	}
	return r.derive(obj)
}

// admit admits obj as the API server would with Waterline installed: the
// default ColocationPolicy's first matching profile is applied by the
// mutating webhook's core (colocated policies only).
func (r *run) admit(obj *corev1.Pod) error {
	profile, err := r.profileFor(obj)
	if err != nil {
		return err
	}
	if profile == nil {
		return nil
	}
	var class *colocation.PriorityClass
	if profile.PriorityClassName != "" {
		class = r.classes[profile.PriorityClassName]
	}
	switch {
	case r.policy.colocated():
		if err := colocation.Apply(obj, profile, class); err != nil {
			return fmt.Errorf("pod %s/%s: %w", obj.Namespace, obj.Name, err)
		}
	case class != nil:
		// A plain cluster: the pod names its class, and the Priority
		// admission plugin resolves it.
		obj.Spec.PriorityClassName = class.Name
		obj.Spec.Priority = &class.Value
		obj.Spec.PreemptionPolicy = class.PreemptionPolicy
	}
	return nil
}

// derive is the simulation's pod of an admitted obj, the run's latest.
func (r *run) derive(obj *corev1.Pod) (*pod, error) {
	p := newPod(obj, r.la, r.seq)
	if p.h.cpuLimit == workload.MaxMilliCPU {
		return nil, fmt.Errorf("pod %s/%s: a CPU limit of %d millicores or more: the simulator keeps CPU figures in 32 bits", obj.Namespace, obj.Name, workload.MaxMilliCPU)
	}
	p.sig = r.signatureID(p)
	if r.preemptor != nil {
		var err error
		if p.vgroup, err = r.preemptor.groupOf(obj); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", obj.Namespace, obj.Name, err)
		}
	}
	if p.candidate {
		p.stand = r.standIn(obj)
	}
	return p, nil
}

// standIn returns a pod the QoS core cannot tell from obj -- the same
// protection verdict, band, terminating state and namespace (a NodeQOS may
// protect namespaces), which is all it reads of a candidate's pod --
// shared by every pod with those verdicts. The node agents sample the CPU
// eviction window and plan every cycle on every node, and both check each
// candidate's pod; on a thousand nodes, reading thousands of scattered pod
// objects every step costs more than the rest of the step, while a few
// shared ones stay in the cache. The simulation never changes what the
// checks read of a pod after admission, so a stand-in stays exact.
func (r *run) standIn(obj *corev1.Pod) *corev1.Pod {
	key := standInKey{extension.QoSProtection(obj), extension.BandOf(obj), obj.DeletionTimestamp != nil, obj.Namespace}
	if s, ok := r.standIns[key]; ok {
		return s
	}
	s := obj.DeepCopy()
	// What the webhook recorded of the pod's original resources is not
	// read by the checks; dropping it keeps the stand-in small. The
	// verdicts are checked again, so a stand-in never differs from the pods
	// it stands in for.
	delete(s.Annotations, extension.AnnotationOriginalResources)
	if (standInKey{extension.QoSProtection(s), extension.BandOf(s), s.DeletionTimestamp != nil, s.Namespace}) != key {
		s = obj.DeepCopy()
	}
	r.standIns[key] = s
	return s
}

type standInKey struct {
	protection  extension.ProtectionReason
	band        extension.Band
	terminating bool
	namespace   string
}

// profileFor returns the profile the webhook applies to obj. The
// simulation's pods of a namespace all carry the same labels (none), so
// the answer is the same for every pod of a namespace and is matched once
// per namespace.
func (r *run) profileFor(obj *corev1.Pod) (*v1alpha1.ColocationProfile, error) {
	if len(obj.Labels) == 0 {
		if p, ok := r.profileOf[obj.Namespace]; ok {
			return p, nil
		}
	}
	nsLabels := map[string]string{corev1.LabelMetadataName: obj.Namespace}
	profile, err := colocation.Match(r.profiles, nsLabels, obj.Labels)
	if err != nil {
		return nil, fmt.Errorf("ColocationPolicy default: %w", err)
	}
	if len(obj.Labels) == 0 {
		r.profileOf[obj.Namespace] = profile
	}
	return profile, nil
}

// jobKey is what a job's pod is made of, apart from its name.
type jobKey struct {
	namespace   string
	cpu, memory int64
}

// jobPod returns a new pod of a job asking for cpu millicores and memory
// bytes in namespace ns, admitted like newPod. Admission and what the
// simulation derives from a pod depend only on what the pod asks for, not
// on its name, so the first pod of each kind is admitted and derived, and
// the others are copies of it under their own name: a few allocations
// instead of the webhook's JSON and two request sums per job. A copy has
// no object: the cores see one only when the pod is bound (bind, in a
// scratch object), and each object would hold 1.3 KB for as long as the
// pod runs or waits.
func (r *run) jobPod(ns, name string, cpu, memory int64) (*pod, error) {
	key := jobKey{ns, cpu, memory}
	t, ok := r.jobTemplates[key]
	if !ok {
		rl := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
		}
		obj := r.podObject(ns, name, rl, rl.DeepCopy())
		if r.policy.batchWithoutCPU() && ns == NamespaceBatch {
			// No CPU request or limit: cpu.shares 2, and no CPU counted
			// by the scheduler. Memory stays requested (and limited), or
			// the scheduler would pile pods onto nodes until the kernel
			// kills them.
			res := &obj.Spec.Containers[0].Resources
			delete(res.Requests, corev1.ResourceCPU)
			delete(res.Limits, corev1.ResourceCPU)
		}
		p, err := r.newPod(obj)
		if err != nil {
			return nil, err
		}
		t = &jobTemplate{obj: p.obj.DeepCopy(), pod: *p}
		r.jobTemplates[key] = t
		return p, nil
	}
	r.seq++
	p := new(pod)
	*p = t.pod
	p.obj, p.seq = nil, r.seq
	p.tmpl, p.name, p.created = t, name, r.now.Sub(r.w.Start)
	return p, nil
}

// podName is the pod's name, whether it has its object or not.
func (p *pod) podName() string {
	if p.obj == nil {
		return p.name
	}
	return p.obj.Name
}

// jobObject sets obj to the object of a job pod jobPod copied from a
// template, as it was when the pod was created. A shallow copy: what the
// simulation changes of a pod (its name, UID, creation time, node, phase
// and start time) are fields of its own; the containers, labels and
// annotations it shares with the template are never written after
// admission.
func (r *run) jobObject(p *pod, obj *corev1.Pod) {
	*obj = *p.tmpl.obj
	obj.Name, obj.UID = p.name, types.UID(fmt.Sprintf("%s-%d", r.policy, p.seq))
	obj.CreationTimestamp = metav1.NewTime(r.w.Start.Add(p.created))
}

// jobTemplate is the first pod of a jobKey, admitted and derived.
type jobTemplate struct {
	obj *corev1.Pod
	pod pod
}

// submit creates the next pod of job j and queues it.
func (r *run) submit(j int) error {
	js := &r.jobs[j]
	spec := js.spec
	ns := NamespaceBatch
	if spec.Class == workload.ClassMid {
		ns = NamespaceMid
	}
	name := spec.Name
	if js.attempts > 0 {
		name = fmt.Sprintf("%s-%d", spec.Name, js.attempts)
	}
	js.attempts++
	p, err := r.jobPod(ns, name, spec.CPURequestMilli, spec.MemoryRequestBytes)
	if err != nil {
		return err
	}
	p.job = j
	p.h.kind = kindBatch
	if spec.Class == workload.ClassMid {
		p.h.kind = kindMid
	}
	p.h.demand, p.mem = int32(spec.CPUDemandMilli), spec.MemoryUsageBytes
	p.h.left = spec.WorkMilliSeconds() - js.done
	js.pod = p
	r.queue.push(p)
	return nil
}

// Run steps the cluster to the end of the workload, or until ctx ends.
func (r *run) Run(ctx context.Context) error {
	progressEvery := max(1, r.steps/100)
	for r.step = 0; r.step < r.steps; r.step++ {
		if r.step%progressEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("policy %s stopped at %s of %s: %w", r.policy, time.Duration(r.step)*r.cfg.Step, r.w.Duration, err)
			}
			if r.cfg.Progress != nil {
				r.cfg.Progress(r.policy, r.step, r.steps)
			}
		}
		if err := r.oneStep(); err != nil {
			return err
		}
	}
	if r.cfg.Progress != nil {
		r.cfg.Progress(r.policy, r.steps, r.steps)
	}
	return nil
}

// result is the policy's outcome once Run returned.
func (r *run) result() PolicyResult {
	return PolicyResult{Policy: r.policy, Summary: r.stats.finish(), Series: r.stats.series, Oracle: r.oracle.result(r)}
}

// oneStep is one step of virtual time: jobs arrive, every node runs its
// pods for the step, finished jobs leave, the agents and the manager do
// what falls due, and the scheduler places pending pods, which run from
// the next step. At the first step every agent reports and predicts (the
// cluster was running before the simulation started); after that each
// node's agent reports on its own phase, staggered by node.
func (r *run) oneStep() error {
	elapsed := time.Duration(r.step) * r.cfg.Step
	r.now = r.w.Start.Add(elapsed)
	for r.nextJob < len(r.jobs) && r.jobs[r.nextJob].spec.Arrival <= elapsed {
		if err := r.submit(r.nextJob); err != nil {
			return err
		}
		r.stats.arrived(r.jobs[r.nextJob].spec)
		r.nextJob++
	}

	sec := int64(elapsed / time.Second)
	if n := r.demands.Len(); len(r.demandCPU) != n {
		r.demandCPU = make([]int64, n)
	}
	r.demands.At(sec, r.demandCPU)
	r.finishing = r.finishing[:0]
	for _, n := range r.nodes {
		r.runNode(n)
	}
	r.stats.stepDone()
	for _, n := range r.finishing {
		r.finishJobs(n, elapsed+r.cfg.Step)
	}
	if r.policy.colocated() {
		qosDue := r.step%r.qosEvery == 0
		for _, n := range r.nodes {
			if qosDue {
				r.nodeQoS(n)
			}
			if r.step == 0 || (r.step+n.idx)%r.predictEvery == 0 {
				r.predict(n, r.now)
			}
			if r.step == 0 || (r.step+n.idx)%r.reportEvery == 0 {
				r.report(n)
			}
		}
	}
	r.schedulePending()
	return nil
}

// runNode computes one step of the node: what each pod wants, what the
// quotas allow, and, when that is more than the node has, who gets what,
// as CFS shares it (cfsShare): pods with a CPU request weigh their
// cpu.shares, and every pod without one -- BestEffort pods and the tier
// pods of Mid and Batch, which kubelet places in the besteffort cgroup --
// shares that cgroup's 2 shares, by the shares the agent gives each
// inside it (from its tier request). Then it records what Prod got and
// the harm model's latency for it.
func (r *run) runNode(n *node) {
	if r.oracle != nil {
		r.oracle.capNode(r, n)
	}
	if n.bandDirty {
		r.splitBandCaps(n)
	}
	// One pass over the pods computes what each may use and, as if the
	// node were not contended (the common case), what it then used; when
	// it is, CFS shares the CPU and a second pass corrects by the
	// difference. Integer sums, so both ways give the same numbers.
	var throttledMilli, prodWant, allowed int64
	var prodUse, prodPods, starved, beUse, competing int64
	finishing := false
	starvedBelow := 1 - r.cfg.Harm.StarvedPercent/100
	stepSec := r.stepSec
	// Memory use is constant per pod: the node keeps the sum.
	mem := n.spec.SystemMemoryBytes + n.podMem
	demands := r.demandCPU
	for i := range n.hot {
		p := &n.hot[i]
		d := int64(p.demand)
		if p.kind == kindService {
			d = demands[p.demand]
		}
		if p.cpuLimit > 0 && d > int64(p.cpuLimit) {
			d = int64(p.cpuLimit)
		}
		want := d
		p.wantCPU = int32(d)
		if p.bandCap > 0 && d > int64(p.bandCap) {
			d = int64(p.bandCap)
		}
		if p.quota != qos.NoQuota && d > p.quota {
			throttledMilli += d - p.quota
			d = p.quota
		}
		p.allowedCPU = int32(d)
		p.usageCPU = int32(d)
		allowed += d
		p.avgSum += d
		switch p.kind {
		case kindService:
			prodWant += want
			prodUse += d
			prodPods++
			// d ≤ want, and starvedBelow ≤ 1: a pod given all it wants
			// (the rule: Prod is never throttled) is not starved, and
			// needs no float comparison to say so.
			if d < want && float64(d) < float64(want)*starvedBelow {
				starved++
			}
		case kindBatch:
			beUse += d
			p.left -= d * stepSec
			finishing = finishing || p.left <= 0
		default:
			p.left -= d * stepSec
			finishing = finishing || p.left <= 0
		}
		if p.kind != kindService && p.shares > minShares {
			competing += d
		}
	}
	usage := n.spec.SystemCPUMilli + allowed
	avail := max(n.spec.CPUMilli-n.spec.SystemCPUMilli, 0)
	if allowed > avail {
		r.shareCPU(n, avail)
		usage = n.spec.SystemCPUMilli
		prodUse, starved, beUse, competing, finishing = 0, 0, 0, 0, false
		for i := range n.hot {
			p := &n.hot[i]
			u := int64(p.usageCPU)
			p.avgSum += u - int64(p.allowedCPU)
			usage += u
			switch p.kind {
			case kindService:
				prodUse += u
				if u < int64(p.wantCPU) && float64(u) < float64(p.wantCPU)*starvedBelow {
					starved++
				}
			case kindBatch:
				beUse += u
				p.left -= (u - int64(p.allowedCPU)) * stepSec
				finishing = finishing || p.left <= 0
			default:
				p.left -= (u - int64(p.allowedCPU)) * stepSec
				finishing = finishing || p.left <= 0
			}
			if p.kind != kindService && p.shares > minShares {
				competing += u
			}
		}
	}
	n.usageCPU, n.usageMemory = usage, mem
	n.finishing = finishing
	if finishing {
		r.finishing = append(r.finishing, n)
	}
	n.prodCPU, n.prodPods, n.beCPU = prodUse, prodPods, beUse
	n.usageSum += usage
	n.usageSteps++
	violating := starved
	var latency float64
	if prodPods > 0 {
		nonProd := usage - n.spec.SystemCPUMilli - prodUse
		latency = r.cfg.Harm.latencyFactorOn(r.waits[n.idx], prodUse, nonProd, competing, avail, n.spec.CPUMilli)
		if latency > r.cfg.Harm.SLOLatencyFactor {
			violating = prodPods
		}
	}
	r.stats.node(n, throttledMilli, prodWant-prodUse, violating, starved, latency)
	if mem > n.spec.MemoryBytes {
		r.oomKill(n)
	}
	if r.policy.colocated() && r.step%r.qosEvery == 0 {
		r.sampleCandidates(n)
	}
}

// shareCPU shares avail millicores among the node's pods under
// contention (see runNode), setting each pod's usageCPU.
func (r *run) shareCPU(n *node, avail int64) {
	s := &r.cfs
	s.reset(len(n.hot) + 1)
	be := len(n.hot) // the besteffort cgroup's claim
	s.weight[be] = bestEffortShares
	for i := range n.hot {
		p := &n.hot[i]
		s.weight[i] = int64(p.shares)
		if p.shares > 0 {
			s.demand[i] = int64(p.allowedCPU)
		} else {
			s.demand[be] += int64(p.allowedCPU)
			s.weight[i] = 1 // not a top-level claim: no demand
		}
	}
	cfsShare(avail, s.demand, s.weight, s.got, s.active)
	beGot := s.got[be]
	for i := range n.hot {
		if p := &n.hot[i]; p.shares > 0 {
			p.usageCPU = int32(s.got[i])
		}
	}
	if s.demand[be] == 0 {
		// No BestEffort pod wants CPU (on the baselines, none is
		// there): each kept its usage, the allowed 0.
		return
	}
	// Inside the besteffort cgroup.
	s.reset(len(n.hot))
	for i := range n.hot {
		if p := &n.hot[i]; p.shares == 0 {
			s.demand[i], s.weight[i] = int64(p.allowedCPU), int64(p.beShares)
		} else {
			s.weight[i] = 1
		}
	}
	cfsShare(beGot, s.demand, s.weight, s.got, s.active)
	for i := range n.hot {
		if p := &n.hot[i]; p.shares == 0 {
			p.usageCPU = int32(s.got[i])
		}
	}
}

// cfsScratch is shareCPU's reused memory.
type cfsScratch struct {
	demand, weight, got []int64
	active              []int
}

func (s *cfsScratch) reset(n int) {
	if cap(s.demand) < n {
		s.demand, s.weight, s.got, s.active = make([]int64, n), make([]int64, n), make([]int64, n), make([]int, 0, n)
	}
	s.demand, s.weight, s.got = s.demand[:n], s.weight[:n], s.got[:n]
	clear(s.demand)
}

// oomKill plays the kernel when memory runs out: it kills BestEffort job
// pods first (kubelet gives them oom_score_adj 1000), then the job pod
// with the lowest priority, then the largest memory use, until the node
// fits again. Services are never killed here (their memory is constant
// and placed within requests).
func (r *run) oomKill(n *node) {
	for n.usageMemory > n.spec.MemoryBytes {
		var victim *pod
		for i, p := range n.pods {
			if n.hot[i].kind == kindService {
				continue
			}
			if victim == nil || p.bestEffort && !victim.bestEffort ||
				p.bestEffort == victim.bestEffort && p.priority < victim.priority ||
				p.bestEffort == victim.bestEffort && p.priority == victim.priority && (n.mem[i] > victim.mem ||
					n.mem[i] == victim.mem && p.seq < victim.seq) {
				victim = p
			}
		}
		if victim == nil {
			return
		}
		n.usageMemory -= victim.mem
		// Kubelet reports MemoryPressure, and the node is tainted against
		// BestEffort pods, for the pressure transition period (5 min).
		n.pressureUntil = r.now.Add(memoryPressurePeriod)
		n.syncFit()
		r.stats.oomKilled()
		r.evict(victim, removedByOOM)
	}
}

// memoryPressurePeriod is kubelet's evictionPressureTransitionPeriod
// default: how long a node keeps its MemoryPressure condition (and the
// node.kubernetes.io/memory-pressure NoSchedule taint, which BestEffort
// pods do not tolerate) after the pressure went.
const memoryPressurePeriod = 5 * time.Minute

// finishJobs takes the pods whose job is done off the node.
func (r *run) finishJobs(n *node, end time.Duration) {
	if !n.finishing {
		return
	}
	n.finishing = false
	for i := 0; i < len(n.pods); {
		if h := &n.hot[i]; h.kind == kindService || h.left > 0 {
			i++
			continue
		}
		p := n.pods[i]
		js := &r.jobs[p.job]
		js.finished, js.finishedAt, js.pod = true, end, nil
		r.stats.finished(js)
		r.budgetEnds(p, false)
		r.release(n, p)
		// remove moved the last pod to i; look at it next.
	}
}

// release takes job pod p off n and out of the agent's books. Services
// never leave their nodes (placeServices), and stay in the predictor's
// trackers for the whole run.
func (r *run) release(n *node, p *pod) {
	if r.preemptor != nil && p.job >= 0 {
		r.preemptor.running[p.vgroup]--
	}
	n.remove(p, r.now)
}

// removal is why a job pod was taken off its node before it finished.
type removal uint8

const (
	removedByQoS removal = iota
	removedByOOM
	removedByPreemption
)

// evict takes a job pod off its node and submits the job again, with its
// work kept or lost as EvictedWork says.
func (r *run) evict(p *pod, why removal) {
	n := p.node
	r.budgetEnds(p, true)
	r.release(n, p)
	js := &r.jobs[p.job]
	// release copied the pod's step state back to p.h.
	if r.cfg.EvictedWork == EvictedWorkContinue {
		js.done = js.spec.WorkMilliSeconds() - p.h.left
	}
	if why == removedByPreemption {
		r.stats.preempted(js)
	} else {
		r.stats.evicted(js)
	}
	// An error here can only come from the profiles, which admitted this
	// job's first pod already.
	_ = r.submit(p.job)
}

// schedulePending runs the scheduling queue once: every pending pod due
// for a try, by priority then creation, is placed or left for the next
// try. A pod identical (for the filters) to one that found no node this
// cycle is not tried: nothing placed since can have made room.
func (r *run) schedulePending() {
	r.queue.each(int32(r.step), int32(r.retryEvery), func(p *pod) bool {
		n := r.sched.pick(p, r.nodes, r.now)
		if n == nil {
			// PostFilter: preemption, when it is on and may help.
			n = r.preempt(p)
		}
		if n == nil {
			return false
		}
		r.bind(p, n)
		return true
	})
}

// signatureID interns what the filters see of a pod, so that the queue
// compares one integer per pod.
func (r *run) signatureID(p *pod) int {
	sig := signature{req: p.req, load: p.load, priority: p.priority}
	id, ok := r.signatures[sig]
	if !ok {
		id = len(r.signatures)
		r.signatures[sig] = id
	}
	return id
}

// bind places a scheduled pod: it starts running at once (kwok-like).
func (r *run) bind(p *pod, n *node) {
	p.started = r.now.UnixNano()
	own := p.obj != nil
	if !own {
		// A job pod copied from a template has no object (jobPod): place
		// derives what the cores keep of it from the run's scratch
		// object, and nothing reads an object after that.
		p.obj = &r.bindObj
		r.jobObject(p, p.obj)
	}
	p.obj.Spec.NodeName = n.spec.Name
	p.obj.Status.Phase = corev1.PodRunning
	p.obj.Status.StartTime = &metav1.Time{Time: r.now}
	n.place(p, r.la, r.now)
	if !own {
		p.obj = nil
	}
	if r.preemptor != nil && p.job >= 0 {
		r.preemptor.running[p.vgroup]++
	}
	r.budgetStarts(p)
	if p.candidate && p.candIdx >= 0 {
		// StartTime orders candidates by running time.
		n.cands[p.candIdx].StartTime = r.now
	}
}

// signature is what the filters see of a pod, and its priority: a pod
// that fits nowhere may still preempt where a pod of lower priority could
// not.
type signature struct {
	req      resVec
	load     nodeload.PodLoad
	priority int32
}
