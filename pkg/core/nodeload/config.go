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

package nodeload

import (
	"time"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Estimates of a pod that asks for no cpu or memory at all
// (docs/design/loadaware.md#estimation, Koordinator's DefaultMilliCPURequest
// and DefaultMemoryRequest).
const (
	DefaultMilliCPU = 250               // 250m
	DefaultMemory   = 200 * 1024 * 1024 // 200Mi
)

// Config is what the decisions of this package read: the plugin args,
// validated and turned into vectors over Resources. Build it once; it is
// read-only afterwards and safe to share between goroutines.
type Config struct {
	// Resources are the tracked resources and their positions.
	Resources Resources

	// Weights are the score weights per resource; a resource with weight 0
	// does not count towards the score.
	Weights Vector
	// DominantWeight weighs the least-used score of the node's most used
	// resource (among those with a weight) on top of Weights.
	DominantWeight int64

	// Thresholds are the cluster-wide thresholds; a node annotation may
	// replace them (NodeThresholds).
	Thresholds Thresholds

	// ScalingFactors are the percentages of max(request, limit) a pod is
	// estimated to use, per resource.
	ScalingFactors Vector
	// EstimateAfterScheduled forces estimation of an assigned pod for this
	// long after it was scheduled; 0 is off.
	EstimateAfterScheduled time.Duration
	// EstimateAfterInitialized forces estimation of an assigned pod for this
	// long after it was initialized (and while it is not yet); 0 is off.
	EstimateAfterInitialized time.Duration
	// AllowCustomizeEstimation lets pod annotations override ScalingFactors
	// and the two forced windows.
	AllowCustomizeEstimation bool

	// ProdUsageIncludeSys adds the node's system usage to the Prod usage.
	ProdUsageIncludeSys bool
	// ProdUsageIncludePrediction makes Prod pods filter on
	// max(Prod usage, status.prodPeak).
	ProdUsageIncludePrediction bool
	// NodeUsageIncludePrediction makes every pod not judged by Prod usage
	// filter on Metric.PredictedNodeUsage instead of node usage.
	NodeUsageIncludePrediction bool
	// ScoreAccordingPrediction makes Score use the predicted load.
	ScoreAccordingPrediction bool
	// ScoreAccordingProdUsage makes Prod pods score nodes by Prod usage.
	ScoreAccordingProdUsage bool
	// ScoreAggregation, when set, makes the score use a percentile
	// aggregate of node usage instead of the average.
	ScoreAggregation Aggregation

	// MetricExpiration is how old a NodeMetric may get before the node is
	// treated as not reporting.
	MetricExpiration time.Duration
	// ScheduleWhenMetricExpired lets pods onto nodes whose NodeMetric
	// expired, without a usage check.
	ScheduleWhenMetricExpired bool
}

// Aggregation picks one percentile aggregate of a NodeMetric.
type Aggregation struct {
	// Type is the statistic; empty means no aggregation.
	Type v1alpha1.AggregationType
	// Duration is the window; 0 means the longest window reported.
	Duration time.Duration
}

// Enabled reports whether an aggregate is asked for.
func (a Aggregation) Enabled() bool { return a.Type != "" }

// Thresholds are usage limits in percent of allocatable, per resource; 0
// means the resource is not checked.
type Thresholds struct {
	// Usage limits node usage, for every pod not judged by Prod.
	Usage Vector
	// Prod limits Prod usage, for Prod pods; all zero means Prod pods are
	// judged by Usage (or Aggregated) like everyone else.
	Prod Vector
	// Aggregated limits the Aggregation aggregate of node usage; when any is
	// set it replaces Usage.
	Aggregated Vector
	// Aggregation picks the aggregate Aggregated limits.
	Aggregation Aggregation
}

// HasProd reports whether any Prod threshold is set.
func (t *Thresholds) HasProd() bool { return t.Prod != Vector{} }

// HasAggregated reports whether aggregated thresholds replace Usage.
func (t *Thresholds) HasAggregated() bool {
	return t.Aggregated != Vector{} && t.Aggregation.Enabled()
}

// defaultQuantity is the estimate of a pod that asks for nothing of
// resource i.
func defaultQuantity(i int) int64 {
	switch i {
	case CPU:
		return DefaultMilliCPU
	case Memory:
		return DefaultMemory
	}
	return 0
}
