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
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/waterline-dev/waterline/pkg/trace"
)

// Kinds of workload Load knows.
const (
	KindSynthetic = "synthetic"
	KindAlibaba   = "alibaba"
	KindOpenB     = "openb"
	KindBitbrains = "bitbrains"
)

// Kinds lists the workload kinds, for flags and errors.
var Kinds = []string{KindSynthetic, KindAlibaba, KindOpenB, KindBitbrains}

// traceInterval is the grid trace usage is put on: the Alibaba sample
// reports every 10-100 s, Bitbrains every 300 s.
const traceInterval = 60 // seconds

// Load builds the workload spec names: a kind (synthetic, alibaba, openb,
// bitbrains), whose trace is looked up in shared/traces from searchFrom
// upwards; or a path to a trace (a folder or file of one of the three
// traces, recognised by its files) or to a JSON file of SyntheticParams.
// p gives the synthetic parameters every kind starts from (nodes,
// duration, seed, job mix, ...); traces replace the part they know.
// Trace rows that do not parse are errors naming file and line.
func Load(spec, searchFrom string, p SyntheticParams) (*Workload, error) {
	switch spec {
	case KindSynthetic:
		return Synthetic(p)
	case KindAlibaba, KindOpenB, KindBitbrains:
		folder := map[string]string{KindAlibaba: trace.AlibabaV2018Folder, KindOpenB: trace.OpenBFolder, KindBitbrains: trace.BitbrainsFolder}[spec]
		dir, err := trace.FindShared(searchFrom, folder)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", spec, err)
		}
		if spec == KindAlibaba {
			dir = filepath.Join(dir, trace.MachineUsageFile)
		}
		return loadKind(spec, dir, p)
	}
	kind, path, err := Detect(spec)
	if err != nil {
		return nil, err
	}
	if kind == KindSynthetic {
		return loadParams(path, p)
	}
	return loadKind(kind, path, p)
}

func loadKind(kind, path string, p SyntheticParams) (*Workload, error) {
	switch kind {
	case KindAlibaba:
		return Alibaba(path, p)
	case KindOpenB:
		return OpenB(path, p)
	case KindBitbrains:
		return Bitbrains(path, p)
	}
	return Synthetic(p)
}

// Detect says which kind of workload path holds: a folder or file with
// machine_usage.csv (alibaba), openb_pod_list*.csv (openb), *.csv.gz VM
// files (bitbrains), or a .json file of SyntheticParams (synthetic). It
// returns the path to load: the folder or file a loader takes (a named
// openb pod list is the one OpenB reads).
func Detect(path string) (kind, target string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("workload %q is not one of %s, nor a readable path: %w", path, strings.Join(Kinds, ", "), err)
	}
	if !fi.IsDir() {
		base := filepath.Base(path)
		switch {
		case strings.HasSuffix(base, ".json"):
			return KindSynthetic, path, nil
		case base == trace.MachineUsageFile:
			return KindAlibaba, path, nil
		case strings.HasPrefix(base, "openb_pod_list") && strings.HasSuffix(base, ".csv"):
			return KindOpenB, path, nil
		}
		return "", "", fmt.Errorf("workload file %s: not machine_usage.csv, openb_pod_list*.csv or a .json file of synthetic parameters", path)
	}
	if _, err := os.Stat(filepath.Join(path, trace.MachineUsageFile)); err == nil {
		return KindAlibaba, filepath.Join(path, trace.MachineUsageFile), nil
	}
	if m, _ := filepath.Glob(filepath.Join(path, "openb_pod_list*.csv")); len(m) > 0 {
		return KindOpenB, path, nil
	}
	if files, err := trace.VMFiles(path); err == nil && len(files) > 0 {
		return KindBitbrains, path, nil
	}
	return "", "", fmt.Errorf("workload folder %s holds no %s, openb_pod_list*.csv or Bitbrains *.csv.gz files", path, trace.MachineUsageFile)
}

// loadParams reads SyntheticParams from a JSON file over p.
func loadParams(path string, p SyntheticParams) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading workload parameters: %w", err)
	}
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("reading workload parameters %s: %w", path, err)
	}
	w, err := Synthetic(p)
	if err != nil {
		return nil, fmt.Errorf("workload parameters %s: %w", path, err)
	}
	w.Name = "synthetic (" + filepath.Base(path) + ")"
	return w, nil
}

