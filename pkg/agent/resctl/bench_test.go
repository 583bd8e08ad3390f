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

package resctl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// benchPods are 200 pods: 160 Batch pods with a 1-CPU limit (kubelet's
// quota 1000m, the container's too) and 40 Prod pods.
func benchPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 200 {
		b := resctltest.MakePod(fmt.Sprintf("pod-%03d", i)).Band(extension.BandBatch)
		if i%5 == 0 {
			b = resctltest.MakePod(fmt.Sprintf("pod-%03d", i)).Band(extension.BandProd)
		}
		pods = append(pods, b.CPU("500m", "1").Memory("1Gi", "2Gi").Obj())
	}
	return pods
}

// BenchmarkReconcile measures one Reconciler cycle over 200 pods of which
// 160 Batch pods hold a throttle intent, in steady state (every cgroup
// already right: reads only, which is every cycle of a quiet node), and
// with every intent changed (160 pod writes, plus 160 container writes on
// v1). Baseline, same run: reading the 160 pod quotas with
// Layout.ReadCPUQuota and nothing else, the least a level-triggered writer
// does.
func BenchmarkReconcile(b *testing.B) {
	type tree struct {
		name   string
		layout *cgroups.Layout
		add    func(pod *corev1.Pod)
	}
	var trees []func(b *testing.B) tree
	trees = append(trees, func(b *testing.B) tree {
		layout, err := cgroups.NewLayout(filepath.Join(b.TempDir(), "cgroup"), cgroups.V1, cgroups.DriverCgroupfs, "/")
		if err != nil {
			b.Fatal(err)
		}
		ft := cgroupstest.Tree{Layout: layout}
		if err := ft.Init(); err != nil {
			b.Fatal(err)
		}
		return tree{"fixture-v1", layout, func(pod *corev1.Pod) {
			pod.Status.QOSClass = resctl.PodQOSClass(pod)
			cg := layout.PodCgroup(pod.UID, pod.Status.QOSClass)
			id := "c" + string(pod.UID[:8])
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://" + id}}
			for _, c := range []string{cg, cg + "/" + id} {
				if err := ft.Cgroup(c, cgroupstest.Usage{}); err != nil {
					b.Fatal(err)
				}
				if _, err := layout.SetCPUQuota(c, cgroups.CPUQuota{QuotaMicros: 100000, PeriodMicros: 100000}); err != nil {
					b.Fatal(err)
				}
			}
		}}
	})
	if os.Geteuid() == 0 {
		trees = append(trees, func(b *testing.B) tree {
			node := resctltest.NewRealNode(b, "waterline-test-resctl-bench")
			return tree{"real-cgroupfs-" + string(node.Layout.Version()), node.Layout, func(pod *corev1.Pod) { node.AddPod(pod) }}
		})
	} else {
		b.Logf("SKIPPING the real-cgroup case: needs root (euid %d)", os.Geteuid())
	}
	for _, mk := range trees {
		tr := mk(b)
		b.Run(tr.name, func(b *testing.B) {
			pods := benchPods()
			for _, p := range pods {
				tr.add(p)
			}
			snap := &agent.Snapshot{Pods: pods}
			r, err := resctl.New(tr.layout, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := klog.NewContext(context.Background(), klog.Background())
			intents := func(q int64) map[types.UID]resctl.Intent {
				m := map[types.UID]resctl.Intent{}
				for _, p := range pods {
					if extension.BandOf(p) == extension.BandBatch {
						m[p.UID] = resctl.Intent{CPUQuotaMilli: q, BelowOwnLimits: true}
					}
				}
				return m
			}
			low, high := intents(200), intents(300)
			r.SetIntents("qos", low)
			if err := r.Cycle(ctx, snap); err != nil {
				b.Fatal(err)
			}
			b.Run("steady", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := r.Cycle(ctx, snap); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
			})
			b.Run("all-changed", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if i++; i%2 == 0 {
						r.SetIntents("qos", low)
					} else {
						r.SetIntents("qos", high)
					}
					if err := r.Cycle(ctx, snap); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
			})
			b.Run("read-baseline", func(b *testing.B) {
				var cgs []string
				for _, p := range pods {
					if extension.BandOf(p) == extension.BandBatch {
						cgs = append(cgs, tr.layout.PodCgroup(p.UID, p.Status.QOSClass))
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					for _, cg := range cgs {
						if _, err := tr.layout.ReadCPUQuota(cg); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
			})
		})
	}
}

// TestSteadyCycleAllocations: a steady cycle (every cgroup already right)
// over 200 pods, 160 of them throttled, allocates a handful of objects,
// not one or more per pod: the agent runs it every second.
func TestSteadyCycleAllocations(t *testing.T) {
	layout, err := cgroups.NewLayout(filepath.Join(t.TempDir(), "cgroup"), cgroups.V1, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	ft := cgroupstest.Tree{Layout: layout}
	if err := ft.Init(); err != nil {
		t.Fatal(err)
	}
	pods := benchPods()
	intents := map[types.UID]resctl.Intent{}
	for _, pod := range pods {
		pod.Status.QOSClass = resctl.PodQOSClass(pod)
		if err := ft.Cgroup(layout.PodCgroup(pod.UID, pod.Status.QOSClass), cgroupstest.Usage{}); err != nil {
			t.Fatal(err)
		}
		if extension.BandOf(pod) == extension.BandBatch {
			intents[pod.UID] = resctl.Intent{CPUQuotaMilli: 200, BelowOwnLimits: true}
		}
	}
	r, err := resctl.New(layout, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.SetIntents("qos", intents)
	ctx := klog.NewContext(t.Context(), klog.Background())
	snap := &agent.Snapshot{Pods: pods}
	if err := r.Cycle(ctx, snap); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := r.Cycle(ctx, snap); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Errorf("a steady cycle over %d pods (%d throttled) allocates %.0f objects, want at most 20", len(pods), len(intents), allocs)
	}
}
