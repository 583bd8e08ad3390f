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

package app

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// agentMetrics are the agent's own figures: what it costs (cycle time,
// cache size, process memory) and what it sees (node, system and pod
// usage of the latest cycle).
type agentMetrics struct {
	cycleDuration prometheus.Histogram
	moduleErrors  *prometheus.CounterVec
	podsMissing   prometheus.Counter
	readErrors    prometheus.Counter
	counterResets prometheus.Counter
	usage         *usageCollector
}

// newAgentMetrics registers the agent's metrics, the Go runtime's and the
// process's on reg. It uses its own registry, not component-base's global
// legacy one, so nothing another library registers at init leaks in.
func newAgentMetrics(reg prometheus.Registerer, cache *metriccache.Cache) (*agentMetrics, error) {
	m := &agentMetrics{
		cycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waterline_agent_cycle_duration_seconds",
			Help:    "Wall time of one collect cycle: collect, store, every module.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. 4s
		}),
		moduleErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_module_errors_total",
			Help: "Module cycles that returned an error, by module.",
		}, []string{"module"}),
		podsMissing: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waterline_agent_collect_pods_missing_total",
			Help: "Pods the collector was asked about but found no cgroup for (not started yet, or removed during the cycle).",
		}),
		readErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waterline_agent_collect_read_errors_total",
			Help: "Cgroup and proc files that were empty, cut short or unparsable; the value was skipped for that cycle.",
		}),
		counterResets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waterline_agent_collect_counter_resets_total",
			Help: "Cumulative CPU counters that went backwards (a recreated cgroup, CPU unplug).",
		}),
		usage: &usageCollector{},
	}
	stat := func(f func(metriccache.Stats) float64) func() float64 {
		return func() float64 { return f(cache.Stats()) }
	}
	cs := []prometheus.Collector{
		m.cycleDuration, m.moduleErrors, m.podsMissing, m.readErrors, m.counterResets, m.usage,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waterline_agent_metric_cache_series", Help: "Series in the metric cache."},
			stat(func(s metriccache.Stats) float64 { return float64(s.Series) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waterline_agent_metric_cache_samples", Help: "Sample timestamps kept in the metric cache."},
			stat(func(s metriccache.Stats) float64 { return float64(s.Samples) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waterline_agent_metric_cache_bytes", Help: "Accounted memory of the metric cache."},
			stat(func(s metriccache.Stats) float64 { return float64(s.UsedBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waterline_agent_metric_cache_budget_bytes", Help: "The metric cache's memory budget (--metric-memory-budget)."},
			stat(func(s metriccache.Stats) float64 { return float64(s.BudgetBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waterline_agent_metric_cache_refused_total", Help: "Values the metric cache dropped because its budget was full."},
			stat(func(s metriccache.Stats) float64 { return float64(s.Refused) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waterline_agent_metric_cache_evicted_chunks_total", Help: "Chunks dropped before their retention to stay within the budget."},
			stat(func(s metriccache.Stats) float64 { return float64(s.EvictedChunks) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waterline_agent_metric_cache_out_of_order_total", Help: "Samples dropped for not being newer than the last (a clock step back)."},
			stat(func(s metriccache.Stats) float64 { return float64(s.OutOfOrder) })),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *agentMetrics) observeCycle(took time.Duration) { m.cycleDuration.Observe(took.Seconds()) }

func (m *agentMetrics) observeModuleError(module string, _ error) {
	m.moduleErrors.WithLabelValues(module).Inc()
}

// usageCollector serves the latest cycle's usage as gauges. It keeps only
// that sample, so a pod that is gone from it is gone from /metrics at the
// next scrape, with no label values to delete. It is a CycleModule: the
// agent hands it every cycle's snapshot.
type usageCollector struct {
	mu     sync.Mutex
	sample *collector.Sample
	// onSample counts the sample's skips; set by the command.
	onSample func(*collector.Sample)
}

var _ agent.CycleModule = &usageCollector{}

const usageModuleName = "metrics"

var (
	nodeCPUDesc   = prometheus.NewDesc("waterline_agent_node_cpu_usage_cores", "Node CPU usage in the latest cycle, in cores.", nil, nil)
	nodeMemDesc   = prometheus.NewDesc("waterline_agent_node_memory_usage_bytes", "Node memory usage in the latest cycle (MemTotal - MemAvailable).", nil, nil)
	systemCPUDesc = prometheus.NewDesc("waterline_agent_system_cpu_usage_cores", "Node CPU usage outside pods in the latest cycle, in cores.", nil, nil)
	systemMemDesc = prometheus.NewDesc("waterline_agent_system_memory_usage_bytes", "Node memory usage outside pods in the latest cycle.", nil, nil)
	podCPUDesc    = prometheus.NewDesc("waterline_agent_pod_cpu_usage_cores", "Pod CPU usage in the latest cycle, in cores.", []string{"namespace", "pod", "band"}, nil)
	podMemDesc    = prometheus.NewDesc("waterline_agent_pod_memory_usage_bytes", "Pod memory working set in the latest cycle.", []string{"namespace", "pod", "band"}, nil)
)

func (u *usageCollector) Name() string { return usageModuleName }

func (u *usageCollector) Cycle(_ context.Context, s *agent.Snapshot) error {
	u.mu.Lock()
	u.sample = s.Sample
	u.mu.Unlock()
	if u.onSample != nil {
		u.onSample(s.Sample)
	}
	return nil
}

func (u *usageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemDesc, systemCPUDesc, systemMemDesc, podCPUDesc, podMemDesc} {
		ch <- d
	}
}

func (u *usageCollector) Collect(ch chan<- prometheus.Metric) {
	u.mu.Lock()
	s := u.sample
	u.mu.Unlock()
	if s == nil {
		return
	}
	emit := func(usage collector.Usage, cpu, mem *prometheus.Desc, labels ...string) {
		if usage.HasCPU {
			ch <- constGauge(cpu, usage.CPU, labels)
		}
		if usage.HasMemory {
			ch <- constGauge(mem, float64(usage.Memory), labels)
		}
	}
	emit(s.Node, nodeCPUDesc, nodeMemDesc)
	emit(s.System, systemCPUDesc, systemMemDesc)
	for i := range s.Pods {
		p := &s.Pods[i]
		emit(p.Usage, podCPUDesc, podMemDesc, p.Pod.Namespace, p.Pod.Name, string(p.Pod.Band))
	}
}

func constGauge(d *prometheus.Desc, v float64, labels []string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
