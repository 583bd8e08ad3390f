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

// Package preemption decides which running pods a pending pod may preempt under
// Waterline's priority bands (docs/design/preemption.md), and simulates what
// the scheduler's default preemption would evict.
//
// It decides three things:
//
//   - whether a PriorityClass is NonPreemptible, and above which priority
//     its running pods may still be preempted (ParseClass);
//   - whether one running pod may be a victim of one pending pod
//     (VictimVerdict), and whether a pending pod may preempt at all
//     (PreemptorVerdict);
//   - in a simplified model of the default preemption, which pods a pending
//     pod would preempt on which node (SelectVictims, DryRun), for the
//     preemption audit and the simulator.
//
// The BandPreemption scheduler plugin calls VictimVerdict and
// PreemptorVerdict from inside the framework's own preemption evaluator, so
// the scheduler, the audit and the simulator agree on who may be a victim.
//
// It must never do I/O, read the clock, log, or panic; it never evicts
// anything. A malformed annotation never makes a class more protected than
// a normal class: the class is treated as a normal class and the caller is
// told why, so a typo cannot silently make pods unpreemptible.
package preemption
