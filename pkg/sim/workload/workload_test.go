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
	"compress/gzip"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/pkg/trace"
)

func TestSyntheticDeterministic(t *testing.T) {
	p := SyntheticParams{Seed: 7, Nodes: 10, Duration: 3 * time.Hour}
	a, err := Synthetic(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Synthetic(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("the same parameters gave two workloads (-first +second):\n%s", diff)
	}
	p.Seed = 8
	c, err := Synthetic(p)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(a.Jobs, c.Jobs) {
		t.Error("another seed gave the same jobs")
	}
}

// TestSyntheticHonoursParams checks the figures a user sets are the ones
// the workload has, over a cluster big enough for the averages to settle.
func TestSyntheticHonoursParams(t *testing.T) {
	p := SyntheticParams{Seed: 1, Nodes: 200, BatchLoadPercent: 40, ProdRequestPercent: 50, MidJobPercent: 20}
	w, err := Synthetic(p)
	if err != nil {
		t.Fatal(err)
	}
	if errs := w.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	var cpu, prod, work float64
	mid := 0
	for _, n := range w.Nodes {
		cpu += float64(n.CPUMilli)
	}
	for _, s := range w.Services {
		prod += float64(s.CPURequestMilli)
	}
	for _, j := range w.Jobs {
		work += float64(j.CPUDemandMilli) * j.Duration.Seconds()
		if j.Class == ClassMid {
			mid++
		}
	}
	checks := []struct {
		what      string
		got, want float64
		tolerance float64
	}{
		// Services stop short of overshooting the share by more than half
		// a service, so the cluster averages the share.
		{"Prod request % of CPU", 100 * prod / cpu, 50, 3},
		{"offered batch load % of CPU", 100 * work / cpu / w.Duration.Seconds(), 40, 4},
		{"Mid % of jobs", 100 * float64(mid) / float64(len(w.Jobs)), 20, 2},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > c.tolerance {
			t.Errorf("%s = %.2f, want %.0f ± %.0f", c.what, c.got, c.want, c.tolerance)
		}
	}
}

func TestSyntheticValidate(t *testing.T) {
	p := SyntheticParams{
		Nodes: -1, ProdRequestPercent: 120, BurstFactor: 0.5, JobDemandMinPercent: 90, JobDemandMaxPercent: 80,
		JobSizes: []Size{{CPUMilli: 0, Weight: 1}}, JobDurationMin: time.Hour, JobDurationMax: time.Minute,
	}.Defaults()
	var got []string
	for _, e := range p.Validate() {
		got = append(got, e.Field)
	}
	want := []string{
		"synthetic.nodes", "synthetic.prodRequestPercent", "synthetic.burstFactor", "synthetic.jobSizes[0]",
		"synthetic.jobDemandMaxPercent", "synthetic.jobDurationMax",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields with errors (-want +got):\n%s", diff)
	}
	if _, err := Synthetic(SyntheticParams{Nodes: -1}); err == nil || !strings.Contains(err.Error(), "synthetic.nodes: Invalid value: -1") {
		t.Errorf("Synthetic with 0 nodes: %v", err)
	}
	// The largest sizes are refused before anything is built.
	big := SyntheticParams{Nodes: MaxNodes + 1, Duration: MaxDuration + time.Hour}.Defaults()
	got = nil
	for _, e := range big.Validate() {
		got = append(got, e.Field)
	}
	if diff := cmp.Diff([]string{"synthetic.nodes", "synthetic.duration"}, got); diff != "" {
		t.Errorf("fields with errors at MaxNodes+1 and MaxDuration+1h (-want +got):\n%s", diff)
	}
	if errs := (SyntheticParams{Nodes: MaxNodes, Duration: MaxDuration}.Defaults().Validate()); len(errs) > 0 {
		t.Errorf("MaxNodes and MaxDuration themselves refused: %v", errs)
	}
	// A node shape the simulator cannot hold is refused before jobs are
	// drawn in proportion to it (1e11 millicores: out of memory first).
	huge := SyntheticParams{Nodes: 2, Duration: 10 * time.Minute, NodeShapes: []NodeShape{{CPUMilli: 1e11, MemoryBytes: 1 << 40, Weight: 1}}}
	if _, err := Synthetic(huge); err == nil || !strings.Contains(err.Error(), "synthetic.nodeShapes[0].cpuMilli: Invalid value: 100000000000") {
		t.Errorf("Synthetic with a node of 1e11 millicores: %v", err)
	}
}

// TestValidateMilliCPURange: the simulator keeps a pod's per-step CPU
// figures in 32 bits, so Validate refuses a workload whose node CPU, job
// request, service limit or service peak demand does not fit, naming the
// field, and accepts MaxMilliCPU itself.
func TestValidateMilliCPURange(t *testing.T) {
	valid := func() *Workload {
		return &Workload{
			Duration: time.Hour,
			Nodes:    []Node{{Name: "n", CPUMilli: 4000, MemoryBytes: 1 << 33, Pods: 110}},
			Shapes:   []Shape{{IntervalSeconds: 60, Values: []float32{0.5, 2}}},
			Services: []Service{{Name: "s", CPURequestMilli: 1000, CPUScaleMilli: 1000}},
			Jobs:     []Job{{Name: "j", Class: ClassBatch, CPURequestMilli: 1000, MemoryRequestBytes: 1 << 30, CPUDemandMilli: 500, Duration: time.Minute}},
		}
	}
	if errs := valid().Validate(); len(errs) > 0 {
		t.Fatalf("the valid workload is refused: %v", errs)
	}
	tests := []struct {
		name   string
		change func(w *Workload)
		field  string // "" when the workload is valid
	}{
		{"node CPU at the bound", func(w *Workload) { w.Nodes[0].CPUMilli = MaxMilliCPU }, ""},
		{"node CPU over", func(w *Workload) { w.Nodes[0].CPUMilli = MaxMilliCPU + 1 }, "workload.nodes[0].cpuMilli"},
		{"job request at the bound", func(w *Workload) { w.Jobs[0].CPURequestMilli = MaxMilliCPU }, ""},
		{"job request over", func(w *Workload) { w.Jobs[0].CPURequestMilli = MaxMilliCPU + 1 }, "workload.jobs[0].cpuRequestMilli"},
		{"service limit at the bound", func(w *Workload) { w.Services[0].CPULimitMilli = MaxMilliCPU }, ""},
		{"service limit over", func(w *Workload) { w.Services[0].CPULimitMilli = MaxMilliCPU + 1 }, "workload.services[0].cpuLimitMilli"},
		// 2e9 × the shape's 2 is 4e9 millicores.
		{"service peak over", func(w *Workload) { w.Services[0].CPUScaleMilli = 2e9 }, "workload.services[0].cpuScaleMilli"},
		// 6e8 × 2 is 1.2e9, within; a +100 % noise or a 2× burst doubles it.
		{"service peak within", func(w *Workload) { w.Services[0].CPUScaleMilli = 6e8 }, ""},
		{"service noise over", func(w *Workload) {
			w.Services[0].CPUScaleMilli, w.Services[0].NoisePercent = 6e8, 100
		}, "workload.services[0].cpuScaleMilli"},
		{"service burst over", func(w *Workload) {
			s := &w.Services[0]
			s.CPUScaleMilli, s.BurstProbability, s.BurstFactor, s.BurstWindowSeconds = 6e8, 0.1, 2, 300
		}, "workload.services[0].cpuScaleMilli"},
		{"service scale NaN", func(w *Workload) { w.Services[0].CPUScaleMilli = float32(math.NaN()) }, "workload.services[0].cpuScaleMilli"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := valid()
			tt.change(w)
			errs := w.Validate()
			if tt.field == "" {
				if len(errs) > 0 {
					t.Errorf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tt.field || !strings.Contains(errs[0].Error(), "32 bits") {
				t.Errorf("errors %v, want one for %s saying why (32 bits)", errs, tt.field)
			}
		})
	}
}

// TestDemandRemembers: Demand.CPUMilli, which remembers the shape value
// and burst of the last interval and window it computed, gives
// CPUDemandMilli's figure every second, in order, backwards and at random.
func TestDemandRemembers(t *testing.T) {
	w := &Workload{Shapes: []Shape{{IntervalSeconds: 60, Values: []float32{0.5, 1.5, 0.25, 2}}}}
	s := Service{CPUScaleMilli: 1733, OffsetSeconds: 97, NoisePercent: 20, BurstProbability: 0.4, BurstFactor: 2.5, BurstWindowSeconds: 45, Key: 7}
	var secs []int64
	for sec := range int64(1000) {
		secs = append(secs, sec)
	}
	for sec := int64(999); sec >= 0; sec -= 7 {
		secs = append(secs, sec)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		secs = append(secs, r.Int64N(100000))
	}
	d := s.Demand(w)
	for _, sec := range secs {
		if got, want := d.CPUMilli(sec), s.CPUDemandMilli(w, sec); got != want {
			t.Fatalf("second %d: Demand.CPUMilli %dm, CPUDemandMilli %dm", sec, got, want)
		}
	}
}

// TestDemandSet: a DemandSet gives every service's CPUDemandMilli figure
// at each second asked, forwards, backwards and at random, for services
// with and without noise and bursts, also for one added between two
// seconds.
func TestDemandSet(t *testing.T) {
	w := &Workload{Shapes: []Shape{
		{IntervalSeconds: 60, Values: []float32{0.5, 1.5, 0.25, 2}},
		{IntervalSeconds: 7, Values: []float32{1, 0, 3}},
	}}
	r := rand.New(rand.NewPCG(3, 4))
	var svcs []Service
	for i := range 40 {
		s := Service{Shape: i % 2, CPUScaleMilli: float32(r.IntN(4000)), OffsetSeconds: r.Int64N(200), Key: r.Uint64()}
		if i%3 != 0 {
			s.NoisePercent = float32(r.IntN(50))
		}
		if i%4 != 0 {
			s.BurstProbability, s.BurstFactor, s.BurstWindowSeconds = r.Float32(), 1+3*r.Float32(), 1+r.Int64N(100)
		}
		svcs = append(svcs, s)
	}
	var ds []Demand
	for i := range svcs[:30] {
		ds = append(ds, svcs[i].Demand(w))
	}
	set := NewDemandSet(ds)
	var secs []int64
	for sec := range int64(600) {
		secs = append(secs, sec)
	}
	for sec := int64(599); sec >= 0; sec -= 3 {
		secs = append(secs, sec)
	}
	for range 500 {
		secs = append(secs, r.Int64N(100000))
	}
	out := make([]int64, len(svcs))
	for k, sec := range secs {
		if k == len(secs)/2 {
			for i := range svcs[30:] {
				if got := set.Add(svcs[30+i].Demand(w)); got != 30+i {
					t.Fatalf("Add returned %d, want %d", got, 30+i)
				}
			}
		}
		set.At(sec, out)
		for i := range set.Len() {
			if want := svcs[i].CPUDemandMilli(w, sec); out[i] != want {
				t.Fatalf("second %d, service %d: DemandSet %dm, CPUDemandMilli %dm", sec, i, out[i], want)
			}
		}
	}
	if set.Len() != len(svcs) {
		t.Errorf("Len = %d, want %d", set.Len(), len(svcs))
	}
}

func TestServiceDemand(t *testing.T) {
	w := &Workload{Shapes: []Shape{{IntervalSeconds: 60, Values: []float32{0.5, 1.5}}}}
	tests := []struct {
		name     string
		svc      Service
		sec      int64
		min, max int64
	}{
		// 2000m × 0.5 = 1000m in the first minute, 2000m × 1.5 = 3000m in
		// the second, then it wraps.
		{"first sample", Service{CPUScaleMilli: 2000}, 30, 1000, 1000},
		{"second sample", Service{CPUScaleMilli: 2000}, 60, 3000, 3000},
		{"wraps", Service{CPUScaleMilli: 2000}, 125, 1000, 1000},
		{"offset", Service{CPUScaleMilli: 2000, OffsetSeconds: 60}, 0, 3000, 3000},
		// ±10 % noise stays within 900m..1100m.
		{"noise", Service{CPUScaleMilli: 2000, NoisePercent: 10, Key: 99}, 7, 900, 1100},
		// A burst probability of 1 makes every window a burst: ×2.
		{"burst", Service{CPUScaleMilli: 2000, BurstProbability: 1, BurstFactor: 2, BurstWindowSeconds: 300}, 0, 2000, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.svc.CPUDemandMilli(w, tt.sec)
			if got < tt.min || got > tt.max {
				t.Errorf("demand = %dm, want [%d, %d]", got, tt.min, tt.max)
			}
			if d := tt.svc.Demand(w); d.CPUMilli(tt.sec) != got {
				t.Errorf("Demand.CPUMilli = %dm, CPUDemandMilli %dm", d.CPUMilli(tt.sec), got)
			}
		})
	}
	// The noise is a function of the pod and the time, not of the call.
	s := Service{CPUScaleMilli: 2000, NoisePercent: 10, Key: 99}
	if a, b := s.CPUDemandMilli(w, 7), s.CPUDemandMilli(w, 7); a != b {
		t.Errorf("two calls for the same second gave %d and %d", a, b)
	}
}

func TestDiurnalShapes(t *testing.T) {
	p := SyntheticParams{}.Defaults()
	shapes := diurnalShapes(p)
	// The middle shape is shifted by 6 minutes at most.
	s := shapes[dailyShapes/2]
	var sum float64
	lo, hi := 0, 0
	for i, v := range s.Values {
		sum += float64(v)
		if v < s.Values[lo] {
			lo = i
		}
		if v > s.Values[hi] {
			hi = i
		}
	}
	hour := func(i int) float64 { return float64(i*shapeInterval) / 3600 }
	if mean := sum / float64(len(s.Values)); math.Abs(mean-1) > 0.01 {
		t.Errorf("mean factor %.3f, want 1", mean)
	}
	if h := hour(lo); h < 2 || h > 6 {
		t.Errorf("trough at %.1f h, want the small hours", h)
	}
	if h := hour(hi); h < 17 || h > 21 {
		t.Errorf("peak at %.1f h, want the evening", h)
	}
	// The swing is the amplitude asked for: 1 ± 45 % at the extreme.
	if got := math.Max(float64(s.Values[hi])-1, 1-float64(s.Values[lo])); math.Abs(got-0.45) > 0.001 {
		t.Errorf("largest swing %.3f, want 0.45", got)
	}
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	usage := mk("ali/machine_usage.csv", "")
	mk("ob/openb_pod_list_default.csv", "")
	mk("bb/1.csv.gz", "")
	params := mk("params.json", "{}")
	mk("empty/readme.txt", "")
	tests := []struct {
		path, kind, target, err string
	}{
		{filepath.Join(dir, "ali"), KindAlibaba, usage, ""},
		{usage, KindAlibaba, usage, ""},
		{filepath.Join(dir, "ob"), KindOpenB, filepath.Join(dir, "ob"), ""},
		{filepath.Join(dir, "ob", "openb_pod_list_default.csv"), KindOpenB, filepath.Join(dir, "ob", "openb_pod_list_default.csv"), ""},
		{filepath.Join(dir, "bb"), KindBitbrains, filepath.Join(dir, "bb"), ""},
		{params, KindSynthetic, params, ""},
		{filepath.Join(dir, "empty"), "", "", "holds no machine_usage.csv"},
		{filepath.Join(dir, "empty", "readme.txt"), "", "", "not machine_usage.csv"},
		{filepath.Join(dir, "missing"), "", "", "nor a readable path"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, dir), func(t *testing.T) {
			kind, target, err := Detect(tt.path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || kind != tt.kind || target != tt.target {
				t.Errorf("Detect = %q, %q, %v; want %q, %q", kind, target, err, tt.kind, tt.target)
			}
		})
	}
}

func TestLoadParamsJSON(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"nodes": 3, "duration": "90m", "jobDurationMedian": "10m", "batchLoadPercent": 20}`), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Load(good, dir, SyntheticParams{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Nodes) != 3 || w.Duration != 90*time.Minute {
		t.Errorf("workload of %d nodes for %s, want 3 for 1h30m", len(w.Nodes), w.Duration)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"nodez": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad, dir, SyntheticParams{}); err == nil || !strings.Contains(err.Error(), `unknown field "nodez"`) || !strings.Contains(err.Error(), bad) {
		t.Errorf("a misspelt parameter: %v", err)
	}
}

func TestBadTraceRows(t *testing.T) {
	dir := t.TempDir()
	openb := filepath.Join(dir, "openb")
	if err := os.MkdirAll(openb, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(openb, "openb_node_list_all_node.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\n")
	write(filepath.Join(openb, "openb_pod_list_default.csv"),
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
			"p0,1000,1024,0,0,,LS,Running,0,100,0\n"+
			"p1,lots,1024,0,0,,BE,Running,0,100,0\n")
	bb := filepath.Join(dir, "bitbrains")
	if err := os.MkdirAll(bb, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(bb, "1.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	_, _ = gz.Write([]byte("Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]\n" +
		"1;\t2;\t100;\t50;\t50;\t1000;\t500;\t0;\t0;\t0;\t0\n" +
		"2;\t2;\t100;\t-5;\t50;\t1000;\t500;\t0;\t0;\t0;\t0\n"))
	if err := errors.Join(gz.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want []string
	}{
		{openb, []string{"openb_pod_list_default.csv:3", "cpu_milli"}},
		{bb, []string{"1.csv.gz:3", "negative"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			_, err := Load(tt.path, dir, SyntheticParams{Nodes: 2, Duration: time.Hour})
			var pe *trace.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a trace.ParseError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestTraceSpanBounded: a trace whose samples span more than the longest
// run -- one time stamp out of place -- is refused naming the machine or
// VM, instead of gridding every minute of the span (a year of slots for
// each such series, or a crash for out of memory).
func TestTraceSpanBounded(t *testing.T) {
	dir := t.TempDir()
	alibaba := filepath.Join(dir, trace.MachineUsageFile)
	if err := os.WriteFile(alibaba, []byte("m_1,0,50,50,,,1,1,1\nm_1,600,50,50,,,1,1,1\nm_2,0,50,50,,,1,1,1\nm_2,100000000000,50,50,,,1,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bb := filepath.Join(dir, "bitbrains")
	if err := os.MkdirAll(bb, 0o755); err != nil {
		t.Fatal(err)
	}
	header := strings.Join([]string{"Timestamp [ms]", "CPU cores", "CPU capacity provisioned [MHZ]", "CPU usage [MHZ]", "CPU usage [%]",
		"Memory capacity provisioned [KB]", "Memory usage [KB]", "Disk read throughput [KB/s]", "Disk write throughput [KB/s]",
		"Network received throughput [KB/s]", "Network transmitted throughput [KB/s]"}, ";\t")
	if err := os.WriteFile(filepath.Join(bb, "7.csv"), []byte(header+"\n"+
		"1376314846;\t2;\t100;\t50;\t50;\t1000;\t500;\t0;\t0;\t0;\t0\n"+
		"9376314846;\t2;\t100;\t50;\t50;\t1000;\t500;\t0;\t0;\t0;\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{alibaba: "machine m_2: samples from 0 s to 100000000000 s", bb: "VM 7: samples from 1376314846 s"} {
		_, err := Load(path, dir, SyntheticParams{Nodes: 2, Duration: time.Hour})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "span more than 2160h0m0s") {
			t.Errorf("%s: error %v, want one containing %q and the longest span", path, err, want)
		}
	}
}

// TestOpenBNamedPodList: a pod list named as the workload is the one
// simulated, not the folder's openb_pod_list_default.csv.
func TestOpenBNamedPodList(t *testing.T) {
	dir := t.TempDir()
	const header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	for file, body := range map[string]string{
		"openb_node_list_all_node.csv": "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,0,\n",
		"openb_pod_list_default.csv":   header + "p0,1000,1024,0,0,,LS,Running,0,100,0\np1,1000,1024,0,0,,BE,Running,0,100,0\n",
		"openb_pod_list_cpu050.csv":    header + "p0,7000,1024,0,0,,LS,Running,0,100,0\np1,7000,1024,0,0,,BE,Running,0,100,0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := SyntheticParams{Nodes: 2, Duration: time.Hour}
	for _, tc := range []struct {
		path    string
		cpu     int64
		nameEnd string
	}{
		{dir, 1000, filepath.Base(dir) + ")"},
		{filepath.Join(dir, "openb_pod_list_default.csv"), 1000, filepath.Base(dir) + ")"},
		{filepath.Join(dir, "openb_pod_list_cpu050.csv"), 7000, filepath.Base(dir) + "/openb_pod_list_cpu050.csv)"},
	} {
		w, err := Load(tc.path, dir, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if len(w.Services) == 0 || len(w.Jobs) == 0 {
			t.Fatalf("%s: %d services, %d jobs", tc.path, len(w.Services), len(w.Jobs))
		}
		if got := w.Services[0].CPURequestMilli; got != tc.cpu || w.Jobs[0].CPURequestMilli != tc.cpu {
			t.Errorf("%s: service and job requests %d and %d millicores, want %d (from that pod list)", tc.path, got, w.Jobs[0].CPURequestMilli, tc.cpu)
		}
		if !strings.HasSuffix(w.Name, tc.nameEnd) {
			t.Errorf("%s: workload named %q, want it to end in %q", tc.path, w.Name, tc.nameEnd)
		}
	}
}

// TestOpenBHugeValues: an openb node or pod too large to simulate is
// refused naming it, not wrapped to a small memory (16 EiB + 1 GiB read
// as 1 GiB) nor used to draw jobs for millions of cores.
func TestOpenBHugeValues(t *testing.T) {
	const pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"p0,1000,1024,0,0,,LS,Running,0,100,0\n"
	for name, tc := range map[string]struct{ nodes, pods, want string }{
		"node memory": {"n0,32000,17592186045440,0,\n", pods + "p1,1000,1024,0,0,,BE,Running,0,100,0\n", "node n0: memory_mib 17592186045440 is more than"},
		"node CPU":    {"n0,3000000000,262144,0,\n", pods + "p1,1000,1024,0,0,,BE,Running,0,100,0\n", "node n0: cpu_milli 3000000000 must be at most 2147483647"},
		"pod memory":  {"n0,32000,262144,0,\n", pods + "p1,1000,17592186045441,0,0,,BE,Running,0,100,0\n", "pod p1: memory_mib 17592186045441 is more than"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for file, body := range map[string]string{
				"openb_node_list_all_node.csv": "sn,cpu_milli,memory_mib,gpu,model\n" + tc.nodes,
				"openb_pod_list_default.csv":   tc.pods,
			} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := OpenB(dir, SyntheticParams{Nodes: 2, Duration: 10 * time.Minute})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// sharedTraces skips the test, loudly, when shared/traces is not beside
// the repository.
func sharedTraces(t *testing.T, folder string) string {
	t.Helper()
	dir, err := trace.FindShared(".", folder)
	if err != nil {
		t.Skipf("SKIPPING: the shared trace samples are not here: %v", err)
	}
	return dir
}

func TestLoadSharedTraces(t *testing.T) {
	p := SyntheticParams{Seed: 1, Nodes: 40, Duration: 6 * time.Hour}
	t.Run("alibaba", func(t *testing.T) {
		dir := sharedTraces(t, trace.AlibabaV2018Folder)
		w, err := Load(KindAlibaba, ".", p)
		if err != nil {
			t.Fatal(err)
		}
		if errs := w.Validate(); len(errs) > 0 {
			t.Fatal(errs)
		}
		machines, err := trace.LoadMachineSeries(filepath.Join(dir, trace.MachineUsageFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Shapes) != len(machines) {
			t.Fatalf("%d shapes, want one per machine (%d)", len(w.Shapes), len(machines))
		}
		// Node 0's services add up to machine 0's utilisation × the node's
		// CPU: the shape starts at the largest sample of m_1932's first
		// minute (41, 43 then 44 % at t = 386640, 386670, 386690 s).
		grid, err := trace.Resample(machines[0].CPUPercent, 60, 1)
		if err != nil {
			t.Fatal(err)
		}
		var demand int64
		for i := range w.Services {
			if s := &w.Services[i]; s.Node == 0 {
				demand += s.CPUDemandMilli(w, 0)
			}
		}
		want := int64(float64(w.Nodes[0].CPUMilli) * grid.Values[0] / 100)
		if math.Abs(float64(demand-want)) > 10 {
			t.Errorf("node 0's Prod demand at 0 s = %dm, want machine %s's %.0f %% of %dm = %dm",
				demand, machines[0].MachineID, grid.Values[0], w.Nodes[0].CPUMilli, want)
		}
	})
	t.Run("openb", func(t *testing.T) {
		dir := sharedTraces(t, trace.OpenBFolder)
		w, err := Load(KindOpenB, ".", p)
		if err != nil {
			t.Fatal(err)
		}
		if errs := w.Validate(); len(errs) > 0 {
			t.Fatal(errs)
		}
		nodes, err := trace.LoadOpenBNodes(filepath.Join(dir, "openb_node_list_all_node.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if w.Nodes[i].CPUMilli != nodes[i].CPUMilli || w.Nodes[i].MemoryBytes != nodes[i].MemoryMiB<<20 {
				t.Errorf("node %d is %dm/%d B, want openb's %s: %dm/%d MiB", i, w.Nodes[i].CPUMilli, w.Nodes[i].MemoryBytes,
					nodes[i].Name, nodes[i].CPUMilli, nodes[i].MemoryMiB)
			}
		}
		if len(w.Jobs) == 0 || len(w.Services) == 0 {
			t.Errorf("%d jobs and %d services from the openb lists", len(w.Jobs), len(w.Services))
		}
	})
	t.Run("bitbrains", func(t *testing.T) {
		sharedTraces(t, trace.BitbrainsFolder)
		w, err := Load(KindBitbrains, ".", p)
		if err != nil {
			t.Fatal(err)
		}
		if errs := w.Validate(); len(errs) > 0 {
			t.Fatal(errs)
		}
		// One shape per VM with a provisioned CPU: the 50 of the sample.
		if len(w.Shapes) != 50 {
			t.Errorf("%d shapes, want 50", len(w.Shapes))
		}
	})
}
