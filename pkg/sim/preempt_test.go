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

package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/core/preemption"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// newConfiguredRun is newTestRun with the config changed by edit first.
func newConfiguredRun(t *testing.T, w *workload.Workload, p Policy, edit func(*Config)) *run {
	t.Helper()
	cfg := Config{}
	at65(&cfg)
	if edit != nil {
		edit(&cfg)
	}
	cfg = cfg.WithDefaults()
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := w.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	r, err := newRun(&cfg, w, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// submitProd queues a Prod pod named name asking cpu millicores and 1 GiB,
// as a Deployment scaled up during the run would: the workloads place
// their services before the run, so only a test makes a Prod pod wait.
func submitProd(t *testing.T, r *run, name string, cpu int64) *pod {
	t.Helper()
	obj := r.podObject(NamespaceOnline, name, corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(gi, resource.BinarySI),
	}, nil)
	p, err := r.newPod(obj)
	if err != nil {
		t.Fatal(err)
	}
	s := &workload.Service{Name: name, CPURequestMilli: cpu, MemoryRequestBytes: gi, CPUScaleMilli: float32(cpu) / 2, MemoryUsageBytes: gi / 2}
	w := r.w
	if len(w.Shapes) == 0 {
		// A workload without shapes: a flat one (the tests that have
		// none end before the pod runs).
		w = &workload.Workload{Shapes: []workload.Shape{{IntervalSeconds: 1, Values: []float32{1}}}}
	}
	p.h.demand = int32(r.demands.Add(s.Demand(w)))
	r.services = append(r.services, s)
	p.mem = s.MemoryUsageBytes
	r.queue.push(p)
	return p
}

func noPreemption(cfg *Config) { cfg.Preemption = ptr.To(false) }

// setMemory makes running pod p use mem bytes from now on.
func setMemory(p *pod, mem int64) {
	n := p.node
	n.podMem += mem - p.mem
	n.mem[p.nodeIdx], p.mem = mem, mem
}

// TestK8sDefaultProdPreemptsBatch: on tiny's node-a (4 cores; web asks
// 2) Batch jobs A and B ask 1 core each and fill it. A Prod pod asking 1
// core fits nowhere; plain Kubernetes' default preemption removes both,
// gives back the more important one (A, created first) and finds the pod
// still fits: B alone is preempted, its job submitted again.
func TestK8sDefaultProdPreemptsBatch(t *testing.T) {
	r := newConfiguredRun(t, tiny(1, 120, 1, 1000, 1000), PolicyK8sDefault, nil)
	stepTo(t, r, 0)
	api := submitProd(t, r, "api", 1000)
	stepTo(t, r, 1)
	if api.node == nil {
		t.Fatalf("the Prod pod is pending; placements %v", placements(r))
	}
	if diff := cmp.Diff(map[string]string{"A": "node-a", "B-1": ""}, placements(r)); diff != "" {
		t.Errorf("job pods after the Prod pod came (-want +got):\n%s", diff)
	}
	if r.stats.preemptions != 1 || r.stats.batch.preempted != 1 {
		t.Errorf("preemptions %d (Batch %d), want 1", r.stats.preemptions, r.stats.batch.preempted)
	}

	// Without preemption the Prod pod waits behind the Batch pods.
	r = newConfiguredRun(t, tiny(1, 120, 1, 1000, 1000), PolicyK8sDefault, noPreemption)
	stepTo(t, r, 0)
	api = submitProd(t, r, "api", 1000)
	stepTo(t, r, 1)
	if api.node != nil || r.stats.preemptions != 0 {
		t.Errorf("with preemption off the Prod pod runs on %v after %d preemptions, want pending", api.node != nil, r.stats.preemptions)
	}
}

// TestNonPreemptibleNeverVictim: node-a takes 3 pods (web, and Batch
// jobs A and B asking 200m of batch-cpu each), so a Prod pod fits only
// if a Batch pod goes. Under Waterline a NonPreemptible Batch class keeps
// both (the pod waits); a normal class gives one up. k8s-default runs
// DefaultPreemption, which knows no NonPreemptible class.
func TestNonPreemptibleNeverVictim(t *testing.T) {
	nonPreemptible := func(cfg *Config) {
		pc := schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch-np", Annotations: map[string]string{
			extension.AnnotationPreemptionPolicy: extension.PreemptionPolicyNonPreemptible,
		}}, Value: 5500}
		cfg.PriorityClasses = append(DefaultPriorityClasses(), pc)
		cfg.ColocationPolicies = DefaultColocationPolicies()
		profiles := cfg.ColocationPolicies[0].Spec.Profiles
		for i := range profiles {
			if profiles[i].Name == NamespaceBatch {
				profiles[i].PriorityClassName = "batch-np"
			}
		}
	}
	threePods := func() *workload.Workload {
		w := tiny(1, 120, 1, 200, 200)
		w.Nodes[0].Pods = 3
		return w
	}
	tests := []struct {
		name        string
		policy      Policy
		edit        func(*Config)
		wantPlaced  bool
		wantVictims int64
	}{
		{"waterline, NonPreemptible Batch", PolicyWaterline, nonPreemptible, false, 0},
		{"waterline, normal Batch", PolicyWaterline, nil, true, 1},
		{"k8s-default, NonPreemptible Batch", PolicyK8sDefault, nonPreemptible, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			edit := func(cfg *Config) {
				at65(cfg)
				if tc.edit != nil {
					tc.edit(cfg)
				}
			}
			r := newConfiguredRun(t, threePods(), tc.policy, edit)
			stepTo(t, r, 0)
			if got := placements(r); got["A"] != "node-a" || got["B"] != "node-a" {
				t.Fatalf("Batch jobs at %v, want both on node-a", got)
			}
			api := submitProd(t, r, "api", 500)
			stepTo(t, r, 30)
			if (api.node != nil) != tc.wantPlaced || r.stats.preemptions != tc.wantVictims {
				t.Errorf("Prod pod placed %v after %d preemptions, want placed %v after %d", api.node != nil, r.stats.preemptions, tc.wantPlaced, tc.wantVictims)
			}
		})
	}
}

