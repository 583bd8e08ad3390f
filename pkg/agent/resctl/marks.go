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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/pkg/agent/atomicfile"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// MarksFile is the Reconciler's marks inside the agent's state directory.
const MarksFile = "resctl-marks.json"

const marksVersion = 1

// Mark is the agent's own record of one pod cgroup it changed: which values
// differ from kubelet's because of it, and what they were. It is written
// before the change (write-ahead), so a crash at any moment leaves every
// change the agent made marked; it goes when kubelet's values are back.
// The marks are what a restarted agent heals (whatever the pod has become
// meanwhile: relabelled Prod, terminating, gone from the API) and what
// Release undoes.
type Mark struct {
	// Namespace and Name are for logs only.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Cgroup is the pod's cgroup, relative to each hierarchy root.
	Cgroup string `json:"cgroup"`
	// CPUQuotaMilli is kubelet's quota (millicores; -1 unlimited) when the
	// agent holds the pod's quota elsewhere; nil when it does not.
	CPUQuotaMilli *int64 `json:"cpuQuotaMilli,omitempty"`
	// CPUShares is kubelet's cpu.shares when the agent changed them.
	CPUShares *uint64 `json:"cpuShares,omitempty"`
	// MemoryBytes is kubelet's memory limit (-1 unlimited) when the agent
	// changed it.
	MemoryBytes *int64 `json:"memoryBytes,omitempty"`
	// Containers are container cgroups (cgroup v1) whose quota the agent
	// lowered so the pod's could go below it, with the quota they had.
	Containers map[string]cgroups.CPUQuota `json:"containers,omitempty"`
}

func (m *Mark) empty() bool {
	return m.CPUQuotaMilli == nil && m.CPUShares == nil && m.MemoryBytes == nil && len(m.Containers) == 0
}

func (m *Mark) equal(o *Mark) bool {
	eq64 := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return m.Cgroup == o.Cgroup && eq64(m.CPUQuotaMilli, o.CPUQuotaMilli) && eq64(m.MemoryBytes, o.MemoryBytes) &&
		(m.CPUShares == nil) == (o.CPUShares == nil) && (m.CPUShares == nil || *m.CPUShares == *o.CPUShares) &&
		maps.Equal(m.Containers, o.Containers)
}

type marksFile struct {
	Version int                 `json:"version"`
	Pods    map[types.UID]*Mark `json:"pods"`
}

// ReadMarks reads a marks file; a missing file holds no marks.
func ReadMarks(path string) (map[types.UID]*Mark, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[types.UID]*Mark{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cgroup marks %s: %w", path, err)
	}
	var f marksFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing the cgroup marks %s: %w", path, err)
	}
	if f.Version != marksVersion {
		return nil, fmt.Errorf("cgroup marks %s: version %d, want %d", path, f.Version, marksVersion)
	}
	for uid, m := range f.Pods {
		if m == nil || m.Cgroup == "" {
			return nil, fmt.Errorf("cgroup marks %s: pod %s: no cgroup", path, uid)
		}
	}
	if f.Pods == nil {
		f.Pods = map[types.UID]*Mark{}
	}
	return f.Pods, nil
}

// UseMarks makes the Reconciler keep its marks in path (the agent's state
// directory) and loads the marks a previous run left: their pods are healed
// in the next cycles, or by Release. Call it before the first cycle. An
// unreadable file is an error; the Reconciler then still marks from now on
// (and heals by its one look at Batch/Free and tier pods).
func (r *Reconciler) UseMarks(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marksPath = path
	r.marks = map[types.UID]*Mark{}
	m, err := ReadMarks(path)
	if err != nil {
		return err
	}
	r.marks = m
	return nil
}

// Marks returns a copy of the current marks.
func (r *Reconciler) Marks() map[types.UID]Mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.UID]Mark, len(r.marks))
	for uid, m := range r.marks {
		c := *m
		c.Containers = maps.Clone(m.Containers)
		out[uid] = c
	}
	return out
}

func (r *Reconciler) saveMarks() error {
	if r.marksPath == "" {
		return nil
	}
	b, err := json.Marshal(marksFile{Version: marksVersion, Pods: r.marks})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(r.marksPath, b); err != nil {
		return fmt.Errorf("saving the cgroup marks: %w", err)
	}
	r.marksDirty = false
	return nil
}

// markOf is what the marks must say of a pod given what its state says
// differs from kubelet's values. The values are kubelet's for the pod as
// it is now, as the Reconciler itself writes back when no intent remains:
// after an in-place resize the value to release is the new limit, not the
// one the pod had when it was first changed.
func markOf(pod *corev1.Pod, st *podState, kubelet Limits) *Mark {
	m := &Mark{Namespace: pod.Namespace, Name: pod.Name, Cgroup: st.cgroup}
	if st.quota || len(st.containers) > 0 {
		v := kubelet.CPUQuotaMilli
		m.CPUQuotaMilli = &v
	}
	if st.shares {
		v := kubelet.CPUShares
		m.CPUShares = &v
	}
	if st.memory {
		v := kubelet.MemoryBytes
		m.MemoryBytes = &v
	}
	if len(st.containers) > 0 {
		m.Containers = maps.Clone(st.containers)
	}
	return m
}

