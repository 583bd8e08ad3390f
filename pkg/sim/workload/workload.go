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

package workload

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Class is what kind of work a pod does, which decides how each policy
// treats it: Prod services are online and never throttled; Mid jobs run on
// the capacity Prod pods reserved but do not use; Batch jobs run on what is
// really idle and are the pods node QoS throttles and evicts.
type Class string

// Classes of work.
const (
	ClassProd  Class = "prod"
	ClassMid   Class = "mid"
	ClassBatch Class = "batch"
)

// Workload is everything a simulation replays. It is built once (from the
// synthetic generator or a trace) and read by every policy of a run, so
// each policy sees the same nodes, services and job arrivals.
type Workload struct {
	// Name says where the workload came from, e.g. "synthetic" or the
	// trace folder.
	Name string
	// Start is the virtual wall-clock time of the first step; shapes are
	// indexed by seconds since Start.
	Start time.Time
	// Duration is how long the workload runs.
	Duration time.Duration
	// Nodes are the cluster's nodes.
	Nodes []Node
	// Services are long-running Prod pods, placed on their node before the
	// run starts (the cluster's existing online layout, the same for every
	// policy).
	Services []Service
	// Jobs are the Mid and Batch jobs, sorted by arrival.
	Jobs []Job
	// Shapes are the usage shapes services refer to.
	Shapes []Shape
}

// Node is one node of the cluster.
type Node struct {
	// Name is the node's name.
	Name string
	// CPUMilli is the node's CPU capacity (and allocatable), in millicores.
	CPUMilli int64
	// MemoryBytes is the node's memory capacity (and allocatable), in bytes.
	MemoryBytes int64
	// Pods is how many pods the node takes.
	Pods int64
	// SystemCPUMilli and SystemMemoryBytes are the node's usage outside
	// pods (kubelet, runtime, daemons), constant.
	SystemCPUMilli    int64
	SystemMemoryBytes int64
}

// Shape is a usage time series on a regular grid, repeated when a run is
// longer than the series.
type Shape struct {
	// IntervalSeconds is the grid, in seconds (> 0).
	IntervalSeconds int64
	// Values are the samples, in the unit the users of the shape agree on
	// (a fraction of a request or of a capacity).
	Values []float32
}

// At returns the value at sec seconds (≥ 0) into the shape, wrapping.
func (s *Shape) At(sec int64) float32 {
	return s.Values[(sec/s.IntervalSeconds)%int64(len(s.Values))]
}

// Service is one long-running Prod pod.
type Service struct {
	// Name is the pod's name (namespace "online").
	Name string
	// Node is the index in Workload.Nodes of the node the pod runs on.
	Node int
	// CPURequestMilli and MemoryRequestBytes are the pod's requests.
	CPURequestMilli    int64
	MemoryRequestBytes int64
	// CPULimitMilli is the pod's CPU limit; 0 is none.
	CPULimitMilli int64
	// Shape is the index in Workload.Shapes of the pod's usage shape;
	// OffsetSeconds shifts the pod along it, so that pods that share a
	// shape do not peak in lockstep.
	Shape         int
	OffsetSeconds int64
	// CPUScaleMilli turns a shape value into millicores: demand =
	// CPUScaleMilli × shape value × noise × burst.
	CPUScaleMilli float32
	// NoisePercent is the amplitude of the per-sample noise, in percent of
	// the demand (uniform in ±NoisePercent).
	NoisePercent float32
	// BurstProbability is the chance that a BurstWindowSeconds window of
	// this pod is a burst, in which its demand is multiplied by
	// BurstFactor.
	BurstProbability   float32
	BurstFactor        float32
	BurstWindowSeconds int64
	// MemoryUsageBytes is the pod's memory usage (constant).
	MemoryUsageBytes int64
	// Key seeds the pod's noise and bursts.
	Key uint64
}

// CPUDemandMilli is what the service would use at sec seconds into the
// run with nothing in its way, in millicores, before any limit.
func (s *Service) CPUDemandMilli(w *Workload, sec int64) int64 {
	d := s.Demand(w)
	return d.CPUMilli(sec)
}

// Demand is what Service.CPUDemandMilli reads of a service, packed for a
// simulator that computes every service's demand every step (a Service's
// fields straddle two cache lines as often as not), and what CPUMilli
// worked out last: the shape's value changes once a shape interval and a
// burst once a burst window, not every second. Workload.Demands makes
// them; a Demand is not safe for concurrent use.
type Demand struct {
	shape       *Shape
	offset      int64
	key         uint64
	burstWindow int64
	scale       float32
	noise       float32
	burstP      float32
	burstFactor float32
	// base is scale × the shape's value for the seconds in [slotFrom,
	// slotTo); burst says whether the seconds in [windowFrom, windowTo)
	// are in a burst. Empty ranges at first.
	base                 float32
	burst                bool
	slotFrom, slotTo     int64
	windowFrom, windowTo int64
}

