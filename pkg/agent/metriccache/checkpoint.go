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

package metriccache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"time"
	"unsafe"

	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/pkg/agent/atomicfile"
)

// Checkpoint file format, little-endian:
//
//	"WLMC" | version u32 | savedAt i64 (unix ns)
//	nTimes u32 | times [nTimes]i64 (unix ns, strictly increasing)
//	nSeries u32 | per series:
//	    kind u8 | resource u8 | idLen u16 | id | first u32 | count u32 |
//	    values [count]f32 (NaN where the sample had no value)
//	crc32c u32 of everything before it
//
// values[j] belongs to times[first+j]. Bump checkpointVersion on any change:
// a checkpoint of another version is ignored, not misread.
const (
	checkpointMagic   = "WLMC"
	checkpointVersion = 1
	maxIDLen          = 1024
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptCheckpoint wraps every reason a checkpoint cannot be read.
var ErrCorruptCheckpoint = errors.New("corrupt metric cache checkpoint")

// ErrCheckpointVersion is returned for a checkpoint of another format
// version.
var ErrCheckpointVersion = errors.New("metric cache checkpoint of another version")

// Checkpoint writes the cache to cfg.CheckpointPath atomically: a temporary
// file in the same directory, fsync, rename over the old checkpoint, fsync
// of the directory. A crash at any point leaves the old or the new
// checkpoint, never a torn one. The cache's lock is held only while
// encoding, not during disk I/O.
func (c *Cache) Checkpoint() error {
	if c.cfg.CheckpointPath == "" {
		return nil
	}
	c.checkpointMu.Lock()
	defer c.checkpointMu.Unlock()
	c.mu.RLock()
	c.checkpointBuf = c.encodeLocked(c.checkpointBuf[:0])
	c.mu.RUnlock()
	return atomicfile.Write(c.cfg.CheckpointPath, c.checkpointBuf)
}

// Run checkpoints every cfg.CheckpointInterval until ctx ends, then writes
// a last checkpoint so a graceful shutdown loses nothing. Without a
// checkpoint path it only waits for ctx.
func (c *Cache) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if c.cfg.CheckpointPath == "" {
		<-ctx.Done()
		return
	}
	ticker := c.clock.NewTicker(c.cfg.CheckpointInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := c.Checkpoint(); err != nil {
				logger.Error(err, "Cannot write the final metric cache checkpoint", "path", c.cfg.CheckpointPath)
				return
			}
			logger.Info("Wrote the final metric cache checkpoint", "path", c.cfg.CheckpointPath)
			return
		case <-ticker.C():
			start := c.clock.Now()
			if err := c.Checkpoint(); err != nil {
				logger.Error(err, "Cannot write the metric cache checkpoint", "path", c.cfg.CheckpointPath)
				continue
			}
			logger.V(4).Info("Wrote the metric cache checkpoint", "path", c.cfg.CheckpointPath, "bytes", len(c.checkpointBuf), "duration", c.clock.Since(start))
		}
	}
}

