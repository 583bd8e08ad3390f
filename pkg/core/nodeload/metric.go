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
	"bytes"
	"cmp"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Metric is the part of a NodeMetric the decisions read, as vectors. Build
// it once per NodeMetric version (NewMetric) and share it read-only.
type Metric struct {
	// UpdateTime is when the agent last reported, status.updateTime (the
	// node's clock); zero if it never did.
	UpdateTime time.Time
	// dated is when estimation takes the report to have been made: its
	// UpdateTime, or, for a reader that saw it arrive from a node whose
	// clock is off by more than MaxClockSkew, when the reader saw it
	// (Observe).
	dated time.Time
	// stored is when the API server stored the report, by its own clock
	// (ReportStored); zero when the object does not say.
	stored time.Time
	// expiresAt is when, in Unix nanoseconds, the metric expires under the
	// Config that built it; 0 if it never reported. Kept as an integer
	// because Filter and Score compare it for every node.
	expiresAt int64
	// ReportInterval is the agent's reporting period for this node.
	ReportInterval time.Duration
	// AggregateWindow is the window node and pod usage are averaged over
	// (spec.collectPolicy.aggregateDurationSeconds): a pod that ran for
	// part of it is only that part in the average.
	AggregateWindow time.Duration
	// NodeUsage is the node's average usage.
	NodeUsage Vector
	// ProdUsage is Σ usage of the node's Prod pods, plus the system usage
	// when the Config says so.
	ProdUsage Vector
	// ProdPeak is the predicted Prod peak; HasProdPeak is false when the
	// agent did not report one.
	ProdPeak    Vector
	HasProdPeak bool
	// PredictedNodeUsage is node usage with its Prod part raised to the
	// predicted peak: NodeUsage + max(0, ProdPeak − ProdUsage); NodeUsage
	// without a peak.
	PredictedNodeUsage Vector
	// Aggregates are the percentile aggregates of node usage.
	Aggregates []Aggregate
	// ForbidScheduling is true while the agent reports the node over a
	// forbid-scheduling waterline.
	ForbidScheduling bool
	// PodUsage is each reported pod's usage, by PodKey.
	PodUsage map[string]Vector
}

// Aggregate is one statistic of node usage over one window.
type Aggregate struct {
	Type     v1alpha1.AggregationType
	Duration time.Duration
	Usage    Vector
	// Reported has bit i set when the agent reported resource i in this
	// window: a window the agent has not filled yet (just started, or
	// shorter history than the window) must not read as zero usage.
	Reported uint16
}

// NewMetric converts a NodeMetric. Pods reported without a band, or with
// one that is not a band (extension.ParseBand), count as Prod, like
// extension.BandOf's default for a missing or malformed label: Prod usage
// then errs on the high side, which is the safe one for Prod thresholds.
func (c *Config) NewMetric(nm *v1alpha1.NodeMetric) *Metric {
	cp := v1alpha1.CollectPolicyWithDefaults(nm.Spec.CollectPolicy)
	m := &Metric{
		ReportInterval:  time.Duration(*cp.ReportIntervalSeconds) * time.Second,
		AggregateWindow: time.Duration(*cp.AggregateDurationSeconds) * time.Second,
		PodUsage:        make(map[string]Vector, len(nm.Status.PodsMetric)),
	}
	st := &nm.Status
	if st.UpdateTime != nil {
		m.UpdateTime, m.dated = st.UpdateTime.Time, st.UpdateTime.Time
		m.expiresAt = unixNanoSat(m.UpdateTime.Add(c.MetricExpiration))
		m.stored, _ = ReportStored(nm)
	}
	if info := st.NodeMetric; info != nil {
		m.NodeUsage = c.Resources.Vector(info.NodeUsage)
		if c.ProdUsageIncludeSys {
			m.ProdUsage = c.Resources.Vector(info.SystemUsage)
		}
		for _, agg := range info.AggregatedNodeUsages {
			for typ, usage := range agg.Usage {
				v, reported := c.Resources.vectorReported(usage)
				m.Aggregates = append(m.Aggregates, Aggregate{Type: typ, Duration: agg.Duration.Duration, Usage: v, Reported: reported})
			}
		}
		slices.SortFunc(m.Aggregates, func(a, b Aggregate) int {
			return cmp.Or(cmp.Compare(a.Duration, b.Duration), cmp.Compare(a.Type, b.Type))
		})
	}
	for i := range st.PodsMetric {
		pm := &st.PodsMetric[i]
		usage := c.Resources.Vector(pm.Usage)
		m.PodUsage[PodKey(pm.Namespace, pm.Name)] = usage
		if band, err := extension.ParseBand(pm.Band); err != nil || band == extension.BandProd {
			m.ProdUsage = m.ProdUsage.Add(usage)
		}
	}
	if len(st.ProdPeak) > 0 {
		m.ProdPeak = c.Resources.Vector(st.ProdPeak)
		m.HasProdPeak = true
	}
	c.SetPredictedNodeUsage(m)
	m.ForbidScheduling = meta.IsStatusConditionPresentAndEqual(st.Conditions, v1alpha1.ConditionForbidScheduling, metav1.ConditionTrue)
	return m
}

