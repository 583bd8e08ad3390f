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

package trace

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

// readAll drains a trace reader, failing on any error that is neither
// io.EOF nor a *ParseError naming the file: bad input is a clear error,
// never a panic nor a loop that does not end.
func readAll[T any](t *testing.T, read func() (T, error), check func(T)) {
	t.Helper()
	for i := 0; ; i++ {
		row, err := read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("row %d: error %v is not a *ParseError", i, err)
			}
			if pe.File != "fuzz.csv" {
				t.Fatalf("row %d: error does not name the file: %v", i, err)
			}
			return
		}
		check(row)
		if i > 1<<20 {
			t.Fatal("reader does not end")
		}
	}
}

// FuzzMachineUsage: the Alibaba v2018 machine_usage.csv reader; accepted
// CPU and memory percents are in [0, 100] or missing (NaN).
func FuzzMachineUsage(f *testing.F) {
	f.Add([]byte("m_1,0,10,20,,,1,2,3\nm_1,10,11,21,1.5,2.5,1,2,101\n"))
	f.Add([]byte("m_1,0,-1,20,,,1,2,3\n"))
	f.Add([]byte("m_1,0,NaN,Inf,,,1,2,3\n"))
	f.Add([]byte(",0,1,1,,,1,1,1\nx"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewMachineUsageReader(bytes.NewReader(b), "fuzz.csv")
		readAll(t, r.Read, func(u MachineUsage) {
			for _, v := range []float64{u.CPUPercent, u.MemPercent} {
				if !math.IsNaN(v) && (v < 0 || v > 100) {
					t.Fatalf("percent %v accepted from %q", v, b)
				}
			}
			if u.Time < 0 {
				t.Fatalf("negative time %d accepted", u.Time)
			}
		})
	})
}

// FuzzBitbrains: the Bitbrains VM file reader; accepted rows have no
// negative capacity.
func FuzzBitbrains(f *testing.F) {
	f.Add([]byte("Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]\n1376314846;\t4;\t11703.99;\t10.39;\t0.08;\t8388608;\t0;\t0;\t0;\t0;\t0\n"))
	f.Add([]byte("x\n1;2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewVMReader(bytes.NewReader(b), "fuzz.csv")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("header error %v is not a *ParseError", err)
			}
			return
		}
		readAll(t, r.Read, func(s VMSample) {
			if s.CPUCores < 0 || s.MemCapacityKB < 0 || s.CPUCapacityMHz < 0 {
				t.Fatalf("negative capacity accepted: %+v", s)
			}
		})
	})
}

// FuzzOpenB: the OpenB node and pod tables.
func FuzzOpenB(f *testing.F) {
	f.Add([]byte("sn,cpu_milli,memory_mib,num_gpu,model\nn1,32000,262144,8,V100M32\n"))
	f.Add([]byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np1,1000,1024,0,0,,LS,Running,0,10,1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := NewOpenBNodeReader(bytes.NewReader(b), "fuzz.csv"); err == nil {
			readAll(t, r.Read, func(n OpenBNode) {
				if n.CPUMilli < 0 || n.MemoryMiB < 0 || n.GPU < 0 {
					t.Fatalf("negative node capacity accepted: %+v", n)
				}
			})
		}
		if r, err := NewOpenBPodReader(bytes.NewReader(b), "fuzz.csv"); err == nil {
			readAll(t, r.Read, func(OpenBPod) {})
		}
	})
}
