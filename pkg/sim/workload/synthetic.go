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
	"math/rand/v2"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultStart is the virtual time a synthetic workload starts at:
// midnight, so the daily shapes read as local time.
var DefaultStart = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// NodeShape is one kind of node of a synthetic cluster.
type NodeShape struct {
	// CPUMilli is the node's CPU, in millicores.
	CPUMilli int64 `json:"cpuMilli"`
	// MemoryBytes is the node's memory, in bytes.
	MemoryBytes int64 `json:"memoryBytes"`
	// Weight is how often the shape is drawn, relative to the others.
	Weight int `json:"weight"`
}

// Size is a request drawn with a weight.
type Size struct {
	// CPUMilli is the CPU request, in millicores.
	CPUMilli int64 `json:"cpuMilli"`
	// Weight is how often the size is drawn, relative to the others.
	Weight int `json:"weight"`
}

// SyntheticParams describe the built-in synthetic workload. Every field
// is documented with its unit, range and default; Defaults fills the
// unset (zero) ones and Validate lists every bad one.
type SyntheticParams struct {
	// Seed seeds every random draw; the same Seed gives the same workload.
	Seed int64 `json:"seed"`
	// Nodes is the number of nodes (≥ 1). Default 100.
	Nodes int `json:"nodes"`
	// Duration is how long the workload runs (> 0). Default 24h.
	Duration time.Duration `json:"duration"`
	// Start is the virtual time of the first step. Default DefaultStart
	// (a midnight).
	Start time.Time `json:"start"`

	// NodeShapes are the kinds of nodes. Default: 32 cores / 128 GiB
	// (weight 3) and 64 cores / 256 GiB (weight 1).
	NodeShapes []NodeShape `json:"nodeShapes,omitempty"`
	// NodePods is how many pods a node takes (≥ 1). Default 110.
	NodePods int64 `json:"nodePods"`
	// SystemCPUPercent and SystemMemoryPercent are each node's usage
	// outside pods, in percent of its capacity, [0, 50]. Default 3 and 5.
	SystemCPUPercent    float64 `json:"systemCPUPercent"`
	SystemMemoryPercent float64 `json:"systemMemoryPercent"`

	// ProdRequestPercent is how much of each node's CPU the online (Prod)
	// services request, in percent, (0, 100]. Each node draws its own
	// share uniformly within ± ProdRequestJitterPercent. Default 65.
	ProdRequestPercent float64 `json:"prodRequestPercent"`
	// ProdRequestJitterPercent, [0, 50]. Default 10.
	ProdRequestJitterPercent float64 `json:"prodRequestJitterPercent"`
	// ServiceSizes are the CPU requests of services. Default 1, 2, 4, 8
	// cores with weights 4, 4, 2, 1.
	ServiceSizes []Size `json:"serviceSizes,omitempty"`
	// ServiceMemoryPerCPU is each service's memory request per core of CPU
	// request, in bytes (> 0). Default 2 GiB.
	ServiceMemoryPerCPU int64 `json:"serviceMemoryPerCPU"`
	// ServiceMemoryUsagePercent is a service's memory usage, in percent of
	// its request, (0, 100]. Default 60.
	ServiceMemoryUsagePercent float64 `json:"serviceMemoryUsagePercent"`
	// ServiceMeanUsageMinPercent and ServiceMeanUsageMaxPercent bound each
	// service's mean CPU usage, in percent of its request; each service
	// draws its mean uniformly between them, (0, 200]. Default 20 and 45:
	// online services ask for their peak and use a third of it on average.
	ServiceMeanUsageMinPercent float64 `json:"serviceMeanUsageMinPercent"`
	ServiceMeanUsageMaxPercent float64 `json:"serviceMeanUsageMaxPercent"`
	// DiurnalAmplitudePercent is the daily swing of a service's usage
	// around its mean, in percent of the mean, [0, 100]: usage goes from
	// about mean × (1 − A) at 04:00 to mean × (1 + A) at the evening peak
	// (the larger of the two swings is exactly A).
	// Default 45.
	DiurnalAmplitudePercent float64 `json:"diurnalAmplitudePercent"`
	// PhaseJitter shifts each service's daily curve by up to ± this much,
	// so services do not peak at the same second. Default 90m.
	PhaseJitter time.Duration `json:"phaseJitter"`
	// NoisePercent is the per-sample noise of service usage, in percent,
	// [0, 100]. Default 10.
	NoisePercent float64 `json:"noisePercent"`
	// BurstProbabilityPercent is the chance, in percent [0, 100], that a
	// service's BurstWindow is a burst, in which its usage is multiplied by
	// BurstFactor (≥ 1). Default 2 %, 5m, ×1.8: traffic spikes the
	// predictor and node QoS must absorb.
	BurstProbabilityPercent float64       `json:"burstProbabilityPercent"`
	BurstWindow             time.Duration `json:"burstWindow"`
	BurstFactor             float64       `json:"burstFactor"`

	// BatchLoadPercent is the mean CPU the Batch and Mid jobs offered ask
	// for over the run, in percent of the cluster's CPU, (0, 500]:
	// arrivals are tuned so that Σ demand × duration / run length /
	// cluster CPU is this. Default 60: a batch backlog, more than any
	// policy can run, as colocated clusters have, so that utilisation
	// shows how much each policy admits.
	BatchLoadPercent float64 `json:"batchLoadPercent"`
	// JobSizes are the CPU requests of jobs. Default 1, 2, 4, 8 cores with
	// weights 2, 4, 3, 1.
	JobSizes []Size `json:"jobSizes,omitempty"`
	// JobMemoryPerCPU is a job's memory request per core of CPU request,
	// in bytes (> 0). Default 2 GiB.
	JobMemoryPerCPU int64 `json:"jobMemoryPerCPU"`
	// JobMemoryUsagePercent is a job's memory usage, in percent of its
	// request, (0, 100]. Default 60.
	JobMemoryUsagePercent float64 `json:"jobMemoryUsagePercent"`
	// JobDemandMinPercent and JobDemandMaxPercent bound the CPU a Batch job
	// uses while running, in percent of its request, (0, 100]; each job
	// draws uniformly between them. Default 70 and 100: batch work is
	// CPU-bound.
	JobDemandMinPercent float64 `json:"jobDemandMinPercent"`
	JobDemandMaxPercent float64 `json:"jobDemandMaxPercent"`
	// JobDurationMedian and JobDurationSigma make job run times log-normal
	// (median, σ of the log), clipped to [JobDurationMin, JobDurationMax].
	// Default 45m, 1.0, 2m, 6h.
	JobDurationMedian time.Duration `json:"jobDurationMedian"`
	JobDurationSigma  float64       `json:"jobDurationSigma"`
	JobDurationMin    time.Duration `json:"jobDurationMin"`
	JobDurationMax    time.Duration `json:"jobDurationMax"`
	// NightBoostPercent raises the arrival rate at 03:00 and lowers it at
	// 15:00 by this share of the mean rate, [0, 100]: batch work is
	// submitted when online traffic is low. Default 50.
	NightBoostPercent float64 `json:"nightBoostPercent"`
	// ArrivalBurstProbabilityPercent is the chance, in percent [0, 100],
	// that an ArrivalBurstWindow is a burst of submissions at
	// ArrivalBurstFactor (≥ 1) times the rate. Default 5 %, 10m, ×4.
	ArrivalBurstProbabilityPercent float64       `json:"arrivalBurstProbabilityPercent"`
	ArrivalBurstWindow             time.Duration `json:"arrivalBurstWindow"`
	ArrivalBurstFactor             float64       `json:"arrivalBurstFactor"`
	// MidJobPercent is the share of jobs, in percent [0, 100], that are
	// Mid: long-running, latency-tolerant work placed on reclaimed Prod
	// capacity. Their run time is MidDurationFactor (≥ 1) times longer and
	// their CPU use MidDemandPercent (0, 100] of their request.
	// Default 10 %, ×3, 50 %.
	MidJobPercent     float64 `json:"midJobPercent"`
	MidDurationFactor float64 `json:"midDurationFactor"`
	MidDemandPercent  float64 `json:"midDemandPercent"`
}

