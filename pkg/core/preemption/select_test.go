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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// result is a Result by names, for readable tables.
type result struct {
	Outcome       Outcome
	Node          string
	Victims       []string
	PDBViolations int
	Message       string
}

func byNames(r Result) result {
	var victims []string
	if len(r.Victims) > 0 {
		victims = names(r.Victims)
	}
	return result{Outcome: r.Outcome, Node: r.Node, Victims: victims, PDBViolations: r.PDBViolations, Message: r.Message}
}

func TestSelectVictims(t *testing.T) {
	tests := []struct {
		name  string
		nodes []NodePods
		pdbs  []*policyv1.PodDisruptionBudget
		pod   *corev1.Pod
		want  result
	}{
		{
			name: "fits without preemption",
			// 2000m - 1000m used = 1000m free >= 1000m asked.
			nodes: []NodePods{{makeNode("n1", 2000), []*corev1.Pod{makePod("a").priority(3000).cpu(1000).obj()}}},
			pod:   makePod("p").priority(9500).cpu(1000).obj(),
			want:  result{Outcome: Fits, Node: "n1"},
		},
		{
			name: "lowest priority goes first and only as many as needed",
			// 4000m: a 1000 (3000), b 1000 (5000), c 2000 (9600, above the preemptor).
			// Without a and b: 2000 + 1000 asked = 3000 <= 4000. Give back b
			// (more important): 4000 <= 4000 fits. Give back a: 5000 > 4000, a goes.
			nodes: []NodePods{{makeNode("n1", 4000), []*corev1.Pod{
				makePod("a").priority(3000).cpu(1000).obj(),
				makePod("b").priority(5000).cpu(1000).obj(),
				makePod("c").priority(9600).cpu(2000).obj(),
			}}},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"a"}},
		},
		{
			name: "equal priority: the one that started later goes",
			// 2000m full with a (started t0+1) and b (t0+2), same priority:
			// a is more important, given back first (1000+1000 = 2000 fits); b goes.
			nodes: []NodePods{{makeNode("n1", 2000), []*corev1.Pod{
				makePod("a").priority(3000).cpu(1000).started(1).obj(),
				makePod("b").priority(3000).cpu(1000).started(2).obj(),
			}}},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"b"}},
		},
		{
			name: "PDB-protected pod is given back first",
			// Same as above but a PDB with 0 disruptions covers b: b is given
			// back first (1000+1000 = 2000 fits), then a does not fit and goes.
			nodes: []NodePods{{makeNode("n1", 2000), []*corev1.Pod{
				makePod("a").priority(3000).cpu(1000).started(1).obj(),
				makePod("b").priority(3000).cpu(1000).started(2).label("app", "web").obj(),
			}}},
			pdbs: []*policyv1.PodDisruptionBudget{makePDB("web", 0)},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"a"}},
		},
		{
			name: "PDB violated when nothing else frees room",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("b").priority(3000).cpu(1000).label("app", "web").obj(),
			}}},
			pdbs: []*policyv1.PodDisruptionBudget{makePDB("web", 0)},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"b"}, PDBViolations: 1},
		},
		{
			name: "PDB with a disruption left is not violated",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("b").priority(3000).cpu(1000).label("app", "web").obj(),
			}}},
			pdbs: []*policyv1.PodDisruptionBudget{makePDB("web", 1)},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"b"}},
		},
		{
			name: "node without PDB violations wins",
			// n1 would violate a PDB, n2 costs a higher-priority victim.
			nodes: []NodePods{
				{makeNode("n1", 1000), []*corev1.Pod{makePod("a").priority(3000).cpu(1000).label("app", "web").obj()}},
				{makeNode("n2", 1000), []*corev1.Pod{makePod("b").priority(5000).cpu(1000).obj()}},
			},
			pdbs: []*policyv1.PodDisruptionBudget{makePDB("web", 0)},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n2", Victims: []string{"b"}},
		},
		{
			name: "node with the lowest highest-priority victim wins",
			nodes: []NodePods{
				{makeNode("n1", 1000), []*corev1.Pod{makePod("a").priority(5000).cpu(1000).obj()}},
				{makeNode("n2", 1000), []*corev1.Pod{makePod("b").priority(3000).cpu(1000).obj()}},
			},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n2", Victims: []string{"b"}},
		},
		{
			name: "same top priority: fewer victims win",
			// n1: two 500m pods at 3000 must both go; n2: one 1000m pod at 3000.
			nodes: []NodePods{
				{makeNode("n1", 1000), []*corev1.Pod{makePod("a1").priority(3000).cpu(500).obj(), makePod("a2").priority(3000).cpu(500).obj()}},
				{makeNode("n2", 1000), []*corev1.Pod{makePod("b").priority(3000).cpu(1000).obj()}},
			},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n2", Victims: []string{"b"}},
		},
		{
			name: "full tie: the later-started victim's node wins",
			nodes: []NodePods{
				{makeNode("n1", 1000), []*corev1.Pod{makePod("a").priority(3000).cpu(1000).started(5).obj()}},
				{makeNode("n2", 1000), []*corev1.Pod{makePod("b").priority(3000).cpu(1000).started(1).obj()}},
			},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"a"}},
		},
		{
			name: "complete tie: first node by name",
			nodes: []NodePods{
				{makeNode("n2", 1000), []*corev1.Pod{makePod("b").priority(3000).cpu(1000).obj()}},
				{makeNode("n1", 1000), []*corev1.Pod{makePod("a").priority(3000).cpu(1000).obj()}},
			},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"a"}},
		},
		{
			name: "NonPreemptible pod stays below the threshold: pending with the reason",
			// 2000m: np 1000 (mid-np, yields at 9000) + a 1000. Preemptor 8000 asks
			// 2000: without a, 1000 + 2000 = 3000 > 2000.
			nodes: []NodePods{{makeNode("n1", 2000), []*corev1.Pod{
				makePod("np").priority(7500).class("mid-np").cpu(1000).obj(),
				makePod("a").priority(3000).cpu(1000).obj(),
			}}},
			pod: makePod("p").priority(8000).cpu(2000).obj(),
			want: result{Outcome: Unschedulable, Message: `0/1 nodes are available: 1 Insufficient cpu, ` +
				`1 node(s) had pods of NonPreemptible PriorityClass "mid-np", not preemptible by priority 8000 below threshold 9000.`},
		},
		{
			name: "NonPreemptible pod is a victim at the threshold",
			// Without np and a: 0 + 2000 = 2000 fits; giving back np (more
			// important) makes 3000 > 2000, and a likewise: both go.
			nodes: []NodePods{{makeNode("n1", 2000), []*corev1.Pod{
				makePod("np").priority(7500).class("mid-np").cpu(1000).obj(),
				makePod("a").priority(3000).cpu(1000).obj(),
			}}},
			pod:  makePod("p").priority(9000).cpu(2000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"np", "a"}},
		},
		{
			name: "NonPreemptible pod protected, the normal pod is enough",
			// Preemptor 8000 asks 1000: without a, 1000 + 1000 = 2000 fits.
			nodes: []NodePods{{makeNode("n1", 2000), []*corev1.Pod{
				makePod("np").priority(7500).class("mid-np").cpu(1000).obj(),
				makePod("a").priority(7000).cpu(1000).obj(),
			}}},
			pod:  makePod("p").priority(8000).cpu(1000).obj(),
			want: result{Outcome: Preempts, Node: "n1", Victims: []string{"a"}},
		},
		{
			name: "only NonPreemptible pods: no victims",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("np").priority(7500).class("mid-np").cpu(1000).obj(),
			}}},
			pod: makePod("p").priority(8000).cpu(1000).obj(),
			want: result{Outcome: Unschedulable, Message: `0/1 nodes are available: 1 No preemption victims found for incoming pod, ` +
				`1 node(s) had pods of NonPreemptible PriorityClass "mid-np", not preemptible by priority 8000 below threshold 9000.`},
		},
		{
			name: "DaemonSet pod is kept, the preemptor stays pending",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("ds").priority(0).ownedBy("DaemonSet").cpu(1000).obj(),
			}}},
			pod: makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Unschedulable, Message: "0/1 nodes are available: 1 No preemption victims found for incoming pod, " +
				"1 node(s) had DaemonSet pods, which are never preempted."},
		},
		{
			name: "preemptionPolicy Never preempts nothing",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("a").priority(3000).cpu(1000).obj(),
			}}},
			pod:  makePod("p").priority(9500).cpu(1000).never().obj(),
			want: result{Outcome: NotEligible, Message: "not eligible due to preemptionPolicy=Never"},
		},
		{
			name: "class preemptionPolicy Never preempts nothing",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("a").priority(3000).cpu(1000).obj(),
			}}},
			pod:  makePod("p").priority(9900).class("hi-once").cpu(1000).obj(),
			want: result{Outcome: NotEligible, Message: `not eligible due to preemptionPolicy=Never of PriorityClass "hi-once"`},
		},
		{
			name: "higher-priority pods only: nothing to preempt",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("a").priority(9600).cpu(1000).obj(),
			}}},
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Unschedulable, Message: "0/1 nodes are available: 1 No preemption victims found for incoming pod."},
		},
		{
			name: "too big even on an empty node",
			// 1000m node, a 500 preemptible; asking 1500 > 1000 after removing a.
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				makePod("a").priority(3000).cpu(500).obj(),
			}}},
			pod:  makePod("p").priority(9500).cpu(1500).obj(),
			want: result{Outcome: Unschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."},
		},
		{
			name: "node selector and taints rule nodes out before preemption",
			nodes: []NodePods{
				{makeNode("n1", 1000), []*corev1.Pod{makePod("a").priority(3000).cpu(1000).obj()}},
				{tainted(makeNode("n2", 1000)), []*corev1.Pod{makePod("b").priority(3000).cpu(1000).obj()}},
				{makeNode("n3", 1000), []*corev1.Pod{makePod("c").priority(3000).cpu(1000).obj()}},
			},
			pod: makePod("p").priority(9500).cpu(1000).nodeSelector("kubernetes.io/hostname", "n2").obj(),
			want: result{Outcome: Unschedulable, Message: "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, " +
				"2 node(s) didn't match Pod's node affinity/selector."},
		},
		{
			name: "terminal pods free their room",
			nodes: []NodePods{{makeNode("n1", 1000), []*corev1.Pod{
				succeeded(makePod("done").priority(9600).cpu(1000).obj()),
			}}},
			pod:  makePod("p").priority(0).cpu(1000).obj(),
			want: result{Outcome: Fits, Node: "n1"},
		},
		{
			name: "no nodes",
			pod:  makePod("p").priority(9500).cpu(1000).obj(),
			want: result{Outcome: Unschedulable, Message: "0/0 nodes are available: no nodes."},
		},
	}
	classes := testClasses(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Snapshot{Nodes: tt.nodes, PDBs: tt.pdbs, Classes: classes.Lookup}
			got := byNames(s.SelectVictims(tt.pod))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SelectVictims() (-want +got):\n%s", diff)
			}
		})
	}
}