// SetPredictedNodeUsage sets m.PredictedNodeUsage from its node usage,
// Prod usage and Prod peak: node usage with its Prod part raised to the
// peak where the peak is higher, or node usage alone without a peak. A
// caller that fills a Metric in place (the simulator) calls it after
// setting those three.
func (c *Config) SetPredictedNodeUsage(m *Metric) {
	m.PredictedNodeUsage = m.NodeUsage
	if !m.HasProdPeak {
		return
	}
	for i := range c.Resources.Len() {
		m.PredictedNodeUsage[i] = addSat(m.NodeUsage[i], max(0, m.ProdPeak[i]-m.ProdUsage[i]))
	}
}

// SetUpdateTime sets when the agent reported m, as NewMetric reads a
// non-nil status.updateTime: for a caller that keeps one Metric per node
// and refreshes it in place at each report (the simulator) instead of
// converting a NodeMetric every time.
func (c *Config) SetUpdateTime(m *Metric, t time.Time) {
	m.UpdateTime, m.dated = t, t
	m.expiresAt = unixNanoSat(t.Add(c.MetricExpiration))
}

// MaxClockSkew is how far a report's updateTime may be from when a reader
// saw it arrive before Observe takes the node's clock to be off: well
// over the delay of a report on its way.
const MaxClockSkew = 30 * time.Second

// Observe times m, the node's NodeMetric as a reader with its own clock
// just received it, by when that reader saw each report rather than by
// status.updateTime, which is the node's clock: a node whose clock is
// minutes behind would otherwise be refused while its agent reports on
// time, one ahead would outlive its agent, and the pods scheduled since a
// report would be estimated against the wrong time. kube-controller-
// manager ages node leases the same way, from when it saw each renewal.
// prev is what the reader held for the node before (nil: nothing).
//
// A new report -- updateTime changed since prev -- was written about now:
// m expires MetricExpiration after now, and is dated now for estimation
// if its updateTime is more than MaxClockSkew off (within it, by its
// updateTime, as a reader without Observe dates it). The same report
// again (a spec change, a resync) keeps prev's times. A report the reader
// had not seen the node before with (its first list of the cluster, as
// after a restart) is timed by when the API server stored it
// (ReportStored), by the API server's clock, and dated so when its
// updateTime is more than MaxClockSkew off that; where the object does
// not say, by its updateTime. Either is taken as no later than now. A
// NodeMetric never reported stays expired.
func (c *Config) Observe(prev, m *Metric, now time.Time) {
	switch {
	case m.UpdateTime.IsZero():
	case prev != nil && prev.UpdateTime.Equal(m.UpdateTime):
		m.dated, m.expiresAt = prev.dated, prev.expiresAt
	case prev != nil:
		if d := m.UpdateTime.Sub(now); d > MaxClockSkew || d < -MaxClockSkew {
			m.dated = now
		}
		m.expiresAt = unixNanoSat(now.Add(c.MetricExpiration))
	default:
		arrived := m.UpdateTime
		if !m.stored.IsZero() {
			arrived = m.stored
		}
		arrived = minTime(arrived, now)
		if d := m.UpdateTime.Sub(arrived); d > MaxClockSkew || d < -MaxClockSkew {
			m.dated = arrived
		}
		m.expiresAt = unixNanoSat(arrived.Add(c.MetricExpiration))
	}
}