func (c *Cache) encodeLocked(b []byte) []byte {
	// Room for the largest encoding at once: growing a 3 MiB buffer by
	// appends would leave four times that as garbage.
	samples := int(c.head - c.tail)
	most := len(checkpointMagic) + 4 + 8 + 4 + 8*samples + 4 + 4
	for k := range c.series {
		most += 2 + 2 + len(k.ID) + 4 + 4 + 4*samples
	}
	if cap(b)-len(b) < most {
		b = append(make([]byte, 0, len(b)+most), b...)
	}
	b = append(b, checkpointMagic...)
	b = binary.LittleEndian.AppendUint32(b, checkpointVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.clock.Now().UnixNano()))
	n := uint64(len(c.times))
	b = binary.LittleEndian.AppendUint32(b, uint32(c.head-c.tail))
	for seq := c.tail; seq < c.head; seq++ {
		b = binary.LittleEndian.AppendUint64(b, uint64(c.times[seq%n]))
	}
	countAt := len(b)
	b = binary.LittleEndian.AppendUint32(b, 0)
	var written uint32
	for k, s := range c.series {
		first, last, ok := keptRange(s, c.tail, c.head)
		if !ok {
			continue
		}
		b = append(b, byte(k.Kind), byte(k.Resource))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k.ID)))
		b = append(b, k.ID...)
		b = binary.LittleEndian.AppendUint32(b, uint32(first-c.tail))
		b = binary.LittleEndian.AppendUint32(b, uint32(last-first+1))
		// Chunk by chunk: runs of a chunk's values are copied whole,
		// samples between chunks (evicted, or the series absent) are NaN.
		seq := first
		for _, ch := range s.chunks {
			if ch.base+chunkSlots <= seq {
				continue
			}
			if ch.base > last {
				break
			}
			for ; seq < ch.base; seq++ {
				b = binary.LittleEndian.AppendUint32(b, nanBits)
			}
			to := min(last+1, ch.base+chunkSlots)
			b = appendFloat32s(b, ch.values[seq-ch.base:to-ch.base])
			seq = to
		}
		written++
	}
	binary.LittleEndian.PutUint32(b[countAt:], written)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// nanBits is how the checkpoint writes a sample without a value.
var nanBits = math.Float32bits(float32(math.NaN()))

// keptRange is the range of a series to checkpoint: from its first value at
// or after tail to its last value before head.
func keptRange(s *series, tail, head uint64) (first, last uint64, ok bool) {
	for _, ch := range s.chunks {
		if ch.base+chunkSlots <= tail || ch.base >= head {
			continue
		}
		for seq := max(tail, ch.base); seq < min(head, ch.base+chunkSlots); seq++ {
			if v := ch.values[seq-ch.base]; v == v { // not NaN
				first, ok = seq, true
				break
			}
		}
		if ok {
			break
		}
	}
	if !ok {
		return 0, 0, false
	}
	for i := len(s.chunks) - 1; i >= 0; i-- {
		ch := s.chunks[i]
		if ch.base >= head {
			continue
		}
		for seq := min(head, ch.base+chunkSlots); seq > max(first, ch.base); seq-- {
			if v := ch.values[seq-1-ch.base]; v == v {
				return first, seq - 1, true
			}
		}
		if ch.base <= first {
			break
		}
	}
	return first, first, true
}

// littleEndian is whether float32s are laid out in memory as the
// checkpoint writes them, so a run can be copied as bytes.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// appendFloat32s appends vs little-endian.
func appendFloat32s(b []byte, vs []float32) []byte {
	if littleEndian && len(vs) > 0 {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&vs[0])), 4*len(vs))...)
	}
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// restore loads the checkpoint into an empty cache, logging and ignoring
// one that cannot be used.
func (c *Cache) restore(logger klog.Logger) {
	path := c.cfg.CheckpointPath
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		logger.V(2).Info("No metric cache checkpoint, starting empty", "path", path)
		return
	}
	if err != nil {
		logger.Error(err, "Cannot read the metric cache checkpoint, starting empty", "path", path)
		return
	}
	cp, err := decodeCheckpoint(data)
	if err != nil {
		logger.Error(err, "Ignoring the metric cache checkpoint, starting empty", "path", path, "bytes", len(data))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.loadLocked(cp)
	logger.Info("Restored the metric cache from its checkpoint", "path", path, "savedAt", time.Unix(0, cp.savedAt),
		"samples", kept, "droppedSamples", len(cp.times)-kept, "series", len(c.series))
}

type checkpoint struct {
	savedAt int64
	times   []int64
	series  []checkpointSeries
}

