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

package resctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// Name is the module name of the Reconciler.
const Name = "resctl"

// pageSize is what the kernel rounds memory limits down to.
var pageSize = int64(os.Getpagesize())

// Resources a Reconciler writes, as metric label values.
const (
	resourceCPUQuota    = "cpu_quota"
	resourceCPUShares   = "cpu_shares"
	resourceMemoryLimit = "memory_limit"
)

var _ agent.CycleModule = &Reconciler{}

// Reconciler is the cycle module that writes pod cgroup limits from the
// intents of other modules. Add it to the agent after every module that
// states intents: it applies what they stated in the same cycle.
type Reconciler struct {
	layout *cgroups.Layout

	mu      sync.Mutex
	intents map[Source]map[types.UID]Intent
	pods    map[types.UID]*podState
	// refused remembers pods whose below-limit intent was refused, so the
	// error is logged once per pod and source, not every cycle.
	refused map[refusal]struct{}

	scratch []SourcedIntent
	sources []Source
	// quotaSources backs the Desired of the pod being reconciled.
	quotaSources []Source
	reader       *cgroups.Reader
	// seen and present are per-cycle scratch sets: pods reconciled, and
	// every pod of the node.
	seen, present map[types.UID]struct{}

	// marks are the agent's persisted record of the cgroups it changed
	// (see Mark); nil until UseMarks.
	marks      map[types.UID]*Mark
	marksPath  string
	marksDirty bool

	writes      *prometheus.CounterVec
	refusedCtr  *prometheus.CounterVec
	writeErrors int
}

type refusal struct {
	uid    types.UID
	source Source
}

// podState is what the Reconciler remembers of one pod, in memory only.
type podState struct {
	// cgroup is the pod's cgroup once found.
	cgroup string
	// healed says the once-per-pod check for a quota a previous run left
	// below kubelet's value is done.
	healed bool
	// quota, shares and memory say the cgroup holds a value this process
	// wrote that differs from kubelet's: when no intent remains, kubelet's
	// value is written back.
	quota, shares, memory bool
	// containers maps container cgroups whose quota was lowered to let the
	// pod's go below it (cgroup v1) to the quota they had before.
	containers map[string]cgroups.CPUQuota
	// retryContainers says giving containers their quota back failed and
	// must be tried again although the pod's quota is right.
	retryContainers bool
	// kubelet is KubeletLimits of kubeletOf, the pod object last seen.
	kubelet   Limits
	kubeletOf *corev1.Pod
	// quotaFile is the pod's quota file (cpu.cfs_quota_us, cpu.max), kept
	// open and re-read every cycle; period is the v1 cpu.cfs_period_us,
	// read when the file is opened (kubelet sets it once, at creation).
	quotaFile *cgroups.File
	period    uint64
}

// close releases what the state holds open.
func (st *podState) close() {
	if st.quotaFile != nil {
		_ = st.quotaFile.Close()
		st.quotaFile = nil
	}
}

// New returns a Reconciler writing through layout. reg, when not nil,
// receives its metrics: waterline_agent_resctl_writes_total{resource,result}
// and waterline_agent_resctl_refused_intents_total{source}.
func New(layout *cgroups.Layout, reg prometheus.Registerer) (*Reconciler, error) {
	if layout == nil {
		return nil, errors.New("building the cgroup limit reconciler: a cgroup layout is required")
	}
	r := &Reconciler{
		layout:  layout,
		reader:  cgroups.NewReader(),
		intents: map[Source]map[types.UID]Intent{},
		pods:    map[types.UID]*podState{},
		refused: map[refusal]struct{}{},
		seen:    map[types.UID]struct{}{},
		present: map[types.UID]struct{}{},
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_resctl_writes_total",
			Help: "Pod cgroup limit writes by the agent, by resource (cpu_quota, cpu_shares, memory_limit) and result (ok, error).",
		}, []string{"resource", "result"}),
		refusedCtr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_resctl_refused_intents_total",
			Help: "Intents to hold a protected pod below its own limits that the agent refused, by source module.",
		}, []string{"source"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{r.writes, r.refusedCtr} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering cgroup limit metrics: %w", err)
			}
		}
	}
	return r, nil
}

