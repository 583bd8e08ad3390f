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
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/apis/extension"
)

// Kind is what a series measures.
type Kind uint8

// Series kinds, from the least to the most important to keep: under memory
// pressure pod chunks are evicted first, node chunks last.
const (
	KindPod Kind = iota + 1
	KindBand
	KindSystem
	KindNode
)

func (k Kind) String() string {
	switch k {
	case KindPod:
		return "pod"
	case KindBand:
		return "band"
	case KindSystem:
		return "system"
	case KindNode:
		return "node"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Resource is the resource a series measures.
type Resource uint8

// Resources and their units.
const (
	// ResourceCPU is in cores.
	ResourceCPU Resource = iota + 1
	// ResourceMemory is in bytes.
	ResourceMemory
)

func (r Resource) String() string {
	switch r {
	case ResourceCPU:
		return "cpu"
	case ResourceMemory:
		return "memory"
	}
	return fmt.Sprintf("Resource(%d)", uint8(r))
}

// SeriesKey names a series.
type SeriesKey struct {
	Kind Kind
	// ID is the pod UID (KindPod) or the band name (KindBand); empty for
	// the node and system series.
	ID       string
	Resource Resource
}

// NodeKey is the key of the node's usage series.
func NodeKey(r Resource) SeriesKey { return SeriesKey{Kind: KindNode, Resource: r} }

// SystemKey is the key of the node's non-pod usage series.
func SystemKey(r Resource) SeriesKey { return SeriesKey{Kind: KindSystem, Resource: r} }

// PodKey is the key of a pod's usage series.
func PodKey(uid types.UID, r Resource) SeriesKey {
	return SeriesKey{Kind: KindPod, ID: string(uid), Resource: r}
}

// BandKey is the key of the series of the summed usage of a band's pods.
func BandKey(b extension.Band, r Resource) SeriesKey {
	return SeriesKey{Kind: KindBand, ID: string(b), Resource: r}
}

// Point is one value of one series in a sample.
type Point struct {
	Key   SeriesKey
	Value float64
}

// TimedValue is one stored value.
type TimedValue struct {
	Time  time.Time
	Value float64
}

// ErrOutOfOrder is returned by Append for a sample not newer than the last
// one: the timestamp ring is ordered, so the sample is dropped.
var ErrOutOfOrder = errors.New("sample not newer than the last one")

// chunkSlots is how many consecutive samples one chunk of a series holds:
// 2 minutes at 1 s, so a series costs memory for the stretch it exists
// plus at most one partly filled chunk.
const chunkSlots = 120

// chunk holds the values of one series for samples base..base+chunkSlots-1
// (sample sequence numbers); NaN marks a sample without a value.
type chunk struct {
	base   uint64
	values [chunkSlots]float32
}

// Accounted sizes. chunkBytes is exact; seriesBytes approximates the
// series struct, its map entry and its chunk slice, plus the ID.
const (
	chunkBytes       = int64(unsafe.Sizeof(chunk{}))
	seriesBaseBytes  = 160
	timeSlotBytes    = 8
	chunkSliceGrowth = 8 // bytes of chunk slice per chunk (pointer)
)

type series struct {
	key    SeriesKey
	chunks []*chunk // oldest first, bases strictly increasing
	last   uint64   // sequence number of the newest value
	has    bool
}

func seriesBytes(k SeriesKey) int64 { return seriesBaseBytes + int64(len(k.ID)) }

// Stats describes the cache's contents and what it refused.
type Stats struct {
	// Series is the number of series kept.
	Series int
	// Samples is the number of sample timestamps kept.
	Samples int
	// Oldest and Newest are the times of the oldest and newest kept
	// samples; zero when empty.
	Oldest, Newest time.Time
	// UsedBytes is the accounted memory of the stored data, never above
	// BudgetBytes.
	UsedBytes, BudgetBytes int64
	// Refused counts values dropped because the budget was full and
	// nothing older could be evicted for them.
	Refused uint64
	// EvictedChunks counts chunks dropped before their retention to stay
	// within the budget.
	EvictedChunks uint64
	// OutOfOrder counts samples dropped for not being newer than the last.
	OutOfOrder uint64
}

// Cache is the in-memory store. All methods are safe for concurrent use.
type Cache struct {
	cfg   Config
	clock clock.WithTicker

	mu sync.RWMutex
	// times is the timestamp ring: sample seq is at times[seq%len(times)],
	// for seq in [tail, head).
	times  []int64
	head   uint64
	tail   uint64
	series map[SeriesKey]*series
	// free holds chunks dropped by retention, for reuse; they stay
	// accounted in used.
	free []*chunk
	// dropped is the chunk base below which chunks were already dropped.
	dropped uint64
	// noVictim[kind] is base+1 when a search for a chunk a requester of
	// that kind may evict, filling chunk base, found none. Until the base
	// moves on nothing can become evictable, so a refused series costs no
	// further scans: without this, a full cache would scan every series
	// for every refused value.
	noVictim [KindNode + 1]uint64
	used     int64
	stats    Stats

	// checkpointMu serialises checkpoints, so two writers never share the
	// encode buffer.
	checkpointMu  sync.Mutex
	checkpointBuf []byte
}

// New returns a cache, restored from cfg.CheckpointPath when that holds a
// usable checkpoint. An unusable checkpoint (corrupt, another format
// version) is logged through ctx's logger and ignored: the cache starts
// empty rather than not at all.
func New(ctx context.Context, cfg Config, clk clock.WithTicker) (*Cache, error) {
	cfg.SetDefaults()
	if errs := cfg.Validate(field.NewPath("metricCache")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	slots := ringSlots(&cfg)
	c := &Cache{
		cfg:    cfg,
		clock:  clk,
		times:  make([]int64, slots),
		series: map[SeriesKey]*series{},
		used:   int64(slots) * timeSlotBytes,
	}
	c.stats.BudgetBytes = cfg.MemoryBudgetBytes
	if cfg.CheckpointPath != "" {
		c.restore(klog.FromContext(ctx))
	}
	return c, nil
}

// Append stores one sample: the values of some series at time t. Series
// not in points get no value at t. It returns ErrOutOfOrder, storing
// nothing, when t is not after the previous sample.
func (c *Cache) Append(t time.Time, points []Point) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq, err := c.beginLocked(t)
	if err != nil {
		return err
	}
	for i := range points {
		c.putLocked(points[i].Key, points[i].Value, seq)
	}
	return nil
}

// beginLocked opens the slot of a new sample at t and expires what falls
// out of the retention or the ring.
func (c *Cache) beginLocked(t time.Time) (uint64, error) {
	tn := t.UnixNano()
	if c.head > c.tail && tn <= c.times[(c.head-1)%uint64(len(c.times))] {
		c.stats.OutOfOrder++
		return 0, fmt.Errorf("appending sample at %s: %w", t.Format(time.RFC3339Nano), ErrOutOfOrder)
	}
	seq := c.head
	c.times[seq%uint64(len(c.times))] = tn
	c.head++
	c.expireLocked(tn)
	return seq, nil
}

// expireLocked moves the tail past samples older than the retention (as of
// now) or beyond the ring, and drops chunks wholly behind it.
func (c *Cache) expireLocked(now int64) {
	n := uint64(len(c.times))
	if c.head-c.tail > n {
		c.tail = c.head - n
	}
	cutoff := now - int64(c.cfg.Retention)
	for c.tail < c.head && c.times[c.tail%n] <= cutoff {
		c.tail++
	}
	below := c.tail - c.tail%chunkSlots
	if below <= c.dropped {
		return
	}
	c.dropped = below
	for k, s := range c.series {
		i := 0
		for i < len(s.chunks) && s.chunks[i].base+chunkSlots <= c.tail {
			c.free = append(c.free, s.chunks[i])
			s.chunks[i] = nil
			i++
		}
		if i == 0 {
			continue
		}
		s.chunks = append(s.chunks[:0], s.chunks[i:]...)
		if len(s.chunks) == 0 {
			// A pod gone for a whole retention: its series goes too.
			delete(c.series, k)
			c.used -= seriesBytes(k)
		}
	}
	// Keep at most one spare chunk per series; the rest goes back to the
	// runtime.
	for len(c.free) > len(c.series) {
		c.free[len(c.free)-1] = nil
		c.free = c.free[:len(c.free)-1]
		c.used -= chunkBytes
	}
}

func (c *Cache) putLocked(k SeriesKey, v float64, seq uint64) {
	base := seq - seq%chunkSlots
	s := c.series[k]
	if s == nil {
		if !c.reserveLocked(seriesBytes(k), k.Kind, nil, base) {
			c.stats.Refused++
			return
		}
		s = &series{key: k}
		c.series[k] = s
		c.used += seriesBytes(k)
	}
	n := len(s.chunks)
	if n == 0 || s.chunks[n-1].base != base {
		ch := c.allocChunkLocked(k.Kind, s, base)
		if ch == nil {
			c.stats.Refused++
			if n == 0 {
				delete(c.series, k)
				c.used -= seriesBytes(k)
			}
			return
		}
		s.chunks = append(s.chunks, ch)
	}
	s.chunks[len(s.chunks)-1].values[seq-base] = float32(v)
	s.last, s.has = seq, true
}

// allocChunkLocked returns a NaN-filled chunk for base, from the spares,
// from new memory within the budget, or by evicting an older chunk; nil
// when none can be had.
func (c *Cache) allocChunkLocked(kind Kind, keep *series, base uint64) *chunk {
	var ch *chunk
	if n := len(c.free); n > 0 {
		ch = c.free[n-1]
		c.free[n-1] = nil
		c.free = c.free[:n-1]
	} else {
		if !c.reserveLocked(chunkBytes, kind, keep, base) {
			return nil
		}
		ch = new(chunk)
		c.used += chunkBytes
	}
	ch.base = base
	nan := float32(math.NaN())
	for i := range ch.values {
		ch.values[i] = nan
	}
	return ch
}

// reserveLocked frees accounted memory until bytes more fit in the budget:
// spare chunks first, then the oldest chunk of the least important kind.
// A requester may take any chunk of a less important kind (node history
// outlives pod history, even a pod's current chunk), but of its own kind
// only chunks older than the one being filled (base), and never of a more
// important kind. keep's series is not deleted even when its last chunk
// goes.
func (c *Cache) reserveLocked(bytes int64, kind Kind, keep *series, base uint64) bool {
	for c.used+bytes > c.cfg.MemoryBudgetBytes {
		if n := len(c.free); n > 0 {
			c.free[n-1] = nil
			c.free = c.free[:n-1]
			c.used -= chunkBytes
			continue
		}
		victim := c.oldestChunkLocked(kind, base)
		if victim == nil {
			return false
		}
		victim.chunks[0] = nil
		victim.chunks = victim.chunks[1:]
		c.used -= chunkBytes
		c.stats.EvictedChunks++
		if len(victim.chunks) == 0 && victim != keep {
			delete(c.series, victim.key)
			c.used -= seriesBytes(victim.key)
		}
	}
	return true
}

func (c *Cache) oldestChunkLocked(upTo Kind, base uint64) *series {
	if c.noVictim[upTo] == base+1 {
		return nil
	}
	for k := KindPod; k <= upTo; k++ {
		var victim *series
		for _, s := range c.series {
			if s.key.Kind != k || len(s.chunks) == 0 || (k == upTo && s.chunks[0].base >= base) {
				continue
			}
			if victim == nil || s.chunks[0].base < victim.chunks[0].base {
				victim = s
			}
		}
		if victim != nil {
			return victim
		}
	}
	c.noVictim[upTo] = base + 1
	return nil
}

// windowLocked returns the sample range [lo, hi) whose times are in
// (now − window, now].
func (c *Cache) windowLocked(now time.Time, window time.Duration) (lo, hi uint64) {
	n := uint64(len(c.times))
	at := func(seq uint64) int64 { return c.times[seq%n] }
	start, end := now.Add(-window).UnixNano(), now.UnixNano()
	// Also never reach past the retention, in case appends stopped.
	start = max(start, end-int64(c.cfg.Retention))
	count := int(c.head - c.tail)
	lo = c.tail + uint64(sort.Search(count, func(i int) bool { return at(c.tail+uint64(i)) > start }))
	hi = c.tail + uint64(sort.Search(count, func(i int) bool { return at(c.tail+uint64(i)) > end }))
	return lo, hi
}

// eachValueLocked calls fn with every value of s in [lo, hi), oldest first.
func (c *Cache) eachValueLocked(s *series, lo, hi uint64, fn func(seq uint64, v float32)) {
	for _, ch := range s.chunks {
		if ch.base+chunkSlots <= lo {
			continue
		}
		if ch.base >= hi {
			break
		}
		from, to := max(lo, ch.base), min(hi, ch.base+chunkSlots)
		for seq := from; seq < to; seq++ {
			if v := ch.values[seq-ch.base]; v == v { // not NaN
				fn(seq, v)
			}
		}
	}
}

// Aggregate returns the statistics of a series over the window ending now
// (the clock's now), and false when the series has no value in it.
func (c *Cache) Aggregate(k SeriesKey, window time.Duration) (a Aggregate, ok bool) {
	c.InWindow(window, func(w *Window) { a, ok = w.Aggregate(k) })
	return a, ok
}

// AggregateKind returns the statistics over the window ending now of every
// series of a kind and resource (every pod's CPU, say), by series ID.
// Series without a value in the window are left out.
func (c *Cache) AggregateKind(kind Kind, r Resource, window time.Duration) map[string]Aggregate {
	var out map[string]Aggregate
	c.InWindow(window, func(w *Window) {
		out = map[string]Aggregate{}
		for k, s := range c.series {
			if k.Kind != kind || k.Resource != r {
				continue
			}
			if a, ok := w.aggregate(s); ok {
				out[k.ID] = a
			}
		}
	})
	return out
}

// AverageKind returns, by ID, the window average of every series of a kind
// and resource that has a value in the window: the Avg of AggregateKind
// without the percentiles, which cost a selection over each series' values.
func (c *Cache) AverageKind(kind Kind, r Resource, window time.Duration) (out map[string]float64) {
	c.InWindow(window, func(w *Window) { out = w.AverageKind(kind, r) })
	return out
}

// InWindow calls read with the samples whose times are in (now − window,
// now], the clock's now taken once, holding the cache's read lock: every
// read through w sees the same samples, whatever the collect loop appends
// meanwhile, so sums across series hold over the window as they hold in
// each sample (node = system + pods). read must not call the Cache, and
// w is valid only until read returns.
func (c *Cache) InWindow(window time.Duration, read func(w *Window)) {
	buf := getScratch()
	defer putScratch(buf)
	c.mu.RLock()
	defer c.mu.RUnlock()
	w := &Window{c: c, buf: buf}
	w.lo, w.hi = c.windowLocked(c.clock.Now(), window)
	read(w)
}

// Window reads series over one range of samples (InWindow).
type Window struct {
	c      *Cache
	lo, hi uint64
	buf    *[]float32
}

// Aggregate returns the statistics of a series over the window, and false
// when the series has no value in it.
func (w *Window) Aggregate(k SeriesKey) (Aggregate, bool) {
	s := w.c.series[k]
	if s == nil {
		return Aggregate{}, false
	}
	return w.aggregate(s)
}

func (w *Window) aggregate(s *series) (Aggregate, bool) {
	*w.buf = w.c.appendValuesLocked((*w.buf)[:0], s, w.lo, w.hi)
	return aggregate(*w.buf)
}

// AverageKind returns, by ID, the average over the window of every series
// of a kind and resource that has a value in it.
func (w *Window) AverageKind(kind Kind, r Resource) map[string]float64 {
	lo, hi := w.lo, w.hi
	out := make(map[string]float64, len(w.c.series)/4)
	for k, s := range w.c.series {
		if k.Kind != kind || k.Resource != r {
			continue
		}
		var sum float64 // float64, as aggregate sums
		n := 0
		for _, ch := range s.chunks {
			if ch.base+chunkSlots <= lo {
				continue
			}
			if ch.base >= hi {
				break
			}
			for _, v := range ch.values[max(lo, ch.base)-ch.base : min(hi, ch.base+chunkSlots)-ch.base] {
				if v == v { // not NaN
					sum += float64(v)
					n++
				}
			}
		}
		if n > 0 {
			out[k.ID] = sum / float64(n)
		}
	}
	return out
}

func (c *Cache) appendValuesLocked(dst []float32, s *series, lo, hi uint64) []float32 {
	c.eachValueLocked(s, lo, hi, func(_ uint64, v float32) { dst = append(dst, v) })
	return dst
}

// Values appends to dst the values of a series in the window ending now,
// oldest first, with their times.
func (c *Cache) Values(dst []TimedValue, k SeriesKey, window time.Duration) []TimedValue {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.series[k]
	if s == nil {
		return dst
	}
	lo, hi := c.windowLocked(c.clock.Now(), window)
	n := uint64(len(c.times))
	c.eachValueLocked(s, lo, hi, func(seq uint64, v float32) {
		dst = append(dst, TimedValue{Time: time.Unix(0, c.times[seq%n]), Value: float64(v)})
	})
	return dst
}

// Latest returns the newest value of a series still kept.
func (c *Cache) Latest(k SeriesKey) (TimedValue, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.series[k]
	if s == nil || !s.has || s.last < c.tail || len(s.chunks) == 0 {
		return TimedValue{}, false
	}
	ch := s.chunks[len(s.chunks)-1]
	if s.last < ch.base || s.last >= ch.base+chunkSlots {
		return TimedValue{}, false
	}
	return TimedValue{Time: time.Unix(0, c.times[s.last%uint64(len(c.times))]), Value: float64(ch.values[s.last-ch.base])}, true
}

// Keys returns the keys of the series of a kind that still have a value
// within the retention, in no particular order.
func (c *Cache) Keys(kind Kind) []SeriesKey {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []SeriesKey
	for k, s := range c.series {
		if k.Kind == kind && s.has && s.last >= c.tail {
			out = append(out, k)
		}
	}
	return out
}

// Stats returns the cache's current figures.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := c.stats
	st.Series = len(c.series)
	st.Samples = int(c.head - c.tail)
	st.UsedBytes = c.used
	if c.head > c.tail {
		n := uint64(len(c.times))
		st.Oldest = time.Unix(0, c.times[c.tail%n])
		st.Newest = time.Unix(0, c.times[(c.head-1)%n])
	}
	return st
}

var scratchPool = sync.Pool{New: func() any { b := make([]float32, 0, 2048); return &b }}

func getScratch() *[]float32  { return scratchPool.Get().(*[]float32) }
func putScratch(b *[]float32) { scratchPool.Put(b) }
