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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestNewMetric(t *testing.T) {
	full := makeMetric("n", t0).
		usage("cpu", "4", "memory", "8Gi").
		system("cpu", "500m", "memory", "1Gi").
		pod("ns", "a", extension.BandProd, "cpu", "1", "memory", "2Gi").
		pod("ns", "b", "", "cpu", "500m", "memory", "1Gi").
		pod("ns", "c", extension.BandBatch, "cpu", "2", "memory", "1Gi").
		aggregate(10*time.Minute, v1alpha1.AggregationP95, "cpu", "6", "memory", "9Gi").
		aggregate(5*time.Minute, v1alpha1.AggregationP99, "cpu", "7", "memory", "10Gi").
		aggregate(5*time.Minute, v1alpha1.AggregationAvg, "cpu", "3", "memory", "8Gi").
		prodPeak("cpu", "3", "memory", "5Gi").
		forbid(metav1.ConditionTrue).
		reportInterval(30).obj()
	podUsage := map[string]Vector{"ns/a": vec(1000, 2*Gi), "ns/b": vec(500, 1*Gi), "ns/c": vec(2000, 1*Gi)}
	aggregates := []Aggregate{
		{Type: v1alpha1.AggregationAvg, Duration: 5 * time.Minute, Usage: vec(3000, 8*Gi), Reported: 3},
		{Type: v1alpha1.AggregationP99, Duration: 5 * time.Minute, Usage: vec(7000, 10*Gi), Reported: 3},
		{Type: v1alpha1.AggregationP95, Duration: 10 * time.Minute, Usage: vec(6000, 9*Gi), Reported: 3},
	}
	tests := []struct {
		name       string
		includeSys bool
		nm         *v1alpha1.NodeMetric
		want       *Metric
	}{{
		name: "prod usage sums prod pods and pods without a band",
		nm:   full,
		// Prod usage: a (1000m, 2Gi) + b (500m, 1Gi) = (1500m, 3Gi); c is Batch.
		want: &Metric{
			UpdateTime: t0, ReportInterval: 30 * time.Second, AggregateWindow: 5 * time.Minute, NodeUsage: vec(4000, 8*Gi),
			ProdUsage: vec(1500, 3*Gi), ProdPeak: vec(3000, 5*Gi), HasProdPeak: true,
			// node usage + (peak − Prod usage): (4000 + 1500, 8Gi + 2Gi).
			PredictedNodeUsage: vec(5500, 10*Gi),
			Aggregates:         aggregates, ForbidScheduling: true, PodUsage: podUsage,
		},
	}, {
		name:       "prod usage includes system usage when asked",
		includeSys: true,
		nm:         full,
		// (1500m, 3Gi) + system (500m, 1Gi) = (2000m, 4Gi).
		want: &Metric{
			UpdateTime: t0, ReportInterval: 30 * time.Second, AggregateWindow: 5 * time.Minute, NodeUsage: vec(4000, 8*Gi),
			ProdUsage: vec(2000, 4*Gi), ProdPeak: vec(3000, 5*Gi), HasProdPeak: true,
			PredictedNodeUsage: vec(5000, 9*Gi),
			Aggregates:         aggregates, ForbidScheduling: true, PodUsage: podUsage,
		},
	}, {
		name: "pods reported with a band that is not one count as Prod, like pods without one",
		nm: makeMetric("n", t0).usage("cpu", "4", "memory", "8Gi").
			pod("ns", "a", "Prod", "cpu", "1", "memory", "2Gi").
			pod("ns", "b", "gold", "cpu", "500m", "memory", "1Gi").
			pod("ns", "c", extension.BandMid, "cpu", "2", "memory", "1Gi").obj(),
		// a + b = (1500m, 3Gi); c is Mid.
		want: &Metric{
			UpdateTime: t0, ReportInterval: 60 * time.Second, AggregateWindow: 5 * time.Minute, NodeUsage: vec(4000, 8*Gi),
			ProdUsage: vec(1500, 3*Gi), PredictedNodeUsage: vec(4000, 8*Gi),
			PodUsage: map[string]Vector{"ns/a": vec(1000, 2*Gi), "ns/b": vec(500, 1*Gi), "ns/c": vec(2000, 1*Gi)},
		},
	}, {
		name: "forbid condition False and default report interval",
		nm:   makeMetric("n", t0).usage("cpu", "1").forbid(metav1.ConditionFalse).obj(),
		want: &Metric{UpdateTime: t0, ReportInterval: 60 * time.Second, AggregateWindow: 5 * time.Minute, NodeUsage: vec(1000, 0), PredictedNodeUsage: vec(1000, 0), PodUsage: map[string]Vector{}},
	}, {
		name: "never reported",
		nm:   &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
		want: &Metric{ReportInterval: 60 * time.Second, AggregateWindow: 5 * time.Minute, PodUsage: map[string]Vector{}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			s.ProdUsageIncludeSys = tc.includeSys
			got := mustConfig(t, s).NewMetric(tc.nm)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(Metric{})); diff != "" {
				t.Errorf("NewMetric (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetricAggregate(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	m := c.NewMetric(makeMetric("n", t0).
		usage("cpu", "2", "memory", "2Gi").
		aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "5", "memory", "5Gi").
		aggregate(30*time.Minute, v1alpha1.AggregationP95, "cpu", "30").
		aggregate(10*time.Minute, v1alpha1.AggregationP95, "cpu", "10", "memory", "10Gi").
		aggregate(10*time.Minute, v1alpha1.AggregationP99, "cpu", "11").
		aggregate(time.Hour, v1alpha1.AggregationP99).obj())
	tests := []struct {
		name   string
		a      Aggregation
		want   Vector
		wantOK bool
	}{
		{"exact window", Aggregation{Type: v1alpha1.AggregationP95, Duration: 10 * time.Minute}, vec(10000, 10*Gi), true},
		// 30m has no memory: memory from the longest window that has it.
		{"no window means the longest, per resource", Aggregation{Type: v1alpha1.AggregationP95}, vec(30000, 10*Gi), true},
		{"exact window without memory: the longest with it", Aggregation{Type: v1alpha1.AggregationP95, Duration: 30 * time.Minute}, vec(30000, 10*Gi), true},
		{"other type, same window; memory from node usage", Aggregation{Type: v1alpha1.AggregationP99, Duration: 10 * time.Minute}, vec(11000, 2*Gi), true},
		// The 1h p99 window is empty: it does not read as zero.
		{"longest window empty", Aggregation{Type: v1alpha1.AggregationP99}, vec(11000, 2*Gi), true},
		{"window not reported: the longest", Aggregation{Type: v1alpha1.AggregationP95, Duration: 2 * time.Hour}, vec(30000, 10*Gi), true},
		{"type not reported: node usage", Aggregation{Type: v1alpha1.AggregationAvg}, vec(2000, 2*Gi), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := m.Aggregate(tc.a)
			if ok != tc.wantOK {
				t.Errorf("Aggregate found = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Aggregate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMayAdmitMore(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	base := func(updated time.Time) *metricBuilder {
		return makeMetric("n", updated).usage("cpu", "8", "memory", "8Gi").
			pod("ns", "a", extension.BandProd, "cpu", "2", "memory", "2Gi").
			aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "9", "memory", "9Gi")
	}
	next := t0.Add(time.Minute)
	tests := []struct {
		name     string
		old, cur *v1alpha1.NodeMetric
		want     bool
	}{
		{"new NodeMetric", nil, base(t0).obj(), true},
		{"regular report, same load", base(t0).obj(), base(next).obj(), false},
		{"regular report, load up", base(t0).obj(), base(next).usage("cpu", "9", "memory", "8Gi").obj(), false},
		{"node usage down", base(t0).obj(), base(next).usage("cpu", "7", "memory", "8Gi").obj(), true},
		{"aggregate down", base(t0).obj(), makeMetric("n", next).usage("cpu", "8", "memory", "8Gi").
			pod("ns", "a", extension.BandProd, "cpu", "2", "memory", "2Gi").
			aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "8", "memory", "9Gi").obj(), true},
		{"prod usage down", base(t0).obj(), makeMetric("n", next).usage("cpu", "8", "memory", "8Gi").
			pod("ns", "a", extension.BandProd, "cpu", "1", "memory", "2Gi").
			aggregate(5*time.Minute, v1alpha1.AggregationP95, "cpu", "9", "memory", "9Gi").obj(), true},
		{"a pod shows up in the report", base(t0).obj(), base(next).pod("ns", "b", extension.BandBatch, "cpu", "1").obj(), true},
		{"forbid scheduling cleared", base(t0).forbid(metav1.ConditionTrue).obj(), base(next).forbid(metav1.ConditionFalse).obj(), true},
		{"forbid scheduling set", base(t0).obj(), base(next).forbid(metav1.ConditionTrue).obj(), false},
		// 180 s between reports is the expiry: the node was stale and is back.
		{"back after a gap of the expiry", base(t0).obj(), base(t0.Add(180 * time.Second)).obj(), true},
		{"first report", &v1alpha1.NodeMetric{}, base(t0).obj(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var old *Metric
			if tc.old != nil {
				old = c.NewMetric(tc.old)
			}
			if got := c.MayAdmitMore(old, c.NewMetric(tc.cur)); got != tc.want {
				t.Errorf("MayAdmitMore = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestObserve: a reader that sees each report ages it from then, whatever
// the node's clock said, and dates it then for estimation when the clock
// is more than MaxClockSkew off; a report first seen in a list is timed by
// its own updateTime, never from the future.
func TestObserve(t *testing.T) {
	c := mustConfig(t, defaultSpec()) // 180 s expiry
	now := t0.Add(time.Hour)
	metric := func(updated time.Time) *Metric { return c.NewMetric(makeMetric("n", updated).obj()) }
	// stored: a report the API server stored at at, as its managedFields
	// say (the agent's status entry owns updateTime; another writer's
	// later status entry is no report).
	stored := func(updated, at time.Time) *Metric {
		nm := makeMetric("n", updated).obj()
		nm.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "waterline-agent", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				Time: &metav1.Time{Time: at}, FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:nodeMetric":{},"f:updateTime":{}}}`)},
			{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				Time: &metav1.Time{Time: now}, FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{}}}`)},
		}
		return c.NewMetric(nm)
	}
	seen := func(updated, at time.Time) *Metric { // a new report, seen at at
		m := metric(updated)
		c.Observe(metric(updated.Add(-time.Minute)), m, at)
		return m
	}
	tests := []struct {
		name string
		prev *Metric
		cur  *Metric
		// The metric is fresh just before expires and expired from it,
		// and estimation dates it at dated.
		expires, dated time.Time
	}{
		{"first seen, honest clock", nil, metric(now.Add(-30 * time.Second)), now.Add(150 * time.Second), now.Add(-30 * time.Second)},
		{"first seen, clock 10 min ahead", nil, metric(now.Add(10 * time.Minute)), now.Add(180 * time.Second), now},
		{"first seen, clock 5 min behind", nil, metric(now.Add(-5 * time.Minute)), now.Add(-2 * time.Minute), now.Add(-5 * time.Minute)},
		{"first seen, stored 20 s ago, honest clock", nil, stored(now.Add(-21*time.Second), now.Add(-20*time.Second)), now.Add(160 * time.Second), now.Add(-21 * time.Second)},
		{"first seen, stored 20 s ago, clock 5 min behind", nil, stored(now.Add(-5*time.Minute), now.Add(-20*time.Second)), now.Add(160 * time.Second), now.Add(-20 * time.Second)},
		{"first seen, stored 20 s ago, clock 10 min ahead", nil, stored(now.Add(10*time.Minute), now.Add(-20*time.Second)), now.Add(160 * time.Second), now.Add(-20 * time.Second)},
		{"first seen, stored 4 min ago", nil, stored(now.Add(-4*time.Minute), now.Add(-4*time.Minute)), now.Add(-time.Minute), now.Add(-4 * time.Minute)},
		{"first seen, stored by an API server clock ahead of the reader's", nil, stored(now, now.Add(time.Hour)), now.Add(180 * time.Second), now},
		{"new report, honest clock", seen(now.Add(-50*time.Second), now.Add(-time.Minute)), metric(now.Add(-20 * time.Second)), now.Add(180 * time.Second), now.Add(-20 * time.Second)},
		{"new report, clock 5 min behind", seen(now.Add(-6*time.Minute), now.Add(-time.Minute)), metric(now.Add(-5 * time.Minute)), now.Add(180 * time.Second), now},
		{"new report, clock 10 min ahead", seen(now.Add(9*time.Minute), now.Add(-time.Minute)), metric(now.Add(10 * time.Minute)), now.Add(180 * time.Second), now},
		{"first report of a NodeMetric seen unreported", c.NewMetric(&v1alpha1.NodeMetric{}), metric(now.Add(-5 * time.Minute)), now.Add(180 * time.Second), now},
		{"the same report again", seen(now.Add(-5*time.Minute), now.Add(-time.Minute)), metric(now.Add(-5 * time.Minute)), now.Add(2 * time.Minute), now.Add(-time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.Observe(tc.prev, tc.cur, now)
			if c.Expired(tc.cur, tc.expires.Add(-time.Nanosecond)) || !c.Expired(tc.cur, tc.expires) {
				t.Errorf("expires at %v, want %v", time.Unix(0, tc.cur.expiresAt).UTC(), tc.expires.UTC())
			}
			if !tc.cur.dated.Equal(tc.dated) {
				t.Errorf("dated %v, want %v", tc.cur.dated.UTC(), tc.dated.UTC())
			}
		})
	}
	never := c.NewMetric(&v1alpha1.NodeMetric{})
	c.Observe(metric(now), never, now)
	if !c.Expired(never, now) {
		t.Error("a NodeMetric never reported is not expired after Observe")
	}
}

// TestSetUpdateTime: a metric refreshed in place expires exactly as one
// converted from a NodeMetric reported at that time.
func TestSetUpdateTime(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	later := t0.Add(10 * time.Minute)
	want := c.NewMetric(makeMetric("n", later).obj())
	got := c.NewMetric(makeMetric("n", t0).obj())
	c.SetUpdateTime(got, later)
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Metric{})); diff != "" {
		t.Errorf("refreshed metric (-converted +got):\n%s", diff)
	}
	expiry := later.Add(c.MetricExpiration)
	if c.Expired(got, expiry.Add(-time.Nanosecond)) || !c.Expired(got, expiry) {
		t.Errorf("a metric reported at %v must expire at %v", later, expiry)
	}
}

// TestExpiryOfTimesBeyondUnixNanos: an updateTime the CRD admits but Unix
// nanoseconds cannot hold (before 1678, after 2262) is judged by the
// design's rule, now − updateTime ≥ expiration: a report from 1600 is
// expired, not wrapped into a fresh one that is judged for two centuries,
// and one from 2300 is not expired, like any report from the future.
func TestExpiryOfTimesBeyondUnixNanos(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	now := t0
	for _, tc := range []struct {
		updated time.Time
		expired bool
	}{
		{time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), true},
		{now.Add(-time.Hour), true},
		{now, false},
		{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		m := c.NewMetric(makeMetric("n", tc.updated).usage("cpu", "15", "memory", "60Gi").obj())
		if got := c.Expired(m, now); got != tc.expired {
			t.Errorf("updated %v: Expired = %v, want %v", tc.updated, got, tc.expired)
		}
		var set Metric
		c.SetUpdateTime(&set, tc.updated)
		if got := c.Expired(&set, now); got != tc.expired {
			t.Errorf("SetUpdateTime(%v): Expired = %v, want %v", tc.updated, got, tc.expired)
		}
	}
}
