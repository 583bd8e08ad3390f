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

package preemption

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// benchCluster: nodes of 8 CPU, each full with 8 pods of 1 CPU cycling
// through free (3500), batch (5000), mid-np (7500, NonPreemptible below
// 9000) and prod (9500) priorities.
func benchCluster(nodes int) []NodePods {
	out := make([]NodePods, nodes)
	for n := range nodes {
		name := fmt.Sprintf("node-%04d", n)
		np := NodePods{Node: makeNode(name, 8000)}
		for i := range 8 {
			b := makePod(fmt.Sprintf("%s-p%d", name, i)).cpu(1000).node(name).started(i)
			switch i % 4 {
			case 0:
				b.priority(3500)
			case 1:
				b.priority(5000).class("batch")
			case 2:
				b.priority(7500).class("mid-np")
			case 3:
				b.priority(9500).class("prod")
			}
			np.Pods = append(np.Pods, b.obj())
		}
		out[n] = np
	}
	return out
}

// BenchmarkSelectVictims compares one pending pod's decision with no class
// lookup (default preemption's rules only: the baseline) and with
// Waterline's classes (a quarter of the pods NonPreemptible).
func BenchmarkSelectVictims(b *testing.B) {
	const numNodes = 500
	nodes := benchCluster(numNodes)
	classes, err := ParseClasses(classList())
	if err != nil {
		b.Fatal(err)
	}
	pod := makePod("pending").priority(8000).cpu(3000).obj()
	for _, bc := range []struct {
		name    string
		classes ClassLookup
	}{
		{"baseline-no-classes", nil},
		{"waterline-classes", classes.Lookup},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := &Snapshot{Nodes: nodes, Classes: bc.classes}
			b.ReportAllocs()
			var r Result
			for b.Loop() {
				r = s.SelectVictims(pod)
			}
			if r.Outcome != Preempts {
				b.Fatalf("outcome %s: %s", r.Outcome, r.Message)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/numNodes, "ns/node")
			b.ReportMetric(float64(len(r.Victims)), "victims")
		})
	}
}

// BenchmarkDryRun is the audit's cost: 100 pending pods over 500 full nodes.
func BenchmarkDryRun(b *testing.B) {
	const numNodes, numPending = 500, 100
	classes, err := ParseClasses(classList())
	if err != nil {
		b.Fatal(err)
	}
	s := &Snapshot{Nodes: benchCluster(numNodes), Classes: classes.Lookup}
	pending := make([]*corev1.Pod, numPending)
	for i := range pending {
		pending[i] = makePod(fmt.Sprintf("pending-%03d", i)).priority(int32(8000 + i%3*700)).cpu(2000).created(i).obj()
	}
	b.ReportAllocs()
	for b.Loop() {
		s.DryRun(pending)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/numPending, "ns/pending-pod")
}

// BenchmarkVictimVerdict is the per-pod cost the plugin's hook adds.
func BenchmarkVictimVerdict(b *testing.B) {
	classes, err := ParseClasses(classList())
	if err != nil {
		b.Fatal(err)
	}
	victim := makePod("v").priority(7500).class("mid-np").obj()
	preemptor := makePod("p").priority(8000).obj()
	b.ReportAllocs()
	for b.Loop() {
		if VictimVerdict(victim, preemptor, classes.Lookup).Eligible() {
			b.Fatal("mid-np pod eligible below its threshold")
		}
	}
}