// Alibaba builds a synthetic workload whose online services follow the
// Alibaba v2018 machines: node i takes machine i mod M (M machines in the
// trace, 16 in the shared sample), shifted by 3 h × ⌊i / M⌋ so that nodes
// sharing a machine do not move in lockstep, and the machine's CPU use
// (its utilisation in percent of the machine, as the trace gives it) is
// the Prod load of the node, split over the node's services in proportion
// to their requests. The requests, memory and jobs stay synthetic: the
// trace has no per-container rows. path is machine_usage.csv.
func Alibaba(path string, p SyntheticParams) (*Workload, error) {
	machines, err := trace.LoadMachineSeries(path)
	if err != nil {
		return nil, fmt.Errorf("workload alibaba: %w", err)
	}
	var shapes []Shape
	for _, m := range machines {
		s, err := gridShape(m.CPUPercent, 1.0/100)
		if err != nil {
			return nil, fmt.Errorf("workload alibaba: machine %s: %w", m.MachineID, err)
		}
		if s != nil {
			shapes = append(shapes, *s)
		}
	}
	if len(shapes) == 0 {
		return nil, fmt.Errorf("workload alibaba: %s has no machine with CPU usage", path)
	}
	w, err := Synthetic(p)
	if err != nil {
		return nil, err
	}
	w.Name = "alibaba-v2018 (" + filepath.Base(filepath.Dir(path)) + ")"
	w.Shapes = shapes
	var perNode = make([]int64, len(w.Nodes))
	for i := range w.Services {
		perNode[w.Services[i].Node] += w.Services[i].CPURequestMilli
	}
	for i := range w.Services {
		s := &w.Services[i]
		n := &w.Nodes[s.Node]
		s.Shape = s.Node % len(shapes)
		s.OffsetSeconds = int64(s.Node/len(shapes)) * 3 * 3600
		s.CPUScaleMilli = float32(float64(n.CPUMilli) * float64(s.CPURequestMilli) / float64(perNode[s.Node]))
		s.NoisePercent, s.BurstProbability = 0, 0
	}
	return w, nil
}

// OpenB builds a workload from the Alibaba GPU v2023 "openb" lists at
// path, a folder or one of its pod lists: nodes take the CPU and memory of
// the folder's openb_node_list_all_node.csv in order (cycling); online
// services draw their requests from the LS and Guaranteed pods of the pod
// list (openb_pod_list_default.csv for a folder), Batch jobs from the BE
// pods (request, and run time = deletion − creation), Mid jobs from the
// Burstable pods. Usage shapes, arrivals and the load are synthetic: the
// lists hold requests only. GPUs are ignored.
func OpenB(path string, p SyntheticParams) (*Workload, error) {
	dir, podList := path, filepath.Join(path, "openb_pod_list_default.csv")
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		dir, podList = filepath.Dir(path), path
	}
	nodes, err := trace.LoadOpenBNodes(filepath.Join(dir, "openb_node_list_all_node.csv"))
	if err != nil {
		return nil, fmt.Errorf("workload openb: %w", err)
	}
	pods, err := trace.LoadOpenBPods(podList)
	if err != nil {
		return nil, fmt.Errorf("workload openb: %w", err)
	}
	p = p.Defaults()
	if errs := p.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid synthetic workload: %w", errs.ToAggregate())
	}
	var svc, batch, mid mix
	for _, pod := range pods {
		if pod.CPUMilli <= 0 || pod.MemoryMiB <= 0 {
			continue
		}
		if pod.MemoryMiB > maxMemoryMiB {
			return nil, fmt.Errorf("workload openb: pod %s: memory_mib %d is more than %d (8 EiB, the most bytes an int64 holds)", pod.Name, pod.MemoryMiB, maxMemoryMiB)
		}
		mem := pod.MemoryMiB << 20
		switch pod.QoS {
		case "LS", "Guaranteed":
			svc.add(pod.CPUMilli, mem, 0)
		case "BE":
			batch.add(pod.CPUMilli, mem, time.Duration(pod.DeletionTime-pod.CreationTime)*time.Second)
		case "Burstable":
			mid.add(pod.CPUMilli, mem, time.Duration(pod.DeletionTime-pod.CreationTime)*time.Second)
		}
	}
	if len(nodes) == 0 || len(svc.sizes) == 0 || len(batch.sizes) == 0 {
		return nil, errors.New("workload openb: the lists need nodes, LS pods and BE pods with CPU and memory requests")
	}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x6f70656e62))
	name := filepath.Base(dir)
	if filepath.Base(podList) != "openb_pod_list_default.csv" {
		name += "/" + filepath.Base(podList)
	}
	w := &Workload{Name: "openb (" + name + ")", Start: p.Start, Duration: p.Duration}
	w.Shapes = diurnalShapes(p)
	for i := range p.Nodes {
		on := nodes[i%len(nodes)]
		if on.CPUMilli <= 0 || on.MemoryMiB <= 0 {
			return nil, fmt.Errorf("workload openb: node %s has no CPU or memory", on.Name)
		}
		// Refused here, before the jobs are drawn: their number grows
		// with the cluster's CPU, and a node of a few million cores
		// would fill the machine's memory before Validate refuses it.
		if on.CPUMilli > MaxMilliCPU {
			return nil, fmt.Errorf("workload openb: node %s: cpu_milli %d %s", on.Name, on.CPUMilli, maxMilliCPUMsg("must be"))
		}
		if on.MemoryMiB > maxMemoryMiB {
			return nil, fmt.Errorf("workload openb: node %s: memory_mib %d is more than %d (8 EiB, the most bytes an int64 holds)", on.Name, on.MemoryMiB, maxMemoryMiB)
		}
		mem := on.MemoryMiB << 20
		w.Nodes = append(w.Nodes, Node{
			Name:              fmt.Sprintf("%s-%d", on.Name, i/len(nodes)),
			CPUMilli:          on.CPUMilli,
			MemoryBytes:       mem,
			Pods:              p.NodePods,
			SystemCPUMilli:    int64(float64(on.CPUMilli) * p.SystemCPUPercent / 100),
			SystemMemoryBytes: int64(float64(mem) * p.SystemMemoryPercent / 100),
		})
	}
	addSyntheticServices(w, p, rng, svc.sizes, svc.memory)
	batchSampler := jobSampler{p: p, sizes: batch.sizes, memory: batch.memory, durations: batch.durations}
	midSampler := jobSampler{p: p, sizes: mid.sizes, memory: mid.memory, durations: mid.durations}
	midP := p
	midP.MidJobPercent = 100
	midSampler.p = midP
	batchP := p
	batchP.MidJobPercent = 0
	batchSampler.p = batchP
	w.Jobs = arrivals(w, p, rng, func(r *rand.Rand) Job {
		if len(mid.sizes) > 0 && r.Float64()*100 < p.MidJobPercent {
			return midSampler.sample(r)
		}
		return batchSampler.sample(r)
	})
	return w, nil
}