// Defaults returns p with every unset field set to its default.
func (p SyntheticParams) Defaults() SyntheticParams {
	set := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if p.Nodes == 0 {
		p.Nodes = 100
	}
	setD(&p.Duration, 24*time.Hour)
	if p.Start.IsZero() {
		p.Start = DefaultStart
	}
	if len(p.NodeShapes) == 0 {
		p.NodeShapes = []NodeShape{{CPUMilli: 32000, MemoryBytes: 128 << 30, Weight: 3}, {CPUMilli: 64000, MemoryBytes: 256 << 30, Weight: 1}}
	}
	if p.NodePods == 0 {
		p.NodePods = 110
	}
	set(&p.SystemCPUPercent, 3)
	set(&p.SystemMemoryPercent, 5)
	set(&p.ProdRequestPercent, 65)
	set(&p.ProdRequestJitterPercent, 10)
	if len(p.ServiceSizes) == 0 {
		p.ServiceSizes = []Size{{1000, 4}, {2000, 4}, {4000, 2}, {8000, 1}}
	}
	if p.ServiceMemoryPerCPU == 0 {
		p.ServiceMemoryPerCPU = 2 << 30
	}
	set(&p.ServiceMemoryUsagePercent, 60)
	set(&p.ServiceMeanUsageMinPercent, 20)
	set(&p.ServiceMeanUsageMaxPercent, 45)
	set(&p.DiurnalAmplitudePercent, 45)
	setD(&p.PhaseJitter, 90*time.Minute)
	set(&p.NoisePercent, 10)
	set(&p.BurstProbabilityPercent, 2)
	setD(&p.BurstWindow, 5*time.Minute)
	set(&p.BurstFactor, 1.8)
	set(&p.BatchLoadPercent, 60)
	if len(p.JobSizes) == 0 {
		p.JobSizes = []Size{{1000, 2}, {2000, 4}, {4000, 3}, {8000, 1}}
	}
	if p.JobMemoryPerCPU == 0 {
		p.JobMemoryPerCPU = 2 << 30
	}
	set(&p.JobMemoryUsagePercent, 60)
	set(&p.JobDemandMinPercent, 70)
	set(&p.JobDemandMaxPercent, 100)
	setD(&p.JobDurationMedian, 45*time.Minute)
	set(&p.JobDurationSigma, 1)
	setD(&p.JobDurationMin, 2*time.Minute)
	setD(&p.JobDurationMax, 6*time.Hour)
	set(&p.NightBoostPercent, 50)
	set(&p.ArrivalBurstProbabilityPercent, 5)
	setD(&p.ArrivalBurstWindow, 10*time.Minute)
	set(&p.ArrivalBurstFactor, 4)
	set(&p.MidJobPercent, 10)
	set(&p.MidDurationFactor, 3)
	set(&p.MidDemandPercent, 50)
	return p
}

