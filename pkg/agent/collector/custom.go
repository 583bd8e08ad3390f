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
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// CustomKind says how a custom metric's file is read.
type CustomKind string

// Kinds of custom metrics.
const (
	// CustomCounter is a cumulative counter: the metric is its rate, in
	// the counter's units per second (divided by Divisor).
	CustomCounter CustomKind = "counter"
	// CustomGauge is a value read as it is (divided by Divisor).
	CustomGauge CustomKind = "gauge"
)

// CustomMetric is a metric read from one file of each pod's cgroup
// (docs/design/node-qos.md#custom-metrics).
type CustomMetric struct {
	// Name is the metric's name in samples and NodeQOS rules.
	Name string
	// Controller is the cgroup v1 hierarchy the file lives in (cpuacct,
	// memory, pids, blkio...); on cgroup v2 it is ignored.
	Controller cgroups.Controller
	// File is the file's name in the pod's cgroup directory, e.g.
	// cpuacct.usage_user or memory.stat.
	File string
	// Key, when set, reads the value of this key of a flat-keyed file
	// ("key value" per line, as memory.stat); otherwise the file holds one
	// number.
	Key string
	// Kind is CustomCounter or CustomGauge.
	Kind CustomKind
	// Divisor scales the value (or rate) down, e.g. 1000000 turns the
	// nanoseconds per second of cpuacct.usage_user into millicores. At
	// least 1; 0 is 1.
	Divisor int64
}

var fileNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(fileNameChars, r) {
			return false
		}
	}
	return true
}

// ValidateCustomMetrics returns every problem of ms, each naming its field
// under fldPath and the value.
func ValidateCustomMetrics(ms []CustomMetric, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, m := range ms {
		p := fldPath.Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a custom metric needs a name"))
		case seen[m.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), m.Name))
		}
		seen[m.Name] = true
		if !validName(string(m.Controller)) {
			errs = append(errs, field.Invalid(p.Child("controller"), m.Controller, "must name a cgroup v1 hierarchy such as cpuacct, memory or pids"))
		}
		if !validName(m.File) {
			errs = append(errs, field.Invalid(p.Child("file"), m.File, "must be a file name in the pod's cgroup directory (letters, digits, '.', '_', '-'; no '/')"))
		}
		if m.Key != "" && strings.ContainsAny(m.Key, " \t\n") {
			errs = append(errs, field.Invalid(p.Child("key"), m.Key, "must not contain white space"))
		}
		switch m.Kind {
		case CustomCounter, CustomGauge:
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), m.Kind, []CustomKind{CustomCounter, CustomGauge}))
		}
		if m.Divisor < 0 {
			errs = append(errs, field.Invalid(p.Child("divisor"), m.Divisor, "must be at least 1"))
		}
	}
	return errs
}

// checkCustomHierarchies returns an error for each configured v1 hierarchy
// the node does not mount and each file the kubepods cgroup lacks, so a
// typo fails at start, not silently every cycle.
func checkCustomHierarchies(ms []CustomMetric, layout *cgroups.Layout, fldPath *field.Path) field.ErrorList {
	if layout.Version() != cgroups.V1 {
		return nil
	}
	var errs field.ErrorList
	for i, m := range ms {
		dir := layout.Path(m.Controller, "")
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("controller"), m.Controller,
				fmt.Sprintf("no cgroup hierarchy at %s", dir)))
			continue
		}
		// The kubepods cgroup has every file its pods' cgroups have: a
		// file name it lacks is a typo, not a pod not started yet.
		kp := layout.Path(m.Controller, layout.KubepodsCgroup())
		if _, err := os.Stat(kp); err == nil {
			if _, err := os.Stat(kp + "/" + m.File); err != nil {
				errs = append(errs, field.Invalid(fldPath.Index(i).Child("file"), m.File,
					fmt.Sprintf("no such file in the kubepods cgroup %s", kp)))
			}
		}
	}
	return errs
}

// readCustom reads the pod's custom metrics into pu.Custom. A file that is
// missing or unparsable leaves its metric out for this cycle.
func (c *Collector) readCustom(logger klog.Logger, ref *PodRef, st *podState, pu *PodSample, s *Sample, now time.Time) {
	if len(c.custom) == 0 {
		return
	}
	if st.custom == nil {
		st.custom = make([]counter, len(c.custom))
	}
	for i := range c.custom {
		m := &c.custom[i]
		path := c.layout.Path(m.Controller, st.cgroup) + "/" + m.File
		var v uint64
		var err error
		if m.Key != "" {
			v, err = c.reader.ReadKey(path, m.Key)
		} else {
			v, err = c.reader.ReadUint(path)
		}
		if err != nil {
			if !cgroups.IsGone(err) {
				s.Stats.ReadErrors++
			}
			logger.V(5).Info("Cannot read custom metric", "pod", klog.KRef(ref.Namespace, ref.Name), "metric", m.Name, "err", err)
			continue
		}
		div := float64(max(1, m.Divisor))
		var value float64
		if m.Kind == CustomCounter {
			rate, ok, reset := st.custom[i].rate(v, now, 1)
			if reset {
				s.Stats.CounterResets++
			}
			if !ok {
				continue
			}
			value = rate / div
		} else {
			value = float64(v) / div
		}
		if pu.Custom == nil {
			pu.Custom = make(map[string]int64, len(c.custom))
		}
		pu.Custom[m.Name] = int64(min(math.Round(value), math.MaxInt64))
	}
}

// customNode is Σ pods of each custom metric, present only when every
// collected pod has it (a pod's first counter read has no rate, and
// leaving it out would under-count the node).
func customNode(s *Sample, ms []CustomMetric) map[string]int64 {
	if len(ms) == 0 {
		return nil
	}
	out := make(map[string]int64, len(ms))
	for _, m := range ms {
		var sum int64
		complete := true
		for i := range s.Pods {
			v, ok := s.Pods[i].Custom[m.Name]
			if !ok {
				complete = false
				break
			}
			sum += v
		}
		if complete {
			out[m.Name] = sum
		}
	}
	return out
}
