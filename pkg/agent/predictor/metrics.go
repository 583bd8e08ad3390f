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
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	prodPeak        *prometheus.GaugeVec
	prodReclaimable *prometheus.GaugeVec
	ready           prometheus.Gauge
	coldStartPods   prometheus.Gauge
	windows         prometheus.Counter
	earlyReports    *prometheus.CounterVec
	checkpoints     *prometheus.CounterVec
	prodUsage       *prometheus.GaugeVec
	predictionErr   *prometheus.GaugeVec

	// Children resolved once, so observing allocates nothing.
	peakCPU, peakMemory       prometheus.Gauge
	reclaimCPU, reclaimMemory prometheus.Gauge
	// usage and predictionError are indexed like resourceKinds.
	usage, predictionError [len(resourceKinds)]prometheus.Gauge
}

// newMetrics registers the predictor's metrics with reg; a nil reg keeps
// them unregistered (tests).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		prodPeak: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waterline_agent_predictor_prod_peak",
			Help: "Predicted peak of the Prod pods plus the system, safety margin included: cpu in cores, memory in bytes.",
		}, []string{"resource"}),
		prodReclaimable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waterline_agent_predictor_prod_reclaimable",
			Help: "Reclaimable: what Mid is sold from, max(0, reclaim ratio x Prod requests - peak) as status.prodReclaimable reports it: cpu in cores, memory in bytes.",
		}, []string{"resource"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waterline_agent_predictor_ready",
			Help: "1 when the prediction uses usage history only (PredictionReady), 0 while requests stand in for some of it.",
		}),
		coldStartPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waterline_agent_predictor_cold_start_pods",
			Help: "Prod pods counted at their request: younger than the cold-start period or without usage history.",
		}),
		windows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waterline_agent_predictor_windows_total",
			Help: "Update windows fed to the usage histograms.",
		}),
		earlyReports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_predictor_early_reports_total",
			Help: "Early NodeMetric reports asked for, by reason: FirstPrediction, ForceUpdate, ReadinessChanged, PeakMoved.",
		}, []string{"reason"}),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_predictor_checkpoints_total",
			Help: "Predictor checkpoint writes by result: success or error.",
		}, []string{"result"}),
		prodUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waterline_agent_predictor_prod_usage",
			Help: "Usage of the Prod pods plus the system (node minus Mid, Batch and Free), averaged over the latest update window fed to the histograms: cpu in cores, memory in bytes. NaN until the first window.",
		}, []string{"resource"}),
		predictionErr: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waterline_agent_predictor_prediction_error_ratio",
			Help: "(highest Prod + system usage of the update windows that ended after the prediction in force was made - its prod peak) / that peak, set at every feed: > 0 the usage went over the predicted peak, < 0 the share of the peak left unused (the safety margin included). NaN until measured.",
		}, []string{"resource"}),
	}
	for _, r := range []string{EarlyFirst, EarlyForce, EarlyReadiness, EarlyMoved} {
		m.earlyReports.WithLabelValues(r)
	}
	for _, r := range []string{"success", "error"} {
		m.checkpoints.WithLabelValues(r)
	}
	m.peakCPU, m.peakMemory = m.prodPeak.WithLabelValues("cpu"), m.prodPeak.WithLabelValues("memory")
	m.reclaimCPU, m.reclaimMemory = m.prodReclaimable.WithLabelValues("cpu"), m.prodReclaimable.WithLabelValues("memory")
	for i, k := range resourceKinds {
		m.usage[i] = m.prodUsage.WithLabelValues(string(k.name))
		m.predictionError[i] = m.predictionErr.WithLabelValues(string(k.name))
		m.usage[i].Set(math.NaN())
		m.predictionError[i].Set(math.NaN())
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.prodPeak, m.prodReclaimable, m.ready, m.coldStartPods, m.windows, m.earlyReports, m.checkpoints, m.prodUsage, m.predictionErr} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the predictor's metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(r *Result) {
	m.peakCPU.Set(float64(r.ProdPeak.MilliCPU) / 1000)
	m.peakMemory.Set(float64(r.ProdPeak.Memory))
	m.reclaimCPU.Set(float64(r.ProdReclaimable.MilliCPU) / 1000)
	m.reclaimMemory.Set(float64(r.ProdReclaimable.Memory))
	ready := 0.0
	if r.Ready {
		ready = 1
	}
	m.ready.Set(ready)
	m.coldStartPods.Set(float64(r.ColdStartPods))
}

// fedUsage is the Prod + system usage (node − Mid − Batch − Free, the
// quantity ProdPeak predicts) of the windows one feed gave the histograms.
type fedUsage struct {
	// last is the latest window's average; NaN when no window had a value.
	last float64
	// maxAfterPrediction is the highest window average among the windows
	// that ended after the prediction then in force was made; NaN when
	// none did (or there was no prediction yet).
	maxAfterPrediction float64
}

func (f *fedUsage) add(v float64, end, predictedAt time.Time) {
	f.last = v
	if !predictedAt.IsZero() && end.After(predictedAt) && !(f.maxAfterPrediction >= v) {
		f.maxAfterPrediction = v
	}
}

// observeFed sets the usage gauges from the windows just fed, and the
// prediction error from the peak predicted before them (prev, the result
// then in force): (observed max − predicted) ÷ predicted. A series keeps
// its last value when a feed had nothing to say about it.
func (m *metrics) observeFed(res *[len(resourceKinds)]*resourceState, prev *Result) {
	for i, rs := range res {
		if rs == nil {
			continue
		}
		if !math.IsNaN(rs.fed.last) {
			m.usage[i].Set(rs.fed.last)
		}
		predicted := float64(prev.ProdPeak.MilliCPU) / 1000
		if i != cpuIndex {
			predicted = float64(prev.ProdPeak.Memory)
		}
		if !math.IsNaN(rs.fed.maxAfterPrediction) && predicted > 0 {
			m.predictionError[i].Set((rs.fed.maxAfterPrediction - predicted) / predicted)
		}
	}
}
