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
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// linearPick is pick as it was before fitSets: every node checked in
// turn from nextStart, until want passed or every node was checked.
func linearPick(s *scheduler, p *pod, nodes []*node, now time.Time) *node {
	n := len(nodes)
	if n == 0 {
		return nil
	}
	want := numFeasibleNodesToFind(n)
	s.feasible = s.feasible[:0]
	processed := 0
	j := s.nextStart % n
	for i := 0; i < n && len(s.feasible) < want; i++ {
		processed++
		if fitsView(p, &s.index.views[j], now) && s.fitsLoad(p, nodes[j], now) {
			s.feasible = append(s.feasible, int32(j))
		}
		if j++; j == n {
			j = 0
		}
	}
	s.nextStart = (s.nextStart + processed) % n
	return linearBest(s, p, nodes, now)
}

// linearBest is best as it was before scoreSets and loadSets: each
// feasible node scored afresh.
func linearBest(s *scheduler, p *pod, nodes []*node, now time.Time) *node {
	switch len(s.feasible) {
	case 0:
		return nil
	case 1:
		return nodes[s.feasible[0]]
	}
	best := int32(-1)
	bestScore, ties := int64(-1), 0
	for _, i := range s.feasible {
		switch sc := s.score(p, nodes[i], now); {
		case sc > bestScore:
			best, bestScore, ties = i, sc, 1
		case sc == bestScore:
			ties++
			if s.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best]
}

// TestPickMatchesLinearScan holds pick, which walks the fitSet of the
// pod's request, to the linear scan over random clusters (sizes about a
// 64-node word and kube-scheduler's sampling threshold, some with
// LoadAware and NodeMetrics that fail its filter), random pods (BestEffort
// ones included) and random changes between picks: pods placed where pick
// sent them and anywhere else, pods removed, tier allocatable published,
// memory pressure set and passing. Two Schedulers over the same nodes and
// seed, one picking each way, must find the same feasible nodes in the
// same order, start the next cycle at the same node and pick the same
// node, every time.
func TestPickMatchesLinearScan(t *testing.T) {
	start := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	// The pods' shapes: few, so that fitSets are reused across changes.
	shapes := []corev1.ResourceList{
		{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		{corev1.ResourceMemory: resource.MustParse("6Gi")},
		{extension.ResourceBatchCPU: resource.MustParse("2000"), extension.ResourceBatchMemory: resource.MustParse("2Gi")},
		{extension.ResourceMidCPU: resource.MustParse("500"), extension.ResourceMidMemory: resource.MustParse("1Gi")},
		nil, // BestEffort
	}
	for _, numNodes := range []int{1, 7, 63, 64, 65, 100, 128, 150, 200, 257, 300} {
		for _, loadAware := range []bool{false, true} {
			t.Run(fmt.Sprintf("nodes=%d,loadAware=%t", numNodes, loadAware), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(numNodes), 1))
				objs := randomNodeObjects(rng, numNodes, 2, 10, true)
				var fast, slow *Scheduler
				if loadAware {
					var err error
					if fast, err = NewScheduler(DefaultLoadAwareSpec(), DefaultLoadAwareWeight, objs, 1); err != nil {
						t.Fatal(err)
					}
					if slow, err = NewScheduler(DefaultLoadAwareSpec(), DefaultLoadAwareWeight, objs, 1); err != nil {
						t.Fatal(err)
					}
				} else {
					fast, slow = NewDefaultScheduler(objs, 1), NewDefaultScheduler(objs, 1)
				}
				// report gives every node a NodeMetric of random usage at
				// now, which LoadAware's filter may refuse.
				report := func(now time.Time) {
					for _, obj := range objs {
						nm := &v1alpha1.NodeMetric{
							ObjectMeta: metav1.ObjectMeta{Name: obj.Name},
							Status: v1alpha1.NodeMetricStatus{
								UpdateTime: &metav1.Time{Time: now},
								NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
									corev1.ResourceCPU:    *resource.NewMilliQuantity(obj.Status.Allocatable.Cpu().MilliValue()*int64(rng.IntN(90))/100, resource.DecimalSI),
									corev1.ResourceMemory: *resource.NewQuantity(obj.Status.Allocatable.Memory().Value()*int64(rng.IntN(90))/100, resource.BinarySI),
								}},
							},
						}
						if err := fast.SetNodeMetric(nm); err != nil {
							t.Fatal(err)
						}
						if err := slow.SetNodeMetric(nm); err != nil {
							t.Fatal(err)
						}
					}
				}
				newPods := func(seq int64) (*pod, *pod) {
					obj := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", seq)},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
							Requests: shapes[rng.IntN(len(shapes))],
						}}}},
					}
					return newPod(obj, fast.la, seq), newPod(obj, slow.la, seq)
				}
				// placed[i] is a pod on both clusters, on the same node.
				var placed [][2]*pod
				place := func(fp, sp *pod, i int) {
					fast.nodes[i].place(fp, fast.la, start)
					slow.nodes[i].place(sp, slow.la, start)
					placed = append(placed, [2]*pod{fp, sp})
				}
				now := start
				var seq int64
				for step := range 400 {
					// A report every 10 steps, within LoadAware's 180 s
					// expiry (steps are under 15 s).
					if loadAware && step%10 == 0 {
						report(now)
					}
					seq++
					fp, sp := newPods(seq)
					got := fast.s.pick(fp, fast.nodes, now)
					want := linearPick(&slow.s, sp, slow.nodes, now)
					if len(fast.s.feasible) != len(slow.s.feasible) {
						t.Fatalf("step %d: %d feasible nodes, the linear scan found %d", step, len(fast.s.feasible), len(slow.s.feasible))
					}
					for i := range fast.s.feasible {
						if fast.s.feasible[i] != slow.s.feasible[i] {
							t.Fatalf("step %d: feasible node %d is %d, the linear scan's %d", step, i, fast.s.feasible[i], slow.s.feasible[i])
						}
					}
					if fast.s.nextStart != slow.s.nextStart {
						t.Fatalf("step %d: next start %d, the linear scan's %d", step, fast.s.nextStart, slow.s.nextStart)
					}
					if (got == nil) != (want == nil) || got != nil && got.idx != want.idx {
						t.Fatalf("step %d: picked %s, the linear scan %s", step, nodeName(got), nodeName(want))
					}
					if got != nil {
						place(fp, sp, got.idx)
					}
					// Change the clusters the same way.
					for range rng.IntN(4) {
						i := rng.IntN(numNodes)
						switch rng.IntN(5) {
						case 0: // a pod placed without a pick, fit or not
							seq++
							fp, sp := newPods(seq)
							place(fp, sp, i)
						case 1, 2:
							if len(placed) > 0 {
								k := rng.IntN(len(placed))
								fast.nodes[placed[k][0].node.idx].remove(placed[k][0], now)
								slow.nodes[placed[k][1].node.idx].remove(placed[k][1], now)
								placed[k] = placed[len(placed)-1]
								placed = placed[:len(placed)-1]
							}
						case 3: // tier allocatable published
							mid, batch := int64(rng.IntN(4000)), int64(rng.IntN(8000))
							for _, n := range []*node{fast.nodes[i], slow.nodes[i]} {
								n.alloc[resMidCPU], n.alloc[resBatchCPU] = mid, batch
								n.syncFit()
							}
						case 4:
							for _, n := range []*node{fast.nodes[i], slow.nodes[i]} {
								n.pressureUntil = now.Add(memoryPressurePeriod)
								n.syncFit()
							}
						}
					}
					now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
				}
			})
		}
	}
}