// MaxNodes and MaxDuration bound a workload's size. A simulated node with
// its share of the jobs takes about 0.1-0.3 MB per policy for a day and
// the jobs grow with the duration, so that a value mistyped by a few
// zeros is refused at once instead of filling the machine's memory while
// the workload is built. 20,000 nodes is four times the node count
// Kubernetes is tested to (5,000 per cluster); 90 days is three times the
// longest shipped trace (Bitbrains, 30 days).
const (
	MaxNodes    = 20000
	MaxDuration = 90 * 24 * time.Hour
)

// Validate returns every field of p (defaulted) that is out of range.
func (p SyntheticParams) Validate() field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("synthetic")
	inRange := func(name string, v, lo, hi float64, loOpen bool) {
		if math.IsNaN(v) || v > hi || v < lo || loOpen && v == lo {
			bound := "["
			if loOpen {
				bound = "("
			}
			errs = append(errs, field.Invalid(root.Child(name), v, fmt.Sprintf("must be in %s%g, %g]", bound, lo, hi)))
		}
	}
	positiveD := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, field.Invalid(root.Child(name), d.String(), "must be positive"))
		}
	}
	if p.Nodes < 1 || p.Nodes > MaxNodes {
		errs = append(errs, field.Invalid(root.Child("nodes"), p.Nodes, fmt.Sprintf("must be in [1, %d]", MaxNodes)))
	}
	positiveD("duration", p.Duration)
	if p.Duration > MaxDuration {
		errs = append(errs, field.Invalid(root.Child("duration"), p.Duration.String(), fmt.Sprintf("must be at most %s (90 days)", MaxDuration)))
	}
	for i, s := range p.NodeShapes {
		if s.CPUMilli <= 0 || s.MemoryBytes <= 0 || s.Weight <= 0 {
			errs = append(errs, field.Invalid(root.Child("nodeShapes").Index(i), s, "cpuMilli, memoryBytes and weight must be positive"))
		}
		// Workload.Validate refuses such a node too, but only once the
		// jobs are drawn, and their number grows with the cluster's CPU.
		if s.CPUMilli > MaxMilliCPU {
			errs = append(errs, field.Invalid(root.Child("nodeShapes").Index(i).Child("cpuMilli"), s.CPUMilli, maxMilliCPUMsg("must be")))
		}
	}
	if p.NodePods < 1 {
		errs = append(errs, field.Invalid(root.Child("nodePods"), p.NodePods, "must be at least 1"))
	}
	inRange("systemCPUPercent", p.SystemCPUPercent, 0, 50, false)
	inRange("systemMemoryPercent", p.SystemMemoryPercent, 0, 50, false)
	inRange("prodRequestPercent", p.ProdRequestPercent, 0, 100, true)
	inRange("prodRequestJitterPercent", p.ProdRequestJitterPercent, 0, 50, false)
	errs = append(errs, validateSizes(root.Child("serviceSizes"), p.ServiceSizes)...)
	if p.ServiceMemoryPerCPU <= 0 {
		errs = append(errs, field.Invalid(root.Child("serviceMemoryPerCPU"), p.ServiceMemoryPerCPU, "must be positive"))
	}
	inRange("serviceMemoryUsagePercent", p.ServiceMemoryUsagePercent, 0, 100, true)
	inRange("serviceMeanUsageMinPercent", p.ServiceMeanUsageMinPercent, 0, 200, true)
	inRange("serviceMeanUsageMaxPercent", p.ServiceMeanUsageMaxPercent, p.ServiceMeanUsageMinPercent, 200, false)
	inRange("diurnalAmplitudePercent", p.DiurnalAmplitudePercent, 0, 100, false)
	if p.PhaseJitter < 0 {
		errs = append(errs, field.Invalid(root.Child("phaseJitter"), p.PhaseJitter.String(), "must not be negative"))
	}
	inRange("noisePercent", p.NoisePercent, 0, 100, false)
	inRange("burstProbabilityPercent", p.BurstProbabilityPercent, 0, 100, false)
	positiveD("burstWindow", p.BurstWindow)
	inRange("burstFactor", p.BurstFactor, 1, 10, false)
	inRange("batchLoadPercent", p.BatchLoadPercent, 0, 500, true)
	errs = append(errs, validateSizes(root.Child("jobSizes"), p.JobSizes)...)
	if p.JobMemoryPerCPU <= 0 {
		errs = append(errs, field.Invalid(root.Child("jobMemoryPerCPU"), p.JobMemoryPerCPU, "must be positive"))
	}
	inRange("jobMemoryUsagePercent", p.JobMemoryUsagePercent, 0, 100, true)
	inRange("jobDemandMinPercent", p.JobDemandMinPercent, 0, 100, true)
	inRange("jobDemandMaxPercent", p.JobDemandMaxPercent, p.JobDemandMinPercent, 100, false)
	positiveD("jobDurationMedian", p.JobDurationMedian)
	inRange("jobDurationSigma", p.JobDurationSigma, 0, 5, false)
	if p.JobDurationMin < time.Second {
		errs = append(errs, field.Invalid(root.Child("jobDurationMin"), p.JobDurationMin.String(), "must be at least 1s"))
	}
	if p.JobDurationMax < p.JobDurationMin {
		errs = append(errs, field.Invalid(root.Child("jobDurationMax"), p.JobDurationMax.String(), "must be at least jobDurationMin"))
	}
	inRange("nightBoostPercent", p.NightBoostPercent, 0, 100, false)
	inRange("arrivalBurstProbabilityPercent", p.ArrivalBurstProbabilityPercent, 0, 100, false)
	positiveD("arrivalBurstWindow", p.ArrivalBurstWindow)
	inRange("arrivalBurstFactor", p.ArrivalBurstFactor, 1, 100, false)
	inRange("midJobPercent", p.MidJobPercent, 0, 100, false)
	inRange("midDurationFactor", p.MidDurationFactor, 1, 100, false)
	inRange("midDemandPercent", p.MidDemandPercent, 0, 100, true)
	return errs
}