// ReportStored is when the API server last stored a report in nm's
// status, by its own clock: it stamps each managedFields entry with the
// time its manager last changed a field, and every report changes
// status.updateTime, which the reporting agent's entry owns (another
// writer's status entry says nothing of the reports). ok is false when
// the object does not say (managedFields dropped by the reader, or a
// report written before they were kept).
func ReportStored(nm *v1alpha1.NodeMetric) (stored time.Time, ok bool) {
	for _, mf := range nm.ManagedFields {
		if mf.Subresource == "status" && mf.Time != nil && mf.Time.After(stored) &&
			bytes.Contains(mf.FieldsV1.GetRawBytes(), updateTimeField) {
			stored = mf.Time.Time
		}
	}
	return stored, !stored.IsZero()
}

// updateTimeField is status.updateTime in a managedFields entry's fields.
var updateTimeField = []byte(`"f:updateTime"`)

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Bounds of the times Unix nanoseconds hold (years 1678 and 2262).
var (
	minUnixNano = time.Unix(0, math.MinInt64)
	maxUnixNano = time.Unix(0, math.MaxInt64)
)

// unixNanoSat is t in Unix nanoseconds, held to the int64 range:
// time.UnixNano wraps outside it, which turned an updateTime of 1600 into
// an expiry two centuries ahead. A time beyond either bound compares with
// every realistic now as the time itself does.
func unixNanoSat(t time.Time) int64 {
	switch {
	case t.Before(minUnixNano):
		return math.MinInt64
	case t.After(maxUnixNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Expired reports whether the agent has not reported for the Config's
// MetricExpiration (or never reported). m must come from c.NewMetric.
func (c *Config) Expired(m *Metric, now time.Time) bool {
	return m.expiresAt == 0 || now.UnixNano() >= m.expiresAt
}

// Aggregate returns the aggregate a picks, resource by resource: the
// window a.Duration when it reports the resource, else the longest window
// of that statistic that reports it, else node usage. A window the agent
// has not filled (or a resource it leaves out) thus never reads as zero
// usage. ok is false when no window reports any tracked resource.
func (m *Metric) Aggregate(a Aggregation) (v Vector, ok bool) {
	v = m.NodeUsage
	for i := range MaxResources {
		bit := uint16(1) << i
		found := false
		// Aggregates are sorted by window: the last match is the longest.
		for j := range m.Aggregates {
			agg := &m.Aggregates[j]
			if agg.Type != a.Type || agg.Reported&bit == 0 {
				continue
			}
			v[i], found = agg.Usage[i], true
			if a.Duration != 0 && agg.Duration == a.Duration {
				break
			}
		}
		ok = ok || found
	}
	return v, ok
}

// window returns the aggregate of one statistic over one window exactly;
// nil when the agent did not report it.
func (m *Metric) window(typ v1alpha1.AggregationType, d time.Duration) *Aggregate {
	for i := range m.Aggregates {
		if agg := &m.Aggregates[i]; agg.Type == typ && agg.Duration == d {
			return agg
		}
	}
	return nil
}

// MayAdmitMore reports whether going from old to cur may let a pod in that
// LoadAware refused on the node: the node reports again after a gap, leaves
// forbid-scheduling, some usage went down, or a pod shows up in the report
// (its real usage replaces its estimate). old is nil for a new NodeMetric.
// Everything else -- the regular report of a node whose load did not drop --
// cannot turn a refusal into a fit, so the pods stay where they are.
func (c *Config) MayAdmitMore(old, cur *Metric) bool {
	if old == nil {
		return true
	}
	if old.UpdateTime.IsZero() || cur.UpdateTime.Sub(old.UpdateTime) >= c.MetricExpiration {
		return true
	}
	if old.ForbidScheduling && !cur.ForbidScheduling {
		return true
	}
	if lower(cur.NodeUsage, old.NodeUsage) || lower(cur.ProdUsage, old.ProdUsage) || lower(cur.ProdPeak, old.ProdPeak) {
		return true
	}
	for _, agg := range cur.Aggregates {
		if prev := old.window(agg.Type, agg.Duration); prev != nil && lower(agg.Usage, prev.Usage) {
			return true
		}
	}
	for key := range cur.PodUsage {
		if _, ok := old.PodUsage[key]; !ok {
			return true
		}
	}
	return false
}

// lower reports whether any element of a is below b's.
func lower(a, b Vector) bool {
	for i := range a {
		if a[i] < b[i] {
			return true
		}
	}
	return false
}
