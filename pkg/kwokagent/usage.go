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
// reporter and predictor, fed by a usage model instead of cgroups, so
// LoadAware and the tiers (Batch from usage, Mid from the predicted Prod
// peak) have something to work with on a cluster of fake nodes.
package kwokagent

import (
	"fmt"
	"hash/fnv"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// Model turns a pod's requests into its simulated usage: requests (limits
// when there is no request) times a factor, swinging over a daily wave so
// percentiles and predictions have something to see. Prod pods, which are
// sized for their peak, use a smaller share of their requests than the
// others, so the agent's predictor finds a Prod peak under the Prod
// requests and the manager sells the difference as Mid, as it does on a
// real node. Pure: no I/O, the time is given.
type Model struct {
	// CPUFactor and MemoryFactor scale the request of a pod outside the
	// Prod band into usage, 0-4; 0.6 and 0.8 by default.
	CPUFactor, MemoryFactor float64
	// ProdCPUFactor and ProdMemoryFactor scale the request of a Prod pod
	// (extension.BandOf) into usage, 0-4; 0.3 and 0.5 by default.
	ProdCPUFactor, ProdMemoryFactor float64
	// Wave is the relative amplitude of the CPU swing, 0-1 (default 0.2):
	// CPU usage moves between (1-Wave) and (1+Wave) times the scaled
	// request.
	Wave float64
	// MemoryWave is the relative amplitude of the memory swing, 0-1
	// (default 0.05): memory follows load less than CPU does.
	MemoryWave float64
	// Period is the swing's period, a compressed day (default 10m).
	Period time.Duration
	// PhaseSpread is how far apart, as a fraction of Period, the pods'
	// peaks may be, 0-1 (default 1/12, two hours of a day): the pods of a
	// node follow one day, each a little early or late, from its UID.
	PhaseSpread float64
	// SystemCPU (cores) and SystemMemory (bytes) are each node's use
	// outside pods (defaults 0.1 core, 256 MiB).
	SystemCPU, SystemMemory float64
}

// Defaults of Model.
const (
	DefaultCPUFactor        = 0.6
	DefaultMemoryFactor     = 0.8
	DefaultProdCPUFactor    = 0.3
	DefaultProdMemoryFactor = 0.5
	DefaultWave             = 0.2
	DefaultMemoryWave       = 0.05
	DefaultPeriod           = 10 * time.Minute
	DefaultPhaseSpread      = 1.0 / 12
	DefaultSystemCPU        = 0.1
	DefaultSystemMemory     = 256 << 20
)

// SetDefaults fills the zero fields of m.
func (m *Model) SetDefaults() {
	setDefault := func(f *float64, v float64) {
		if *f == 0 {
			*f = v
		}
	}
	setDefault(&m.CPUFactor, DefaultCPUFactor)
	setDefault(&m.MemoryFactor, DefaultMemoryFactor)
	setDefault(&m.ProdCPUFactor, DefaultProdCPUFactor)
	setDefault(&m.ProdMemoryFactor, DefaultProdMemoryFactor)
	setDefault(&m.Wave, DefaultWave)
	setDefault(&m.MemoryWave, DefaultMemoryWave)
	setDefault(&m.PhaseSpread, DefaultPhaseSpread)
	setDefault(&m.SystemCPU, DefaultSystemCPU)
	setDefault(&m.SystemMemory, DefaultSystemMemory)
	if m.Period == 0 {
		m.Period = DefaultPeriod
	}
}

// Validate returns every out-of-range field of m, naming it and its value.
func (m *Model) Validate(fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name    string
		v, l, h float64
	}{{"cpuFactor", m.CPUFactor, 0, 4}, {"memoryFactor", m.MemoryFactor, 0, 4},
		{"prodCPUFactor", m.ProdCPUFactor, 0, 4}, {"prodMemoryFactor", m.ProdMemoryFactor, 0, 4},
		{"wave", m.Wave, 0, 1}, {"memoryWave", m.MemoryWave, 0, 1}, {"phaseSpread", m.PhaseSpread, 0, 1},
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

// day is where the node's day stands for the pod at now: a sine of the
// period, shifted by the pod's phase (from its UID, within PhaseSpread).
func (m *Model) day(uid string, now time.Time) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	phase := m.PhaseSpread * (float64(h.Sum32()%3600)/3600 - 0.5)
	t := float64(now.UnixNano()%int64(m.Period)) / float64(m.Period)
	return math.Sin(2 * math.Pi * (t + phase))
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
	cpuFactor, memFactor := m.CPUFactor, m.MemoryFactor
	if extension.BandOf(pod) == extension.BandProd {
		cpuFactor, memFactor = m.ProdCPUFactor, m.ProdMemoryFactor
	}
	d := m.day(string(pod.UID), now)
	return reqCPU * cpuFactor * (1 + m.Wave*d), reqMem * memFactor * (1 + m.MemoryWave*d)
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
