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

// Package workload holds the benchmark's pod workloads: a latency-sensitive
// HTTP server whose every request costs a fixed amount of CPU, and Batch
// burners that count the units of work they finish and write the count to
// a file the harness reads from the host.
package workload

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// tableSize is the working set each request and each CPU unit walks: 256
// KiB, a core's L2, so a cache-heavy neighbour slows the work down.
const tableSize = 256 << 10

var table = func() []uint64 {
	t := make([]uint64, tableSize/8)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range t {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		t[i] = x
	}
	return t
}()

// Chunk is the number of kernel steps between two looks at the clock.
const Chunk = 512

// Spin runs n steps of the work kernel: dependent loads at pseudo-random
// places of the table, so the work is neither free of memory nor
// foldable by the compiler. It returns a value the caller must use.
func Spin(n int, seed uint64) uint64 {
	x := seed | 1
	mask := uint64(len(table) - 1)
	for range n {
		x ^= table[x&mask]
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// ThreadCPU is the CPU time the calling OS thread has used.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BurnCPU spins until the calling goroutine's thread has used d of CPU
// time, so a request costs d of CPU however often it is preempted: time
// spent waiting for a CPU is not counted, only work. It returns the CPU
// time used and the steps done (fewer per millisecond when a neighbour
// thrashes the cache).
func BurnCPU(d time.Duration, seed uint64) (used time.Duration, steps int, sink uint64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := ThreadCPU()
	for {
		sink = Spin(Chunk, sink^seed)
		steps += Chunk
		if used = ThreadCPU() - start; used >= d {
			return used, steps, sink
		}
	}
}

// Calibrate returns how many steps take d of thread CPU time, the fastest
// of rounds tries (the least disturbed).
func Calibrate(d time.Duration, rounds int) int {
	best := 0
	for range max(rounds, 1) {
		_, steps, _ := BurnCPU(d, 1)
		best = max(best, steps)
	}
	return best
}

// SpinMeasured runs steps of the kernel on one locked thread and returns
// the thread CPU time they took.
func SpinMeasured(steps int, seed uint64) (time.Duration, uint64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := ThreadCPU()
	sink := Spin(steps, seed)
	return ThreadCPU() - t0, sink
}
