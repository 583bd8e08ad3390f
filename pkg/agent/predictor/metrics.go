package predictor

import (
	"fmt"

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

	// Children resolved once, so observing allocates nothing.
	peakCPU, peakMemory       prometheus.Gauge
	reclaimCPU, reclaimMemory prometheus.Gauge
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
			Help: "Prod requests predicted to stay unused, max(0, requests - peak): cpu in cores, memory in bytes.",
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
	}
	for _, r := range []string{EarlyFirst, EarlyForce, EarlyReadiness, EarlyMoved} {
		m.earlyReports.WithLabelValues(r)
	}
	for _, r := range []string{"success", "error"} {
		m.checkpoints.WithLabelValues(r)
	}
	m.peakCPU, m.peakMemory = m.prodPeak.WithLabelValues("cpu"), m.prodPeak.WithLabelValues("memory")
	m.reclaimCPU, m.reclaimMemory = m.prodReclaimable.WithLabelValues("cpu"), m.prodReclaimable.WithLabelValues("memory")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.prodPeak, m.prodReclaimable, m.ready, m.coldStartPods, m.windows, m.earlyReports, m.checkpoints} {
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
