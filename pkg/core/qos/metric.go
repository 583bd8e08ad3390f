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
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// MetricName names a node metric with waterlines. The names of the built-in
// metrics are the NodeQOS rule metrics that measure usage; *_utilization
// rules are converted to them with the node's capacity.
type MetricName string

// Built-in metrics.
const (
	// MetricCPU is CPU usage, in millicores.
	MetricCPU = MetricName(v1alpha1.MetricCPUUsage)
	// MetricMemory is memory usage (working set), in bytes.
	MetricMemory = MetricName(v1alpha1.MetricMemoryUsage)
)

// Action priorities of the built-in metrics. Memory outranks CPU: running
// out of memory OOM-kills pods of every band, running out of CPU only slows
// them, so when one metric must pick the order of a fallback eviction it is
// memory's.
const (
	CPUActionPriority    int32 = 5
	MemoryActionPriority int32 = 8
)

// GapUnknown as ThrottleContext.Remaining asks a throttle or restore
// function for one step, because the gap cannot be measured (fallback).
const GapUnknown int64 = -1

// ThrottleContext is what a throttle or restore function needs besides the
// pod.
type ThrottleContext struct {
	// QuotaMilli is the CPU quota planned for the pod so far, in
	// millicores, or NoQuota.
	QuotaMilli int64
	// Remaining is the gap still open, in the metric's unit, or GapUnknown.
	Remaining int64
	// StepPercent is the restore (and fallback throttle) step, in percent of
	// the pod's CPU limit, or of NodeCPUMilli for a pod without one.
	StepPercent int32
	// MinCPUPercent is the throttle floor, in percent of the pod's CPU
	// request, or of one core for a pod without one.
	MinCPUPercent int32
	// NodeCPUMilli is the node's CPU capacity, in millicores.
	NodeCPUMilli int64
}

// ThrottleFunc plans a lower CPU quota for the pod and says how much of the
// metric that releases: how far the pod's usage will fall below the latest
// sample once the quota is enforced, including what a quota planned earlier
// and not yet reflected in the sample releases. It must never return a
// quota above ctx.QuotaMilli (NoQuota is the highest), and with
// ctx.Remaining 0 it must return ctx.QuotaMilli unchanged.
type ThrottleFunc func(c *Candidate, ctx ThrottleContext) (quotaMilli, released int64)

// RestoreFunc plans a higher CPU quota (or NoQuota) for a throttled pod and
// says how much of the metric that gives back, at most ctx.Remaining unless
// that is GapUnknown. It must never return a quota below ctx.QuotaMilli.
type RestoreFunc func(c *Candidate, ctx ThrottleContext) (quotaMilli, granted int64)

// EvictFunc says how much of the metric evicting the pod releases.
type EvictFunc func(c *Candidate) (released int64)

// Metric is a node metric with the attributes of Crane precise execution
// (docs/design/node-qos.md#metrics-and-their-attributes): how to order pods for
// it, and whether and how precisely throttling and eviction act on it.
type Metric struct {
	// Name is the metric, as the shell reports node and pod usage of it.
	Name MetricName
	// ActionPriority, 0 (lowest) to 10, picks the metric whose order and
	// actions a fallback uses.
	ActionPriority int32

	// Sortable says Sorter orders pods for this metric; otherwise
	// GeneralSorter does.
	Sortable bool
	Sorter   Sorter

	// Throttleable says throttling CPU reduces the metric (Throttle and
	// Restore must be set).
	Throttleable bool
	// ThrottleQuantified says Throttle's released amount can be trusted to
	// close a gap precisely. When a breached metric is not, the planner
	// throttles every candidate one step with the highest-priority
	// throttleable metric.
	ThrottleQuantified bool
	Throttle           ThrottleFunc
	Restore            RestoreFunc

	// Evictable says evicting a pod reduces the metric (Evict must be set).
	Evictable bool
	// EvictQuantified says Evict's released amount can be trusted to close a
	// gap precisely. When a breached metric is not, the planner evicts one
	// pod per cycle in the order of the highest-priority evictable metric.
	EvictQuantified bool
	Evict           EvictFunc
}