// Demand is the service's Demand, pointing into w.Shapes.
func (s *Service) Demand(w *Workload) Demand {
	return Demand{
		shape: &w.Shapes[s.Shape], offset: s.OffsetSeconds, key: s.Key, burstWindow: s.BurstWindowSeconds,
		scale: s.CPUScaleMilli, noise: s.NoisePercent, burstP: s.BurstProbability, burstFactor: s.BurstFactor,
	}
}

// Demands are the services' Demands, in the order of w.Services. They
// point into w.Shapes.
func (w *Workload) Demands() []Demand {
	ds := make([]Demand, len(w.Services))
	for i := range w.Services {
		ds[i] = w.Services[i].Demand(w)
	}
	return ds
}

// CPUMilli is the service's CPUDemandMilli at sec: the same figure, from
// the shape value and burst it remembers while sec stays in their interval
// and window.
func (d *Demand) CPUMilli(sec int64) int64 {
	d.hold(sec)
	return demandAt(d.base, d.noiseFraction(), d.burstMultiplier(), d.key, sec)
}

// demandAt is a demand in millicores: base × the noise of key at sec,
// noiseFraction wide, × burst, rounded towards zero and not below 0. A
// factor of exactly 1 (no noise, no burst) leaves base as it is, so one
// formula serves every service.
func demandAt(base, noiseFraction, burst float32, key uint64, sec int64) int64 {
	v := base
	v *= 1 + noiseFraction*signedUnit(hash(key, uint64(sec)))
	v *= burst
	if v < 0 {
		return 0
	}
	return int64(v)
}

// noiseFraction is NoisePercent/100, 0 without noise.
func (d *Demand) noiseFraction() float32 {
	if d.noise > 0 {
		return d.noise / 100
	}
	return 0
}

// burstMultiplier is BurstFactor while hold's window is a burst, else 1.
func (d *Demand) burstMultiplier() float32 {
	if d.burstP > 0 && d.burstWindow > 0 && d.burst {
		return d.burstFactor
	}
	return 1
}

// hold makes base and burst those of sec, working them out again only
// when sec has left the interval or window they were worked out for.
func (d *Demand) hold(sec int64) {
	if sec < d.slotFrom || sec >= d.slotTo {
		x := sec + d.offset
		d.base = d.scale * d.shape.At(x)
		d.slotFrom, d.slotTo = sec, sec+1
		if x >= 0 {
			start := x - x%d.shape.IntervalSeconds
			d.slotFrom, d.slotTo = start-d.offset, start+d.shape.IntervalSeconds-d.offset
		}
	}
	if d.burstP > 0 && d.burstWindow > 0 {
		if sec < d.windowFrom || sec >= d.windowTo {
			x := sec + d.offset
			d.burst = unit(hash(d.key^0x6275727374, uint64(x/d.burstWindow))) < d.burstP
			d.windowFrom, d.windowTo = sec, sec+1
			if x >= 0 {
				start := x - x%d.burstWindow
				d.windowFrom, d.windowTo = start-d.offset, start+d.burstWindow-d.offset
			}
		}
	}
}

// DemandSet computes the CPU demand of many services, all at the same
// second: a simulator's step. It gives each service's CPUMilli figure,
// from arrays that a loop over the services reads one after another and
// without a call, where a Demand a service would be read field by field.
// A DemandSet is not safe for concurrent use.
type DemandSet struct {
	ds []Demand
	// Per service, demandAt's inputs: its noise key, noiseFraction, the
	// base of Demand.hold and burstMultiplier; and the seconds [from, to)
	// for which base and the burst hold.
	key      []uint64
	noise    []float32
	base     []float32
	burst    []float32
	from, to []int64
}

// NewDemandSet is the DemandSet of ds, in their order.
func NewDemandSet(ds []Demand) *DemandSet {
	s := &DemandSet{}
	for i := range ds {
		s.Add(ds[i])
	}
	return s
}

// Add appends d to the set and returns its index in At's figures.
func (s *DemandSet) Add(d Demand) int {
	s.ds = append(s.ds, d)
	s.key = append(s.key, d.key)
	s.noise = append(s.noise, d.noiseFraction())
	s.base = append(s.base, 0)
	s.burst = append(s.burst, 1)
	// An empty range: the first At works both out.
	s.from, s.to = append(s.from, 0), append(s.to, 0)
	return len(s.ds) - 1
}

// Len is the number of services in the set.
func (s *DemandSet) Len() int { return len(s.ds) }