func validateSizes(p *field.Path, sizes []Size) field.ErrorList {
	var errs field.ErrorList
	for i, s := range sizes {
		if s.CPUMilli <= 0 || s.Weight <= 0 {
			errs = append(errs, field.Invalid(p.Index(i), s, "cpuMilli and weight must be positive"))
		}
	}
	return errs
}

// dailyShapes is how many daily curves synthetic services share; each is
// the same curve shifted by a different phase, so that a service's shape
// costs no memory of its own.
const dailyShapes = 16

// shapeInterval is the grid of the daily curves.
const shapeInterval = 60 // seconds

// Synthetic builds the synthetic workload p describes (defaulted and
// validated here). The same parameters always give the same workload.
func Synthetic(p SyntheticParams) (*Workload, error) {
	p = p.Defaults()
	if errs := p.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid synthetic workload: %w", errs.ToAggregate())
	}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x73796e7468))
	w := &Workload{Name: "synthetic", Start: p.Start, Duration: p.Duration}
	w.Shapes = diurnalShapes(p)
	for i := range p.Nodes {
		shape := pickShape(rng, p.NodeShapes)
		w.Nodes = append(w.Nodes, Node{
			Name:              fmt.Sprintf("node-%04d", i),
			CPUMilli:          shape.CPUMilli,
			MemoryBytes:       shape.MemoryBytes,
			Pods:              p.NodePods,
			SystemCPUMilli:    int64(float64(shape.CPUMilli) * p.SystemCPUPercent / 100),
			SystemMemoryBytes: int64(float64(shape.MemoryBytes) * p.SystemMemoryPercent / 100),
		})
	}
	addSyntheticServices(w, p, rng, p.ServiceSizes, nil)
	jobs := jobSampler{p: p, sizes: p.JobSizes}
	w.Jobs = arrivals(w, p, rng, jobs.sample)
	return w, nil
}

