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

// Command kwok-agent simulates a Waterline agent on each kwok node of a
// local cluster (hack/local-up.sh): it reports every selected node's
// NodeMetric with the agent's reporter and predictor, from usage modelled
// on the node's pods (requests times a factor, Prod pods a smaller one,
// swinging over a compressed day) instead of cgroups, so LoadAware and the
// Mid/Batch tiers work on fake nodes. Nodes that run
// a real agent must not be selected.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/waterline-dev/waterline/pkg/agent/predictor"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	"github.com/waterline-dev/waterline/pkg/cmdutil"
	"github.com/waterline-dev/waterline/pkg/kwokagent"
)

func main() {
	var (
		kubeconfig, selector string
		m                    kwokagent.Model
		interval             time.Duration
		pred                 predictor.Config
	)
	klog.InitFlags(nil)
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default in-cluster or $KUBECONFIG)")
	flag.StringVar(&selector, "nodes", "type=kwok", "label selector of the nodes to simulate an agent on")
	flag.Float64Var(&m.CPUFactor, "cpu-factor", kwokagent.DefaultCPUFactor, "a pod's CPU usage is its CPU request times this (0-4)")
	flag.Float64Var(&m.MemoryFactor, "memory-factor", kwokagent.DefaultMemoryFactor, "a pod's memory usage is its memory request times this (0-4)")
	flag.Float64Var(&m.ProdCPUFactor, "prod-cpu-factor", kwokagent.DefaultProdCPUFactor, "a Prod pod's CPU usage is its CPU request times this (0-4)")
	flag.Float64Var(&m.ProdMemoryFactor, "prod-memory-factor", kwokagent.DefaultProdMemoryFactor, "a Prod pod's memory usage is its memory request times this (0-4)")
	flag.Float64Var(&m.Wave, "wave", kwokagent.DefaultWave, "relative amplitude of the daily CPU swing (0-1)")
	flag.Float64Var(&m.MemoryWave, "memory-wave", kwokagent.DefaultMemoryWave, "relative amplitude of the daily memory swing (0-1)")
	flag.DurationVar(&m.Period, "period", kwokagent.DefaultPeriod, "period of the usage swing: a compressed day")
	flag.Float64Var(&m.PhaseSpread, "phase-spread", kwokagent.DefaultPhaseSpread, "how far apart the pods' daily peaks may be, as a fraction of the period (0-1)")
	flag.Float64Var(&m.SystemCPU, "system-cpu", kwokagent.DefaultSystemCPU, "each node's CPU use outside pods, in cores")
	flag.Float64Var(&m.SystemMemory, "system-memory", kwokagent.DefaultSystemMemory, "each node's memory use outside pods, in bytes")
	flag.DurationVar(&interval, "interval", time.Second, "how often a sample is taken (100ms-1m)")
	flag.DurationVar(&pred.UpdateInterval, "predict-update-interval", predictor.DefaultUpdateInterval, "how often the predictor's histograms are fed (as the agent's)")
	flag.DurationVar(&pred.CheckInterval, "predict-check-interval", predictor.DefaultCheckInterval, "how often the prediction is recomputed (as the agent's)")
	flag.Parse()
	if err := run(kubeconfig, selector, m, interval, pred); err != nil {
		fmt.Fprintln(os.Stderr, "kwok-agent:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, selector string, m kwokagent.Model, interval time.Duration, pred predictor.Config) error {
	sel, err := labels.Parse(selector)
	if err != nil {
		return fmt.Errorf("--nodes %q: %w", selector, err)
	}
	cfg, err := cmdutil.RESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	wlClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	sim, err := kwokagent.New(kwokagent.Config{Nodes: sel, Model: m, Interval: interval, Predictor: pred}, kube, wlClient, clock.RealClock{})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return sim.Run(klog.NewContext(ctx, klog.Background()))
}