// At sets out[i] to service i's CPUMilli(sec); out holds Len figures.
func (s *DemandSet) At(sec int64, out []int64) {
	out = out[:len(s.ds)]
	key, noise, base, burst := s.key[:len(out)], s.noise[:len(out)], s.base[:len(out)], s.burst[:len(out)]
	from, to := s.from[:len(out)], s.to[:len(out)]
	for i := range out {
		if sec < from[i] || sec >= to[i] {
			s.hold(i, sec)
		}
		out[i] = demandAt(base[i], noise[i], burst[i], key[i], sec)
	}
}

// hold brings service i's base and burst to sec (Demand.hold).
func (s *DemandSet) hold(i int, sec int64) {
	d := &s.ds[i]
	d.hold(sec)
	s.base[i], s.burst[i] = d.base, d.burstMultiplier()
	s.from[i], s.to[i] = d.slotFrom, d.slotTo
	if d.burstP > 0 && d.burstWindow > 0 {
		s.from[i], s.to[i] = max(d.slotFrom, d.windowFrom), min(d.slotTo, d.windowTo)
	}
}

// Job is one Mid or Batch job: a single pod that needs Work of CPU to
// finish.
type Job struct {
	// Name is the job's name; its pods are named after it.
	Name string
	// Class is ClassMid or ClassBatch.
	Class Class
	// Arrival is when the job is submitted, after Workload.Start.
	Arrival time.Duration
	// CPURequestMilli and MemoryRequestBytes are the pod's requests (and
	// limits: jobs ask for what they are held to).
	CPURequestMilli    int64
	MemoryRequestBytes int64
	// CPUDemandMilli is the CPU the pod uses while it runs unhindered.
	CPUDemandMilli int64
	// MemoryUsageBytes is the pod's memory usage while it runs.
	MemoryUsageBytes int64
	// Duration is how long the job runs when it gets CPUDemandMilli all
	// the time; the work it must do is CPUDemandMilli × Duration.
	Duration time.Duration
}

// WorkMilliSeconds is the CPU the job needs, in millicore-seconds.
func (j *Job) WorkMilliSeconds() int64 {
	return j.CPUDemandMilli * int64(j.Duration/time.Second)
}

