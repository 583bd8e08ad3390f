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
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/predictor"
	"github.com/waterline-dev/waterline/pkg/agent/reporter"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	"github.com/waterline-dev/waterline/pkg/core/qos"
)

// Deps is what the agent's modules are built from. Everything in it is
// ready to use when addModules runs; nothing in it is started by a module.
type Deps struct {
	// NodeName is the node the agent runs on.
	NodeName string
	// Kube and Waterline reach the API server (the agent's own QPS budget,
	// --kube-api-qps / --kube-api-burst).
	Kube      kubernetes.Interface
	Waterline versioned.Interface
	// Clock is the agent's clock; modules never call time.Now.
	Clock clock.WithTicker
	// Layout locates pod cgroups (detected or forced at start); the
	// collector reads through the same one.
	Layout *cgroups.Layout
	// StateDir is a directory the agent owns (--state-dir) that survives
	// restarts: modules keep their checkpoints here, one file each.
	StateDir string
	// Recorder records Events, reported as component waterline-agent on
	// this node. Events about pods go to the pod's namespace.
	Recorder record.EventRecorder
	// Prometheus registers a module's collectors; they are
	// served on --metrics-address. Name them waterline_agent_<module>_*.
	Prometheus prometheus.Registerer
	// EvictionTimeout and MemoryEvictionsPerMinute tune the QoS executor
	// (--eviction-timeout, --memory-evictions-per-minute); nil keeps its
	// defaults.
	EvictionTimeout          *time.Duration
	MemoryEvictionsPerMinute *int32
	// QoSMetrics are the metrics the QoS executor plans with (built-in and
	// --custom-metrics); nil is cpu and memory only.
	QoSMetrics *qos.Registry
}

// addModules adds the agent's modules to a. They cycle in the order added,
// each after the sample of the cycle is in the metric cache. A module that
// implements agent.Runner also runs on its own goroutine until shutdown;
// one that implements agent.StatusContributor adds to every NodeMetric
// status the reporter writes.
//
// It returns the cgroup limit reconciler, the one writer of pod cgroups,
// for the command to release on uninstall.
func addModules(a *agent.Agent, d Deps) (*resctl.Reconciler, error) {
	// ---------------------------------------------------------------
	// Modules go here, in cycle order, each as a few lines:
	//
	//	m, err := somemodule.New(..., d.X, d.Y)
	//	if err != nil {
	//		return fmt.Errorf("setting up the <name> module: %w", err)
	//	}
	//	a.Add(m)
	//
	// Predictor (H): before the QoS executor, so a cycle's prediction is
	// fresh when the tiers are enforced.
	// QoS executor and tier enforcement (I).
	// ---------------------------------------------------------------

	pred, err := predictor.New(predictor.Config{CheckpointPath: filepath.Join(d.StateDir, predictor.CheckpointFile)},
		predictor.Deps{Clock: d.Clock, Reports: a, Prometheus: d.Prometheus})
	if err != nil {
		return nil, fmt.Errorf("setting up the %s module: %w", predictor.Name, err)
	}
	a.Add(pred)

	// Tier enforcement and node QoS state cgroup intents; the reconciler,
	// added after both, is the one writer of pod cgroup limits.
	rc, err := resctl.New(d.Layout, d.Prometheus)
	if err != nil {
		return nil, fmt.Errorf("setting up the %s module: %w", resctl.Name, err)
	}
	// The marks record every cgroup the agent changes, so a restart heals
	// them whatever the pods became meanwhile, and --release undoes them.
	if err := rc.UseMarks(filepath.Join(d.StateDir, resctl.MarksFile)); err != nil {
		klog.Background().Error(err, "Starting without the previous run's cgroup marks; Batch/Free and tier pods still get one look for a quota left below kubelet's")
	}
	tiers, err := tierlimits.New(tierlimits.Config{}, rc)
	if err != nil {
		return nil, fmt.Errorf("setting up the %s module: %w", tierlimits.Name, err)
	}
	a.Add(tiers)
	exec, err := executor.New(executor.Config{
		StatePath:                filepath.Join(d.StateDir, executor.StateFile),
		EvictionTimeout:          d.EvictionTimeout,
		MemoryEvictionsPerMinute: d.MemoryEvictionsPerMinute,
	}, executor.Deps{
		Evictor:       executor.APIEvictor{Client: d.Kube},
		Reconciler:    rc,
		Recorder:      d.Recorder,
		Clock:         d.Clock,
		Prometheus:    d.Prometheus,
		RequestReport: a.RequestReport,
		QoSMetrics:    d.QoSMetrics,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the %s module: %w", executor.Name, err)
	}
	a.Add(exec)
	a.Add(rc)

	// The reporter comes last: it takes the status contributions of every
	// module added before it.
	rep, err := reporter.New(reporter.Config{}, reporter.Deps{
		NodeName:     d.NodeName,
		Client:       d.Waterline.WaterlineV1alpha1().NodeMetrics(),
		State:        a.States(),
		Cache:        a.Cache(),
		Clock:        d.Clock,
		Requests:     a.ReportRequests(),
		Contributors: reporter.ContributorsOf(a.Modules()),
		Prometheus:   d.Prometheus,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the %s module: %w", reporter.Name, err)
	}
	a.Add(rep)
	return rc, nil
}
