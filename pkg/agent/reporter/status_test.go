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

package reporter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

const mi = 1 << 20

// series is what one test puts in the cache: for sample i (at t0+i+1 s,
// i = 0..9) the value f(i), or nothing when ok is false.
type series struct {
	key metriccache.SeriesKey
	f   func(i int) (v float64, ok bool)
}

func always(v float64) func(int) (float64, bool) { return func(int) (float64, bool) { return v, true } }

// nodeCPU1to10 is 1, 2, ..., 10 cores.
func nodeCPU1to10(i int) (float64, bool) { return float64(i + 1), true }

// newCache returns a cache with ten samples, one a second, the clock at
// the last one.
func newCache(t *testing.T, ss []series) *metriccache.Cache {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	c, err := metriccache.New(t.Context(), metriccache.Config{}, clk)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		clk.Step(time.Second)
		var pts []metriccache.Point
		for _, s := range ss {
			if v, ok := s.f(i); ok {
				pts = append(pts, metriccache.Point{Key: s.key, Value: v})
			}
		}
		if err := c.Append(clk.Now(), pts); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func pod(ns, name, uid string, band extension.Band) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	if band != "" {
		p.Labels = map[string]string{extension.LabelBand: string(band)}
	}
	return p
}

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func policy(aggregateSeconds int64, windows ...time.Duration) *v1alpha1.NodeMetricCollectPolicy {
	p := &v1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To(aggregateSeconds)}
	for _, w := range windows {
		p.AggregateDurations = append(p.AggregateDurations, metav1.Duration{Duration: w})
	}
	return v1alpha1.CollectPolicyWithDefaults(p)
}

