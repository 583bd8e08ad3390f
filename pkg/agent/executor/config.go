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

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Defaults and bounds of Config.
const (
	DefaultEvictionRetryAfter = 30 * time.Second
	MinEvictionRetryAfter     = time.Second
	MaxEvictionRetryAfter     = 10 * time.Minute

	DefaultEvictionTimeout = 10 * time.Second
	MinEvictionTimeout     = time.Second
	MaxEvictionTimeout     = 5 * time.Minute

	DefaultMemoryEvictionsPerMinute = 60
	MaxMemoryEvictionsPerMinute     = 600
)

// Config tunes the executor. The waterlines and everything about when and
// how much to act come from the NodeQOS objects; this is only how the
// executor behaves towards the API server.
type Config struct {
	// EvictionRetryAfter is how long a pod whose eviction the API server
	// refused because of a PodDisruptionBudget (429) is left out of
	// eviction plans -- its CPU quota held as it was -- before it is asked
	// for again; the planner picks the next pod meanwhile. Range 1s-10m,
	// default 30s.
	EvictionRetryAfter *time.Duration
	// EvictionTimeout bounds one eviction request (and, for memory relief,
	// the delete that may follow it). Evictions run beside the collect
	// loop, never in it: a slow or partitioned API server delays them, not
	// the throttling. Range 1s-5m, default 10s.
	EvictionTimeout *time.Duration
	// MemoryEvictionsPerMinute is the budget of memory-relief evictions,
	// kept apart from the NodeQOS eviction.maxPerMinute (which limits the
	// CPU evictions): at the memory evict line the kernel's OOM killer is
	// next, and it does not spare Prod pods. The planner asks only for
	// what closes the gap; this budget only stops a runaway. Range 1-600,
	// default 60.
	MemoryEvictionsPerMinute *int32
	// StatePath is where the eviction budgets are kept across restarts
	// (the agent's state directory); empty keeps them in memory only.
	StatePath string
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.EvictionRetryAfter == nil {
		c.EvictionRetryAfter = ptr.To(DefaultEvictionRetryAfter)
	}
	if c.EvictionTimeout == nil {
		c.EvictionTimeout = ptr.To(DefaultEvictionTimeout)
	}
	if c.MemoryEvictionsPerMinute == nil {
		c.MemoryEvictionsPerMinute = ptr.To[int32](DefaultMemoryEvictionsPerMinute)
	}
}

// Validate returns every problem of a defaulted c, each naming its field
// under fldPath and its value.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r := c.EvictionRetryAfter; {
	case r == nil:
		errs = append(errs, field.Required(fldPath.Child("evictionRetryAfter"), "must be set (SetDefaults sets 30s)"))
	case *r < MinEvictionRetryAfter || *r > MaxEvictionRetryAfter:
		errs = append(errs, field.Invalid(fldPath.Child("evictionRetryAfter"), r.String(), "must be between 1s and 10m"))
	}
	switch r := c.EvictionTimeout; {
	case r == nil:
		errs = append(errs, field.Required(fldPath.Child("evictionTimeout"), "must be set (SetDefaults sets 10s)"))
	case *r < MinEvictionTimeout || *r > MaxEvictionTimeout:
		errs = append(errs, field.Invalid(fldPath.Child("evictionTimeout"), r.String(), "must be between 1s and 5m"))
	}
	switch m := c.MemoryEvictionsPerMinute; {
	case m == nil:
		errs = append(errs, field.Required(fldPath.Child("memoryEvictionsPerMinute"), "must be set (SetDefaults sets 60)"))
	case *m < 1 || *m > MaxMemoryEvictionsPerMinute:
		errs = append(errs, field.Invalid(fldPath.Child("memoryEvictionsPerMinute"), *m, "must be between 1 and 600"))
	}
	return errs
}
