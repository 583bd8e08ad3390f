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
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults and bounds of Config.
const (
	DefaultUpdateInterval     = 30 * time.Second
	DefaultCheckInterval      = 20 * time.Second
	DefaultCheckpointInterval = 2 * time.Minute

	MinUpdateInterval     = time.Second
	MaxUpdateInterval     = 10 * time.Minute
	MinCheckInterval      = time.Second
	MaxCheckInterval      = 10 * time.Minute
	MinCheckpointInterval = 10 * time.Second
	MaxCheckpointInterval = time.Hour
)

// Config tunes the predictor. The model and its parameters are not here:
// they come from the NodeMetric's spec.predictPolicy, which the manager
// writes from the ColocationPolicy.
type Config struct {
	// UpdateInterval is how often every histogram gets one sample: the
	// average of the metric cache over the interval that just ended (seed
	// 003's HistogramUpdateInterval). Averaging keeps the 1-second noise
	// of the collector out of the histograms and costs one histogram
	// update per series per interval instead of one per sample. It must
	// stay below the metric cache's retention, or windows are fed only
	// partly. Range [1s, 10m], default 30s.
	UpdateInterval time.Duration
	// CheckInterval is how often the prediction is recomputed and compared
	// with the last one reported, to decide on an early report (seed
	// 003's CheckPredictionInterval). Range [1s, 10m], default 20s.
	CheckInterval time.Duration
	// CheckpointPath is the file the histograms are checkpointed to and
	// restored from at start; its directory must exist. Empty disables
	// checkpointing. Absolute path. Default empty (the command sets
	// <state-dir>/predictor.json).
	CheckpointPath string
	// CheckpointInterval is how often Run writes the checkpoint (and once
	// more at shutdown). After a kill -9 the windows fed since the last
	// checkpoint are fed again from the metric cache, which keeps its own
	// retention (30m) of raw samples, so this only needs to be well below
	// that retention. Range [10s, 1h], default 2m.
	CheckpointInterval time.Duration
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.UpdateInterval == 0 {
		c.UpdateInterval = DefaultUpdateInterval
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
}

// Validate returns every problem of c, each naming the field under fldPath
// and its value. c is expected to be defaulted.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.UpdateInterval < MinUpdateInterval || c.UpdateInterval > MaxUpdateInterval {
		errs = append(errs, field.Invalid(fldPath.Child("updateInterval"), c.UpdateInterval.String(), "must be between 1s and 10m"))
	}
	if c.CheckInterval < MinCheckInterval || c.CheckInterval > MaxCheckInterval {
		errs = append(errs, field.Invalid(fldPath.Child("checkInterval"), c.CheckInterval.String(), "must be between 1s and 10m"))
	}
	if c.CheckpointPath != "" && !filepath.IsAbs(c.CheckpointPath) {
		errs = append(errs, field.Invalid(fldPath.Child("checkpointPath"), c.CheckpointPath, "must be an absolute path"))
	}
	if c.CheckpointInterval < MinCheckpointInterval || c.CheckpointInterval > MaxCheckpointInterval {
		errs = append(errs, field.Invalid(fldPath.Child("checkpointInterval"), c.CheckpointInterval.String(), "must be between 10s and 1h"))
	}
	return errs
}
