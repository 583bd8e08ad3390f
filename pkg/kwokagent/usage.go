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

// Package kwokagent is the simulated agent of kwok nodes (make local-up):
// nodes without a kubelet or cgroups get a NodeMetric from the agent's own
// reporter, fed by a usage model instead of cgroups, so LoadAware and the
// tiers have usage to work with on a cluster of fake nodes.
package kwokagent

import (
	"fmt"
	"hash/fnv"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// Model turns a pod's requests into its simulated usage: requests (limits
// when there is no request) times a factor, swinging over a wave so
// percentiles and predictions have something to see. Pure: no I/O, the
// time is given.
type Model struct {
	// CPUFactor and MemoryFactor scale the request into usage, 0-4;
	// 0.6 and 0.8 by default.
	CPUFactor, MemoryFactor float64
	// Wave is the relative amplitude of the swing, 0-1 (default 0.2):
	// usage moves between (1-Wave) and (1+Wave) times the scaled request.
	Wave float64
	// Period is the swing's period (default 10m); each pod has its own
	// phase, from its UID.
	Period time.Duration
	// SystemCPU (cores) and SystemMemory (bytes) are each node's use
	// outside pods (defaults 0.1 core, 256 MiB).
	SystemCPU, SystemMemory float64
}

// Defaults of Model.
const (
	DefaultCPUFactor    = 0.6
	DefaultMemoryFactor = 0.8
	DefaultWave         = 0.2
	DefaultPeriod       = 10 * time.Minute
	DefaultSystemCPU    = 0.1
	DefaultSystemMemory = 256 << 20
)

// SetDefaults fills the zero fields of m.
func (m *Model) SetDefaults() {
	if m.CPUFactor == 0 {
		m.CPUFactor = DefaultCPUFactor
	}
	if m.MemoryFactor == 0 {
		m.MemoryFactor = DefaultMemoryFactor
	}
	if m.Wave == 0 {
		m.Wave = DefaultWave
	}
	if m.Period == 0 {
		m.Period = DefaultPeriod
	}
	if m.SystemCPU == 0 {
		m.SystemCPU = DefaultSystemCPU
	}
	if m.SystemMemory == 0 {
		m.SystemMemory = DefaultSystemMemory
	}
}

// Validate returns every out-of-range field of m, naming it and its value.
func (m *Model) Validate(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name    string
		v, l, h float64
	}{{"cpuFactor", m.CPUFactor, 0, 4}, {"memoryFactor", m.MemoryFactor, 0, 4}, {"wave", m.Wave, 0, 1},
		{"systemCPU", m.SystemCPU, 0, 1e5}, {"systemMemory", m.SystemMemory, 0, 1 << 50}} {
		if math.IsNaN(f.v) || f.v < f.l || f.v > f.h {
			errs = append(errs, field.Invalid(fld.Child(f.name), f.v, fmt.Sprintf("must be between %g and %g", f.l, f.h)))
		}
	}
	if m.Period < time.Second {
		errs = append(errs, field.Invalid(fld.Child("period"), m.Period.String(), "must be at least 1s"))
	}
	return errs
}

// swing is the wave's multiplier for the pod at now.
func (m *Model) swing(uid string, now time.Time) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	phase := 2 * math.Pi * float64(h.Sum32()%3600) / 3600
	t := float64(now.UnixNano()%int64(m.Period)) / float64(m.Period)
	return 1 + m.Wave*math.Sin(2*math.Pi*t+phase)
}

// PodUsage is the pod's simulated CPU (cores) and memory (bytes) at now;
// a pod that is not running uses nothing.
func (m *Model) PodUsage(pod *corev1.Pod, now time.Time) (cpu, memory float64) {
	if pod.Status.Phase != corev1.PodRunning {
		return 0, 0
	}
	var reqCPU, reqMem float64
	for _, c := range pod.Spec.Containers {
		q := c.Resources.Requests
		if q == nil {
			q = c.Resources.Limits
		}
		if v, ok := q[corev1.ResourceCPU]; ok {
			reqCPU += v.AsApproximateFloat64()
		} else if v, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			reqCPU += v.AsApproximateFloat64()
		}
		if v, ok := q[corev1.ResourceMemory]; ok {
			reqMem += v.AsApproximateFloat64()
		} else if v, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			reqMem += v.AsApproximateFloat64()
		}
	}
	s := m.swing(string(pod.UID), now)
	return reqCPU * m.CPUFactor * s, reqMem * m.MemoryFactor * s
}

// Sample is one metric-cache sample of a node running pods at now: each
// pod's usage, the system's, and the node's (their sum).
func (m *Model) Sample(pods []*corev1.Pod, now time.Time) []metriccache.Point {
	points := make([]metriccache.Point, 0, 2*len(pods)+4)
	nodeCPU, nodeMem := m.SystemCPU, m.SystemMemory
	for _, p := range pods {
		cpu, mem := m.PodUsage(p, now)
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		points = append(points,
			metriccache.Point{Key: metriccache.PodKey(p.UID, metriccache.ResourceCPU), Value: cpu},
			metriccache.Point{Key: metriccache.PodKey(p.UID, metriccache.ResourceMemory), Value: mem})
		nodeCPU += cpu
		nodeMem += mem
	}
	return append(points,
		metriccache.Point{Key: metriccache.SystemKey(metriccache.ResourceCPU), Value: m.SystemCPU},
		metriccache.Point{Key: metriccache.SystemKey(metriccache.ResourceMemory), Value: m.SystemMemory},
		metriccache.Point{Key: metriccache.NodeKey(metriccache.ResourceCPU), Value: nodeCPU},
		metriccache.Point{Key: metriccache.NodeKey(metriccache.ResourceMemory), Value: nodeMem})
}