// maxMemoryMiB is the most MiB whose bytes fit an int64: more would wrap
// to a small or negative number of bytes.
const maxMemoryMiB = math.MaxInt64 >> 20

// mix is a bag of requests drawn with equal weight.
type mix struct {
	sizes     []Size
	memory    []int64
	durations []time.Duration
}

func (m *mix) add(cpu, mem int64, d time.Duration) {
	m.sizes = append(m.sizes, Size{CPUMilli: cpu, Weight: 1})
	m.memory = append(m.memory, mem)
	m.durations = append(m.durations, max(d, 0))
}

// Bitbrains builds a synthetic workload whose online services follow the
// Bitbrains VMs of dir: service k takes VM k mod V's CPU usage ÷ its
// provisioned CPU as its usage in proportion to its request (capped at
// twice the request: a few VMs run above what they were given), shifted
// by 6 h × ⌊k / V⌋. Everything else stays synthetic.
func Bitbrains(dir string, p SyntheticParams) (*Workload, error) {
	vms, err := trace.LoadVMDir(dir)
	if err != nil {
		return nil, fmt.Errorf("workload bitbrains: %w", err)
	}
	var shapes []Shape
	for _, vm := range vms {
		if vm.CPUCapacityMHz <= 0 {
			continue
		}
		s, err := gridShape(vm.CPUUsageMHz, 1/vm.CPUCapacityMHz)
		if err != nil {
			return nil, fmt.Errorf("workload bitbrains: VM %s: %w", vm.ID, err)
		}
		if s == nil {
			continue
		}
		for i, v := range s.Values {
			s.Values[i] = min(v, 2)
		}
		shapes = append(shapes, *s)
	}
	if len(shapes) == 0 {
		return nil, fmt.Errorf("workload bitbrains: %s has no VM with CPU usage", dir)
	}
	w, err := Synthetic(p)
	if err != nil {
		return nil, err
	}
	w.Name = "bitbrains (" + filepath.Base(dir) + ")"
	w.Shapes = shapes
	for k := range w.Services {
		s := &w.Services[k]
		s.Shape = k % len(shapes)
		s.OffsetSeconds = int64(k/len(shapes)) * 6 * 3600
		s.CPUScaleMilli = float32(s.CPURequestMilli)
		s.NoisePercent, s.BurstProbability = 0, 0
	}
	return w, nil
}

// gridShape puts a trace series on the traceInterval grid from its first
// to its last sample, scaled by scale: a slot takes the largest sample in
// it, an empty slot the previous slot's value. It returns nil for an
// empty series, and an error for one spanning more than MaxDuration: the
// grid costs memory for every slot of the span, so one time stamp out of
// place would otherwise fill the machine's memory.
func gridShape(s trace.Series, scale float64) (*Shape, error) {
	if s.Len() == 0 {
		return nil, nil
	}
	if first, last := s.Times[0], s.Times[s.Len()-1]; last-first > int64(MaxDuration/time.Second) {
		return nil, fmt.Errorf("samples from %d s to %d s span more than %s (90 days), the longest a run takes: is a time stamp out of place?",
			first, last, MaxDuration)
	}
	grid, err := trace.Resample(s, traceInterval, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	first, last := grid.Times[0], grid.Times[grid.Len()-1]
	vals := make([]float32, 0, (last-first)/traceInterval+1)
	for i, t := range grid.Times {
		for len(vals) > 0 && first+int64(len(vals))*traceInterval < t {
			vals = append(vals, vals[len(vals)-1])
		}
		vals = append(vals, float32(max(0, grid.Values[i]*scale)))
	}
	return &Shape{IntervalSeconds: traceInterval, Values: slices.Clip(vals)}, nil
}