func tainted(n *corev1.Node) *corev1.Node {
	n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	return n
}

func succeeded(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodSucceeded
	return p
}

func TestDryRun(t *testing.T) {
	// n1 (2000m): low-a 1000 (3000), low-b 1000 (3100). n2 (1000m): np 1000 (mid-np, yields at 9000).
	nodes := []NodePods{
		{makeNode("n1", 2000), []*corev1.Pod{
			makePod("low-a").priority(3000).cpu(1000).node("n1").obj(),
			makePod("low-b").priority(3100).cpu(1000).node("n1").obj(),
		}},
		{makeNode("n2", 1000), []*corev1.Pod{
			makePod("np").priority(7500).class("mid-np").cpu(1000).node("n2").obj(),
		}},
	}
	pending := []*corev1.Pod{
		// Queue order: prod-2 (9500), prod-1 (9500, created later), mid (8000), never (9900 first, but Never).
		makePod("mid").priority(8000).cpu(1000).created(0).obj(),
		makePod("prod-1").priority(9500).cpu(1000).created(2).obj(),
		makePod("prod-2").priority(9500).cpu(1000).created(1).obj(),
		makePod("never").priority(9900).class("hi-once").cpu(1000).created(0).obj(),
	}
	// never: no room anywhere, may not preempt.
	// prod-2: n1 victim 3000 beats n2 victim 7500 -> low-a goes.
	// prod-1: n1 left with low-b (3100); n2 np (7500) -> low-b goes.
	// mid: n1 now holds two 9500 pods; n2's np is NonPreemptible below 9000.
	want := []result{
		{Outcome: NotEligible, Message: `not eligible due to preemptionPolicy=Never of PriorityClass "hi-once"`},
		{Outcome: Preempts, Node: "n1", Victims: []string{"low-a"}},
		{Outcome: Preempts, Node: "n1", Victims: []string{"low-b"}},
		{Outcome: Unschedulable, Message: `0/2 nodes are available: 1 node(s) had pods of NonPreemptible PriorityClass "mid-np", not preemptible by priority 8000 below threshold 9000, ` +
			`2 No preemption victims found for incoming pod.`},
	}
	classes := testClasses(t)
	s := &Snapshot{Nodes: nodes, Classes: classes.Lookup}
	results := s.DryRun(pending)
	var got []result
	var order []string
	for _, r := range results {
		got = append(got, byNames(r))
		order = append(order, r.Pod.Name)
	}
	if diff := cmp.Diff([]string{"never", "prod-2", "prod-1", "mid"}, order); diff != "" {
		t.Errorf("DryRun() order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DryRun() (-want +got):\n%s", diff)
	}
	// The snapshot the caller holds is unchanged.
	if diff := cmp.Diff([]string{"low-a", "low-b"}, names(s.Nodes[0].Pods)); diff != "" {
		t.Errorf("DryRun() changed the snapshot (-want +got):\n%s", diff)
	}
}