// markAhead records, before a write, that the pod's cgroup is about to hold
// a value of the agent's: it sets the state's flag for it and saves the
// marks at once when they change. A mark that cannot be saved is logged
// and the write goes ahead (throttling matters more; the one look at
// Batch/Free and tier pods after a restart still heals those).
func (r *Reconciler) markAhead(logger klog.Logger, pod *corev1.Pod, st *podState, kubelet Limits, set func(*podState)) {
	if r.marks == nil {
		set(st)
		return
	}
	set(st)
	want := markOf(pod, st, kubelet)
	if prev := r.marks[pod.UID]; prev != nil && prev.equal(want) {
		return
	}
	r.marks[pod.UID] = want
	if err := r.saveMarks(); err != nil {
		r.marksDirty = true
		logger.Error(err, "Cannot record a cgroup change before making it; making it anyway", "pod", klog.KObj(pod))
	}
}

// syncMark brings the pod's mark to what its state says after reconcile;
// the marks are saved at the end of the cycle when anything changed.
func (r *Reconciler) syncMark(pod *corev1.Pod, st *podState) {
	if r.marks == nil || st.cgroup == "" {
		return
	}
	prev := r.marks[pod.UID]
	if prev == nil && !st.quota && !st.shares && !st.memory && len(st.containers) == 0 {
		// Nothing to mark and nothing marked: the common case, every
		// cycle for every pod, without building an empty mark.
		return
	}
	want := markOf(pod, st, st.kubelet)
	switch {
	case want.empty() && prev == nil:
	case want.empty():
		delete(r.marks, pod.UID)
		r.marksDirty = true
	case prev == nil || !prev.equal(want):
		r.marks[pod.UID] = want
		r.marksDirty = true
	}
}

// stateFromMark is the state of a pod a previous run marked: the values it
// changed are ours until kubelet's are written back.
func stateFromMark(m *Mark) *podState {
	return &podState{
		cgroup:     m.Cgroup,
		quota:      m.CPUQuotaMilli != nil,
		shares:     m.CPUShares != nil,
		memory:     m.MemoryBytes != nil,
		containers: maps.Clone(m.Containers),
		// Containers marked lowered may be so while the pod's quota is
		// already kubelet's (a kill between the two writes on v1): give
		// them theirs back even when the pod's quota needs no write.
		retryContainers: len(m.Containers) > 0,
		healed:          true,
	}
}

// Release undoes every change the marks record -- kubelet's quota, shares
// and memory limit back on each marked pod's cgroup, containers first
// given back theirs -- without needing the pods or the API server, and
// removes the marks. It is for uninstalling the agent
// (waterline-agent --release, or SIGTERM once its DaemonSet is gone): no
// module may run after it. It carries on past a failing pod and returns
// every error; the marks of pods it could not restore stay.
func (r *Reconciler) Release(logger klog.Logger) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, uid := range slices.Sorted(maps.Keys(r.marks)) {
		m := r.marks[uid]
		if err := r.restoreMark(logger, m); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s (%s): %w", m.Namespace, m.Name, uid, err))
			continue
		}
		delete(r.marks, uid)
		if st := r.pods[uid]; st != nil {
			st.close()
			delete(r.pods, uid)
		}
	}
	clear(r.intents)
	if r.marksPath != "" {
		if err := r.saveMarks(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// restoreMark writes back what a mark recorded. A cgroup that is gone has
// nothing to restore.
func (r *Reconciler) restoreMark(logger klog.Logger, m *Mark) error {
	cg := m.Cgroup
	if _, err := os.Stat(r.layout.Path(cgroups.ControllerCPU, cg)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	gone := func(err error) bool { return err != nil && cgroups.IsGone(err) }
	if m.CPUQuotaMilli != nil {
		cur, err := r.layout.ReadCPUQuota(cg)
		if gone(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading CPU quota: %w", err)
		}
		target := quotaTarget(*m.CPUQuotaMilli, cur.PeriodMicros)
		if cur.QuotaMicros != target.QuotaMicros {
			if _, err := r.layout.SetCPUQuota(cg, target); err != nil && !gone(err) {
				r.count(resourceCPUQuota, err)
				return fmt.Errorf("restoring CPU quota to %s: %w", quotaString(*m.CPUQuotaMilli), err)
			}
			r.count(resourceCPUQuota, nil)
			logger.V(2).Info("Released pod CPU quota", "pod", klog.KRef(m.Namespace, m.Name), "from", quotaOf(cur), "to", quotaString(*m.CPUQuotaMilli))
		}
		for _, c := range slices.Sorted(maps.Keys(m.Containers)) {
			want := m.Containers[c]
			if target.QuotaMicros != Unlimited && want.QuotaMicros != Unlimited && quotaExceeds(want, target) {
				want = rescale(target, want.PeriodMicros)
			}
			if _, err := r.layout.SetCPUQuota(c, want); err != nil && !gone(err) {
				r.count(resourceCPUQuota, err)
				return fmt.Errorf("restoring CPU quota of container cgroup %s: %w", c, err)
			}
		}
	}
	if m.CPUShares != nil {
		if _, err := r.layout.SetCPUShares(cg, *m.CPUShares); err != nil && !gone(err) {
			r.count(resourceCPUShares, err)
			return fmt.Errorf("restoring CPU shares to %d: %w", *m.CPUShares, err)
		}
	}
	if m.MemoryBytes != nil {
		if _, err := r.layout.SetMemoryLimit(cg, *m.MemoryBytes); err != nil && !gone(err) {
			r.count(resourceMemoryLimit, err)
			return fmt.Errorf("restoring memory limit to %d: %w", *m.MemoryBytes, err)
		}
	}
	return nil
}
