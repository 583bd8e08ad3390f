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

package executor

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

type okEvictor struct{}

func (okEvictor) Evict(context.Context, *corev1.Pod, *int64) error { return nil }

func (okEvictor) Delete(context.Context, *corev1.Pod, *int64) error { return nil }

// benchNode is the core's benchmark node: 64 cores, 256 GiB, 200 pods of
// which 160 are Batch (eligible) and 40 Prod (protected).
func benchNode(nodeCPUMilli, nodeMemGiB int64) *agent.Snapshot {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: map[string]string{"pool": "colo", "zone": "a"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}},
	}
	s := &collector.Sample{Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	s.Node = collector.Usage{CPU: float64(nodeCPUMilli) / 1000, HasCPU: true, Memory: uint64(nodeMemGiB) << 30, HasMemory: true}
	var pods []*corev1.Pod
	for i := range 200 {
		prio := int32(5000 + i%1000)
		if i%5 == 0 {
			prio = 9500
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%03d", i), UID: types.UID(fmt.Sprintf("uid-%03d", i))},
			Spec: corev1.PodSpec{Priority: ptr.To(prio), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, StartTime: &metav1.Time{Time: s.Time.Add(-time.Duration(i) * time.Minute)}},
		}
		pods = append(pods, p)
		s.Pods = append(s.Pods, collector.PodSample{Pod: collector.PodRefOf(p), Usage: collector.Usage{
			CPU: 0.1 + float64(i%7)*0.05, HasCPU: true, Memory: uint64(256+i%9*64) << 20, HasMemory: true}})
	}
	nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: "colo", UID: "nq", ResourceVersion: "1"}, Spec: v1alpha1.NodeQOSSpec{
		CPU:            &v1alpha1.CPUWaterlines{ForbidSchedulingPercent: ptr.To[int32](60), ThrottlePercent: ptr.To[int32](70), EvictPercent: ptr.To[int32](90)},
		Memory:         &v1alpha1.MemoryWaterlines{EvictPercent: ptr.To[int32](80)},
		AvoidanceCount: ptr.To[int32](1),
		Eviction:       &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To(v1alpha1.MaxEvictionsPerMinute)},
	}}
	return &agent.Snapshot{Time: s.Time, Sample: s, Node: node, Pods: pods, NodeQOSes: []*v1alpha1.NodeQOS{nq}}
}

// BenchmarkExecutorCycle measures one executor cycle for 200 pods against
// the planner alone on the same candidates (the baseline, same run): the
// difference is the module's own cost -- measuring the sample, the BE
// window, stating intents, conditions, and the eviction loop.
func BenchmarkExecutorCycle(b *testing.B) {
	// Lines on 64 cores / 256 GiB: throttle 44.8 cores, memory evict
	// 204.8 GiB.
	for _, bc := range []struct {
		name     string
		cpuMilli int64
		memGiB   int64
		reset    bool // forget what the previous iteration did, so every cycle acts
	}{
		{"idle", 30000, 100, false},
		{"throttle-3200m", 44800 + 3200, 100, true},
		{"evict-memory-7GiB", 30000, 212, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			snap := benchNode(bc.cpuMilli, bc.memGiB)
			layout, err := cgroups.NewLayout(b.TempDir(), cgroups.V1, cgroups.DriverCgroupfs, "/")
			if err != nil {
				b.Fatal(err)
			}
			rc, err := resctl.New(layout, nil)
			if err != nil {
				b.Fatal(err)
			}
			clk := clocktesting.NewFakeClock(snap.Time)
			e, err := New(Config{}, Deps{Evictor: okEvictor{}, Reconciler: rc, Recorder: &record.FakeRecorder{}, Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			ctx := klog.NewContext(context.Background(), klog.Background())
			if err := e.Cycle(ctx, snap); err != nil {
				b.Fatal(err)
			}
			e.WaitForEvictions(ctx)
			acted := len(e.applied)
			evicted := len(e.flight.done)
			b.Run("executor", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if bc.reset {
						clear(e.applied)
						e.h = qos.Hysteresis{}
						e.bucket.tokens = float64(e.bucket.perMinute)
						e.memBucket.tokens = float64(e.memBucket.perMinute)
						e.WaitForEvictions(ctx)
						e.flight.done = nil
						clear(e.flight.inflight)
					}
					if err := e.Cycle(ctx, snap); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
				b.ReportMetric(float64(acted), "throttled")
				b.ReportMetric(float64(evicted), "evicted")
			})
			b.Run("planner-baseline", func(b *testing.B) {
				node := qos.NodeState{Usage: e.nodeUsage}
				cands := e.cands
				b.ReportAllocs()
				for b.Loop() {
					_ = e.planner.Plan(node, cands, qos.Hysteresis{})
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
			})
		})
	}
}