// TestPreemptionPrefersNoPDBViolation: two nodes, one filled by a Batch
// job, the other by a Mid job. A Prod pod must preempt one of them; the
// default preemption takes the lower priority (Batch) -- unless a
// PodDisruptionBudget covers the Batch pod and none the Mid pod: a node
// whose victims break no budget comes first.
func TestPreemptionPrefersNoPDBViolation(t *testing.T) {
	w := &workload.Workload{Name: "two", Start: workload.DefaultStart, Duration: 20 * time.Minute}
	for _, name := range []string{"node-a", "node-b"} {
		w.Nodes = append(w.Nodes, workload.Node{Name: name, CPUMilli: 4000, MemoryBytes: 8 * gi, Pods: 110})
	}
	for _, j := range []struct {
		name  string
		class workload.Class
	}{{"M", workload.ClassMid}, {"A", workload.ClassBatch}} {
		w.Jobs = append(w.Jobs, workload.Job{Name: j.name, Class: j.class, CPURequestMilli: 4000, MemoryRequestBytes: gi,
			CPUDemandMilli: 1000, MemoryUsageBytes: gi / 2, Duration: time.Hour})
	}
	for _, tc := range []struct {
		name    string
		budgets []DisruptionBudget
		want    string // the job preempted
	}{
		{"no budget", []DisruptionBudget{}, "A"},
		{"budget on Batch", []DisruptionBudget{{Class: workload.ClassBatch, Per: BudgetPerPod, MaxUnavailable: intstr.FromInt32(0)}}, "M"},
		{"budget on Batch per class", []DisruptionBudget{{Class: workload.ClassBatch, Per: BudgetPerClass, MaxUnavailable: intstr.FromString("0%")}}, "M"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newConfiguredRun(t, w, PolicyK8sDefault, func(cfg *Config) { cfg.DisruptionBudgets = tc.budgets })
			stepTo(t, r, 0)
			if got := placements(r); got["A"] == "" || got["M"] == "" {
				t.Fatalf("jobs at %v, want both placed", got)
			}
			api := submitProd(t, r, "api", 1000)
			stepTo(t, r, 1)
			var preempted []string
			for _, js := range r.jobs {
				if js.attempts > 1 {
					preempted = append(preempted, js.spec.Name)
				}
			}
			if api.node == nil || !slices.Equal(preempted, []string{tc.want}) {
				t.Errorf("Prod pod placed %v, jobs preempted %v; want placed, %s preempted", api.node != nil, preempted, tc.want)
			}
		})
	}
}

