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

package qos

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

func TestSorters(t *testing.T) {
	tests := []struct {
		name   string
		sorter Sorter
		pods   []Candidate
		want   []string
	}{
		{
			name:   "class and priority: free before batch, BestEffort before Burstable, then lower priority",
			sorter: GeneralSorter(),
			pods: []Candidate{
				cand(makePod("batch-burstable-5100").priority(5100).qos(corev1.PodQOSBurstable), usage{}),
				cand(makePod("batch-besteffort-5900").priority(5900).qos(corev1.PodQOSBestEffort), usage{}),
				cand(makePod("free-burstable").band(extension.BandFree).priority(3500).qos(corev1.PodQOSBurstable), usage{}),
				cand(makePod("batch-burstable-5000").priority(5000).qos(corev1.PodQOSBurstable), usage{}),
			},
			// Band first, then QoS class (class before value,
			// docs/design/node-qos.md#sorting), then priority value.
			want: []string{"free-burstable", "batch-besteffort-5900", "batch-burstable-5000", "batch-burstable-5100"},
		},
		{
			name:   "CPU sorter: the bigger CPU user goes first within a class",
			sorter: CPUSorter(),
			pods: []Candidate{
				cand(makePod("small"), usage{cpu: 100}),
				cand(makePod("big"), usage{cpu: 900}),
				cand(makePod("free-tiny").band(extension.BandFree), usage{cpu: 1}),
				cand(makePod("mid"), usage{cpu: 500}),
			},
			want: []string{"free-tiny", "big", "mid", "small"},
		},
		{
			name:   "CPU sorter: equal usage, a tier pod nearer its tier limit goes first, then a pod without tier CPU",
			sorter: CPUSorter(),
			pods: []Candidate{
				// Same QoS class for all three, so that only the ratio decides.
				cand(makePod("no-tier").cpu("1", "2").qos(corev1.PodQOSBurstable), usage{cpu: 500}),
				// 500 ÷ 2000 = 25 %
				cand(makePod("tier-25pct").batchCPU("1000", "2000").qos(corev1.PodQOSBurstable), usage{cpu: 500}),
				// 500 ÷ 1000 = 50 %
				cand(makePod("tier-50pct").batchCPU("1000", "1000").qos(corev1.PodQOSBurstable), usage{cpu: 500}),
			},
			want: []string{"tier-50pct", "tier-25pct", "no-tier"},
		},
		{
			name:   "running time: the pod that started last (ran shortest) goes first; a pod not started counts as newest",
			sorter: GeneralSorter(),
			pods: []Candidate{
				cand(makePod("old").started(-2*time.Hour), usage{}),
				cand(makePod("new").started(-1*time.Minute), usage{}),
				cand(makePod("pending").notStarted(), usage{}),
				cand(makePod("middle").started(-1*time.Hour), usage{}),
			},
			want: []string{"pending", "new", "middle", "old"},
		},
		{
			name:   "memory sorter: priority first, then the bigger memory user",
			sorter: MemorySorter(),
			pods: []Candidate{
				cand(makePod("hi-prio-big").priority(5900), usage{mem: 8 * gib}),
				cand(makePod("lo-prio-small").priority(5000), usage{mem: 1 * gib}),
				cand(makePod("lo-prio-big").priority(5000), usage{mem: 4 * gib}),
			},
			want: []string{"lo-prio-big", "lo-prio-small", "hi-prio-big"},
		},
		{
			// The release is measured by usage, not request.
			name:   "CPU eviction sorter: lowest priority, then the biggest user",
			sorter: CPUEvictionSorter(),
			pods: []Candidate{
				cand(makePod("hi-prio").priority(5900).batchCPU("4000", ""), usage{cpu: 4000}),
				cand(makePod("small-req").batchCPU("500", ""), usage{cpu: 3000}),
				cand(makePod("big-req-low-use").batchCPU("2000", ""), usage{cpu: 100}),
				cand(makePod("big-req-high-use").batchCPU("2000", ""), usage{cpu: 900}),
			},
			want: []string{"small-req", "big-req-high-use", "big-req-low-use", "hi-prio"},
		},
		{
			name:   "ties on every criterion break by namespace then name",
			sorter: CPUSorter(),
			pods: []Candidate{
				cand(makePod("b").namespace("ns1"), usage{cpu: 100}),
				cand(makePod("a").namespace("ns2"), usage{cpu: 100}),
				cand(makePod("a").namespace("ns1"), usage{cpu: 100}),
			},
			want: []string{"ns1/a", "ns1/b", "ns2/a"},
		},
		{
			name:   "reverse puts the most important first (restore order)",
			sorter: GeneralSorter().Reverse(),
			pods: []Candidate{
				cand(makePod("free").band(extension.BandFree), usage{}),
				cand(makePod("batch-old").started(-time.Hour), usage{}),
				cand(makePod("batch-new"), usage{}),
			},
			want: []string{"batch-old", "batch-new", "free"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every permutation of the input must give the same order.
			rng := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				ptrs := make([]*Candidate, len(tt.pods))
				for i := range tt.pods {
					ptrs[i] = &tt.pods[i]
				}
				rng.Shuffle(len(ptrs), func(i, j int) { ptrs[i], ptrs[j] = ptrs[j], ptrs[i] })
				tt.sorter.Sort(ptrs)
				var got []string
				for _, c := range ptrs {
					name := c.Name
					if c.Namespace != "default" {
						name = c.Namespace + "/" + c.Name
					}
					got = append(got, name)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Fatalf("order (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestOrderedByComposes(t *testing.T) {
	// A custom metric's sorter is classAndPriority plus its own criterion, as
	// docs/design/node-qos.md#sorting describes; the composition must apply
	// criteria in order.
	byMemThenCPU := OrderedBy(MemoryUsage, CPUUsage)
	a := cand(makePod("a"), usage{mem: 2, cpu: 1})
	b := cand(makePod("b"), usage{mem: 2, cpu: 5})
	c := cand(makePod("c"), usage{mem: 3, cpu: 0})
	got := []*Candidate{&a, &b, &c}
	byMemThenCPU.Sort(got)
	var names []string
	for _, x := range got {
		names = append(names, x.Name)
	}
	if diff := cmp.Diff([]string{"c", "b", "a"}, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if !(Sorter{}).IsZero() || byMemThenCPU.IsZero() {
		t.Errorf("IsZero: want true for the zero sorter only")
	}
}
