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

package cgroups_test

import (
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

// BenchmarkReadOneFile reads one kept-open file of a real pod cgroup (one
// container inside) per iteration, to show what each of the collector's
// files costs the kernel to generate: the working set needs memory.stat,
// by far the dearest. cpu-µs/op is the process's user + system CPU.
func BenchmarkReadOneFile(b *testing.B) {
	p := cgroupstest.NewRealPod(b, corev1.PodQOSBurstable)
	l := p.Layout
	files := map[string]string{
		"cpuacct.usage":         l.Path(cgroups.ControllerCPUAcct, p.Cgroup) + "/cpuacct.usage",
		"memory.usage_in_bytes": l.Path(cgroups.ControllerMemory, p.Cgroup) + "/memory.usage_in_bytes",
		"memory.stat":           l.Path(cgroups.ControllerMemory, p.Cgroup) + "/memory.stat",
	}
	if l.Version() == cgroups.V2 {
		files = map[string]string{
			"cpu.stat":       l.Path("", p.Cgroup) + "/cpu.stat",
			"memory.current": l.Path("", p.Cgroup) + "/memory.current",
			"memory.stat":    l.Path("", p.Cgroup) + "/memory.stat",
		}
	}
	for name, path := range files {
		b.Run(name, func(b *testing.B) {
			r := cgroups.NewReader()
			f := cgroups.NewFile(path)
			defer f.Close()
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				if _, err := r.Read(f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

// processCPU is the CPU (user + system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