func TestBuildUsage(t *testing.T) {
	cpu := metriccache.ResourceCPU
	mem := metriccache.ResourceMemory
	node := []series{
		{metriccache.NodeKey(cpu), nodeCPU1to10},
		{metriccache.NodeKey(mem), always(4096 * mi)},
	}
	tests := []struct {
		name   string
		series []series
		policy *v1alpha1.NodeMetricCollectPolicy
		pods   []*corev1.Pod
		want   Usage
		wantOK bool
	}{
		{
			name:   "empty cache reports nothing",
			policy: policy(300),
		},
		{
			name:   "node memory without CPU (first cycle) reports nothing",
			series: []series{{metriccache.NodeKey(mem), always(4096 * mi)}},
			policy: policy(300),
		},
		{
			// Node CPU 1..10: over 5 s the last five, 6..10: avg 8,
			// nearest-rank p50 = 3rd of 5 = 8, p90/p95/p99 = 5th = 10.
			// Over 1 m all ten: avg 5.5, p50 = 5th = 5, p90 = 9th = 9,
			// p95 = p99 = 10th = 10.
			name:   "node, system and aggregates over the policy's windows",
			series: append(node, series{metriccache.SystemKey(cpu), always(0.5)}, series{metriccache.SystemKey(mem), always(1024 * mi)}),
			policy: policy(5, 5*time.Second, time.Minute),
			want: Usage{
				NodeMetric: &v1alpha1.NodeMetricInfo{
					NodeUsage:   rl("8", "4Gi"),
					SystemUsage: rl("500m", "1Gi"),
					AggregatedNodeUsages: []v1alpha1.AggregatedUsage{
						{Duration: metav1.Duration{Duration: 5 * time.Second}, Usage: map[v1alpha1.AggregationType]corev1.ResourceList{
							"avg": rl("8", "4Gi"), "p50": rl("8", "4Gi"), "p90": rl("10", "4Gi"),
							"p95": rl("10", "4Gi"), "p99": rl("10", "4Gi"), "max": rl("10", "4Gi"),
						}},
						{Duration: metav1.Duration{Duration: time.Minute}, Usage: map[v1alpha1.AggregationType]corev1.ResourceList{
							"avg": rl("5500m", "4Gi"), "p50": rl("5", "4Gi"), "p90": rl("9", "4Gi"),
							"p95": rl("10", "4Gi"), "p99": rl("10", "4Gi"), "max": rl("10", "4Gi"),
						}},
					},
				},
				PodsMetric: []v1alpha1.PodMetricInfo{},
			},
			wantOK: true,
		},
		{
			// Pod a: 0.25 cores for the first five samples, 0.75 for the
			// last five: over 5 s avg 0.75; over 300 s (all ten) 0.5.
			// Memory 100 Mi then 300 Mi: 300 Mi over 5 s.
			name: "pods with both resources, sorted, with their band",
			series: append(node,
				series{metriccache.PodKey("a", cpu), func(i int) (float64, bool) { return []float64{0.25, 0.75}[i/5], true }},
				series{metriccache.PodKey("a", mem), func(i int) (float64, bool) { return float64([]int{100, 300}[i/5] * mi), true }},
				series{metriccache.PodKey("e", cpu), always(0.001)},
				series{metriccache.PodKey("e", mem), always(1 * mi)},
			),
			policy: policy(5),
			pods:   []*corev1.Pod{pod("default", "a", "a", extension.BandBatch), pod("aaa", "e", "e", "")},
			want: Usage{
				PodsMetric: []v1alpha1.PodMetricInfo{
					{Namespace: "aaa", Name: "e", Band: "prod", Usage: rl("1m", "1Mi")},
					{Namespace: "default", Name: "a", Band: "batch", Usage: rl("750m", "300Mi")},
				},
			},
			wantOK: true,
		},
		{
			name: "the aggregate window reaches back to older samples",
			series: append(node,
				series{metriccache.PodKey("a", cpu), func(i int) (float64, bool) { return []float64{0.25, 0.75}[i/5], true }},
				series{metriccache.PodKey("a", mem), func(i int) (float64, bool) { return float64([]int{100, 300}[i/5] * mi), true }},
			),
			policy: policy(300),
			pods:   []*corev1.Pod{pod("default", "a", "a", extension.BandMid)},
			want: Usage{
				// (5 × 0.25 + 5 × 0.75) / 10 = 0.5; (100 + 300) / 2 = 200 Mi.
				PodsMetric: []v1alpha1.PodMetricInfo{{Namespace: "default", Name: "a", Band: "mid", Usage: rl("500m", "200Mi")}},
			},
			wantOK: true,
		},
		{
			name: "a pod without CPU, one not in the cache and one not on the node are left out",
			series: append(node,
				series{metriccache.PodKey("memonly", mem), always(10 * mi)},
				series{metriccache.PodKey("gone", cpu), always(1)},
				series{metriccache.PodKey("gone", mem), always(10 * mi)},
			),
			policy: policy(300),
			pods:   []*corev1.Pod{pod("default", "memonly", "memonly", ""), pod("default", "new", "new", "")},
			want:   Usage{PodsMetric: []v1alpha1.PodMetricInfo{}},
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, tt.series)
			got, ok := BuildUsage(c, tt.policy, tt.pods)
			if ok != tt.wantOK {
				t.Fatalf("BuildUsage ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if tt.want.NodeMetric == nil {
				// The pod cases check only the pods.
				got.NodeMetric = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BuildUsage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuantities(t *testing.T) {
	tests := []struct {
		name string
		got  resource.Quantity
		want string
	}{
		{"cpu rounds to the nearest millicore", cpuQuantity(0.50049), "500m"},
		{"cpu rounds half up", cpuQuantity(0.0015), "2m"},
		{"whole cores", cpuQuantity(3), "3"},
		{"negative cpu is zero", cpuQuantity(-0.1), "0"},
		{"memory in bytes", memoryQuantity(123456789.4), "123456789"},
		{"memory in binary units when exact", memoryQuantity(1 << 30), "1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// steppingClock moves 300 ms on every read once stepping: the time a busy
// agent's reporter can lose between two reads of the cache.
type steppingClock struct {
	*testingclock.FakeClock
	stepping bool
}

func (c *steppingClock) Now() time.Time {
	if c.stepping {
		c.Step(300 * time.Millisecond)
	}
	return c.FakeClock.Now()
}

// TestBuildUsageOneWindow: the node's, the system's and the pods' averages
// cover the same samples however late each is read, so the reported system
// memory is the node's less its pods' (the samples' own relation) while the
// node's memory moves. Read each over its own window ending at its own
// now, they covered different samples, and the system's memory was off by
// the node's movement.
func TestBuildUsageOneWindow(t *testing.T) {
	clk := &steppingClock{FakeClock: testingclock.NewFakeClock(t0)}
	c, err := metriccache.New(t.Context(), metriccache.Config{}, clk)
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := metriccache.ResourceCPU, metriccache.ResourceMemory
	for i := range 30 {
		clk.Step(time.Second)
		nodeMem := float64(2048+i*i) * mi // moving with the machine's other work
		if err := c.Append(clk.Now(), []metriccache.Point{
			{Key: metriccache.NodeKey(cpu), Value: 2}, {Key: metriccache.NodeKey(mem), Value: nodeMem},
			{Key: metriccache.SystemKey(cpu), Value: 1.5}, {Key: metriccache.SystemKey(mem), Value: nodeMem - 100*mi},
			{Key: metriccache.PodKey("p", cpu), Value: 0.5}, {Key: metriccache.PodKey("p", mem), Value: 100 * mi},
		}); err != nil {
			t.Fatal(err)
		}
	}
	clk.stepping = true
	u, ok := BuildUsage(c, policy(10), []*corev1.Pod{pod("default", "p", "p", extension.BandBatch)})
	if !ok || len(u.PodsMetric) != 1 {
		t.Fatalf("BuildUsage = %+v, %v; want the node and the pod", u, ok)
	}
	node, sys := u.NodeMetric.NodeUsage[corev1.ResourceMemory], u.NodeMetric.SystemUsage[corev1.ResourceMemory]
	podMem := u.PodsMetric[0].Usage[corev1.ResourceMemory]
	if d := node.Value() - podMem.Value() - sys.Value(); d < -1 || d > 1 {
		t.Errorf("node memory %s, pod %s, system %s: node − pod − system = %d bytes, want 0 (± rounding)", &node, &podMem, &sys, d)
	}
}