// TestPDBBlocksCPUEvictionNotMemory: a PodDisruptionBudget that allows
// no disruption of Batch pods stops node QoS's CPU eviction of
// TestThrottleThenEvict (the Eviction API refuses it, and the agent
// plans without the pod), but not a memory eviction: memory relief does
// not wait, as kubelet's does not.
func TestPDBBlocksCPUEvictionNotMemory(t *testing.T) {
	strict := func(cfg *Config) {
		cfg.DisruptionBudgets = []DisruptionBudget{{Class: workload.ClassBatch, Per: BudgetPerPod, MaxUnavailable: intstr.FromInt32(0)}}
	}
	t.Run("cpu", func(t *testing.T) {
		r := newConfiguredRun(t, tiny(2, 30, 3.4, 1000, 1000, 1000), PolicyWaterline, strict)
		stepTo(t, r, 0)
		c := r.jobs[2].pod
		stepTo(t, r, 80)
		if c.node == nil || r.stats.evictions != 0 {
			t.Errorf("C evicted (%d evictions) past a budget that allows none", r.stats.evictions)
		}
		if r.stats.refused == 0 {
			t.Error("no eviction refused, want the CPU eviction of step 53 refused")
		}
	})
	t.Run("memory", func(t *testing.T) {
		r := newConfiguredRun(t, tiny(1, 120, 1, 200, 200), PolicyWaterline, strict)
		stepTo(t, r, 0)
		if got := placements(r); got["A"] != "node-a" || got["B"] != "node-a" {
			t.Fatalf("Batch jobs at %v, want both on node-a", got)
		}
		// The Batch pods' memory grows past their requests (a leak, which
		// the workload's constant usage cannot express): web's 1 GiB and
		// 3.5 GiB each fill the 8 GiB node, over the 90 % evict line.
		for _, j := range []int{0, 1} {
			setMemory(r.jobs[j].pod, 7*gi/2)
		}
		stepTo(t, r, 5)
		if r.stats.evictions == 0 || r.stats.refused != 0 || r.stats.ooms != 0 {
			t.Errorf("%d evictions, %d refused, %d OOM kills; want memory relief to evict past the budget", r.stats.evictions, r.stats.refused, r.stats.ooms)
		}
	})
}