// Name implements agent.CycleModule.
func (r *Reconciler) Name() string { return Name }

// SetIntents replaces every intent of src with intents (pod UID → intent).
// The map is copied; a nil or empty map withdraws all of src's intents, and
// the next cycle writes kubelet's values back where src had changed them.
func (r *Reconciler) SetIntents(src Source, intents map[types.UID]Intent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.intents[src]
	if cur == nil {
		cur = make(map[types.UID]Intent, len(intents))
		r.intents[src] = cur
	}
	clear(cur)
	for uid, in := range intents {
		if !in.IsZero() {
			cur[uid] = in
		}
	}
}

// Intents returns a copy of src's current intents.
func (r *Reconciler) Intents(src Source) map[types.UID]Intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.intents[src])
}

// Cycle implements agent.CycleModule: it reconciles the cgroup of every pod
// of the node that has an intent, had one this process wrote, or is seen
// for the first time and could hold a quota a previous run left (a Batch,
// Free or tier pod). It carries on past a failing pod and returns every
// error; the next cycle retries.
func (r *Reconciler) Cycle(ctx context.Context, s *agent.Snapshot) error {
	logger := klog.FromContext(ctx).WithName(Name)
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.seen)
	clear(r.present)
	r.sources = r.sources[:0]
	for src, in := range r.intents {
		if len(in) > 0 {
			r.sources = append(r.sources, src)
		}
	}
	slices.Sort(r.sources)
	var errs []error
	for _, pod := range s.Pods {
		r.present[pod.UID] = struct{}{}
		intents := r.intentsFor(logger, pod)
		st := r.pods[pod.UID]
		if m := r.marks[pod.UID]; st == nil && m != nil {
			// A previous run changed this pod's cgroup: heal it whatever
			// the pod has become since (protected, terminating).
			st = stateFromMark(m)
			r.pods[pod.UID] = st
		}
		heal := st == nil && mayHoldOurQuota(pod)
		if len(intents) == 0 && st == nil && !heal {
			continue
		}
		if st == nil {
			st = &podState{}
			r.pods[pod.UID] = st
		}
		r.seen[pod.UID] = struct{}{}
		if err := r.reconcile(logger, pod, st, intents); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
		r.syncMark(pod, st)
	}
	// Marked pods the node no longer lists (deleted from the API while
	// their containers still run, or while the agent was down): undo
	// from the marks alone, once the pod list is known to be whole.
	if s.PodsComplete {
		for uid, m := range r.marks {
			if _, ok := r.present[uid]; ok {
				continue
			}
			if err := r.restoreMark(logger, m); err != nil {
				errs = append(errs, fmt.Errorf("pod %s/%s (no longer listed): %w", m.Namespace, m.Name, err))
				continue
			}
			delete(r.marks, uid)
			r.marksDirty = true
		}
	}
	// Pods gone from the node: their cgroups are gone too.
	for uid, st := range r.pods {
		if _, ok := r.seen[uid]; !ok {
			st.close()
			delete(r.pods, uid)
		}
	}
	for k := range r.refused {
		if _, ok := r.present[k.uid]; !ok {
			delete(r.refused, k)
		}
	}
	if r.marksDirty {
		if err := r.saveMarks(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mayHoldOurQuota reports whether a Waterline module could have written the
// pod's quota in a previous run: node QoS throttles Batch/Free pods, the
// tier enforcer writes the limits of pods with tier resources.
func mayHoldOurQuota(pod *corev1.Pod) bool {
	if extension.QoSProtection(pod) == extension.NotProtected {
		return true
	}
	return extension.RequestsTierResources(pod)
}

// intentsFor collects the pod's intents from every source, in source order,
// dropping (and reporting once) below-limit caps on protected pods and
// invalid intents. The slice is scratch space, valid until the next call.
func (r *Reconciler) intentsFor(logger klog.Logger, pod *corev1.Pod) []SourcedIntent {
	out := r.scratch[:0]
	var protection extension.ProtectionReason
	checked := false
	for _, src := range r.sources {
		in, ok := r.intents[src][pod.UID]
		if !ok {
			continue
		}
		if err := in.validate(); err != nil {
			r.refuse(logger, pod, src, "Ignoring an invalid intent", "err", err)
			continue
		}
		if in.BelowOwnLimits && in.CPUQuotaMilli > 0 {
			if !checked {
				protection, checked = extension.QoSProtection(pod), true
			}
			if protection != extension.NotProtected {
				// The modules filter protected pods already; this is the
				// last line of defence, so say loudly that one did not.
				r.refuse(logger, pod, src, "Refusing to hold a protected pod below its own limits", "reason", string(protection))
				in.CPUQuotaMilli = 0
				in.BelowOwnLimits = false
				if in.IsZero() {
					continue
				}
			}
		}
		out = append(out, SourcedIntent{Source: src, Intent: in})
	}
	r.scratch = out
	return out
}

func (r *Reconciler) refuse(logger klog.Logger, pod *corev1.Pod, src Source, msg string, kv ...any) {
	r.refusedCtr.WithLabelValues(string(src)).Inc()
	k := refusal{uid: pod.UID, source: src}
	if _, logged := r.refused[k]; logged {
		return
	}
	r.refused[k] = struct{}{}
	logger.Error(nil, msg, append([]any{"pod", klog.KObj(pod), "source", src}, kv...)...)
}

// reconcile brings one pod's cgroup to what its intents and kubelet say.
func (r *Reconciler) reconcile(logger klog.Logger, pod *corev1.Pod, st *podState, intents []SourcedIntent) error {
	if st.kubeletOf != pod {
		// Informer objects are replaced, never changed, on update: the
		// same pointer is the same spec.
		st.kubelet, st.kubeletOf = KubeletLimits(pod), pod
	}
	kubelet := st.kubelet
	d := combine(kubelet, intents, r.quotaSources)
	r.quotaSources = d.QuotaSources
	heal := !st.healed
	st.healed = true
	if !d.HasQuota && !d.HasShares && !d.HasMemory && !st.quota && !st.shares && !st.memory && len(st.containers) == 0 && !heal {
		return nil
	}
	cg, err := r.cgroupOf(pod, st)
	if err != nil {
		if cgroups.IsGone(err) {
			// Not started yet, or gone: nothing to write, look again next
			// cycle.
			st.healed = false
			return nil
		}
		return err
	}
	var errs []error
	if d.HasQuota || st.quota || len(st.containers) > 0 || heal {
		if err := r.reconcileQuota(logger, pod, st, cg, kubelet, d, heal); err != nil {
			errs = append(errs, err)
		}
	}
	if d.HasShares || st.shares {
		if err := r.reconcileShares(logger, pod, st, cg, kubelet, d); err != nil {
			errs = append(errs, err)
		}
	}
	if d.HasMemory || st.memory {
		if err := r.reconcileMemory(logger, pod, st, cg, kubelet, d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if cgroups.IsGone(err) {
			st.cgroup = ""
			st.close()
			return nil
		}
		return err
	}
	return nil
}

// readQuota reads the pod's CFS quota through a file kept open between
// cycles: a pread of an open cgroup file costs a fraction of the path walk
// of open(2), and this read is the one every managed pod pays every cycle.
func (r *Reconciler) readQuota(st *podState, cg string) (cgroups.CPUQuota, error) {
	v2 := r.layout.Version() == cgroups.V2
	if st.quotaFile == nil {
		name := "/cpu.cfs_quota_us"
		if v2 {
			name = "/cpu.max"
		} else {
			q, err := r.layout.ReadCPUQuota(cg)
			if err != nil {
				return cgroups.CPUQuota{}, err
			}
			st.period = q.PeriodMicros
		}
		st.quotaFile = cgroups.NewFile(r.layout.Path(cgroups.ControllerCPU, cg) + name)
	}
	b, err := r.reader.Read(st.quotaFile)
	if err != nil {
		st.close()
		return cgroups.CPUQuota{}, err
	}
	b = bytes.TrimSpace(b)
	path := st.quotaFile.Path()
	if v2 {
		q, p, ok := bytes.Cut(b, []byte{' '})
		if !ok {
			return cgroups.CPUQuota{}, &cgroups.ParseError{Path: path, Reason: fmt.Sprintf("want \"<quota|max> <period>\", got %q", b)}
		}
		period, err := cgroups.ParseUint(path, p)
		if err != nil {
			return cgroups.CPUQuota{}, err
		}
		if string(q) == "max" {
			return cgroups.CPUQuota{QuotaMicros: Unlimited, PeriodMicros: period}, nil
		}
		quota, err := cgroups.ParseUint(path, q)
		if err != nil {
			return cgroups.CPUQuota{}, err
		}
		return cgroups.CPUQuota{QuotaMicros: int64(quota), PeriodMicros: period}, nil
	}
	if len(b) > 0 && b[0] == '-' {
		// -1 is unlimited; the kernel shows no other negative value.
		return cgroups.CPUQuota{QuotaMicros: Unlimited, PeriodMicros: st.period}, nil
	}
	quota, err := cgroups.ParseUint(path, b)
	if err != nil {
		return cgroups.CPUQuota{}, err
	}
	return cgroups.CPUQuota{QuotaMicros: int64(quota), PeriodMicros: st.period}, nil
}

// cgroupOf finds the pod's cgroup under its QoS class (all three when the
// class is not known yet) and remembers it.
func (r *Reconciler) cgroupOf(pod *corev1.Pod, st *podState) (string, error) {
	if st.cgroup != "" {
		return st.cgroup, nil
	}
	for _, cg := range r.layout.PodCgroupCandidates(pod.UID, pod.Status.QOSClass) {
		_, err := os.Stat(r.layout.Path(cgroups.ControllerCPU, cg))
		if err == nil {
			st.cgroup = cg
			return cg, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("looking for the cgroup of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return "", fmt.Errorf("no cgroup for pod %s/%s yet: %w", pod.Namespace, pod.Name, os.ErrNotExist)
}

func (r *Reconciler) count(resource string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
		r.writeErrors++
	}
	r.writes.WithLabelValues(resource, result).Inc()
}

// reconcileQuota writes the pod's CFS quota when it differs from the
// desired one. heal, on the first look at a pod without a quota intent,
// only raises a quota below kubelet's: what a previous run left.
func (r *Reconciler) reconcileQuota(logger klog.Logger, pod *corev1.Pod, st *podState, cg string, kubelet Limits, d Desired, heal bool) error {
	cur, err := r.readQuota(st, cg)
	if err != nil {
		return fmt.Errorf("reading CPU quota: %w", err)
	}
	want := d.CPUQuotaMilli
	ours := d.HasQuota || st.quota || len(st.containers) > 0
	if !ours {
		// Heal only: never tighten a pod nobody asked about.
		if !quotaBelow(cur, want) {
			if heal && r.layout.Version() == cgroups.V1 {
				return r.healContainers(logger, pod, st, cg, cur)
			}
			return nil
		}
		logger.V(2).Info("Raising a CPU quota a previous run left below kubelet's", "pod", klog.KObj(pod), "from", quotaOf(cur), "to", quotaString(want))
	}
	if !quotaEqual(cur, want) {
		if want != kubelet.CPUQuotaMilli {
			r.markAhead(logger, pod, st, kubelet, func(st *podState) { st.quota = true })
		}
		if err := r.setQuota(logger, pod, st, cg, cur, want, heal); err != nil {
			r.count(resourceCPUQuota, err)
			return err
		}
		r.count(resourceCPUQuota, nil)
		logger.V(2).Info("Set pod CPU quota", "pod", klog.KObj(pod), "from", quotaOf(cur), "to", quotaString(want), "kubelet", quotaString(kubelet.CPUQuotaMilli), "sources", d.QuotaSources)
	} else if st.retryContainers && r.layout.Version() == cgroups.V1 {
		// The pod's quota is right but a container restore failed before:
		// retry it.
		if err := r.restoreContainers(logger, st, quotaTarget(want, cur.PeriodMicros)); err != nil {
			return err
		}
	} else if heal && r.layout.Version() == cgroups.V1 {
		if err := r.healContainers(logger, pod, st, cg, cur); err != nil {
			return err
		}
	}
	st.quota = want != kubelet.CPUQuotaMilli
	return nil
}

// setQuota writes a pod quota. On cgroup v1 the kernel refuses a pod quota
// below that of a child with its own quota, and kubelet gives each
// container with a CPU limit one: lowering goes to the containers first,
// raising to the pod first and then gives the containers back what they
// had.
func (r *Reconciler) setQuota(logger klog.Logger, pod *corev1.Pod, st *podState, cg string, cur cgroups.CPUQuota, milli int64, heal bool) error {
	target := quotaTarget(milli, cur.PeriodMicros)
	v1 := r.layout.Version() == cgroups.V1
	lowering := target.QuotaMicros != Unlimited && (cur.QuotaMicros == Unlimited || quotaExceeds(cur, target))
	if v1 && lowering {
		if err := r.lowerContainers(logger, pod, st, cg, target); err != nil {
			return err
		}
	}
	if _, err := r.layout.SetCPUQuota(cg, target); err != nil {
		if v1 && lowering && len(st.containers) > 0 {
			// The containers went down but the pod did not: should the
			// intent go, the pod's quota is right and only they are not.
			st.retryContainers = true
		}
		return fmt.Errorf("setting CPU quota to %s: %w", quotaString(milli), err)
	}
	if v1 && !lowering {
		if err := r.restoreContainers(logger, st, target); err != nil {
			return err
		}
		if heal {
			return r.healContainers(logger, pod, st, cg, target)
		}
	}
	return nil
}

// lowerContainers lowers every container quota above target to target,
// remembering what it had.
func (r *Reconciler) lowerContainers(logger klog.Logger, pod *corev1.Pod, st *podState, cg string, target cgroups.CPUQuota) error {
	ctrs, err := r.layout.ContainerCgroups(cg)
	if err != nil {
		return err
	}
	for _, c := range ctrs {
		cq, err := r.layout.ReadCPUQuota(c.Cgroup)
		if err != nil {
			if cgroups.IsGone(err) {
				continue
			}
			return fmt.Errorf("reading CPU quota of container %s: %w", c.ID, err)
		}
		if cq.QuotaMicros == Unlimited || !quotaExceeds(cq, target) {
			continue
		}
		if st.containers == nil {
			st.containers = map[string]cgroups.CPUQuota{}
		}
		if _, ok := st.containers[c.Cgroup]; !ok {
			r.markAhead(logger, pod, st, st.kubelet, func(st *podState) { st.containers[c.Cgroup] = cq })
		}
		lowered := rescale(target, cq.PeriodMicros)
		if _, err := r.layout.SetCPUQuota(c.Cgroup, lowered); err != nil {
			r.count(resourceCPUQuota, err)
			return fmt.Errorf("lowering CPU quota of container %s to %dµs: %w", c.ID, lowered.QuotaMicros, err)
		}
		r.count(resourceCPUQuota, nil)
		logger.V(4).Info("Lowered container CPU quota below the pod's", "container", c.ID, "from", cq.QuotaMicros, "to", lowered.QuotaMicros)
	}
	return nil
}

// restoreContainers gives lowered containers back what they had, up to the
// pod's new quota.
func (r *Reconciler) restoreContainers(logger klog.Logger, st *podState, podQuota cgroups.CPUQuota) error {
	st.retryContainers = true
	for _, c := range slices.Sorted(maps.Keys(st.containers)) {
		prev := st.containers[c]
		want := prev
		capped := podQuota.QuotaMicros != Unlimited && quotaExceeds(prev, podQuota)
		if capped {
			want = rescale(podQuota, prev.PeriodMicros)
		}
		cur, err := r.layout.ReadCPUQuota(c)
		if err == nil && cur == want {
			if !capped {
				delete(st.containers, c)
			}
			continue
		}
		if cgroups.IsGone(err) {
			delete(st.containers, c)
			continue
		}
		if _, err := r.layout.SetCPUQuota(c, want); err != nil {
			if cgroups.IsGone(err) {
				delete(st.containers, c)
				continue
			}
			r.count(resourceCPUQuota, err)
			return fmt.Errorf("restoring CPU quota of container cgroup %s to %dµs: %w", c, want.QuotaMicros, err)
		}
		r.count(resourceCPUQuota, nil)
		logger.V(4).Info("Restored container CPU quota", "cgroup", c, "to", want.QuotaMicros)
		if !capped {
			delete(st.containers, c)
		}
	}
	st.retryContainers = false
	return nil
}

// healContainers raises container quotas a previous run lowered (cgroup
// v1) back to kubelet's value for the container, within the pod's quota.
// Containers it cannot name (the sandbox, a container the pod status does
// not list yet) are left alone: their value cannot be known.
func (r *Reconciler) healContainers(logger klog.Logger, pod *corev1.Pod, st *podState, cg string, podQuota cgroups.CPUQuota) error {
	ctrs, err := r.layout.ContainerCgroups(cg)
	if err != nil {
		return err
	}
	names := containerNames(pod)
	for _, c := range ctrs {
		name, ok := names[c.ID]
		if !ok {
			continue
		}
		if _, mine := st.containers[c.Cgroup]; mine {
			continue
		}
		kq, ok := KubeletContainerQuotaMilli(pod, name)
		if !ok {
			continue
		}
		cq, err := r.layout.ReadCPUQuota(c.Cgroup)
		if err != nil {
			if cgroups.IsGone(err) {
				continue
			}
			return fmt.Errorf("reading CPU quota of container %s: %w", name, err)
		}
		want := quotaTarget(kq, cq.PeriodMicros)
		if want.QuotaMicros != Unlimited && podQuota.QuotaMicros != Unlimited && quotaExceeds(want, podQuota) {
			want = rescale(podQuota, cq.PeriodMicros)
		}
		if cq.QuotaMicros == Unlimited || (want.QuotaMicros != Unlimited && cq.QuotaMicros >= want.QuotaMicros) {
			continue
		}
		if _, err := r.layout.SetCPUQuota(c.Cgroup, want); err != nil {
			r.count(resourceCPUQuota, err)
			return fmt.Errorf("raising CPU quota of container %s: %w", name, err)
		}
		r.count(resourceCPUQuota, nil)
		logger.V(2).Info("Raised a container CPU quota a previous run left below kubelet's", "pod", klog.KObj(pod), "container", name, "from", cq.QuotaMicros, "to", want.QuotaMicros)
	}
	return nil
}

// containerNames maps runtime container IDs to container names.
func containerNames(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, ss := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, s := range ss {
			id := s.ContainerID
			if _, after, ok := strings.Cut(id, "://"); ok {
				id = after
			}
			if id != "" {
				out[id] = s.Name
			}
		}
	}
	return out
}

func (r *Reconciler) reconcileShares(logger klog.Logger, pod *corev1.Pod, st *podState, cg string, kubelet Limits, d Desired) error {
	cur, err := r.layout.ReadCPUShares(cg)
	if err != nil {
		return fmt.Errorf("reading CPU shares: %w", err)
	}
	want := d.CPUShares
	if !r.sharesEqual(cur, want) {
		if want != kubelet.CPUShares {
			r.markAhead(logger, pod, st, kubelet, func(st *podState) { st.shares = true })
		}
		_, err := r.layout.SetCPUShares(cg, want)
		r.count(resourceCPUShares, err)
		if err != nil {
			return fmt.Errorf("setting CPU shares to %d: %w", want, err)
		}
		logger.V(2).Info("Set pod CPU shares", "pod", klog.KObj(pod), "from", cur, "to", want, "kubelet", kubelet.CPUShares)
	}
	st.shares = want != kubelet.CPUShares
	return nil
}

// sharesEqual compares shares as the cgroup stores them: on v2 the weight,
// which several shares map to.
func (r *Reconciler) sharesEqual(a, b uint64) bool {
	if r.layout.Version() == cgroups.V2 {
		return cgroups.CPUSharesToWeight(a) == cgroups.CPUSharesToWeight(b)
	}
	return a == b
}

func (r *Reconciler) reconcileMemory(logger klog.Logger, pod *corev1.Pod, st *podState, cg string, kubelet Limits, d Desired) error {
	cur, err := r.layout.ReadMemoryLimit(cg)
	if err != nil {
		return fmt.Errorf("reading memory limit: %w", err)
	}
	want := d.MemoryBytes
	if !memoryEqual(cur, want) {
		if want != kubelet.MemoryBytes {
			r.markAhead(logger, pod, st, kubelet, func(st *podState) { st.memory = true })
		}
		_, err := r.layout.SetMemoryLimit(cg, want)
		r.count(resourceMemoryLimit, err)
		if err != nil {
			// v1 answers EBUSY when the cgroup uses more than the new
			// limit and cannot reclaim it; the next cycle tries again.
			return fmt.Errorf("setting memory limit to %d: %w", want, err)
		}
		logger.V(2).Info("Set pod memory limit", "pod", klog.KObj(pod), "from", cur, "to", want, "kubelet", kubelet.MemoryBytes)
	}
	st.memory = want != kubelet.MemoryBytes
	return nil
}

// memoryEqual compares limits as the kernel keeps them: rounded down to a
// page.
func memoryEqual(cur, want int64) bool {
	if cur == Unlimited || want == Unlimited {
		return cur == want
	}
	return cur/pageSize == want/pageSize
}

// quotaTarget is the CFS quota of milli millicores at period (kubelet's
// MilliCPUToQuota: at least 1 ms).
func quotaTarget(milli int64, period uint64) cgroups.CPUQuota {
	if period == 0 {
		period = cgroups.DefaultCPUPeriodMicros
	}
	if milli == Unlimited {
		return cgroups.CPUQuota{QuotaMicros: Unlimited, PeriodMicros: period}
	}
	return cgroups.CPUQuota{QuotaMicros: max(cgroups.MinCPUQuotaMicros, milli*int64(period)/1000), PeriodMicros: period}
}

// quotaEqual reports whether the cgroup's quota is milli millicores.
func quotaEqual(cur cgroups.CPUQuota, milli int64) bool {
	return cur.QuotaMicros == quotaTarget(milli, cur.PeriodMicros).QuotaMicros
}

// quotaBelow reports whether the cgroup's quota is tighter than milli.
func quotaBelow(cur cgroups.CPUQuota, milli int64) bool {
	if cur.QuotaMicros == Unlimited {
		return false
	}
	if milli == Unlimited {
		return true
	}
	return cur.QuotaMicros < quotaTarget(milli, cur.PeriodMicros).QuotaMicros
}

// quotaExceeds reports whether finite quota a allows more cores than finite
// quota b.
func quotaExceeds(a, b cgroups.CPUQuota) bool {
	return uint64(a.QuotaMicros)*b.PeriodMicros > uint64(b.QuotaMicros)*a.PeriodMicros
}

// rescale expresses q at another period.
func rescale(q cgroups.CPUQuota, period uint64) cgroups.CPUQuota {
	if period == 0 {
		period = q.PeriodMicros
	}
	if q.QuotaMicros == Unlimited {
		return cgroups.CPUQuota{QuotaMicros: Unlimited, PeriodMicros: period}
	}
	return cgroups.CPUQuota{QuotaMicros: max(cgroups.MinCPUQuotaMicros, int64(uint64(q.QuotaMicros)*period/q.PeriodMicros)), PeriodMicros: period}
}

// quotaOf renders a cgroup quota in millicores for logs.
func quotaOf(q cgroups.CPUQuota) string {
	if q.QuotaMicros == Unlimited || q.PeriodMicros == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%dm", q.QuotaMicros*1000/int64(q.PeriodMicros))
}