// diurnalShapes are the daily curves: a night trough around 04:00, a
// morning rise, a midday shoulder and the evening peak around 18:30, as
// online traffic has. Values are mean × (1 − A … 1 + A) factors with mean
// 1 over the day, shifted by dailyShapes phases within ± PhaseJitter.
func diurnalShapes(p SyntheticParams) []Shape {
	const n = 24 * 3600 / shapeInterval
	base := make([]float64, n)
	var sum float64
	for i := range n {
		h := float64(i*shapeInterval) / 3600
		// Two harmonics: the day (highest at 16:00, lowest at 04:00) and
		// a half-day term that deepens the night trough and pushes the
		// peak into the evening (about 18:30).
		v := 0.6*math.Cos(2*math.Pi*(h-16)/24) + 0.25*math.Cos(2*math.Pi*(h-20)/12)
		base[i] = v
		sum += v
	}
	mean := sum / n
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range base {
		lo, hi = min(lo, v-mean), max(hi, v-mean)
	}
	amp := p.DiurnalAmplitudePercent / 100
	span := max(hi, -lo)
	shapes := make([]Shape, dailyShapes)
	for k := range dailyShapes {
		// Phases spread evenly over [−jitter, +jitter].
		shift := 0
		if dailyShapes > 1 {
			shift = int(math.Round((float64(k)/float64(dailyShapes-1)*2 - 1) * p.PhaseJitter.Seconds() / shapeInterval))
		}
		vals := make([]float32, n)
		for i := range n {
			j := ((i-shift)%n + n) % n
			vals[i] = float32(1 + amp*(base[j]-mean)/span)
		}
		shapes[k] = Shape{IntervalSeconds: shapeInterval, Values: vals}
	}
	return shapes
}

