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
	DefaultContainerInterval = 30 * time.Second
	MaxContainerInterval     = 10 * time.Minute
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
	// decision of the agent needs per-container usage: it is there for
	// metrics. Range 0 or [Interval, 10m], default 30s (or Interval, if
	// longer).
	ContainerInterval *time.Duration
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
		c.ContainerInterval = ptr.To(max(DefaultContainerInterval, c.Interval))
	}
}

// Validate returns every problem of c, each naming the field under fldPath
// and its value. c is expected to be defaulted.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !filepath.IsAbs(c.ProcRoot) {
		errs = append(errs, field.Invalid(fldPath.Child("procRoot"), c.ProcRoot, "must be an absolute path"))
	}
	if c.Interval < MinInterval || c.Interval > MaxInterval {
		errs = append(errs, field.Invalid(fldPath.Child("interval"), c.Interval.String(), "must be between 100ms and 1m"))
	}
	switch ci := c.ContainerInterval; {
	case ci == nil:
		errs = append(errs, field.Required(fldPath.Child("containerInterval"), "must be set (SetDefaults sets 30s)"))
	case *ci != 0 && (*ci < c.Interval || *ci > MaxContainerInterval):
		errs = append(errs, field.Invalid(fldPath.Child("containerInterval"), ci.String(), "must be 0 (off) or between interval and 10m"))
	}
	errs = append(errs, ValidateCustomMetrics(c.CustomMetrics, fldPath.Child("customMetrics"))...)
	return errs
}
