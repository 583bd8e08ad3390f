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
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
)

// BenchmarkReadUsage reads one cgroup's CPU counter and working set (three
// files) by path, opening each file every time (the baseline), and through
// kept-open Files (what the collector does), on a fixture tree and, as
// root, on the kernel's cgroup filesystem.
func BenchmarkReadUsage(b *testing.B) {
	fixture := func(b *testing.B) (*cgroups.Layout, string) {
		l, err := cgroups.NewLayout(b.TempDir(), cgroups.V1, cgroups.DriverSystemd, "/")
		if err != nil {
			b.Fatal(err)
		}
		cg := l.PodCgroup(podUID, corev1.PodQOSBurstable)
		if err := (cgroupstest.Tree{Layout: l}).Cgroup(cg, cgroupstest.Usage{CPUNanos: 1e9, MemoryUsage: 1 << 30, InactiveFile: 1 << 20}); err != nil {
			b.Fatal(err)
		}
		return l, cg
	}
	real := func(b *testing.B) (*cgroups.Layout, string) {
		p := cgroupstest.NewRealPod(b, corev1.PodQOSBurstable)
		return p.Layout, p.Cgroup
	}
	for _, fs := range []struct {
		name  string
		setup func(*testing.B) (*cgroups.Layout, string)
	}{{"fixture", fixture}, {"cgroupfs", real}} {
		b.Run(fs.name+"/open-each-time", func(b *testing.B) {
			l, cg := fs.setup(b)
			r := cgroups.NewReader()
			cpu := filepath.Join(l.Path(cgroups.ControllerCPUAcct, cg), "cpuacct.usage")
			mem := l.Path(cgroups.ControllerMemory, cg)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ReadUint(cpu); err != nil {
					b.Fatal(err)
				}
				if _, err := r.ReadUint(mem + "/memory.usage_in_bytes"); err != nil {
					b.Fatal(err)
				}
				if _, err := r.ReadKey(mem+"/memory.stat", "total_inactive_file"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fs.name+"/kept-open", func(b *testing.B) {
			l, cg := fs.setup(b)
			r := cgroups.NewReader()
			f := l.UsageFiles(cg)
			defer f.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.CPUUsage(f); err != nil {
					b.Fatal(err)
				}
				if _, err := r.MemoryWorkingSet(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
