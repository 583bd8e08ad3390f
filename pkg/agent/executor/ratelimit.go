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

import "time"

// tokenBucket limits evictions per node: it holds up to perMinute tokens
// and refills at perMinute a minute, so a burst of perMinute is allowed and
// the long-run rate is perMinute. Time comes from the caller (the injected
// clock).
type tokenBucket struct {
	perMinute int32
	tokens    float64
	last      time.Time
}

// setRate changes the rate; a lower rate also caps the tokens held.
func (b *tokenBucket) setRate(perMinute int32, now time.Time) {
	if b.last.IsZero() {
		b.tokens, b.last = float64(perMinute), now
	}
	b.refill(now)
	b.perMinute = perMinute
	b.tokens = min(b.tokens, float64(perMinute))
}

func (b *tokenBucket) refill(now time.Time) {
	el := now.Sub(b.last)
	switch {
	case el > 0:
		b.tokens = min(float64(b.perMinute), b.tokens+el.Minutes()*float64(b.perMinute))
		b.last = now
	case el < 0:
		// A last time ahead of now comes from a state file saved while
		// the wall clock ran ahead: refill from now rather than not at
		// all until the clock catches up.
		b.last = now
	}
}

// take removes a token if there is one.
func (b *tokenBucket) take(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// refund gives back a token taken for an eviction that did not happen.
func (b *tokenBucket) refund() {
	b.tokens = min(float64(b.perMinute), b.tokens+1)
}

// bucketState is a tokenBucket as the executor's state file keeps it, so
// that a restart does not hand out a fresh burst.
type bucketState struct {
	PerMinute int32     `json:"perMinute"`
	Tokens    float64   `json:"tokens"`
	Last      time.Time `json:"last"`
}

func (b *tokenBucket) state() bucketState {
	return bucketState{PerMinute: b.perMinute, Tokens: b.tokens, Last: b.last}
}

func (b *tokenBucket) restore(s bucketState) {
	b.perMinute, b.tokens, b.last = s.PerMinute, s.Tokens, s.Last
}
