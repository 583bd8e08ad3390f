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
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Defaults of Config.
const (
	DefaultProcRoot = "/proc"
	DefaultInterval = time.Second
	// DefaultContainerInterval and MaxContainerInterval: see
	// Config.ContainerInterval.
	DefaultContainerInterval time.Duration = 0
	MaxContainerInterval                   = 10 * time.Minute
	// DefaultMemoryStatInterval and MaxMemoryStatInterval: see
	// Config.MemoryStatInterval.
	DefaultMemoryStatInterval = 10 * time.Second
	MaxMemoryStatInterval     = time.Minute
	// MemoryStatRefreshBytes is how far a pod's charged memory may move
	// from its value at the pod's last memory.stat read before the cycle
	// reads memory.stat again, whatever Config.MemoryStatInterval says.
	MemoryStatRefreshBytes = 4 << 20
	// MinInterval and MaxInterval bound Config.Interval: below 100 ms the
	// /proc/stat jiffy (10 ms) makes node CPU too coarse; above a minute
	// throttling and eviction would react too late.
	MinInterval = 100 * time.Millisecond
	MaxInterval = time.Minute
)

// Config configures a Collector. The cgroup layout is configured and
// detected separately (cgroups.Options), so the QoS executor shares it.
type Config struct {
	// ProcRoot is the absolute path of the proc filesystem to read
	// stat and meminfo from: /proc, or the host's proc mounted elsewhere
	// (e.g. /host/proc) when the agent runs in a container without the
	// host PID namespace. Default /proc.
	ProcRoot string
	// Interval is how often the agent runs a cycle. The collector itself
	// divides by the time measured between reads, not by Interval; the
	// agent loop and the metric cache's slot count use it. Range
	// [100ms, 1m], default 1s.
	Interval time.Duration
	// ContainerInterval is how often a cycle also reads every container's
	// cgroup, not only the pod's; 0 never reads containers. Pods are read
	// every cycle. Containers multiply the files read (a pod has its
	// containers plus the sandbox; each memory.stat costs the kernel about
	// 10 µs to generate, and container files are not kept open), while no
	// decision of the agent needs per-container usage and nothing the
	// agent stores, reports or serves carries it: the pod cgroup already
	// counts its containers. Range 0 or [Interval, 10m], default 0 (off).
	ContainerInterval *time.Duration
	// MemoryStatInterval is how often each pod's memory.stat is read. A
	// pod's memory is its working set, the charged memory minus the
	// inactive file pages; the charge (memory.usage_in_bytes or
	// memory.current, ~1 µs) is read every cycle, the inactive file pages
	// come from memory.stat, which costs the kernel ~9 µs a read, and are
	// read every MemoryStatInterval, and at once when the charge moved by
	// more than MemoryStatRefreshBytes since that pod's last read. Pods
	// are spread over the interval, so each cycle reads about
	// pods × Interval / MemoryStatInterval of them. Interval reads every
	// pod's memory.stat every cycle. Range [Interval, 1m], default 10s
	// (kubelet's own working set, from its embedded cAdvisor's
	// housekeeping, is 10–15 s old), or Interval if longer.
	MemoryStatInterval time.Duration
	// CustomMetrics are further metrics read from a file of each pod's
	// cgroup every cycle (docs/design/node-qos.md#custom-metrics).
	CustomMetrics []CustomMetric
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.ProcRoot == "" {
		c.ProcRoot = DefaultProcRoot
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.ContainerInterval == nil {
		c.ContainerInterval = ptr.To(DefaultContainerInterval)
	}
	if c.MemoryStatInterval == 0 {
		c.MemoryStatInterval = max(DefaultMemoryStatInterval, c.Interval)
	}
}

// Validate returns every problem of c, each naming the field under fldPath
// and its value. c is expected to be defaulted.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !filepath.IsAbs(c.ProcRoot) {
		errs = append(errs, field.Invalid(fldPath.Child("procRoot"), c.ProcRoot, "must be an absolute path"))
	}
	// The intervals below are never shorter than Interval: a cycle reads
	// at most once. A refused Interval is one error, not one for each
	// interval measured against it: they are then held to MinInterval.
	interval := c.Interval
	if c.Interval < MinInterval || c.Interval > MaxInterval {
		errs = append(errs, field.Invalid(fldPath.Child("interval"), c.Interval.String(), "must be between 100ms and 1m"))
		interval = MinInterval
	}
	switch ci := c.ContainerInterval; {
	case ci == nil:
		errs = append(errs, field.Required(fldPath.Child("containerInterval"), "must be set (SetDefaults sets 0, off)"))
	case *ci != 0 && (*ci < interval || *ci > MaxContainerInterval):
		errs = append(errs, field.Invalid(fldPath.Child("containerInterval"), ci.String(), "must be 0 (off) or between interval and 10m"))
	}
	// The upper bound follows a long Interval, as SetDefaults does.
	if c.MemoryStatInterval < interval || c.MemoryStatInterval > max(MaxMemoryStatInterval, c.Interval) {
		errs = append(errs, field.Invalid(fldPath.Child("memoryStatInterval"), c.MemoryStatInterval.String(), "must be between interval and 1m"))
	}
	errs = append(errs, ValidateCustomMetrics(c.CustomMetrics, fldPath.Child("customMetrics"))...)
	return errs
}
