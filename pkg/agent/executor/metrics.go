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

package executor

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Eviction results, as metric label values.
const (
	resultEvicted     = "evicted"
	resultBlocked     = "blocked"
	resultGone        = "gone"
	resultError       = "error"
	resultRateLimited = "rate_limited"
	resultDryRun      = "dry_run"
	resultDeleted     = "deleted_past_pdb"
	resultThrottled   = "api_throttled"
)

type metrics struct {
	throttles     *prometheus.CounterVec
	restores      *prometheus.CounterVec
	evictions     *prometheus.CounterVec
	throttledPods prometheus.Gauge
	forbid        prometheus.Gauge
	// nodeUsage and waterlines put the node's usage beside its lines
	// (the operator's dashboard).
	nodeUsage  *prometheus.GaugeVec
	waterlines *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_qos_throttles_total",
			Help: "Times the agent lowered a pod's CPU quota for node QoS (dry_run=true: would have).",
		}, []string{"dry_run"}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_qos_restores_total",
			Help: "Times the agent raised a throttled pod's CPU quota, one step or all the way (dry_run=true: would have).",
		}, []string{"dry_run"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waterline_agent_qos_evictions_total",
			Help: "Node QoS evictions by result: evicted, blocked (PodDisruptionBudget), deleted_past_pdb (memory relief), api_throttled (429 not from a PodDisruptionBudget), gone, error, rate_limited, dry_run.",
		}, []string{"result"}),
		throttledPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waterline_agent_qos_throttled_pods",
			Help: "Pods the agent holds at a node QoS CPU quota.",
		}),
		forbid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "waterline_agent_qos_forbid_scheduling",
			Help: "1 while the node is over a forbid-scheduling waterline, else 0.",
		}),
		nodeUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waterline_agent_qos_node_usage",
			Help: "Node usage the waterlines are compared with, by metric: cpu_usage in millicores, memory_usage in bytes.",
		}, []string{"metric"}),
		waterlines: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waterline_agent_qos_waterline",
			Help: "The node's waterlines by action and metric, in the metric's unit (cpu_usage in millicores, memory_usage in bytes).",
		}, []string{"action", "metric"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.throttles, m.restores, m.evictions, m.throttledPods, m.forbid, m.nodeUsage, m.waterlines} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering node QoS metrics: %w", err)
			}
		}
	}
	return m, nil
}
