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
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reports    *prometheus.CounterVec
	duration   prometheus.Histogram
	lastReport prometheus.Gauge
}

// newMetrics registers the reporter's metrics with reg; a nil reg keeps
// them unregistered (tests).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_reports_total",
			Help: "NodeMetric status reports by result: success, error, or nodata (the metric cache had no node usage yet, nothing sent).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waterline_agent_report_duration_seconds",
			Help:    "Time to build and write one NodeMetric status, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		lastReport: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waterline_agent_last_report_timestamp_seconds",
			Help: "Unix time of the last successful NodeMetric status report (its updateTime).",
		}),
	}
	for _, r := range []string{"success", "error", "nodata"} {
		m.reports.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.reports, m.duration, m.lastReport} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the reporter's metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(err error, took time.Duration, at time.Time) {
	switch {
	case errors.Is(err, ErrNoUsage):
		m.reports.WithLabelValues("nodata").Inc()
		return
	case err != nil:
		m.reports.WithLabelValues("error").Inc()
	default:
		m.reports.WithLabelValues("success").Inc()
		m.lastReport.Set(float64(at.UnixNano()) / 1e9)
	}
	m.duration.Observe(took.Seconds())
}