// addSyntheticServices fills each node with services until their CPU
// requests reach the node's Prod share. sizes are drawn by weight; when
// memory is given, size i asks memory[i] instead of CPU × memory per CPU.
func addSyntheticServices(w *Workload, p SyntheticParams, rng *rand.Rand, sizes []Size, memory []int64) {
	for ni := range w.Nodes {
		n := &w.Nodes[ni]
		share := p.ProdRequestPercent + (rng.Float64()*2-1)*p.ProdRequestJitterPercent
		target := int64(float64(n.CPUMilli) * min(max(share, 0), 100) / 100)
		var cpu, mem int64
		for k := 0; cpu < target; k++ {
			i := pickSize(rng, sizes)
			s := sizes[i]
			reqMem := s.CPUMilli * p.ServiceMemoryPerCPU / 1000
			if memory != nil {
				reqMem = memory[i]
			}
			// Stop rather than overshoot the share by more than half the
			// service, so nodes average the share asked for.
			if cpu+s.CPUMilli/2 > target || cpu+s.CPUMilli > n.CPUMilli || mem+reqMem > n.MemoryBytes || int64(k+1) >= n.Pods {
				break
			}
			mean := p.ServiceMeanUsageMinPercent + rng.Float64()*(p.ServiceMeanUsageMaxPercent-p.ServiceMeanUsageMinPercent)
			w.Services = append(w.Services, Service{
				Name:               fmt.Sprintf("svc-%s-%02d", n.Name, k),
				Node:               ni,
				CPURequestMilli:    s.CPUMilli,
				MemoryRequestBytes: reqMem,
				Shape:              rng.IntN(len(w.Shapes)),
				OffsetSeconds:      0,
				CPUScaleMilli:      float32(float64(s.CPUMilli) * mean / 100),
				NoisePercent:       float32(p.NoisePercent),
				BurstProbability:   float32(p.BurstProbabilityPercent / 100),
				BurstFactor:        float32(p.BurstFactor),
				BurstWindowSeconds: int64(p.BurstWindow / time.Second),
				MemoryUsageBytes:   int64(float64(reqMem) * p.ServiceMemoryUsagePercent / 100),
				Key:                rng.Uint64(),
			})
			cpu += s.CPUMilli
			mem += reqMem
		}
	}
}

// jobSampler draws one job's size, use and run time.
type jobSampler struct {
	p     SyntheticParams
	sizes []Size
	// memory, when set, is the memory request of each size; durations,
	// when set, the run time of each size (0: draw from the log-normal).
	memory    []int64
	durations []time.Duration
}

func (s *jobSampler) sample(rng *rand.Rand) Job {
	p := s.p
	i := pickSize(rng, s.sizes)
	cpu := s.sizes[i].CPUMilli
	mem := cpu * p.JobMemoryPerCPU / 1000
	if s.memory != nil {
		mem = s.memory[i]
	}
	var d time.Duration
	if s.durations != nil && s.durations[i] > 0 {
		d = s.durations[i]
	} else {
		d = time.Duration(float64(p.JobDurationMedian) * math.Exp(p.JobDurationSigma*rng.NormFloat64()))
	}
	d = min(max(d, p.JobDurationMin), p.JobDurationMax).Round(time.Second)
	class := ClassBatch
	demand := p.JobDemandMinPercent + rng.Float64()*(p.JobDemandMaxPercent-p.JobDemandMinPercent)
	if rng.Float64()*100 < p.MidJobPercent {
		class = ClassMid
		demand = p.MidDemandPercent
		d = time.Duration(float64(d) * p.MidDurationFactor).Round(time.Second)
	}
	return Job{
		Class:              class,
		CPURequestMilli:    cpu,
		MemoryRequestBytes: mem,
		CPUDemandMilli:     max(1, int64(float64(cpu)*demand/100)),
		MemoryUsageBytes:   int64(float64(mem) * p.JobMemoryUsagePercent / 100),
		Duration:           max(d, time.Second),
	}
}