// nodeName is n's name, or "no node".
func nodeName(n *node) string {
	if n == nil {
		return "no node"
	}
	return n.spec.Name
}

// TestRequestScoresAgreeWithScore holds the requestScores the scheduler
// keeps per scoreKey (scoreSet) to requestScore computed afresh, for
// every node and key, after every pick of a random cluster: pods of
// random shapes (BestEffort ones, and pods whose containers make their
// non-zero requests differ from their requests, included) placed where
// pick sent them and anywhere else, removed, tier allocatable published
// and memory pressure set.
func TestRequestScoresAgreeWithScore(t *testing.T) {
	start := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	containers := [][]corev1.ResourceList{
		{{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
		{{corev1.ResourceCPU: resource.MustParse("1")}, {corev1.ResourceMemory: resource.MustParse("2Gi")}},
		{{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		{{corev1.ResourceMemory: resource.MustParse("6Gi")}},
		{{extension.ResourceBatchCPU: resource.MustParse("2000"), extension.ResourceBatchMemory: resource.MustParse("2Gi")}},
		{nil},
		{nil, nil},
	}
	for _, numNodes := range []int{3, 65, 200} {
		rng := rand.New(rand.NewPCG(uint64(numNodes), 2))
		objs := randomNodeObjects(rng, numNodes, 2, 10, false)
		s := NewDefaultScheduler(objs, 1)
		var placed []*pod
		now := start
		checked := 0
		for seq := range int64(600) {
			var cs []corev1.Container
			for i, req := range containers[rng.IntN(len(containers))] {
				cs = append(cs, corev1.Container{Name: fmt.Sprint(i), Resources: corev1.ResourceRequirements{Requests: req}})
			}
			p := newPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(seq)}, Spec: corev1.PodSpec{Containers: cs}}, nil, seq)
			placed = placeRandomly(rng, s.nodes, s.s.pick(p, s.nodes, now), p, nil, now, 2, placed)
			for range rng.IntN(3) {
				n := s.nodes[rng.IntN(numNodes)]
				switch rng.IntN(3) {
				case 0:
					if len(placed) > 0 {
						k := rng.IntN(len(placed))
						placed[k].node.remove(placed[k], now)
						placed[k] = placed[len(placed)-1]
						placed = placed[:len(placed)-1]
					}
				case 1:
					n.alloc[resBatchCPU] = int64(rng.IntN(8000))
					n.syncFit()
				case 2:
					n.pressureUntil = now.Add(memoryPressurePeriod)
					n.syncFit()
				}
			}
			for _, ss := range s.s.index.scores {
				like := &pod{podShape: &podShape{nonZeroCPU: ss.key.nonZeroCPU, nonZeroMemory: ss.key.nonZeroMemory}}
				like.req[resCPU], like.req[resMemory] = ss.key.cpu, ss.key.memory
				for i, sc := range ss.known {
					if sc == unknownScore {
						continue
					}
					if want := requestScore(like, s.nodes[i]); int64(sc) != want {
						t.Fatalf("%d nodes, pod %d: node %d keeps score %d for %+v, requestScore %d", numNodes, seq, i, sc, ss.key, want)
					}
					checked++
				}
			}
			now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
		}
		if len(s.s.index.scores) < 4 || checked == 0 {
			t.Errorf("%d nodes: %d score keys, %d scores checked: the test saw too little", numNodes, len(s.s.index.scores), checked)
		}
	}
}

// TestLoadSetsAgreeWithSummary holds the LoadAware answers the scheduler
// keeps per PodLoad (loadSet) to FilterSummary and ScoreSummary on each
// node's summary made afresh, for every node and load, after every pick
// of a random cluster: NodeMetrics reported at random times (some older
// than their expiry, some never reported, some forbidding scheduling),
// time passing across expiries, pods of random shapes and bands placed
// where pick sent them and anywhere else, and removed.
func TestLoadSetsAgreeWithSummary(t *testing.T) {
	start := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	shapes := []corev1.ResourceList{
		{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		{corev1.ResourceCPU: resource.MustParse("3500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		{corev1.ResourceMemory: resource.MustParse("6Gi")},
		{extension.ResourceBatchCPU: resource.MustParse("2000"), extension.ResourceBatchMemory: resource.MustParse("2Gi")},
		nil, // BestEffort
	}
	bands := []string{"", "prod", "mid", "batch", "free"}
	for _, numNodes := range []int{5, 70, 150} {
		rng := rand.New(rand.NewPCG(uint64(numNodes), 3))
		objs := randomNodeObjects(rng, numNodes, 4, 20, true)
		s, err := NewScheduler(DefaultLoadAwareSpec(), DefaultLoadAwareWeight, objs, 1)
		if err != nil {
			t.Fatal(err)
		}
		la := s.la
		report := func(obj *corev1.Node, now time.Time) {
			nm := &v1alpha1.NodeMetric{
				ObjectMeta: metav1.ObjectMeta{Name: obj.Name},
				Status: v1alpha1.NodeMetricStatus{
					NodeMetric: &v1alpha1.NodeMetricInfo{NodeUsage: corev1.ResourceList{
						corev1.ResourceCPU:    *resource.NewMilliQuantity(obj.Status.Allocatable.Cpu().MilliValue()*int64(rng.IntN(100))/100, resource.DecimalSI),
						corev1.ResourceMemory: *resource.NewQuantity(obj.Status.Allocatable.Memory().Value()*int64(rng.IntN(100))/100, resource.BinarySI),
					}},
				},
			}
			if rng.IntN(8) != 0 {
				// Up to 400 s old: LoadAware's metrics expire after 180.
				nm.Status.UpdateTime = &metav1.Time{Time: now.Add(-time.Duration(rng.IntN(400)) * time.Second)}
			}
			if err := s.SetNodeMetric(nm); err != nil {
				t.Fatal(err)
			}
			s.nodes[s.byName[obj.Name].idx].load.Metric.ForbidScheduling = rng.IntN(10) == 0
		}
		var placed []*pod
		now := start
		checked, expired := 0, 0
		for seq := range int64(400) {
			for range rng.IntN(numNodes/4 + 2) {
				report(objs[rng.IntN(numNodes)], now)
			}
			obj := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(seq)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: shapes[rng.IntN(len(shapes))],
				}}}},
			}
			if b := bands[rng.IntN(len(bands))]; b != "" {
				obj.Labels = map[string]string{extension.LabelBand: b}
			}
			p := newPod(obj, la, seq)
			placed = placeRandomly(rng, s.nodes, s.s.pick(p, s.nodes, now), p, la, now, 3, placed)
			if len(placed) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(placed))
				placed[k].node.remove(placed[k], now)
				placed[k] = placed[len(placed)-1]
				placed = placed[:len(placed)-1]
			}
			now = now.Add(time.Duration(rng.IntN(60)) * time.Second)
			for load, ls := range s.s.index.byLoad {
				like := &pod{podShape: &podShape{load: load}}
				for i, n := range s.nodes {
					sum := n.loadSummary(la, now)
					if sum.Expired(now.UnixNano()) {
						expired++
					}
					if got, want := ls.fits(la, like, s.nodes, int32(i), now), la.FilterSummary(&load, sum, now.UnixNano()).Reason == nodeload.Fit; got != want {
						t.Fatalf("%d nodes, pod %d: node %d keeps fits %t for %+v, FilterSummary says %t", numNodes, seq, i, got, load, want)
					}
					if got, want := ls.score(la, like, s.nodes, int32(i), now), la.ScoreSummary(&load, sum, now.UnixNano()); got != want {
						t.Fatalf("%d nodes, pod %d: node %d keeps score %d for %+v, ScoreSummary says %d", numNodes, seq, i, got, load, want)
					}
					checked++
				}
			}
		}
		if len(s.s.index.byLoad) < 4 || checked == 0 || expired == 0 || expired == checked {
			t.Errorf("%d nodes: %d loads, %d answers checked, %d expired: the test saw too little", numNodes, len(s.s.index.byLoad), checked, expired)
		}
	}
}