// Validate returns every problem of the workload, naming the field and
// value.
func (w *Workload) Validate() field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("workload")
	if w.Duration <= 0 {
		errs = append(errs, field.Invalid(root.Child("duration"), w.Duration.String(), "must be positive"))
	}
	if len(w.Nodes) == 0 {
		errs = append(errs, field.Required(root.Child("nodes"), "at least one node"))
	}
	names := map[string]bool{}
	for i := range w.Nodes {
		n := &w.Nodes[i]
		p := root.Child("nodes").Index(i)
		if n.Name == "" || names[n.Name] {
			errs = append(errs, field.Invalid(p.Child("name"), n.Name, "must be set and unique"))
		}
		names[n.Name] = true
		if n.CPUMilli <= 0 || n.CPUMilli > MaxMilliCPU {
			errs = append(errs, field.Invalid(p.Child("cpuMilli"), n.CPUMilli, maxMilliCPUMsg("must be positive and")))
		}
		if n.MemoryBytes <= 0 {
			errs = append(errs, field.Invalid(p.Child("memoryBytes"), n.MemoryBytes, "must be positive"))
		}
		if n.Pods <= 0 {
			errs = append(errs, field.Invalid(p.Child("pods"), n.Pods, "must be positive"))
		}
		if n.SystemCPUMilli < 0 || n.SystemCPUMilli >= n.CPUMilli {
			errs = append(errs, field.Invalid(p.Child("systemCPUMilli"), n.SystemCPUMilli, "must be in [0, cpuMilli)"))
		}
	}
	for i := range w.Shapes {
		s := &w.Shapes[i]
		p := root.Child("shapes").Index(i)
		if s.IntervalSeconds <= 0 {
			errs = append(errs, field.Invalid(p.Child("intervalSeconds"), s.IntervalSeconds, "must be positive"))
		}
		if len(s.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "at least one value"))
		}
		for j, v := range s.Values {
			if v < 0 || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				errs = append(errs, field.Invalid(p.Child("values").Index(j), v, "must be a finite number ≥ 0"))
				break
			}
		}
	}
	names = map[string]bool{}
	for i := range w.Services {
		s := &w.Services[i]
		p := root.Child("services").Index(i)
		if s.Name == "" || names[s.Name] {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, "must be set and unique"))
		}
		names[s.Name] = true
		if s.Node < 0 || s.Node >= len(w.Nodes) {
			errs = append(errs, field.Invalid(p.Child("node"), s.Node, fmt.Sprintf("must index a node (0-%d)", len(w.Nodes)-1)))
		}
		if s.Shape < 0 || s.Shape >= len(w.Shapes) {
			errs = append(errs, field.Invalid(p.Child("shape"), s.Shape, fmt.Sprintf("must index a shape (0-%d)", len(w.Shapes)-1)))
		}
		if s.CPURequestMilli < 0 || s.MemoryRequestBytes < 0 || s.MemoryUsageBytes < 0 || s.CPUScaleMilli < 0 {
			errs = append(errs, field.Invalid(p, s.Name, "requests, usage and scale must not be negative"))
		}
		if s.OffsetSeconds < 0 {
			errs = append(errs, field.Invalid(p.Child("offsetSeconds"), s.OffsetSeconds, "must not be negative"))
		}
		if s.CPULimitMilli > MaxMilliCPU {
			errs = append(errs, field.Invalid(p.Child("cpuLimitMilli"), s.CPULimitMilli, maxMilliCPUMsg("must be")))
		}
		if s.Shape >= 0 && s.Shape < len(w.Shapes) {
			if peak := s.peakDemandMilli(&w.Shapes[s.Shape]); !(peak*(1+1e-6) < MaxMilliCPU+1) {
				errs = append(errs, field.Invalid(p.Child("cpuScaleMilli"), s.CPUScaleMilli,
					fmt.Sprintf("the peak CPU demand it gives (× the shape's largest value, the noise and the burst factor: %g millicores) %s", peak, maxMilliCPUMsg("must be"))))
			}
		}
	}
	names = map[string]bool{}
	var last time.Duration
	for i := range w.Jobs {
		j := &w.Jobs[i]
		p := root.Child("jobs").Index(i)
		if j.Name == "" || names[j.Name] {
			errs = append(errs, field.Invalid(p.Child("name"), j.Name, "must be set and unique"))
		}
		names[j.Name] = true
		if j.Class != ClassMid && j.Class != ClassBatch {
			errs = append(errs, field.NotSupported(p.Child("class"), j.Class, []Class{ClassMid, ClassBatch}))
		}
		if j.Arrival < last {
			errs = append(errs, field.Invalid(p.Child("arrival"), j.Arrival.String(), "jobs must be sorted by arrival"))
		}
		last = j.Arrival
		if j.CPURequestMilli <= 0 || j.CPURequestMilli > MaxMilliCPU {
			errs = append(errs, field.Invalid(p.Child("cpuRequestMilli"), j.CPURequestMilli, maxMilliCPUMsg("must be positive and")))
		}
		if j.MemoryRequestBytes <= 0 {
			errs = append(errs, field.Invalid(p.Child("memoryRequestBytes"), j.MemoryRequestBytes, "must be positive"))
		}
		if j.CPUDemandMilli <= 0 || j.CPUDemandMilli > j.CPURequestMilli {
			errs = append(errs, field.Invalid(p.Child("cpuDemandMilli"), j.CPUDemandMilli, "must be in (0, cpuRequestMilli]"))
		}
		if j.MemoryUsageBytes < 0 || j.MemoryUsageBytes > j.MemoryRequestBytes {
			errs = append(errs, field.Invalid(p.Child("memoryUsageBytes"), j.MemoryUsageBytes, "must be in [0, memoryRequestBytes]"))
		}
		if j.Duration < time.Second {
			errs = append(errs, field.Invalid(p.Child("duration"), j.Duration.String(), "must be at least 1s"))
		}
	}
	return errs
}

// MaxMilliCPU is the most millicores Validate accepts for a node's CPU, a
// job's CPU request (which bounds its demand and limit), a service's CPU
// limit and its peak CPU demand: the simulator keeps a pod's per-step
// CPU figures in 32 bits, so that its step state fits one cache line.
// That is 2 147 483 cores.
const MaxMilliCPU = math.MaxInt32

func maxMilliCPUMsg(prefix string) string {
	return fmt.Sprintf("%s at most %d millicores (the simulator keeps CPU figures in 32 bits)", prefix, MaxMilliCPU)
}

// peakDemandMilli bounds what CPUDemandMilli can return with shape: the
// shape's largest value times the scale, the largest noise and the burst.
// NaN or +Inf when the service's figures are.
func (s *Service) peakDemandMilli(shape *Shape) float64 {
	var top float64
	for _, v := range shape.Values {
		top = max(top, float64(v))
	}
	peak := float64(s.CPUScaleMilli) * top
	if s.NoisePercent > 0 {
		peak *= 1 + float64(s.NoisePercent)/100
	}
	if s.BurstProbability > 0 && s.BurstWindowSeconds > 0 {
		peak *= max(1, float64(s.BurstFactor))
	}
	return peak
}

// hash mixes a key and a value into 64 well-spread bits (splitmix64's
// finaliser): noise and bursts are a pure function of the pod and the
// time, so a run is deterministic whatever order it computes them in.
func hash(key, v uint64) uint64 {
	z := key ^ (v * 0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps a hash to [0, 1).
func unit(h uint64) float32 { return float32(h>>40) / float32(1<<24) }

// signedUnit maps a hash to [-1, 1).
func signedUnit(h uint64) float32 { return 2*unit(h) - 1 }
