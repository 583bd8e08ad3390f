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

package collector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// Collector turns the node's cumulative counters into one Sample per cycle.
// It keeps the previous counter of the node, of each pod and of each
// container to take rates against, and forgets pods and containers as soon
// as a cycle no longer finds them. Collect calls are serialised.
type Collector struct {
	procStat    *cgroups.File
	procMeminfo *cgroups.File
	layout      *cgroups.Layout
	clock       clock.PassiveClock
	interval    time.Duration
	// containerInterval is Config.ContainerInterval; 0 is off.
	containerInterval time.Duration
	// memStatInterval is Config.MemoryStatInterval.
	memStatInterval time.Duration
	custom          []CustomMetric

	mu     sync.Mutex
	reader *cgroups.Reader
	cycle  uint64
	// lastContainers is when a cycle last read containers.
	lastContainers time.Time
	node           counter
	pods           map[types.UID]*podState
	// newPods counts the pods found so far; it spreads their memory.stat
	// reads over the interval.
	newPods uint64
	// listed is scratch for the containers one pod's listing found.
	listed []*containerState

	// afterList, when set by tests, runs after a pod's containers were
	// listed and before its files are read: the window in which kubelet
	// deleting the pod must not break the cycle.
	afterList func(PodRef)
}

// counter is the previous reading of a cumulative CPU counter.
type counter struct {
	value uint64
	at    time.Time
	ok    bool
}

// rate returns the cores used between the previous reading and this one,
// with unit the counter's units per second (1e9 for nanoseconds, userHZ for
// jiffies), and makes this reading the next baseline. There is no rate on
// the first reading, when time did not move, or when the counter went
// backwards (reset reports that).
func (c *counter) rate(value uint64, at time.Time, unitsPerSecond float64) (cores float64, ok, reset bool) {
	prev := *c
	elapsed := at.Sub(prev.at)
	if prev.ok && elapsed <= 0 && value >= prev.value {
		// Keep the older baseline: the next reading then spans both.
		return 0, false, false
	}
	*c = counter{value: value, at: at, ok: true}
	if !prev.ok {
		return 0, false, false
	}
	if value < prev.value {
		return 0, false, true
	}
	return float64(value-prev.value) / unitsPerSecond / elapsed.Seconds(), true, false
}

type podState struct {
	cgroup string
	files  *cgroups.UsageFiles
	// dir is the directory whose subdirectories are the containers.
	dir        *cgroups.Dir
	cpu        counter
	memStat    memStatReading
	custom     []counter
	seen       uint64
	containers map[string]*containerState
}

// memStatReading is a pod's last memory.stat read: the inactive file
// pages and the charge read beside them.
type memStatReading struct {
	inactive, charge uint64
	// at is when it was read, moved back by the pod's phase after the
	// first read so that pods found together come due in different cycles.
	at time.Time
	ok bool
}

type containerState struct {
	// id is empty for a directory that is not a container (a conmon
	// scope): it is listed but never read.
	id     string
	files  *cgroups.UsageFiles
	cpu    counter
	listed uint64
}

