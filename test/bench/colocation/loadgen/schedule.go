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

// Package loadgen is an open-loop HTTP load generator: requests leave at
// the times a constant or Poisson arrival process says, whether or not
// earlier ones have answered, and each request's latency is measured from
// its intended send time, so queueing anywhere — in the server, in the
// client's connection pool, or in a generator that fell behind — shows in
// the latency instead of silently lowering the offered rate ("coordinated
// omission"). It only dials loopback addresses.
package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Phase is a stretch of constant offered load.
type Phase struct {
	// Duration of the phase.
	Duration time.Duration `json:"duration"`
	// Rate is the offered load in requests per second; 0 is a pause.
	Rate float64 `json:"rate"`
}

// Arrival processes.
const (
	// Constant sends every 1/rate.
	Constant = "constant"
	// Poisson draws exponential gaps of mean 1/rate.
	Poisson = "poisson"
)

// Schedule yields the intended send times, as offsets from the start.
type Schedule struct {
	phases  []Phase
	poisson bool
	rng     *rand.Rand
	phase   int
	// phaseStart is the offset the current phase starts at; k counts its
	// arrivals (constant); last is the latest arrival (Poisson).
	phaseStart, last time.Duration
	k                int
}

// NewSchedule validates the phases. seed makes Poisson arrivals
// repeatable.
func NewSchedule(phases []Phase, arrival string, seed uint64) (*Schedule, error) {
	if len(phases) == 0 {
		return nil, fmt.Errorf("phases: at least one")
	}
	for i, p := range phases {
		if p.Duration <= 0 {
			return nil, fmt.Errorf("phases[%d].duration %v: must be positive", i, p.Duration)
		}
		if p.Rate < 0 || p.Rate > 1e6 || math.IsNaN(p.Rate) {
			return nil, fmt.Errorf("phases[%d].rate %v: must be in [0, 1e6] requests/s", i, p.Rate)
		}
	}
	if arrival != Constant && arrival != Poisson {
		return nil, fmt.Errorf("arrival %q: must be %q or %q", arrival, Constant, Poisson)
	}
	return &Schedule{phases: phases, poisson: arrival == Poisson, rng: rand.New(rand.NewPCG(seed, 0x5eed))}, nil
}

// Total is the length of the schedule.
func (s *Schedule) Total() time.Duration {
	var d time.Duration
	for _, p := range s.phases {
		d += p.Duration
	}
	return d
}

// Next returns the next intended send time, and false at the end.
func (s *Schedule) Next() (time.Duration, bool) {
	for s.phase < len(s.phases) {
		p := s.phases[s.phase]
		end := s.phaseStart + p.Duration
		if p.Rate > 0 {
			var at time.Duration
			if s.poisson {
				at = max(s.last, s.phaseStart) + time.Duration(s.rng.ExpFloat64()/p.Rate*float64(time.Second))
			} else {
				at = s.phaseStart + time.Duration(float64(s.k)/p.Rate*float64(time.Second))
			}
			if at < end {
				s.k++
				s.last = at
				return at, true
			}
		}
		// Poisson arrivals are memoryless: drawing afresh from the next
		// phase's start is exact.
		s.phase++
		s.phaseStart = end
		s.k = 0
	}
	return 0, false
}