type checkpointSeries struct {
	key    SeriesKey
	first  uint32
	values []float32
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("%w: truncated", ErrCorruptCheckpoint)
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// decodeCheckpoint parses and checks a checkpoint without trusting any of
// its lengths.
func decodeCheckpoint(data []byte) (*checkpoint, error) {
	if len(data) < len(checkpointMagic)+4+4 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, fmt.Errorf("%w: no %q header", ErrCorruptCheckpoint, checkpointMagic)
	}
	if v := binary.LittleEndian.Uint32(data[len(checkpointMagic):]); v != checkpointVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCheckpointVersion, v, checkpointVersion)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, crcTable); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorruptCheckpoint, got, sum)
	}
	d := &decoder{b: body[len(checkpointMagic)+4:]}
	cp := &checkpoint{savedAt: int64(d.u64())}
	nTimes := d.u32()
	if int64(nTimes)*8 > int64(len(d.b)) {
		return nil, fmt.Errorf("%w: %d timestamps in %d bytes", ErrCorruptCheckpoint, nTimes, len(d.b))
	}
	cp.times = make([]int64, nTimes)
	for i := range cp.times {
		cp.times[i] = int64(d.u64())
		if i > 0 && cp.times[i] <= cp.times[i-1] {
			return nil, fmt.Errorf("%w: timestamps not increasing at %d", ErrCorruptCheckpoint, i)
		}
	}
	nSeries := d.u32()
	seen := map[SeriesKey]bool{}
	for i := uint32(0); i < nSeries && d.err == nil; i++ {
		kind, res := Kind(d.u8()), Resource(d.u8())
		id := string(d.take(int(d.u16())))
		first, count := d.u32(), d.u32()
		if d.err != nil {
			break
		}
		key := SeriesKey{Kind: kind, ID: id, Resource: res}
		switch {
		case kind < KindPod || kind > KindNode || res < ResourceCPU || res > ResourceMemory:
			return nil, fmt.Errorf("%w: series %d has kind %d, resource %d", ErrCorruptCheckpoint, i, kind, res)
		case len(id) > maxIDLen:
			return nil, fmt.Errorf("%w: series %d has a %d-byte ID", ErrCorruptCheckpoint, i, len(id))
		case uint64(first)+uint64(count) > uint64(nTimes) || count == 0:
			return nil, fmt.Errorf("%w: series %s/%s/%s covers samples [%d, %d) of %d", ErrCorruptCheckpoint, kind, id, res, first, uint64(first)+uint64(count), nTimes)
		case seen[key]:
			return nil, fmt.Errorf("%w: series %s/%s/%s twice", ErrCorruptCheckpoint, kind, id, res)
		}
		seen[key] = true
		raw := d.take(int(count) * 4)
		if d.err != nil {
			break
		}
		values := make([]float32, count)
		for j := range values {
			values[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		cp.series = append(cp.series, checkpointSeries{key: key, first: first, values: values})
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last series", ErrCorruptCheckpoint, len(d.b))
	}
	return cp, nil
}

// loadLocked appends the checkpoint's samples that are within the retention
// of now (and fit the ring) to an empty cache and returns how many it kept.
func (c *Cache) loadLocked(cp *checkpoint) int {
	now := c.clock.Now().UnixNano()
	from := 0
	for from < len(cp.times) && cp.times[from] <= now-int64(c.cfg.Retention) {
		from++
	}
	if len(cp.times)-from > len(c.times) {
		from = len(cp.times) - len(c.times)
	}
	// Samples "from the future" (the clock went back across the restart)
	// would block appends until the clock catches up: drop them.
	to := len(cp.times)
	for to > from && cp.times[to-1] > now {
		to--
	}
	seqOf := make([]uint64, len(cp.times))
	n := uint64(len(c.times))
	for i := from; i < to; i++ {
		seqOf[i] = c.head
		c.times[c.head%n] = cp.times[i]
		c.head++
	}
	// Most important series first, so a budget smaller than before keeps
	// the node's history.
	for kind := KindNode; kind >= KindPod; kind-- {
		for _, s := range cp.series {
			if s.key.Kind != kind {
				continue
			}
			// Each series starts again from old samples, which can make
			// chunks evictable that a previous series' search found none
			// of.
			c.noVictim = [len(c.noVictim)]uint64{}
			for j, v := range s.values {
				i := int(s.first) + j
				if i < from || i >= to || v != v {
					continue
				}
				c.putLocked(s.key, float64(v), seqOf[i])
			}
		}
	}
	c.expireLocked(now)
	return to - from
}