// New returns a Collector for the node, reading cgroups through layout. It
// validates cfg (after defaulting a copy) and reads /proc once, so that a
// wrong ProcRoot fails at start rather than every cycle; that reading is
// also the node's first CPU baseline.
func New(cfg Config, layout *cgroups.Layout, clk clock.PassiveClock) (*Collector, error) {
	cfg.SetDefaults()
	if errs := cfg.Validate(field.NewPath("collector")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if layout == nil {
		return nil, fmt.Errorf("creating collector: no cgroup layout")
	}
	if errs := checkCustomHierarchies(cfg.CustomMetrics, layout, field.NewPath("collector", "customMetrics")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	c := &Collector{
		procStat:          cgroups.NewFile(cfg.ProcRoot + "/stat"),
		procMeminfo:       cgroups.NewFile(cfg.ProcRoot + "/meminfo"),
		layout:            layout,
		clock:             clk,
		interval:          cfg.Interval,
		containerInterval: *cfg.ContainerInterval,
		memStatInterval:   cfg.MemoryStatInterval,
		custom:            cfg.CustomMetrics,
		reader:            cgroups.NewReader(),
		pods:              map[types.UID]*podState{},
	}
	busy, err := readProcStatBusy(c.reader, c.procStat)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("creating collector: %w", err)
	}
	c.node.rate(busy, clk.Now(), userHZ)
	if _, err := readMemInfoUsed(c.reader, c.procMeminfo); err != nil {
		c.Close()
		return nil, fmt.Errorf("creating collector: %w", err)
	}
	return c, nil
}

// Close releases the files the collector keeps open. A Collect after Close
// opens them again.
func (c *Collector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := []error{c.procStat.Close(), c.procMeminfo.Close()}
	for uid, st := range c.pods {
		errs = append(errs, st.close())
		delete(c.pods, uid)
	}
	return errors.Join(errs...)
}

func (st *podState) close() error {
	errs := []error{st.files.Close(), st.dir.Close()}
	for _, cs := range st.containers {
		if cs.files != nil {
			errs = append(errs, cs.files.Close())
		}
	}
	return errors.Join(errs...)
}

// Layout is the cgroup layout the collector reads.
func (c *Collector) Layout() *cgroups.Layout { return c.layout }

// Collect runs one cycle over the node and the given pods (this node's pods
// from the informer). Pods whose cgroup is missing or vanishes, and files
// that cannot be parsed, are skipped and counted in Sample.Stats; the only
// error is ctx ending mid-cycle.
func (c *Collector) Collect(ctx context.Context, pods []PodRef) (*Sample, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	c.cycle++
	s := &Sample{Time: start, Pods: make([]PodSample, 0, len(pods))}
	s.Stats.Pods = len(pods)

	// A cycle reads containers once their interval has passed; a few ms
	// of jitter in the agent's ticks must not postpone that by a whole
	// interval, hence the half-interval of slack.
	withContainers := c.containerInterval > 0 &&
		(c.lastContainers.IsZero() || start.Sub(c.lastContainers) >= c.containerInterval-c.interval/2)
	if withContainers {
		c.lastContainers = start
	}
	s.ContainersCollected = withContainers

	c.collectNode(logger, s)
	for i := range pods {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("collect cycle interrupted after %d of %d pods: %w", i, len(pods), err)
		}
		c.collectPod(logger, &pods[i], s, withContainers)
	}
	for uid, st := range c.pods {
		if st.seen != c.cycle {
			st.close()
			delete(c.pods, uid)
		}
	}
	s.System = systemUsage(s)
	s.Custom = customNode(s, c.custom)
	s.Stats.PodsCollected = len(s.Pods)
	s.Stats.Duration = c.clock.Since(start)
	logger.V(4).Info("Collected usage", "pods", s.Stats.Pods, "collected", s.Stats.PodsCollected,
		"missing", s.Stats.PodsMissing, "readErrors", s.Stats.ReadErrors, "counterResets", s.Stats.CounterResets,
		"nodeCPU", s.Node.CPU, "nodeMemory", s.Node.Memory, "duration", s.Stats.Duration)
	return s, nil
}

func (c *Collector) collectNode(logger klog.Logger, s *Sample) {
	busy, err := readProcStatBusy(c.reader, c.procStat)
	if err != nil {
		s.Stats.ReadErrors++
		logger.Error(err, "Cannot read node CPU")
	} else {
		var reset bool
		s.Node.CPU, s.Node.HasCPU, reset = c.node.rate(busy, c.clock.Now(), userHZ)
		if reset {
			s.Stats.CounterResets++
		}
	}
	mem, err := readMemInfoUsed(c.reader, c.procMeminfo)
	if err != nil {
		s.Stats.ReadErrors++
		logger.Error(err, "Cannot read node memory")
		return
	}
	s.Node.Memory, s.Node.HasMemory = mem, true
}

