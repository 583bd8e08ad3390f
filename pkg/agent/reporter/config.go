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

package reporter

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults and bounds of Config.
const (
	DefaultMinReportSpacing = 5 * time.Second
	DefaultRetryInterval    = 5 * time.Second
	MinMinReportSpacing     = time.Second
	MaxMinReportSpacing     = time.Minute
	MinRetryInterval        = time.Second
	MaxRetryInterval        = 5 * time.Minute
)

// Config tunes the reporter. The report interval and the aggregation
// windows are not here: they come from the NodeMetric's spec, which the
// manager writes from the ColocationPolicy.
type Config struct {
	// MinReportSpacing is the least time between an early report (one a
	// module asked for with Agent.RequestReport) and the previous write,
	// so a module whose prediction flaps cannot flood the API server.
	// Periodic reports are not held back by it. Range [1s, 1m], default
	// 5s.
	MinReportSpacing time.Duration
	// RetryInterval is how long the reporter waits after a failed write
	// before it tries again; each further failure doubles the wait, up to
	// the report interval. Range [1s, 5m], default 5s.
	RetryInterval time.Duration
}

// SetDefaults fills the unset fields of c.
func (c *Config) SetDefaults() {
	if c.MinReportSpacing == 0 {
		c.MinReportSpacing = DefaultMinReportSpacing
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
}

// Validate returns every problem of c, each naming the field under fldPath
// and its value. c is expected to be defaulted.
func (c *Config) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.MinReportSpacing < MinMinReportSpacing || c.MinReportSpacing > MaxMinReportSpacing {
		errs = append(errs, field.Invalid(fldPath.Child("minReportSpacing"), c.MinReportSpacing.String(), "must be between 1s and 1m"))
	}
	if c.RetryInterval < MinRetryInterval || c.RetryInterval > MaxRetryInterval {
		errs = append(errs, field.Invalid(fldPath.Child("retryInterval"), c.RetryInterval.String(), "must be between 1s and 5m"))
	}
	return errs
}