// arrivalBin is the time bin the arrival process draws counts for.
const arrivalBin = time.Minute

// arrivals draws jobs from a non-homogeneous Poisson process whose rate
// follows the night boost and the arrival bursts, scaled so that the jobs'
// demand × duration averages BatchLoadPercent of the cluster's CPU.
func arrivals(w *Workload, p SyntheticParams, rng *rand.Rand, sample func(*rand.Rand) Job) []Job {
	var clusterCPU float64
	for i := range w.Nodes {
		clusterCPU += float64(w.Nodes[i].CPUMilli)
	}
	// Mean work of a job, measured on draws from a stream of its own so
	// that it does not depend on how many jobs the run will hold.
	est := rand.New(rand.NewPCG(uint64(p.Seed), 0x6d65616e))
	var work float64
	const draws = 20000
	for range draws {
		j := sample(est)
		work += float64(j.CPUDemandMilli) * j.Duration.Seconds()
	}
	work /= draws
	perSecond := p.BatchLoadPercent / 100 * clusterCPU / work

	// The rate multipliers average 1 over a day and over bursts, so the
	// offered load is BatchLoadPercent on average.
	burstP := p.ArrivalBurstProbabilityPercent / 100
	burstNorm := 1 + burstP*(p.ArrivalBurstFactor-1)
	var jobs []Job
	for bin := time.Duration(0); bin < p.Duration; bin += arrivalBin {
		at := p.Start.Add(bin)
		h := float64(at.Hour()) + float64(at.Minute())/60
		rate := perSecond * (1 + p.NightBoostPercent/100*math.Cos(2*math.Pi*(h-3)/24))
		window := uint64(bin / p.ArrivalBurstWindow)
		if unit(hash(uint64(p.Seed)^0x617272, window)) < float32(burstP) {
			rate *= p.ArrivalBurstFactor
		}
		rate /= burstNorm
		binLen := min(arrivalBin, p.Duration-bin)
		n := poisson(rng, rate*binLen.Seconds())
		offsets := make([]time.Duration, n)
		for i := range offsets {
			offsets[i] = time.Duration(rng.Int64N(int64(binLen/time.Second))) * time.Second
		}
		slices.Sort(offsets)
		for _, off := range offsets {
			j := sample(rng)
			j.Arrival = bin + off
			j.Name = fmt.Sprintf("%s-%06d", j.Class, len(jobs))
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// poisson draws a Poisson count with the given mean: Knuth's product
// method for small means, a rounded normal for large ones (where the
// difference does not matter here).
func poisson(rng *rand.Rand, mean float64) int {
	if mean <= 0 {
		return 0
	}
	if mean > 30 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	limit := math.Exp(-mean)
	k, prod := 0, rng.Float64()
	for prod > limit {
		k++
		prod *= rng.Float64()
	}
	return k
}

func pickShape(rng *rand.Rand, shapes []NodeShape) NodeShape {
	total := 0
	for _, s := range shapes {
		total += s.Weight
	}
	r := rng.IntN(total)
	for _, s := range shapes {
		if r < s.Weight {
			return s
		}
		r -= s.Weight
	}
	return shapes[len(shapes)-1]
}

func pickSize(rng *rand.Rand, sizes []Size) int {
	total := 0
	for _, s := range sizes {
		total += s.Weight
	}
	r := rng.IntN(total)
	for i, s := range sizes {
		if r < s.Weight {
			return i
		}
		r -= s.Weight
	}
	return len(sizes) - 1
}
