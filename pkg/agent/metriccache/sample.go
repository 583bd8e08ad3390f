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
	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
)

// AppendSample stores a collector sample: the node, system and pod series
// and, per band, the sum over the sample's pods of that band (a pod without
// a band counts as Prod, the safe default of extension.BandOf). A band's
// sum is stored only when every one of its pods has the value, so a new
// pod's first cycle (no CPU rate yet) does not dip the band's CPU; a band
// with no pods stores 0. Absent values (HasCPU or HasMemory false) are not
// stored. It returns ErrOutOfOrder for a sample not newer than the last.
func (c *Cache) AppendSample(s *collector.Sample) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq, err := c.beginLocked(s.Time)
	if err != nil {
		return err
	}
	c.putUsageLocked(NodeKey(ResourceCPU), NodeKey(ResourceMemory), s.Node, seq)
	c.putUsageLocked(SystemKey(ResourceCPU), SystemKey(ResourceMemory), s.System, seq)

	type sum struct {
		cpu, mem       float64
		cpuOK, memOK   bool
		cpuKey, memKey SeriesKey
	}
	var bands [len(bandOrder)]sum
	for i, b := range bandOrder {
		bands[i] = sum{cpuOK: true, memOK: true, cpuKey: BandKey(b, ResourceCPU), memKey: BandKey(b, ResourceMemory)}
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		c.putUsageLocked(PodKey(p.Pod.UID, ResourceCPU), PodKey(p.Pod.UID, ResourceMemory), p.Usage, seq)
		b := &bands[bandIndex(p.Pod.Band)]
		if p.HasCPU {
			b.cpu += p.CPU
		} else {
			b.cpuOK = false
		}
		if p.HasMemory {
			b.mem += float64(p.Memory)
		} else {
			b.memOK = false
		}
	}
	for i := range bands {
		b := &bands[i]
		if b.cpuOK {
			c.putLocked(b.cpuKey, b.cpu, seq)
		}
		if b.memOK {
			c.putLocked(b.memKey, b.mem, seq)
		}
	}
	return nil
}

func (c *Cache) putUsageLocked(cpuKey, memKey SeriesKey, u collector.Usage, seq uint64) {
	if u.HasCPU {
		c.putLocked(cpuKey, u.CPU, seq)
	}
	if u.HasMemory {
		c.putLocked(memKey, float64(u.Memory), seq)
	}
}

// bandOrder lists the bands AppendSample sums; bandIndex is its inverse,
// with Prod for an empty or unknown band.
var bandOrder = [...]extension.Band{extension.BandProd, extension.BandMid, extension.BandBatch, extension.BandFree}

func bandIndex(b extension.Band) int {
	for i, o := range bandOrder {
		if o == b {
			return i
		}
	}
	return 0
}
