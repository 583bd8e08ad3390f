package qos

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
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.EvictionRetryAfter == nil {
		c.EvictionRetryAfter = ptr.To(DefaultEvictionRetryAfter)
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
	return errs
}