// TestPreemptionAgreesWithCore holds the simulation's victim selection to
// pkg/core/preemption's SelectVictims on the same cluster, for the
// scenarios above.
func TestPreemptionAgreesWithCore(t *testing.T) {
	type scenario struct {
		name   string
		policy Policy
		w      func() *workload.Workload
		cpu    int64
	}
	threePods := func() *workload.Workload {
		w := tiny(1, 120, 1, 200, 200)
		w.Nodes[0].Pods = 3
		return w
	}
	for _, sc := range []scenario{
		{"k8s-default, one of two", PolicyK8sDefault, func() *workload.Workload { return tiny(1, 120, 1, 1000, 1000) }, 1000},
		{"k8s-default, both", PolicyK8sDefault, func() *workload.Workload { return tiny(1, 120, 1, 1000, 1000) }, 1500},
		{"k8s-default, two nodes", PolicyK8sDefault, func() *workload.Workload { return tiny(2, 120, 1, 2000, 1500, 1000, 2000, 1000) }, 2500},
		{"waterline, pods count", PolicyWaterline, threePods, 500},
		{"k8s-default, too big", PolicyK8sDefault, func() *workload.Workload { return tiny(1, 120, 1, 1000, 1000) }, 5000},
	} {
		t.Run(sc.name, func(t *testing.T) {
			r := newConfiguredRun(t, sc.w(), sc.policy, nil)
			stepTo(t, r, 0)
			api := submitProd(t, r, "api", sc.cpu)
			snap := snapshotOf(t, r)
			core := snap.SelectVictims(api.obj)
			var wantNode string
			var want []string
			if core.Outcome == preemption.Preempts {
				wantNode = core.Node
				for _, v := range core.Victims {
					want = append(want, v.Name)
				}
			}
			var gotNode string
			var got []string
			if best, ok := r.selectPreemption(api); ok {
				gotNode = best.node.spec.Name
				for _, v := range r.victimsOn(api, best.node, true) {
					got = append(got, v.podName())
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if gotNode != wantNode || !slices.Equal(got, want) {
				t.Errorf("simulation preempts %v on %q, the core %v on %q (outcome %s: %s)", got, gotNode, want, wantNode, core.Outcome, core.Message)
			}
		})
	}
}

// snapshotOf is the run's cluster as pkg/core/preemption sees it: nodes
// with everything they offer (tier resources included), their pods.
func snapshotOf(t *testing.T, r *run) *preemption.Snapshot {
	t.Helper()
	s := &preemption.Snapshot{}
	if r.policy.colocated() {
		s.Classes = r.preemptor.classes
	}
	names := map[int]corev1.ResourceName{
		resCPU: corev1.ResourceCPU, resMemory: corev1.ResourceMemory, resPods: corev1.ResourcePods,
		resMidCPU: extension.ResourceMidCPU, resMidMemory: extension.ResourceMidMemory,
		resBatchCPU: extension.ResourceBatchCPU, resBatchMemory: extension.ResourceBatchMemory,
	}
	for _, n := range r.nodes {
		obj := n.obj.DeepCopy()
		obj.Status.Allocatable = corev1.ResourceList{}
		for i, name := range names {
			q := resource.NewQuantity(n.alloc[i], resource.DecimalSI)
			if i == resCPU {
				q = resource.NewMilliQuantity(n.alloc[i], resource.DecimalSI)
			}
			obj.Status.Allocatable[name] = *q
		}
		np := preemption.NodePods{Node: obj}
		for i, p := range n.pods {
			obj := p.obj
			switch {
			case obj != nil:
			case p.tmpl != nil:
				// A job pod copied from a template, which has no object.
				obj = new(corev1.Pod)
				r.jobObject(p, obj)
				obj.Spec.NodeName = n.spec.Name
				obj.Status.Phase = corev1.PodRunning
				obj.Status.StartTime = &metav1.Time{Time: time.Unix(0, p.started)}
			default:
				// A service: the run dropped its object once placed.
				var err error
				if obj, err = r.serviceObject(r.services[n.hot[i].demand], p.seq); err != nil {
					t.Fatal(err)
				}
			}
			np.Pods = append(np.Pods, obj)
		}
		s.Nodes = append(s.Nodes, np)
	}
	return s
}

// linearSelectFrom is selectFrom as it was before roomSets: every node
// from offset round the cluster checked in turn, through the same choice
// among the candidates (candidateSearch).
func linearSelectFrom(r *run, p *pod, mask uint64, offset int) (preemptCandidate, bool) {
	n := len(r.nodes)
	search := candidateSearch{want: min(n, max(n*10/100, 100))}
	for i := range n {
		nd := r.nodes[(offset+i)%n]
		if free := roomWithout(nd, mask); !fitsFree(&p.req, &free) {
			continue
		}
		if search.try(r, p, nd) {
			break
		}
	}
	return search.best, search.found > 0
}

// TestPreemptionWalksRoomSets holds preemption's search, which walks the
// roomSet of the preemptor's request and victim groups, to the linear
// scan it replaced (the same candidate, found from every offset), and
// every roomSet to roomWithout computed afresh, at every step of busy
// clusters under the three default policies, for Prod pods of three
// sizes and the first pod waiting of each signature.
func TestPreemptionWalksRoomSets(t *testing.T) {
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 11, Nodes: 12, Duration: 3 * time.Hour, BatchLoadPercent: 300})
	if err != nil {
		t.Fatal(err)
	}
	found := map[Policy]int{}
	for _, policy := range []Policy{PolicyK8sDefault, PolicyK8sBestEffort, PolicyWaterline} {
		r := newConfiguredRun(t, w, policy, nil)
		var pods []*pod
		for i, cpu := range []int64{500, 2000, 6000} {
			obj := r.podObject(NamespaceOnline, fmt.Sprintf("api-%d", i), corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(gi, resource.BinarySI),
			}, nil)
			p, err := r.newPod(obj)
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, p)
		}
		roomy, cramped := 0, 0
		for r.step = 0; r.step < r.steps; r.step++ {
			if err := r.oneStep(); err != nil {
				t.Fatal(err)
			}
			pe := r.preemptor
			tried := pods
			for _, sq := range r.queue.bySig {
				// The first pod waiting of each signature too.
				if sq != nil && sq.head < len(sq.pods) && sq.pods[sq.head].p != nil {
					tried = append(tried[:len(tried):len(tried)], sq.pods[sq.head].p)
				}
			}
			for _, p := range tried {
				obj := p.obj
				if obj == nil {
					obj = p.tmpl.obj
				}
				var mask uint64
				for g := range pe.reps {
					pe.elig[g] = pe.eligible(int32(g), obj)
					if pe.elig[g] {
						mask |= 1 << g
					}
				}
				for offset := range r.nodes {
					got, gotOK := r.selectFrom(p, mask, offset)
					want, wantOK := linearSelectFrom(r, p, mask, offset)
					if got != want || gotOK != wantOK {
						t.Fatalf("%s, step %d, %s from node %d: found %+v (%t), the linear scan %+v (%t)", policy, r.step, p.podName(), offset, got, gotOK, want, wantOK)
					}
					if gotOK {
						found[policy]++
					}
				}
			}
			for _, rs := range r.sched.index.rooms {
				for _, n := range r.nodes {
					free := roomWithout(n, rs.key.mask)
					want := fitsFree(&rs.key.req, &free)
					if got := rs.words[n.idx>>6]>>(n.idx&63)&1 != 0; got != want {
						t.Fatalf("%s, step %d: node %s in the roomSet of %+v: %t, roomWithout says %t", policy, r.step, n.spec.Name, rs.key, got, want)
					}
					if want {
						roomy++
					} else {
						cramped++
					}
				}
			}
		}
		if roomy == 0 || cramped == 0 {
			t.Errorf("%s: roomSets held %d nodes with room, %d without: the test saw too little", policy, roomy, cramped)
		}
	}
	// Waterline's Batch pods ask for the Batch tier's resources, so that
	// preempting them makes no room for the pods tried here.
	if found[PolicyK8sDefault] == 0 || found[PolicyK8sBestEffort] == 0 {
		t.Errorf("searches that found a node, by policy: %v: the test saw too little", found)
	}
}