// sorter returns the order the metric's actions use.
func (m *Metric) sorter() Sorter {
	if m.Sortable {
		return m.Sorter
	}
	return GeneralSorter()
}

// ValidateMetric returns every reason m cannot be registered.
func ValidateMetric(m *Metric, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "a metric needs a name"))
	}
	if m.ActionPriority < 0 || m.ActionPriority > 10 {
		errs = append(errs, field.Invalid(path.Child("actionPriority"), m.ActionPriority, "must be between 0 and 10"))
	}
	if m.Sortable && m.Sorter.IsZero() {
		errs = append(errs, field.Required(path.Child("sorter"), "a sortable metric needs a sorter"))
	}
	if m.Throttleable && (m.Throttle == nil || m.Restore == nil) {
		errs = append(errs, field.Required(path.Child("throttle"), "a throttleable metric needs throttle and restore functions"))
	}
	if m.ThrottleQuantified && !m.Throttleable {
		errs = append(errs, field.Invalid(path.Child("throttleQuantified"), true, "only a throttleable metric can be throttle-quantified"))
	}
	if m.Evictable && m.Evict == nil {
		errs = append(errs, field.Required(path.Child("evict"), "an evictable metric needs an evict function"))
	}
	if m.EvictQuantified && !m.Evictable {
		errs = append(errs, field.Invalid(path.Child("evictQuantified"), true, "only an evictable metric can be evict-quantified"))
	}
	return errs
}

