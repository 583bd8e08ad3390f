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

package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Burner kinds.
const (
	// KindCPU spins the work kernel on the L2-sized table: a unit is
	// CPUUnitSteps steps.
	KindCPU = "cpu"
	// KindMem streams read-modify-writes through a buffer far larger than
	// the last-level cache, a cache line at a time: a unit is MemUnitBytes
	// of it (one pass of the default buffer). It takes memory bandwidth
	// and evicts its neighbours' cache lines.
	KindMem = "mem"
)

// MemUnitBytes is the size of a mem unit: the same work whatever the
// buffer's size.
const MemUnitBytes = 64 << 20

// memChunkBytes is how a mem buffer grows.
const memChunkBytes = 16 << 20

// CPUUnitSteps is the size of a CPU unit (about 1 ms of a core here).
const CPUUnitSteps = 1 << 16

// BurnerConfig describes a Batch burner.
type BurnerConfig struct {
	// Kind is KindCPU or KindMem.
	Kind string
	// Threads is the number of goroutines burning, each on its own thread.
	Threads int
	// MemBytes is the buffer each mem thread passes over (default 64 MiB).
	MemBytes int
	// Ramp makes a mem burner a job whose memory grows: its buffer grows
	// from one chunk to MemBytes over Ramp, each new page touched at once
	// (0: all of it from the start).
	Ramp time.Duration
	// Progress is the file progress lines are appended to (JSON lines,
	// see Progress); empty writes none.
	Progress string
	// Interval is how often a progress line is written (default 1s).
	Interval time.Duration
	// Name goes in each progress line (the pod's name).
	Name string
}

// Validate names the bad field.
func (c *BurnerConfig) Validate() error {
	if c.Kind != KindCPU && c.Kind != KindMem {
		return fmt.Errorf("kind %q: must be %q or %q", c.Kind, KindCPU, KindMem)
	}
	if c.Threads < 1 || c.Threads > 256 {
		return fmt.Errorf("threads %d: must be in [1, 256]", c.Threads)
	}
	if c.MemBytes == 0 {
		c.MemBytes = 64 << 20
	}
	if c.MemBytes < 1<<20 || c.MemBytes > 8<<30 {
		return fmt.Errorf("mem-bytes %d: must be in [1 MiB, 8 GiB]", c.MemBytes)
	}
	if c.Ramp < 0 {
		return fmt.Errorf("ramp %v: must not be negative", c.Ramp)
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Interval < 10*time.Millisecond {
		return fmt.Errorf("interval %v: at least 10ms", c.Interval)
	}
	return nil
}

// Progress is one line of a burner's progress file.
type Progress struct {
	// Time is when the line was written (RFC 3339, ns).
	Time time.Time `json:"time"`
	// Name and Kind say which burner.
	Name string `json:"name,omitempty"`
	Kind string `json:"kind"`
	// Units is the number of units finished since the burner started.
	Units int64 `json:"units"`
	// Final is set on the line written when the burner stops (SIGTERM,
	// eviction).
	Final bool `json:"final,omitempty"`
}

// RunBurner burns until ctx ends, appending a progress line every
// interval and a final one. It returns the units done.
func RunBurner(ctx context.Context, cfg BurnerConfig) (int64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	var f *os.File
	if cfg.Progress != "" {
		var err error
		if f, err = os.OpenFile(cfg.Progress, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return 0, fmt.Errorf("opening the progress file: %w", err)
		}
		defer func() { _ = f.Close() }()
	}
	var units atomic.Int64
	write := func(final bool) error {
		if f == nil {
			return nil
		}
		b, _ := json.Marshal(Progress{Time: time.Now(), Name: cfg.Name, Kind: cfg.Kind, Units: units.Load(), Final: final})
		if _, err := f.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("writing progress: %w", err)
		}
		return nil
	}
	if err := write(false); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var sink atomic.Uint64
	for i := range cfg.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			x := uint64(i + 1)
			if cfg.Kind == KindMem {
				x = burnMem(ctx, cfg, &units, x)
			}
			for cfg.Kind == KindCPU && ctx.Err() == nil {
				x = Spin(CPUUnitSteps, x)
				units.Add(1)
			}
			sink.Add(x)
		}()
	}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return units.Load(), write(true)
		case <-tick.C:
			if err := write(false); err != nil {
				cancel()
				wg.Wait()
				return units.Load(), err
			}
		}
	}
}

// burnMem passes over a buffer of cfg.MemBytes, grown over cfg.Ramp,
// until ctx ends, adding a unit per MemUnitBytes passed. The buffer grows
// on the clock, not with the passes, and growing comes first: before each
// chunk's pass the buffer is grown to what the clock says, so a burner
// short of CPU (throttled, or on a busy machine) passes slowly but holds
// its memory on time, as a job whose memory grows does. Chunks are
// mapped populated (allocChunk): backing a page costs the kernel's
// zeroing, not a fault per page, which on a virtual machine halves the
// CPU a burner needs to grow.
func burnMem(ctx context.Context, cfg BurnerConfig, units *atomic.Int64, x uint64) uint64 {
	chunk := min(memChunkBytes, cfg.MemBytes)
	nChunks := (cfg.MemBytes + chunk - 1) / chunk
	var chunks [][]uint64
	defer func() {
		for _, c := range chunks {
			freeChunk(c)
		}
	}()
	start := time.Now()
	grow := func() bool {
		want := nChunks
		if cfg.Ramp > 0 {
			want = max(1, min(nChunks, int(float64(nChunks)*float64(time.Since(start))/float64(cfg.Ramp))))
		}
		for len(chunks) < want && ctx.Err() == nil {
			chunks = append(chunks, allocChunk(chunk))
		}
		return len(chunks) < nChunks
	}
	growing := grow()
	var done int
	for ctx.Err() == nil {
		for i := 0; i < len(chunks) && ctx.Err() == nil; i++ {
			if growing {
				growing = grow()
			}
			x = memPass(chunks[i], x)
			done += chunk
			for done >= MemUnitBytes {
				units.Add(1)
				done -= MemUnitBytes
			}
		}
	}
	return x
}

// touch writes a word of every page of buf, so the kernel backs it now.
func touch(buf []uint64) []uint64 {
	for i := 0; i < len(buf); i += 512 {
		buf[i] = 1
	}
	return buf
}

// memPass reads and writes one word of every cache line of buf.
func memPass(buf []uint64, x uint64) uint64 {
	for i := 0; i < len(buf); i += 8 {
		buf[i] += x
		x ^= buf[i]
	}
	return x
}

// ReadProgress parses a progress file; a torn last line (being written)
// is ignored.
func ReadProgress(path string) ([]Progress, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Progress
	start := 0
	for i, c := range b {
		if c != '\n' {
			continue
		}
		var p Progress
		if err := json.Unmarshal(b[start:i], &p); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, len(out)+1, err)
		}
		out = append(out, p)
		start = i + 1
	}
	return out, nil
}
