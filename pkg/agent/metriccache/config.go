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
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults and bounds of Config.
const (
	DefaultRetention          = 30 * time.Minute
	DefaultInterval           = time.Second
	DefaultMemoryBudgetBytes  = 16 << 20
	DefaultCheckpointInterval = 30 * time.Second

	MinRetention         = time.Minute
	MaxRetention         = 24 * time.Hour
	MinInterval          = 100 * time.Millisecond
	MaxInterval          = time.Minute
	MinMemoryBudgetBytes = 1 << 20
)

// Config configures a Cache.
type Config struct {
	// Retention is how long raw samples are kept. Windows longer than the
	// retention are answered from what is kept. Range [1m, 24h], default
	// 30m.
	Retention time.Duration
	// Interval is the expected time between samples (the collector's
	// interval). With Retention it sizes the timestamp ring: at most
	// Retention/Interval (+ one chunk) samples are kept, so appending
	// faster than Interval shortens the effective retention. Range
	// [100ms, 1m], default 1s. The ring takes 8 bytes a slot, allocated
	// at start, and must fit in half the budget.
	Interval time.Duration
	// MemoryBudgetBytes is the most memory, in bytes, the stored samples
	// and series bookkeeping may take. Reaching it evicts the oldest
	// chunks, pod series first; it is a hard limit, never exceeded. 200
	// pods for 30 min at 1 s take about 3.5 MiB. Minimum 1 MiB, default
	// 16 MiB.
	MemoryBudgetBytes int64
	// CheckpointPath is the file the cache checkpoints to and restores
	// from at start; its directory must exist. Empty disables
	// checkpointing. Default empty.
	CheckpointPath string
	// CheckpointInterval is how often Run writes the checkpoint; a kill -9
	// loses at most this much history. Range [1s, 1h], default 30s.
	CheckpointInterval time.Duration
}

// ringSlots is the size of the timestamp ring: the retention's worth of
// samples plus a chunk, so chunks age out whole.
func ringSlots(c *Config) int {
	if c.Interval <= 0 {
		return chunkSlots
	}
	return int(c.Retention/c.Interval) + chunkSlots
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.MemoryBudgetBytes == 0 {
		c.MemoryBudgetBytes = DefaultMemoryBudgetBytes
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
}

// inRange: the retention and the interval that size the timestamp ring
// are both within their bounds.
func (c *Config) inRange() bool {
	return c.Retention >= MinRetention && c.Retention <= MaxRetention && c.Interval >= MinInterval && c.Interval <= MaxInterval
}

// Validate returns every problem of c, each naming the field under fldPath
// and its value. c is expected to be defaulted.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Retention < MinRetention || c.Retention > MaxRetention {
		errs = append(errs, field.Invalid(fldPath.Child("retention"), c.Retention.String(), "must be between 1m and 24h"))
	}
	if c.Interval < MinInterval || c.Interval > MaxInterval {
		errs = append(errs, field.Invalid(fldPath.Child("interval"), c.Interval.String(), "must be between 100ms and 1m"))
	}
	if c.MemoryBudgetBytes < MinMemoryBudgetBytes {
		errs = append(errs, field.Invalid(fldPath.Child("memoryBudgetBytes"), c.MemoryBudgetBytes, "must be at least 1048576 (1 MiB)"))
	} else if ring := int64(ringSlots(c)) * timeSlotBytes; c.inRange() && c.MemoryBudgetBytes < 2*ring {
		// Only with a valid retention and interval: a ring sized from a
		// refused one would be a second error for the same mistake.
		errs = append(errs, field.Invalid(fldPath.Child("memoryBudgetBytes"), c.MemoryBudgetBytes,
			fmt.Sprintf("must be at least twice the %d bytes of the timestamp ring that retention/interval needs", ring)))
	}
	if c.CheckpointPath != "" && !filepath.IsAbs(c.CheckpointPath) {
		errs = append(errs, field.Invalid(fldPath.Child("checkpointPath"), c.CheckpointPath, "must be an absolute path"))
	}
	if c.CheckpointInterval < time.Second || c.CheckpointInterval > time.Hour {
		errs = append(errs, field.Invalid(fldPath.Child("checkpointInterval"), c.CheckpointInterval.String(), "must be between 1s and 1h"))
	}
	return errs
}
