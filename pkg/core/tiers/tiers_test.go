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

package tiers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestMid(t *testing.T) {
	// A 32-core node (32000m) as in Koordinator node prediction's example
	// (docs/design/tiers.md#mid).
	tests := []struct {
		name               string
		midPct, ratioPct   int32
		includeUnallocated bool
		s                  ResourceState
		want               int64
	}{{
		name: "Mid formula: reclaimable under the cap", midPct: 50, ratioPct: 100,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true},
		// reclaimable 20000 − 8000 = 12000; cap 32000 × 50% = 16000 → 12000.
		want: 12000,
	}, {
		name: "the threshold caps it", midPct: 50, ratioPct: 100,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 30000, ProdPeak: 5000, ProdPeakKnown: true},
		// reclaimable 25000 > cap 16000.
		want: 16000,
	}, {
		name: "reclaim ratio 80%", midPct: 50, ratioPct: 80,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true},
		// 0.8 × 20000 − 8000 = 8000.
		want: 8000,
	}, {
		name: "peak above the requests reclaims nothing", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 10000, ProdPeak: 12000, ProdPeakKnown: true},
		want: 0,
	}, {
		name: "unknown peak reclaims nothing", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000},
		want: 0,
	}, {
		name: "threshold 0 sells no Mid", midPct: 0, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true},
		want: 0,
	}, {
		// Koordinator caps Mid by what the node does not use: Mid pods run
		// on real cores, not on Prod's predictions.
		name: "what the node uses caps it", midPct: 50, ratioPct: 100,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, NodeUsage: 26000, SystemUsage: 1000},
		// min(12000, 16000, 32000 − 1000 − (26000 − 1000) = 6000).
		want: 6000,
	}, {
		name: "the system's reservation counts when above its use", midPct: 50, ratioPct: 100,
		s: ResourceState{Capacity: 34000, Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, NodeUsage: 26000, SystemUsage: 1000},
		// unused 34000 − max(1000, 34000 − 32000) − 25000 = 7000.
		want: 7000,
	}, {
		name: "a fully used node sells no Mid", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, NodeUsage: 33000, SystemUsage: 1000},
		want: 0,
	}, {
		name: "Prod and Mid use above node usage minus system caps it too", midPct: 50, ratioPct: 100,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, ProdMidUsage: 27000, SystemUsage: 1000},
		// unused 32000 − 1000 − max(0 − 1000, 27000) = 4000.
		want: 4000,
	}, {
		// A Prod pod of 4 cores bound since the agent's report (16000
		// requested, 8000 reclaimable then): its request is counted, its
		// peak is not yet. The agent's next prediction counts it cold, at
		// its request; until then the reported 8000 holds, not 12000.
		name: "a Prod pod bound since the report is not sold as Mid", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, ReportedReclaimable: 8000, ReportedReclaimableKnown: true},
		want: 8000,
	}, {
		// A Prod pod of 4 cores gone since the report (24000 requested,
		// 16000 reclaimable then): what it reclaimed goes with it at once.
		name: "a Prod pod gone since the report takes its share along", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, ReportedReclaimable: 16000, ReportedReclaimableKnown: true},
		want: 12000,
	}, {
		name: "a reported zero reclaims nothing", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 4000, ProdPeak: 0, ProdPeakKnown: true, ReportedReclaimableKnown: true},
		want: 0,
	}, {
		name: "a reported value without a peak reclaims nothing", midPct: 50, ratioPct: 100,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000, ReportedReclaimable: 8000, ReportedReclaimableKnown: true},
		want: 0,
	}, {
		name: "mixed variant adds what Prod did not request", midPct: 30, ratioPct: 100, includeUnallocated: true,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true},
		// min(12000, 32000 × 30% = 9600) + (32000 − 20000) = 9600 + 12000.
		want: 21600,
	}, {
		name: "mixed variant on an idle node: all of it", midPct: 30, ratioPct: 100, includeUnallocated: true,
		s:    ResourceState{Allocatable: 32000, ProdPeakKnown: true},
		want: 32000,
	}, {
		name: "mixed variant with Prod over-allocated: no unallocated part", midPct: 30, ratioPct: 100, includeUnallocated: true,
		s: ResourceState{Allocatable: 32000, ProdAllocated: 40000, ProdPeak: 8000, ProdPeakKnown: true},
		// min(32000, 9600) + max(32000 − 40000, 0).
		want: 9600,
	}, {
		name: "mixed variant with unknown peak: only the unallocated part", midPct: 30, ratioPct: 100, includeUnallocated: true,
		s:    ResourceState{Allocatable: 32000, ProdAllocated: 20000},
		want: 12000,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mid(tc.midPct, tc.ratioPct, tc.includeUnallocated, tc.s); got != tc.want {
				t.Errorf("Mid = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBatch(t *testing.T) {
	tests := []struct {
		name string
		pct  int32
		s    ResourceState
		want int64
	}{
		// 32000 × 65% = 20800 − 9000 − 1800.
		{"idle part under the threshold", 65, ResourceState{Allocatable: 32000, ProdMidUsage: 9000, SystemUsage: 1800}, 10000},
		// Requests do not matter, only use.
		{"requests do not count", 65, ResourceState{Allocatable: 32000, ProdAllocated: 32000, ProdMidUsage: 9000, SystemUsage: 1800}, 10000},
		{"busy node: floored at 0", 65, ResourceState{Allocatable: 32000, ProdMidUsage: 20000, SystemUsage: 1800}, 0},
		{"threshold 100 on an empty node", 100, ResourceState{Allocatable: 32000}, 32000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Batch(tc.pct, tc.s); got != tc.want {
				t.Errorf("Batch = %d, want %d", got, tc.want)
			}
		})
	}
}

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// busyNode: 32 cores, 100 GB.
func busyNode(updated time.Time) NodeInput {
	return NodeInput{
		CPU:        ResourceState{Allocatable: 32000, ProdAllocated: 20000, ProdPeak: 8000, ProdPeakKnown: true, ProdMidUsage: 9000, SystemUsage: 1800},
		Memory:     ResourceState{Allocatable: 100e9, ProdAllocated: 50e9, ProdPeak: 20e9, ProdPeakKnown: true, ProdMidUsage: 30e9, SystemUsage: 5e9},
		UpdateTime: updated,
	}
}

func TestCalculate(t *testing.T) {
	tests := []struct {
		name   string
		policy *v1alpha1.TierPolicy
		in     NodeInput
		want   Result
	}{{
		name: "defaults: mid 30%, reclaim 100%, batch cpu 75%, batch memory 65%",
		in:   busyNode(now.Add(-time.Minute)),
		// mid cpu min(20000 − 8000, 32000 × 30% = 9600) = 9600;
		// mid memory min(50e9 − 20e9, 100e9 × 30%) = 30e9;
		// batch cpu 32000 × 75% − 9000 − 1800 = 13200;
		// batch memory 65e9 − 30e9 − 5e9 = 30e9.
		want: Result{Allocatable: Allocatable{MidCPU: 9600, MidMemory: 30e9, BatchCPU: 13200, BatchMemory: 30e9}},
	}, {
		// The mixed variant is refused by the API (Prod cannot preempt
		// Mid yet); should a policy still carry it, nothing unallocated is
		// sold.
		name: "per-resource thresholds; the mixed variant is not applied",
		policy: &v1alpha1.TierPolicy{
			MidCPUThresholdPercent: ptr.To[int32](50), MidMemoryThresholdPercent: ptr.To[int32](10),
			BatchCPUThresholdPercent: ptr.To[int32](80), MidIncludeUnallocated: true,
		},
		in: busyNode(now.Add(-time.Minute)),
		// mid cpu min(12000, 16000, unused 32000 − 1800 − 9000) = 12000;
		// mid memory min(30e9, 10e9) = 10e9;
		// batch cpu 25600 − 10800 = 14800; batch memory (default 65%) 30e9.
		want: Result{Allocatable: Allocatable{MidCPU: 12000, MidMemory: 10e9, BatchCPU: 14800, BatchMemory: 30e9}},
	}, {
		name: "degrade: no node usage reported",
		in:   func() NodeInput { in := busyNode(now.Add(-time.Minute)); in.NodeUsageMissing = true; return in }(),
		want: Result{Degraded: true, Reason: "the node's NodeMetric reports no node usage of cpu and memory"},
	}, {
		name: "exactly degradeSeconds old still counts",
		in:   busyNode(now.Add(-600 * time.Second)),
		want: Result{Allocatable: Allocatable{MidCPU: 9600, MidMemory: 30e9, BatchCPU: 13200, BatchMemory: 30e9}},
	}, {
		name: "degrade: a NodeMetric older than degradeSeconds resets everything",
		in:   busyNode(now.Add(-601 * time.Second)),
		want: Result{Degraded: true, Reason: "the node's NodeMetric was last updated 10m1s ago, more than degradeSeconds (600s)"},
	}, {
		name:   "degrade with a custom degradeSeconds",
		policy: &v1alpha1.TierPolicy{DegradeSeconds: ptr.To[int64](60)},
		in:     busyNode(now.Add(-61 * time.Second)),
		want:   Result{Degraded: true, Reason: "the node's NodeMetric was last updated 1m1s ago, more than degradeSeconds (60s)"},
	}, {
		// The schema has no maximum: a degradeSeconds too large for a
		// time.Duration (about 292 years) means "never", not a wrapped,
		// negative limit that degrades every node.
		name:   "a degradeSeconds past time.Duration's range never degrades",
		policy: &v1alpha1.TierPolicy{DegradeSeconds: ptr.To[int64](1e10)},
		in:     busyNode(now.Add(-time.Minute)),
		want:   Result{Allocatable: Allocatable{MidCPU: 9600, MidMemory: 30e9, BatchCPU: 13200, BatchMemory: 30e9}},
	}, {
		name: "degrade: never reported",
		in:   busyNode(time.Time{}),
		want: Result{Degraded: true, Reason: "the node's NodeMetric has no status.updateTime"},
	}, {
		name:   "disabled",
		policy: &v1alpha1.TierPolicy{Enabled: ptr.To(false)},
		in:     busyNode(now),
		want:   Result{Reason: "tiers are disabled by the policy"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Calculate(tc.policy, tc.in, now)); diff != "" {
				t.Errorf("Calculate (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, CalculateDefaulted(v1alpha1.TierPolicyWithDefaults(tc.policy), tc.in, now)); diff != "" {
				t.Errorf("CalculateDefaulted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShouldUpdate(t *testing.T) {
	// 32 cores, 100 GB; the default threshold is 5%: 1600m and 5e9 bytes.
	base := Allocatable{MidCPU: 9600, MidMemory: 30e9, BatchCPU: 10000, BatchMemory: 30e9}
	with := func(mod func(*Allocatable)) Allocatable {
		a := base
		mod(&a)
		return a
	}
	current := base.ResourceList()
	tests := []struct {
		name       string
		policy     *v1alpha1.TierPolicy
		current    corev1.ResourceList
		next       Allocatable
		want       bool
		wantReason string
	}{
		{name: "nothing published yet", current: nil, next: base, want: true, wantReason: "waterline.dev/mid-cpu is not published yet"},
		{name: "unchanged", current: current, next: base, want: false},
		{name: "cpu moves by exactly 5%", current: current, next: with(func(a *Allocatable) { a.MidCPU += 1600 }), want: false},
		{name: "cpu moves by more than 5%", current: current, next: with(func(a *Allocatable) { a.BatchCPU -= 1601 }), want: true,
			wantReason: "waterline.dev/batch-cpu moves by 1601 (from 10000 to 8399), more than 5% of 32000"},
		{name: "memory moves by 5e9 + 1", current: current, next: with(func(a *Allocatable) { a.MidMemory += 5e9 + 1 }), want: true,
			wantReason: "waterline.dev/mid-memory moves by 5000000001 (from 30000000000 to 35000000001), more than 5% of 100000000000"},
		{name: "small drop to zero", current: Allocatable{MidCPU: 100, MidMemory: 30e9, BatchCPU: 10000, BatchMemory: 30e9}.ResourceList(),
			next: with(func(a *Allocatable) { a.MidCPU = 0; a.MidMemory = 30e9 }), want: true,
			wantReason: "waterline.dev/mid-cpu goes from 100 to 0"},
		{name: "small rise from zero", current: with(func(a *Allocatable) { a.BatchMemory = 0 }).ResourceList(),
			next: with(func(a *Allocatable) { a.BatchMemory = 1 }), want: true,
			wantReason: "waterline.dev/batch-memory goes from 0 to 1"},
		{name: "threshold 0: any change", policy: &v1alpha1.TierPolicy{UpdateThresholdPercent: ptr.To[int32](0)},
			current: current, next: with(func(a *Allocatable) { a.BatchCPU++ }), want: true,
			wantReason: "waterline.dev/batch-cpu moves by 1 (from 10000 to 10001), more than 0% of 32000"},
		{name: "threshold 0: no change", policy: &v1alpha1.TierPolicy{UpdateThresholdPercent: ptr.To[int32](0)},
			current: current, next: base, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := ShouldUpdate(tc.policy, 32000, 100e9, tc.current, tc.next)
			if diff := cmp.Diff([]any{tc.want, tc.wantReason}, []any{got, reason}); diff != "" {
				t.Errorf("ShouldUpdate (-want +got):\n%s", diff)
			}
			var cur *Allocatable
			if tc.current != nil {
				cur = &Allocatable{
					MidCPU: tc.current.Name(extension.ResourceMidCPU, resource.DecimalSI).Value(), MidMemory: tc.current.Name(extension.ResourceMidMemory, resource.BinarySI).Value(),
					BatchCPU: tc.current.Name(extension.ResourceBatchCPU, resource.DecimalSI).Value(), BatchMemory: tc.current.Name(extension.ResourceBatchMemory, resource.BinarySI).Value(),
				}
			}
			got, reason = ShouldUpdateDefaulted(v1alpha1.TierPolicyWithDefaults(tc.policy), 32000, 100e9, cur, tc.next)
			if diff := cmp.Diff([]any{tc.want, tc.wantReason}, []any{got, reason}); diff != "" {
				t.Errorf("ShouldUpdateDefaulted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceList(t *testing.T) {
	got := Allocatable{MidCPU: 9600, MidMemory: 1 << 30, BatchCPU: 0, BatchMemory: 5}.ResourceList()
	want := map[corev1.ResourceName]string{
		extension.ResourceMidCPU:      "9600", // millicores, as a count
		extension.ResourceMidMemory:   "1Gi",
		extension.ResourceBatchCPU:    "0",
		extension.ResourceBatchMemory: "5",
	}
	gotStr := map[corev1.ResourceName]string{}
	for k, v := range got {
		gotStr[k] = v.String()
	}
	if diff := cmp.Diff(want, gotStr); diff != "" {
		t.Errorf("ResourceList (-want +got):\n%s", diff)
	}
}

func rl(cpu, mem string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if cpu != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

type podOpt func(*corev1.Pod)

func pod(name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Priority: ptr.To[int32](9500)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func containers(reqs ...corev1.ResourceList) podOpt {
	return func(p *corev1.Pod) {
		for i, r := range reqs {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Resources: corev1.ResourceRequirements{Requests: r}})
		}
	}
}

func initContainer(sidecar bool, req corev1.ResourceList) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: req}}
		if sidecar {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name     string
		pod      *corev1.Pod
		cpu, mem int64
	}{
		{"containers add up", pod("a", "n", containers(rl("1", "1Gi"), rl("500m", "1Gi"))), 1500, 2 << 30},
		{"a larger init container wins", pod("a", "n", initContainer(false, rl("6", "1Gi")), containers(rl("2", "3Gi"))), 6000, 3 << 30},
		// sidecar 1 + app 2 = 3; the init after the sidecar needs 2.5 + 1 = 3.5.
		{"sidecars run with the app", pod("a", "n", initContainer(true, rl("1", "")), initContainer(false, rl("2500m", "")), containers(rl("2", ""))), 3500, 0},
		{"overhead on top", pod("a", "n", containers(rl("1", "")), func(p *corev1.Pod) { p.Spec.Overhead = rl("100m", "10Mi") }), 1100, 10 << 20},
		// Pod-level requests replace the containers' sum, resource by
		// resource, as the scheduler counts them (Kubernetes
		// resourcehelper.PodRequests); the overhead still adds.
		{"pod-level requests win", pod("a", "n", containers(rl("1", "1Gi")), func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("4", "")}
			p.Spec.Overhead = rl("100m", "")
		}), 4100, 1 << 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cpu, mem := PodRequests(tc.pod)
			if diff := cmp.Diff([]int64{tc.cpu, tc.mem}, []int64{cpu, mem}); diff != "" {
				t.Errorf("PodRequests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildInput(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: rl("32", "100G")}}
	pods := []*corev1.Pod{
		pod("prod-a", "n1", containers(rl("4", "10G"))),
		pod("prod-b", "n1", initContainer(false, rl("6", "1G")), containers(rl("2", "5G"))), // 6 cores, 5G
		pod("elsewhere", "n2", containers(rl("8", "8G"))),
		pod("done", "n1", containers(rl("8", "8G")), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("batch", "n1", containers(rl("8", "8G")), func(p *corev1.Pod) { p.Labels = map[string]string{extension.LabelBand: "batch"} }),
		pod("mid", "n1", containers(rl("8", "8G")), func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](7500) }),
	}
	updated := metav1.NewTime(now.Add(-time.Minute))
	nm := &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: v1alpha1.NodeMetricStatus{
			UpdateTime:      &updated,
			ProdPeak:        rl("8", "20G"),
			ProdReclaimable: rl("2", "0"),
			NodeMetric:      &v1alpha1.NodeMetricInfo{NodeUsage: rl("10", "40G"), SystemUsage: rl("1", "5G")},
			PodsMetric: []v1alpha1.PodMetricInfo{
				{Namespace: "default", Name: "prod-a", Band: "prod", Usage: rl("3", "8G")},
				{Namespace: "default", Name: "mid", Band: "mid", Usage: rl("1", "4G")},
				{Namespace: "default", Name: "batch", Band: "batch", Usage: rl("2", "6G")},
				{Namespace: "default", Name: "new", Usage: rl("500m", "1G")},
			},
		},
	}
	tests := []struct {
		name string
		nm   *v1alpha1.NodeMetric
		want NodeInput
	}{{
		name: "everything reported",
		nm:   nm,
		// Prod requests: prod-a 4 + prod-b 6 = 10 cores; 10G + 5G.
		// Prod+Mid use: pods 3 + 1 + 0.5 (band unknown) = 4.5 cores, but
		// node 10 − system 1 − batch 2 = 7 is more → 7 cores.
		// Memory: pods 8 + 4 + 1 = 13G vs 40 − 5 − 6 = 29G → 29G.
		want: NodeInput{
			CPU: ResourceState{Capacity: 32000, Allocatable: 32000, ProdAllocated: 10000, ProdPeak: 8000, ProdPeakKnown: true,
				ReportedReclaimable: 2000, ReportedReclaimableKnown: true, ProdMidUsage: 7000, NodeUsage: 10000, SystemUsage: 1000},
			Memory: ResourceState{Capacity: 100e9, Allocatable: 100e9, ProdAllocated: 15e9, ProdPeak: 20e9, ProdPeakKnown: true,
				ReportedReclaimableKnown: true, ProdMidUsage: 29e9, NodeUsage: 40e9, SystemUsage: 5e9},
			UpdateTime: updated.Time,
		},
	}, {
		name: "no NodeMetric: requests only, never updated",
		nm:   nil,
		want: NodeInput{
			CPU:              ResourceState{Capacity: 32000, Allocatable: 32000, ProdAllocated: 10000},
			Memory:           ResourceState{Capacity: 100e9, Allocatable: 100e9, ProdAllocated: 15e9},
			NodeUsageMissing: true,
		},
	}, {
		name: "no peak yet, pod metrics above node usage",
		nm: &v1alpha1.NodeMetric{Status: v1alpha1.NodeMetricStatus{
			UpdateTime: &updated,
			PodsMetric: []v1alpha1.PodMetricInfo{{Name: "prod-a", Band: "prod", Usage: rl("3", "8G")}},
		}},
		want: NodeInput{
			CPU:              ResourceState{Capacity: 32000, Allocatable: 32000, ProdAllocated: 10000, ProdMidUsage: 3000},
			Memory:           ResourceState{Capacity: 100e9, Allocatable: 100e9, ProdAllocated: 15e9, ProdMidUsage: 8e9},
			UpdateTime:       updated.Time,
			NodeUsageMissing: true,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, BuildInput(node, pods, tc.nm)); diff != "" {
				t.Errorf("BuildInput (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("end to end: a stale NodeMetric sells nothing", func(t *testing.T) {
		stale := nm.DeepCopy()
		stale.Status.UpdateTime = ptr.To(metav1.NewTime(now.Add(-time.Hour)))
		got := Calculate(nil, BuildInput(node, pods, stale), now)
		if got.Allocatable != (Allocatable{}) || !got.Degraded || !strings.Contains(got.Reason, "degradeSeconds") {
			t.Errorf("Calculate on a stale NodeMetric = %+v, want zero and degraded", got)
		}
	})
}

func TestReclaimableOf(t *testing.T) {
	tests := []struct {
		ratio           int32
		requested, peak int64
		want            int64
	}{
		{100, 20000, 8000, 12000},
		{80, 20000, 8000, 8000},
		{100, 8000, 12000, 0},
		{0, 20000, 0, 0},
	}
	for _, tc := range tests {
		if got := ReclaimableOf(tc.ratio, tc.requested, tc.peak); got != tc.want {
			t.Errorf("ReclaimableOf(%d, %d, %d) = %d, want %d", tc.ratio, tc.requested, tc.peak, got, tc.want)
		}
		s := ResourceState{ProdAllocated: tc.requested, ProdPeak: tc.peak, ProdPeakKnown: true}
		if got := Reclaimable(tc.ratio, s); got != tc.want {
			t.Errorf("Reclaimable(%d, %+v) = %d, want %d: the manager and the agent must share one definition", tc.ratio, s, got, tc.want)
		}
	}
}
