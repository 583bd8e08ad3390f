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

package executor

import (
	"time"

	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// beSample is one cycle's CPU picture for the satisfaction window.
type beSample struct {
	t    time.Time
	node int64
	be   qos.BECPU
}

// beWindow averages the node's CPU and qos.SampleBECPU over the CPU
// eviction window, as the planner wants them (qos.CPUWindow). It keeps
// its own samples rather than reading the metric cache: the cache has node
// usage but not the Batch/Free request and allowance, and both halves of
// the window must cover the same samples. It lives in memory: after a
// restart CPU eviction waits for a full window again, the safe side.
type beWindow struct {
	buf  []beSample
	head int
	// sums of the kept samples, for O(1) averages.
	node, usage, request, allowance int64
	// start is when the current unbroken run of samples began; a gap
	// longer than half the window starts a new run.
	start time.Time
}

// add appends a sample taken at t and drops those older than window.
func (w *beWindow) add(t time.Time, node int64, be qos.BECPU, window time.Duration) {
	if n := len(w.buf); n > w.head {
		if last := w.buf[n-1].t; t.Sub(last) > window/2 {
			w.reset()
		}
	}
	if w.head == len(w.buf) {
		w.start = t
	}
	w.buf = append(w.buf, beSample{t: t, node: node, be: be})
	w.node += node
	w.usage += be.UsageMilli
	w.request += be.RequestMilli
	w.allowance += be.AllowanceMilli
	w.trim(t, window)
}

func (w *beWindow) trim(now time.Time, window time.Duration) {
	for w.head < len(w.buf) && !w.buf[w.head].t.After(now.Add(-window)) {
		s := w.buf[w.head]
		w.node -= s.node
		w.usage -= s.be.UsageMilli
		w.request -= s.be.RequestMilli
		w.allowance -= s.be.AllowanceMilli
		w.head++
	}
	// Compact once half the buffer is dead, so it neither grows nor copies
	// every cycle.
	if w.head > 0 && w.head >= len(w.buf)/2 {
		n := copy(w.buf, w.buf[w.head:])
		w.buf = w.buf[:n]
		w.head = 0
	}
}

func (w *beWindow) reset() {
	w.buf = w.buf[:0]
	w.head = 0
	w.node, w.usage, w.request, w.allowance = 0, 0, 0, 0
}

// average returns the window's averages once the samples cover a whole
// window, else nil (the planner then evicts nothing for CPU).
func (w *beWindow) average(now time.Time, window time.Duration) *qos.CPUWindow {
	n := int64(len(w.buf) - w.head)
	if n == 0 || now.Sub(w.start) < window {
		return nil
	}
	return &qos.CPUWindow{
		NodeCPUMilli: w.node / n,
		BE:           qos.BECPU{UsageMilli: w.usage / n, RequestMilli: w.request / n, AllowanceMilli: w.allowance / n},
	}
}
