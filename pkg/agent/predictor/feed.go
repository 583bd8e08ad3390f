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

package predictor

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// windows are n consecutive update windows (from + k·step, from + (k+1)·step],
// k = 0..n−1. A sample at a window's end belongs to that window, as the
// metric cache's windows do.
type windows struct {
	from time.Time
	step time.Duration
	n    int
	// fromNs is from in Unix nanoseconds: index runs once per raw value,
	// and integer arithmetic is several times cheaper than time.Time's.
	fromNs int64
}

func newWindows(from time.Time, step time.Duration, n int) windows {
	return windows{from: from, step: step, n: n, fromNs: from.UnixNano()}
}

// end is the end of window k, the time its average is fed at.
func (w windows) end(k int) time.Time { return w.from.Add(time.Duration(k+1) * w.step) }

// index returns the window t falls in, or −1.
func (w windows) index(t time.Time) int { return w.indexNanos(t.UnixNano()) }

func (w windows) indexNanos(t int64) int {
	d := t - w.fromNs
	if d <= 0 {
		return -1
	}
	k := (d - 1) / int64(w.step)
	if k >= int64(w.n) {
		return -1
	}
	return int(k)
}

// Scratch slots of the per-window averages: the node, each band, the
// system, and one pod at a time.
const (
	slotNode   = 0
	slotBands  = 1 // .. slotBands+numBands-1
	slotSystem = slotBands + numBands
	slotPod    = slotSystem + 1
	numScratch = slotPod + 1
)

// feedLocked feeds every window that ended since the last feed: each
// histogram gets the average of its series over each window, at the
// window's end. It returns how many windows it fed.
//
// Windows follow a fixed grid from the first one, so that a restart
// (fedUntil restored from the checkpoint) feeds exactly the windows that
// were not fed before, from the samples the metric cache kept -- a kill -9
// loses only what the cache itself lost. Without a previous feed (a fresh
// start, a discarded checkpoint, a half-life change) the grid starts at the
// oldest sample the cache holds, so the histograms get all of it at once.
// Only complete windows are fed; the one in progress waits for its end.
func (p *Predictor) feedLocked(logger klog.Logger, c *metriccache.Cache, now time.Time) int {
	step := p.cfg.UpdateInterval
	if c == nil {
		return 0
	}
	if p.fedUntil.IsZero() {
		st := c.Stats()
		if st.Samples == 0 {
			return 0
		}
		// The grid starts just before the oldest sample, on a whole
		// second (cosmetic: round window ends in logs and checkpoints).
		p.fedUntil = st.Oldest.Add(-time.Nanosecond).Truncate(time.Second)
	} else if p.fedUntil.After(now) {
		// The clock went back across a restart: restart the grid rather
		// than wait for it to catch up.
		logger.Info("The predictor's last update is in the future, restarting the update grid now", "fedUntil", p.fedUntil, "now", now)
		p.fedUntil = now
		return 0
	}
	n := int(now.Sub(p.fedUntil) / step)
	if n <= 0 {
		return 0
	}
	if n > 1 {
		// After a gap, windows before the oldest sample the cache holds
		// have nothing to feed: skip them rather than walk them.
		st := c.Stats()
		if st.Samples == 0 {
			p.fedUntil = p.fedUntil.Add(time.Duration(n) * step)
			return 0
		}
		if st.Oldest.After(p.fedUntil) {
			skip := min(int(st.Oldest.Sub(p.fedUntil)/step), n)
			p.fedUntil = p.fedUntil.Add(time.Duration(skip) * step)
			n -= skip
		}
	}
	if n == 0 {
		return 0
	}
	w := newWindows(p.fedUntil, step, n)
	for i, k := range resourceKinds {
		p.feedResourceLocked(c, w, now, k.cache, p.res[i])
	}
	p.fedUntil = w.end(n - 1)
	return n
}

func (p *Predictor) feedResourceLocked(c *metriccache.Cache, w windows, now time.Time, r metriccache.Resource, rs *resourceState) {
	// Node level = node − Mid − Batch − Free: the Prod pods and the
	// system. A band without a value in a window counts as zero, which
	// errs high (on the safe side for a peak).
	node := p.averages(c, metriccache.NodeKey(r), w, now, slotNode)
	for i, b := range extension.Bands {
		band := p.averages(c, metriccache.BandKey(b, r), w, now, slotBands+i)
		for k, v := range band {
			if !math.IsNaN(v) {
				rs.bands[i].AddSample(v, 1, w.end(k))
				if b != extension.BandProd {
					node[k] -= v // NaN stays NaN
				}
			}
		}
	}
	rs.fed = fedUsage{last: math.NaN(), maxAfterPrediction: math.NaN()}
	for k, v := range node {
		if !math.IsNaN(v) {
			rs.prod.AddNodeSample(max(v, 0), 1, w.end(k))
			rs.fed.add(max(v, 0), w.end(k), p.result.Time)
		}
	}
	for k, v := range p.averages(c, metriccache.SystemKey(r), w, now, slotSystem) {
		if !math.IsNaN(v) {
			rs.prod.AddSystemSample(v, 1, w.end(k))
		}
	}
	for id := range p.tracked {
		for k, v := range p.averages(c, metriccache.PodKey(types.UID(id), r), w, now, slotPod) {
			if !math.IsNaN(v) {
				rs.prod.AddPodSample(id, v, 1, w.end(k))
			}
		}
	}
}

// averages returns the average of series key in each window (NaN where
// it has no value), in the scratch slot's slice.
func (p *Predictor) averages(c *metriccache.Cache, key metriccache.SeriesKey, w windows, now time.Time, slot int) []float64 {
	// The cache's windows end at its clock's now, the same clock as
	// ours; a step of slack covers the time this cycle has taken, and
	// samples after the last window are left for the next feed.
	p.values = c.Values(p.values[:0], key, now.Sub(w.from)+w.step)
	sums := resize(p.avg[slot], w.n)
	p.avg[slot] = sums
	p.counts = resize(p.counts, w.n)
	clear(sums)
	clear(p.counts)
	for _, v := range p.values {
		if k := w.indexNanos(v.Time.UnixNano()); k >= 0 {
			sums[k] += v.Value
			p.counts[k]++
		}
	}
	for k := range sums {
		if p.counts[k] == 0 {
			sums[k] = math.NaN()
		} else {
			sums[k] /= float64(p.counts[k])
		}
	}
	return sums
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