// randomNodeObjects makes n nodes of random allocatable: 2-16 cores,
// 4-31 GiB, minPods to minPods+podSpan-1 pod slots, some Batch CPU and,
// with batchMemory, Batch memory (drawn from rng in that order).
// placeRandomly places p as the random-cluster tests do: on picked, the
// node the scheduler chose (if any), three times in four; otherwise, one
// time in anywhere, on a random node of nodes, fit or not. It returns
// placed, with p appended when placed.
func placeRandomly(rng *rand.Rand, nodes []*node, picked *node, p *pod, la *nodeload.Config, now time.Time, anywhere int, placed []*pod) []*pod {
	switch {
	case picked != nil && rng.IntN(4) > 0:
		picked.place(p, la, now)
	case rng.IntN(anywhere) == 0:
		nodes[rng.IntN(len(nodes))].place(p, la, now)
	default:
		return placed
	}
	return append(placed, p)
}

func randomNodeObjects(rng *rand.Rand, n, minPods, podSpan int, batchMemory bool) []*corev1.Node {
	objs := make([]*corev1.Node, n)
	for i := range objs {
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:         *resource.NewMilliQuantity(int64(2000+rng.IntN(14000)), resource.DecimalSI),
			corev1.ResourceMemory:      *resource.NewQuantity(int64(4+rng.IntN(28))<<30, resource.BinarySI),
			corev1.ResourcePods:        *resource.NewQuantity(int64(minPods+rng.IntN(podSpan)), resource.DecimalSI),
			extension.ResourceBatchCPU: *resource.NewQuantity(int64(rng.IntN(8000)), resource.DecimalSI),
		}
		if batchMemory {
			alloc[extension.ResourceBatchMemory] = *resource.NewQuantity(int64(rng.IntN(16))<<30, resource.BinarySI)
		}
		objs[i] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status:     corev1.NodeStatus{Allocatable: alloc},
		}
	}
	return objs
}