// Registry holds the metrics a planner knows. Build one with NewRegistry or
// DefaultRegistry; a planner copies what it needs, so registering later does
// not change a planner already built.
type Registry struct {
	// metrics are ordered by ActionPriority, highest first, then name.
	metrics []Metric
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// DefaultRegistry returns a new registry holding cpu_usage and memory_usage.
func DefaultRegistry() *Registry {
	r := NewRegistry()
	// The built-in metrics are valid by construction; a failure here is a
	// programming error caught by TestDefaultRegistry.
	_ = r.Register(CPUMetric())
	_ = r.Register(MemoryMetric())
	return r
}

// Register adds m, or returns every reason it cannot (including a name
// already registered).
func (r *Registry) Register(m Metric) error {
	path := field.NewPath("metric")
	errs := ValidateMetric(&m, path)
	if _, ok := r.Get(m.Name); ok && m.Name != "" {
		errs = append(errs, field.Duplicate(path.Child("name"), m.Name))
	}
	if len(errs) > 0 {
		return fmt.Errorf("registering metric %q: %w", m.Name, errs.ToAggregate())
	}
	i, _ := slices.BinarySearchFunc(r.metrics, m, compareMetrics)
	r.metrics = slices.Insert(r.metrics, i, m)
	return nil
}

// Get returns the metric named name.
func (r *Registry) Get(name MetricName) (Metric, bool) {
	for i := range r.metrics {
		if r.metrics[i].Name == name {
			return r.metrics[i], true
		}
	}
	return Metric{}, false
}

// Metrics returns the registered metrics, highest action priority first.
func (r *Registry) Metrics() []Metric { return slices.Clone(r.metrics) }

func compareMetrics(a, b Metric) int {
	if a.ActionPriority != b.ActionPriority {
		return int(b.ActionPriority) - int(a.ActionPriority)
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// CPUMetric is cpu_usage: sorted by CPUSorter, throttle- and
// evict-quantified (a quota bounds what a pod can use; an evicted pod's
// usage is gone).
func CPUMetric() Metric {
	return Metric{
		Name:               MetricCPU,
		ActionPriority:     CPUActionPriority,
		Sortable:           true,
		Sorter:             CPUSorter(),
		Throttleable:       true,
		ThrottleQuantified: true,
		Throttle:           ThrottleCPU,
		Restore:            RestoreCPU,
		Evictable:          true,
		EvictQuantified:    true,
		Evict:              func(c *Candidate) int64 { return c.CPUUsageMilli },
	}
}

// MemoryMetric is memory_usage: sorted by MemorySorter, evict-quantified, not
// throttleable (memory is not compressible;
// docs/design/node-qos.md#cpu-and-memory).
func MemoryMetric() Metric {
	return Metric{
		Name:            MetricMemory,
		ActionPriority:  MemoryActionPriority,
		Sortable:        true,
		Sorter:          MemorySorter(),
		Evictable:       true,
		EvictQuantified: true,
		Evict:           func(c *Candidate) int64 { return c.MemoryUsageBytes },
	}
}

// Usage returns the pod's usage of metric m in m's unit.
func (c *Candidate) Usage(m MetricName) int64 {
	switch m {
	case MetricCPU:
		return c.CPUUsageMilli
	case MetricMemory:
		return c.MemoryUsageBytes
	}
	return c.Metrics[m]
}

// CPUFloorMilli is the lowest quota throttling gives the pod: minCPUPercent
// percent of its CPU request, or of one core (1000m) without a request, and
// never below the kernel's minimum quota. minCPUPercent is a percent, not a
// ratio: 10 means a tenth.
func CPUFloorMilli(c *Candidate, minCPUPercent int32) int64 {
	base := c.CPURequestMilli
	if base <= 0 {
		base = 1000
	}
	return max(minQuotaMilli, base*int64(minCPUPercent)/100)
}

// cpuStepMilli is one restore (or fallback throttle) step: stepPercent
// percent of the pod's CPU limit, or of the node's CPU without one.
func cpuStepMilli(c *Candidate, stepPercent int32, nodeCPUMilli int64) (step, base int64) {
	base = c.CPULimitMilli
	if base <= 0 {
		base = nodeCPUMilli
	}
	return max(1, base*int64(stepPercent)/100), base
}

// quotaBindingPercent: a pod using at least this percent of its quota is
// held by it. CFS accounting shows a pinned pod at 95-100 % of its quota;
// 90 leaves room for a sample that straddles a quota change.
const quotaBindingPercent = 90

// ThrottleCPU is cpu_usage's ThrottleFunc. The new quota is usage minus the
// remaining gap, so that the pod alone closes it when it can, but never
// below CPUFloorMilli and never above the quota planned so far. With an
// unknown gap it takes one step (StepPercent of the limit) below usage.
func ThrottleCPU(c *Candidate, ctx ThrottleContext) (quotaMilli, released int64) {
	remaining := ctx.Remaining
	if remaining == GapUnknown {
		remaining, _ = cpuStepMilli(c, ctx.StepPercent, ctx.NodeCPUMilli)
	}
	remaining = max(remaining, 0)
	target := max(c.CPUUsageMilli-remaining, CPUFloorMilli(c, ctx.MinCPUPercent))
	if ctx.QuotaMilli != NoQuota && ctx.QuotaMilli < target {
		target = ctx.QuotaMilli
	}
	if target >= c.CPUUsageMilli {
		return ctx.QuotaMilli, 0
	}
	return target, c.CPUUsageMilli - target
}

// RestoreCPU is cpu_usage's RestoreFunc: it raises the quota by one step
// (StepPercent of the limit, or of the node's CPU) but by no more than the
// remaining restore gap, all in millicores; a quota that would reach the
// limit (or the node's CPU) becomes NoQuota.
//
// What it charges against the room is what the pod can use of the raise.
// A pod held by its quota (using at least quotaBindingPercent of it) can
// use all of it. A pod using well under its quota is not held by it: the
// raise changes nothing it uses now, so it is raised a step for nothing,
// and the room goes to the pods that are held down (charging the full
// raise let an idle throttled pod take the room cycle after cycle while a
// pod pinned at its quota got none).
func RestoreCPU(c *Candidate, ctx ThrottleContext) (quotaMilli, granted int64) {
	if ctx.QuotaMilli == NoQuota {
		return NoQuota, 0
	}
	inc, base := cpuStepMilli(c, ctx.StepPercent, ctx.NodeCPUMilli)
	if c.CPUUsageMilli*100 < ctx.QuotaMilli*quotaBindingPercent {
		if next := ctx.QuotaMilli + inc; next < base {
			return next, 0
		}
		return NoQuota, 0
	}
	if ctx.Remaining != GapUnknown {
		inc = min(inc, ctx.Remaining)
	}
	if inc <= 0 {
		return ctx.QuotaMilli, 0
	}
	if next := ctx.QuotaMilli + inc; next < base {
		return next, inc
	}
	return NoQuota, max(0, base-ctx.QuotaMilli)
}
