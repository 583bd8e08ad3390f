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

package nodeload

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/apis/extension"
)

// benchNodes builds n nodes of 16 cores / 64Gi at 20-50 % cpu, each with
// ten reported pods, so that every node passes Filter.
func benchNodes(b *testing.B, c *Config, n int) []NodeLoad {
	b.Helper()
	nodes := make([]NodeLoad, n)
	for i := range nodes {
		mb := makeMetric("n", t0).usage("cpu", fmt.Sprintf("%dm", 3200+i%5*1000), "memory", "20Gi")
		for j := range 10 {
			mb.pod("ns", fmt.Sprintf("p%d", j), extension.BandProd, "cpu", "300m", "memory", "700Mi")
		}
		nodes[i] = NodeLoad{Allocatable: vec(16000, 64*Gi), Thresholds: c.Thresholds, Metric: c.NewMetric(mb.obj())}
	}
	return nodes
}

// BenchmarkFilterScore is the per-node decision of one scheduling cycle.
func BenchmarkFilterScore(b *testing.B) {
	c := mustConfig(b, defaultSpec())
	nodes := benchNodes(b, c, 5000)
	pod, err := c.NewPodLoad(makePod("ns", "p").req("cpu", "1", "memory", "2Gi").obj())
	if err != nil {
		b.Fatal(err)
	}
	now := t0.Add(10 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		for i := range nodes {
			if v := c.Filter(&pod, &nodes[i], now); v.Reason != Fit {
				b.Fatalf("node %d refused: %+v", i, v)
			}
			c.Score(&pod, &nodes[i], now)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(nodes)), "ns/node")
}

// BenchmarkNodeExcess sums the excess of ten assigned pods, which a node
// pays again only when a pod or its NodeMetric changes.
func BenchmarkNodeExcess(b *testing.B) {
	c := mustConfig(b, defaultSpec())
	node := benchNodes(b, c, 1)[0]
	var pods []*AssignedPod
	for j := range 10 {
		p, err := c.NewAssignedPod(makePod("ns", fmt.Sprintf("p%d", j)).req("cpu", "500m", "memory", "1Gi").obj(), t0.Add(-time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		pods = append(pods, &p)
	}
	now := t0.Add(10 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		NodeExcess(slices.Values(pods), node.Metric, now)
	}
	b.ReportMetric(10, "pods/node")
}

// BenchmarkNewPodLoad is the estimate PreFilter makes once per pod.
func BenchmarkNewPodLoad(b *testing.B) {
	c := mustConfig(b, defaultSpec())
	pod := makePod("ns", "p").req("cpu", "1", "memory", "2Gi").lim("cpu", "2", "memory", "2Gi").obj()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.NewPodLoad(pod); err != nil {
			b.Fatal(err)
		}
	}
}