func (c *Collector) collectPod(logger klog.Logger, ref *PodRef, s *Sample, withContainers bool) {
	st := c.pods[ref.UID]
	if st == nil {
		st = c.findPod(ref)
		if st == nil {
			s.Stats.PodsMissing++
			logger.V(5).Info("Pod has no cgroup yet", "pod", klog.KRef(ref.Namespace, ref.Name), "podUID", ref.UID)
			return
		}
		c.pods[ref.UID] = st
	}
	st.seen = c.cycle
	gone := func(err error) {
		st.close()
		delete(c.pods, ref.UID)
		s.Stats.PodsMissing++
		logger.V(5).Info("Pod cgroup vanished during the cycle", "pod", klog.KRef(ref.Namespace, ref.Name), "podUID", ref.UID, "err", err)
	}

	c.listed = c.listed[:0]
	if withContainers {
		if err := c.reader.Subdirs(st.dir, func(name []byte) { c.listContainer(st, name) }); err != nil {
			if cgroups.IsGone(err) {
				gone(err)
				return
			}
			s.Stats.ReadErrors++
			logger.V(5).Info("Cannot list containers", "pod", klog.KRef(ref.Namespace, ref.Name), "err", err)
		}
	}
	if c.afterList != nil {
		c.afterList(*ref)
	}

	pu := PodSample{Pod: *ref}
	if v, err := c.reader.CPUUsage(st.files); err != nil {
		if cgroups.IsGone(err) {
			gone(err)
			return
		}
		s.Stats.ReadErrors++
		logger.V(5).Info("Cannot read pod CPU", "pod", klog.KRef(ref.Namespace, ref.Name), "err", err)
	} else {
		var reset bool
		pu.CPU, pu.HasCPU, reset = st.cpu.rate(v, c.clock.Now(), 1e9)
		if reset {
			s.Stats.CounterResets++
		}
	}
	if v, err := c.podMemory(st, s); err != nil {
		if cgroups.IsGone(err) {
			gone(err)
			return
		}
		s.Stats.ReadErrors++
		logger.V(5).Info("Cannot read pod memory", "pod", klog.KRef(ref.Namespace, ref.Name), "err", err)
	} else {
		pu.Memory, pu.HasMemory = v, true
	}

	c.readCustom(logger, ref, st, &pu, s, c.clock.Now())
	if withContainers {
		pu.Containers = c.collectContainers(logger, ref, st, s)
	}
	if pu.HasCPU || pu.HasMemory || len(pu.Containers) > 0 || len(pu.Custom) > 0 {
		s.Pods = append(s.Pods, pu)
	}
}

// podMemory returns the pod's working set: the charge read now minus the
// inactive file pages of the pod's last memory.stat read. memory.stat is
// read again when MemoryStatInterval has passed since (with half a cycle
// of slack for tick jitter), and at once when the charge moved by more
// than MemoryStatRefreshBytes since: a pod filling its page cache moves
// its charge and its inactive file pages together, and must not look as if
// it grew its working set. What a stale reading misses are pages moving
// between the active and inactive lists at a constant charge (files read
// again, or reclaim balancing the lists): seen at the next read.
func (c *Collector) podMemory(st *podState, s *Sample) (uint64, error) {
	charge, err := c.reader.MemoryCharge(st.files)
	if err != nil {
		return 0, err
	}
	now := c.clock.Now()
	last := &st.memStat
	if !last.ok || now.Sub(last.at) >= c.memStatInterval-c.interval/2 ||
		max(charge, last.charge)-min(charge, last.charge) > MemoryStatRefreshBytes {
		inactive, err := c.reader.InactiveFile(st.files)
		if err != nil {
			return 0, err
		}
		s.Stats.MemoryStatReads++
		at := now
		if !last.ok {
			// The n-th pod found comes due (n mod slots) cycles early.
			slots := uint64(c.memStatInterval / c.interval)
			at = now.Add(-time.Duration(c.newPods%slots) * c.interval)
			c.newPods++
		}
		*last = memStatReading{inactive: inactive, charge: charge, at: at, ok: true}
	}
	return cgroups.WorkingSet(charge, last.inactive), nil
}

