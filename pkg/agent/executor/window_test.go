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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/pkg/core/qos"
)

func TestBEWindow(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	be := func(u int64) qos.BECPU {
		return qos.BECPU{UsageMilli: u, RequestMilli: 1000, AllowanceMilli: 500}
	}
	const window = 3 * time.Second
	var w beWindow
	steps := []struct {
		sec  int
		node int64
		want *qos.CPUWindow
	}{
		{1, 1000, nil}, // 0 s covered
		{2, 2000, nil},
		{3, 3000, nil}, // 2 s covered
		// Samples 2, 3, 4 kept (after 4 − 3 = 1); 3 s covered since 1.
		// Node (2000 + 3000 + 4000) ÷ 3 = 3000; BE usage (200+300+400) ÷ 3 = 300.
		{4, 4000, &qos.CPUWindow{NodeCPUMilli: 3000, BE: qos.BECPU{UsageMilli: 300, RequestMilli: 1000, AllowanceMilli: 500}}},
		{5, 5000, &qos.CPUWindow{NodeCPUMilli: 4000, BE: qos.BECPU{UsageMilli: 400, RequestMilli: 1000, AllowanceMilli: 500}}},
		// A 5 s gap (agent stalled) is more than half the window: start over.
		{10, 1000, nil},
		{11, 1000, nil},
		{12, 1000, nil},
		{13, 1000, &qos.CPUWindow{NodeCPUMilli: 1000, BE: qos.BECPU{UsageMilli: 100, RequestMilli: 1000, AllowanceMilli: 500}}},
	}
	for _, s := range steps {
		w.add(at(s.sec), s.node, be(s.node/10), window)
		got := w.average(at(s.sec), window)
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("at %d s (-want +got):\n%s", s.sec, diff)
		}
	}
	if n := len(w.buf) - w.head; n != 3 {
		t.Errorf("samples kept = %d, want 3 (the window)", n)
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b tokenBucket
	b.setRate(2, t0)
	got := []bool{b.take(t0), b.take(t0), b.take(t0)}
	if diff := cmp.Diff([]bool{true, true, false}, got); diff != "" {
		t.Errorf("burst of 2 (-want +got):\n%s", diff)
	}
	// 2 a minute: one token every 30 s.
	if b.take(t0.Add(29 * time.Second)) {
		t.Error("a token after 29 s, want none before 30 s")
	}
	if !b.take(t0.Add(30 * time.Second)) {
		t.Error("no token after 30 s")
	}
	b.refund()
	b.refund()
	b.refund()
	if b.tokens != 2 {
		t.Errorf("tokens after refunds = %v, want capped at 2", b.tokens)
	}
	// Lowering the rate caps what is held.
	b.setRate(1, t0.Add(30*time.Second))
	if b.tokens != 1 {
		t.Errorf("tokens after lowering the rate to 1 = %v, want 1", b.tokens)
	}
}

// TestTokenBucketRestoredFromTheFuture: a budget saved while the node's
// clock ran ahead (then stepped back before the restart) must refill from
// the restart, not stay frozen until the clock reaches the saved time --
// memory relief would wait on it for as long as the clock was off.
func TestTokenBucketRestoredFromTheFuture(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b tokenBucket
	b.restore(bucketState{PerMinute: 60, Tokens: 0, Last: t0.Add(time.Hour)})
	b.setRate(60, t0)
	if b.take(t0) {
		t.Error("a token at the restart, want the saved empty budget")
	}
	if !b.take(t0.Add(2 * time.Second)) {
		t.Error("no token 2 s after the restart at 60 a minute: the budget stays frozen until the saved time an hour ahead")
	}
}
