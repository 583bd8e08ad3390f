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
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// queueTest makes the pods of a queue test: pod id is job id, of
// signature sig, whose priority is prios[sig].
type queueTest struct {
	prios  []int32
	shapes []*podShape
}

func newQueueTest(prios ...int32) *queueTest {
	qt := &queueTest{prios: prios}
	for sig, prio := range prios {
		qt.shapes = append(qt.shapes, &podShape{sig: sig, priority: prio})
	}
	return qt
}

func (qt *queueTest) pod(id, sig int) *pod {
	return &pod{podShape: qt.shapes[sig], job: id}
}

// TestPendingQueueOrder: by priority, then push order; a signature that
// found no node is passed over for the rest of the cycle; pods pushed
// during a cycle wait for the next, whatever their priority.
func TestPendingQueueOrder(t *testing.T) {
	qt := newQueueTest(0, 0, 10, 0) // signature 2 is the important one
	var q pendingQueue
	names := map[*pod]string{}
	push := func(name string, sig int) {
		p := qt.pod(len(names), sig)
		names[p] = name
		q.push(p)
	}
	for _, e := range []struct {
		name string
		sig  int
	}{{"a", 0}, {"b", 1}, {"c", 0}, {"d", 2}, {"e", 3}, {"f", 1}, {"g", 0}, {"h", 2}} {
		push(e.name, e.sig)
	}
	cycle := func(step int32, fails ...string) []string {
		var tried []string
		q.each(step, 1, func(p *pod) bool {
			tried = append(tried, names[p])
			if names[p] == "c" {
				// A preemption's victims, submitted again.
				push("x", 0)
				push("y", 2)
			}
			return !slices.Contains(fails, names[p])
		})
		return tried
	}
	if diff := cmp.Diff([]string{"d", "h", "a", "b", "c", "e", "g"}, cycle(0, "b")); diff != "" {
		t.Errorf("first cycle (-want +got):\n%s", diff)
	}
	if q.size != 4 {
		t.Errorf("size after the first cycle = %d, want 4 (b, f, and x and y pushed during it)", q.size)
	}
	if diff := cmp.Diff([]string{"y", "b", "f", "x"}, cycle(1, "x")); diff != "" {
		t.Errorf("second cycle (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x"}, cycle(2)); diff != "" {
		t.Errorf("third cycle (-want +got):\n%s", diff)
	}
	if q.size != 0 {
		t.Errorf("size at the end = %d, want 0", q.size)
	}
}

// TestPendingQueueRetry: with retries every third step, a pod that found
// no node and its signature's pods due then wait three steps; pods
// pushed since are due at once, and are placed from behind those that
// wait (leaving holes).
func TestPendingQueueRetry(t *testing.T) {
	qt := newQueueTest(0, 0)
	var q pendingQueue
	names := map[*pod]string{}
	push := func(name string, sig int) {
		p := qt.pod(len(names), sig)
		names[p] = name
		q.push(p)
	}
	cycle := func(step int32, fails ...string) []string {
		var tried []string
		q.each(step, 3, func(p *pod) bool {
			tried = append(tried, names[p])
			return !slices.Contains(fails, names[p])
		})
		return tried
	}
	for _, c := range []struct {
		step   int32
		push   []string // of signature 0, but "c" (1)
		fails  []string
		tried  []string
		queued int
	}{
		// b is passed over with a: due again at 3.
		{step: 0, push: []string{"a", "b", "c"}, fails: []string{"a"}, tried: []string{"a", "c"}, queued: 2},
		{step: 1, push: []string{"d"}, tried: []string{"d"}, queued: 2},
		// f is passed over with e: due again at 5.
		{step: 2, push: []string{"e", "f"}, fails: []string{"e"}, tried: []string{"e"}, queued: 4},
		{step: 3, fails: []string{"b"}, tried: []string{"a", "b"}, queued: 3},
		{step: 4, queued: 3},
		{step: 5, tried: []string{"e", "f"}, queued: 1},
		{step: 6, tried: []string{"b"}, queued: 0},
	} {
		for _, name := range c.push {
			sig := 0
			if name == "c" {
				sig = 1
			}
			push(name, sig)
		}
		if diff := cmp.Diff(c.tried, cycle(c.step, c.fails...)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", c.step, diff)
		}
		if q.size != c.queued {
			t.Errorf("step %d: size = %d, want %d", c.step, q.size, c.queued)
		}
	}
}

// refQueue is the scheduling queue as it was before it kept a FIFO per
// signature: one walk of every queued pod by priority then push order,
// for TestPendingQueueAgreesWithWalk.
type refQueue struct {
	pods    []refQueued
	walking bool
	later   []*pod
}

type refQueued struct {
	p       *pod
	nextTry int32
}

func (q *refQueue) push(p *pod) {
	if q.walking {
		q.later = append(q.later, p)
		return
	}
	q.pods = append(q.pods, refQueued{p: p})
}

func (q *refQueue) each(step, retry int32, try func(*pod) bool) {
	q.walking = true
	var prios []int32
	for _, e := range q.pods {
		if e.p != nil {
			prios = append(prios, e.p.priority)
		}
	}
	slices.Sort(prios)
	failed := map[int]bool{}
	for _, prio := range slices.Backward(slices.Compact(prios)) {
		for i := range q.pods {
			e := &q.pods[i]
			if e.p == nil || e.p.priority != prio || e.nextTry > step {
				continue
			}
			if failed[e.p.sig] {
				if retry > 1 {
					e.nextTry = step + retry
				}
				continue
			}
			if try(e.p) {
				e.p = nil
				continue
			}
			failed[e.p.sig] = true
			e.nextTry = step + retry
		}
	}
	q.walking = false
	for _, p := range q.later {
		q.push(p)
	}
	q.later = nil
}

// TestPendingQueueAgreesWithWalk drives the queue and a walk of the whole
// queue (refQueue) through the same random pushes, placements and
// failures, pods pushed during cycles, and cycles repeated at a step,
// with retries every step and less often: both must try the same pods
// in the same order.
func TestPendingQueueAgreesWithWalk(t *testing.T) {
	type queue interface {
		push(*pod)
		each(step, retry int32, try func(*pod) bool)
	}
	// drive returns what was tried, step by step, and whether it was
	// placed. Everything random is drawn from the pod and the step, so
	// that both queues see the same as long as they try the same.
	drive := func(q queue, retry int32, seed uint64) []string {
		qt := newQueueTest(0, 0, 0, 5, 5, 9, 0, 5)
		nextID := 0
		push := func(rng *rand.Rand) {
			q.push(qt.pod(nextID, rng.IntN(len(qt.prios))))
			nextID++
		}
		var log []string
		for step := int32(0); step < 400; step++ {
			rng := rand.New(rand.NewPCG(seed, uint64(step)))
			for range rng.IntN(12) {
				push(rng)
			}
			for range 1 + rng.IntN(2) {
				q.each(step, retry, func(p *pod) bool {
					prng := rand.New(rand.NewPCG(uint64(p.job), uint64(step)))
					if prng.IntN(8) == 0 {
						push(prng)
					}
					placed := prng.IntN(3) == 0
					log = append(log, fmt.Sprintf("%d:%d:%t", step, p.job, placed))
					return placed
				})
			}
		}
		return log
	}
	for _, retry := range []int32{1, 2, 5} {
		for seed := range uint64(4) {
			want := drive(&refQueue{}, retry, seed)
			got := drive(&pendingQueue{}, retry, seed)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("retry %d, seed %d: tries (-walk +queue):\n%s", retry, seed, diff)
			}
		}
	}
}