// findPod looks for the pod's cgroup under its QoS class first, then the
// others, and returns nil when there is none.
func (c *Collector) findPod(ref *PodRef) *podState {
	for _, cg := range c.layout.PodCgroupCandidates(ref.UID, ref.QoSClass) {
		dir := c.layout.Path(cgroups.ControllerCPUAcct, cg)
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) != nil {
			continue
		}
		return &podState{
			cgroup:     cg,
			files:      c.layout.UsageFiles(cg),
			dir:        cgroups.NewDir(dir),
			containers: map[string]*containerState{},
		}
	}
	return nil
}

// listContainer runs inside Subdirs: name points into the reader's buffer,
// so it is only looked up (no allocation) unless the container is new.
func (c *Collector) listContainer(st *podState, name []byte) {
	cs := st.containers[string(name)]
	if cs == nil {
		dir := string(name)
		cs = &containerState{}
		if id, ok := c.layout.ContainerID(dir); ok {
			cs.id = id
			cs.files = c.layout.UsageFiles(st.cgroup + "/" + dir)
		}
		st.containers[dir] = cs
	}
	cs.listed = c.cycle
	if cs.id != "" {
		c.listed = append(c.listed, cs)
	}
}

func (c *Collector) collectContainers(logger klog.Logger, ref *PodRef, st *podState, s *Sample) []ContainerUsage {
	for dir, cs := range st.containers {
		if cs.listed != c.cycle {
			if cs.files != nil {
				cs.files.Close()
			}
			delete(st.containers, dir)
		}
	}
	if len(c.listed) == 0 {
		return nil
	}
	out := make([]ContainerUsage, 0, len(c.listed))
	for _, cs := range c.listed {
		cu := ContainerUsage{ID: cs.id, Name: containerName(ref, cs.id)}
		if v, err := c.reader.CPUUsage(cs.files); err == nil {
			var reset bool
			cu.CPU, cu.HasCPU, reset = cs.cpu.rate(v, c.clock.Now(), 1e9)
			if reset {
				s.Stats.CounterResets++
			}
		} else if !cgroups.IsGone(err) {
			s.Stats.ReadErrors++
			logger.V(5).Info("Cannot read container CPU", "pod", klog.KRef(ref.Namespace, ref.Name), "containerID", cs.id, "err", err)
		}
		if v, err := c.reader.MemoryWorkingSet(cs.files); err == nil {
			cu.Memory, cu.HasMemory = v, true
		} else if !cgroups.IsGone(err) {
			s.Stats.ReadErrors++
			logger.V(5).Info("Cannot read container memory", "pod", klog.KRef(ref.Namespace, ref.Name), "containerID", cs.id, "err", err)
		}
		// Containers are read every ContainerInterval only, so their files
		// are not kept open between reads: each open file read once holds
		// about 4 KiB of kernel memory (charged to the agent's cgroup), 7
		// MiB for 600 containers, against a few ms of CPU every 30 s.
		cs.files.Close()
		// A container that exited between listing and reading is simply
		// not there this cycle.
		if cu.HasCPU || cu.HasMemory {
			out = append(out, cu)
		}
	}
	s.Stats.Containers += len(out)
	slices.SortFunc(out, func(a, b ContainerUsage) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func containerName(ref *PodRef, id string) string {
	for i := range ref.Containers {
		if ref.Containers[i].ID == id {
			return ref.Containers[i].Name
		}
	}
	return ""
}

// systemUsage is node − Σ pods. A pod without a CPU rate this cycle (its
// first) would make the difference count its usage as system usage, so
// then there is no system CPU; likewise for memory.
func systemUsage(s *Sample) Usage {
	var cpu float64
	var mem uint64
	cpuComplete, memComplete := true, true
	for i := range s.Pods {
		p := &s.Pods[i]
		if p.HasCPU {
			cpu += p.CPU
		} else {
			cpuComplete = false
		}
		if p.HasMemory {
			mem += p.Memory
		} else {
			memComplete = false
		}
	}
	var u Usage
	if s.Node.HasCPU && cpuComplete {
		u.CPU, u.HasCPU = max(0, s.Node.CPU-cpu), true
	}
	if s.Node.HasMemory && memComplete {
		u.HasMemory = true
		if s.Node.Memory > mem {
			u.Memory = s.Node.Memory - mem
		}
	}
	return u
}
