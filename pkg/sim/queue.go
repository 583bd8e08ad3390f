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
	"container/heap"
	"slices"
)

// pendingQueue is the scheduling queue: FIFO per priority, priorities
// highest first (PrioritySort). Within a priority it keeps one FIFO per
// signature and merges their heads in push order, so that a cycle reads
// only the pods it tries: once a signature finds no node, its other pods
// -- on a busy cluster most of tens of thousands -- are left unread
// instead of being walked past. A signature has one priority (it
// includes it), hence one level.
//
// A default synthetic run at 1 000 nodes has 12 signatures, at most 8
// of them queued at once and 4 in a level; an openb run 57. The merge is
// a heap all the same, so that a workload of many signatures costs a
// pod tried a logarithm of them rather than a scan of every head. A
// level keeps the signatures it ever had: a cycle looks at each once.
type pendingQueue struct {
	levels []queueLevel
	// bySig is each signature's FIFO, by signature ID (nil until its
	// first pod).
	bySig []*sigQueue
	size  int
	// seq counts pushes: the order of pods within a level.
	seq int64
	// walking: each is running; pods pushed meanwhile (the victims of a
	// preemption, submitted again) wait in later until it ends.
	walking bool
	later   []*pod
	// heads is each's merge of a level's signatures (scratch).
	heads sigHeap
}

type queueLevel struct {
	priority int32
	sigs     []*sigQueue
}

// sigQueue is one signature's queued pods, pods[head:] in push order. A
// pod placed while pods before it wait (not due, with retries less often
// than every step) leaves a hole, a nil p.
type sigQueue struct {
	pods  []queued
	head  int
	holes int // in pods[head:]
	// next is where this cycle's walk of the signature is: its first pod
	// not yet tried that may be due.
	next int
}

// queued keeps what the queue checks beside the pod pointer, so that the
// queue is walked without touching the pods.
type queued struct {
	p       *pod
	seq     int64
	nextTry int32
}

func (q *pendingQueue) push(p *pod) {
	if q.walking {
		q.later = append(q.later, p)
		return
	}
	if p.sig >= len(q.bySig) {
		q.bySig = append(q.bySig, make([]*sigQueue, p.sig+1-len(q.bySig))...)
	}
	s := q.bySig[p.sig]
	if s == nil {
		s = &sigQueue{}
		q.bySig[p.sig] = s
		i, found := slices.BinarySearchFunc(q.levels, p.priority, func(l queueLevel, prio int32) int {
			return int(prio) - int(l.priority)
		})
		if !found {
			q.levels = slices.Insert(q.levels, i, queueLevel{priority: p.priority})
		}
		q.levels[i].sigs = append(q.levels[i].sigs, s)
	}
	s.pods = append(s.pods, queued{p: p, seq: q.seq})
	q.seq++
	q.size++
}

// each offers try every pending pod due at step (nextTry), in queue
// order, but for the pods of a signature that found no node this cycle:
// try places the pod (true: it leaves the queue) or finds no node for it
// (false). A pod that found no node is due again retry steps later, and
// so is every pod of its signature due now, which the cycle passes over.
func (q *pendingQueue) each(step, retry int32, try func(*pod) bool) {
	q.walking = true
	defer func() {
		q.walking = false
		for i, p := range q.later {
			q.push(p)
			q.later[i] = nil
		}
		q.later = q.later[:0]
	}()
	for li := range q.levels {
		l := &q.levels[li]
		q.heads = q.heads[:0]
		for _, s := range l.sigs {
			s.next = s.head
			if s.due(step) {
				q.heads = append(q.heads, s)
			}
		}
		heap.Init(&q.heads)
		for len(q.heads) > 0 {
			s := q.heads[0]
			if !try(s.pods[s.next].p) {
				s.failed(step, retry)
				heap.Pop(&q.heads)
				continue
			}
			s.take()
			q.size--
			if s.due(step) {
				heap.Fix(&q.heads, 0)
			} else {
				heap.Pop(&q.heads)
			}
		}
		for _, s := range l.sigs {
			s.compact()
		}
	}
}

// due moves next to the signature's first pod from next on that is due
// at step, and says whether there is one. With retries every step (the
// default) every queued pod is due, and next stays where it is.
func (s *sigQueue) due(step int32) bool {
	for ; s.next < len(s.pods); s.next++ {
		if e := &s.pods[s.next]; e.p != nil && e.nextTry <= step {
			return true
		}
	}
	return false
}

// take takes the pod at next out of the queue.
func (s *sigQueue) take() {
	s.pods[s.next] = queued{}
	s.next++
	s.holes++
	for s.head < len(s.pods) && s.pods[s.head].p == nil {
		s.head++
		s.holes--
	}
}

// failed: the pod at next found no node at step. It is due again retry
// steps later, and so are the signature's other pods due now: those a
// walk of the whole queue would have passed over this cycle.
func (s *sigQueue) failed(step, retry int32) {
	s.pods[s.next].nextTry = step + retry
	if retry == 1 {
		// With a retry every step, a pod due now is due at the next step
		// as well: the rest of the signature is left unread.
		return
	}
	for i := s.next + 1; i < len(s.pods); i++ {
		if e := &s.pods[i]; e.p != nil && e.nextTry <= step {
			e.nextTry = step + retry
		}
	}
}

// compact drops the pods taken out of the queue once they are most of
// its slice, so that the slice does not grow with every pod ever queued.
func (s *sigQueue) compact() {
	if gone := s.head + s.holes; gone <= 64 || gone*2 <= len(s.pods) {
		return
	}
	kept := s.pods[:0]
	for _, e := range s.pods[s.head:] {
		if e.p != nil {
			kept = append(kept, e)
		}
	}
	clear(s.pods[len(kept):])
	s.pods, s.head, s.holes = kept, 0, 0
}

// sigHeap orders signatures by their next pod's push order.
type sigHeap []*sigQueue

func (h sigHeap) Len() int { return len(h) }
func (h sigHeap) Less(i, j int) bool {
	return h[i].pods[h[i].next].seq < h[j].pods[h[j].next].seq
}
func (h sigHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sigHeap) Push(x any)   { *h = append(*h, x.(*sigQueue)) }
func (h *sigHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}