func TestPodRequests(t *testing.T) {
	// Containers 100 + 200 + the sidecar 50 = 350; the init container runs
	// beside the sidecar started before it: 500 + 50 = 550 is larger;
	// overhead 10 -> 560.
	pod := makePod("p").cpu(100).obj()
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c2", Resources: cpuReq("200m")})
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "sidecar", RestartPolicy: &always, Resources: cpuReq("50m")},
		{Name: "init", Resources: cpuReq("500m")},
	}
	pod.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("10m")}
	got := podRequests(pod)
	if cpu := got.get(corev1.ResourceCPU); cpu != 560 {
		t.Errorf("cpu = %dm, want 560m", cpu)
	}
	if pods := got.get(corev1.ResourcePods); pods != 1000 {
		t.Errorf("pods = %d milli, want 1000", pods)
	}
}

func cpuReq(q string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity(q)}}
}

func mustQuantity(q string) resource.Quantity { return resource.MustParse(q) }

// TestSelectVictimsHugeRequest: a pending pod asking for 16Pi of memory --
// more millibytes than an int64 holds -- does not fit a 64Gi node. Its
// request wrapped negative, and the dry run reported it fitting the first
// node while the scheduler says Insufficient memory.
func TestSelectVictimsHugeRequest(t *testing.T) {
	node := makeNode("n1", 2000)
	node.Status.Allocatable[corev1.ResourceMemory] = mustQuantity("64Gi")
	pod := makePod("p").priority(9500).cpu(100).obj()
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = mustQuantity("16Pi")
	s := &Snapshot{Nodes: []NodePods{{node, []*corev1.Pod{makePod("a").priority(3000).cpu(100).obj()}}}}
	want := result{Outcome: Unschedulable, Message: "0/1 nodes are available: 1 Insufficient memory."}
	if diff := cmp.Diff(want, byNames(s.SelectVictims(pod))); diff != "" {
		t.Errorf("SelectVictims (-want +got):\n%s", diff)
	}
}
