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

// Package app builds the waterline-agent command.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	"github.com/waterline-dev/waterline/pkg/cmdutil"
	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/securemetrics"
	"github.com/waterline-dev/waterline/pkg/version"
)

// NewCommand returns the waterline-agent command.
func NewCommand() *cobra.Command {
	opts := NewOptions()
	logOpts := logs.NewOptions()
	cmd := &cobra.Command{
		Use:   "waterline-agent",
		Short: "Waterline's node agent",
		Long: `waterline-agent runs on every node. Once per collect interval it reads the
node's and its pods' CPU and memory usage from /proc and cgroups, keeps it in
an in-memory metric cache (checkpointed to --state-dir), runs the node's
modules, and reports the node's NodeMetric status.`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
				return err
			}
			if errs := opts.Validate(); len(errs) > 0 {
				return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
			}
			if os.Getenv("GOGC") == "" {
				// The agent runs on every node and its live heap is small
				// (tens of MiB at 200 pods), so collect at half the default
				// growth: peak RSS drops by about a third of the heap for
				// a little CPU (pkg/agent/README.md). GOGC overrides it.
				debug.SetGCPercent(agentGCPercent)
			}
			// The first SIGTERM or SIGINT stops the agent gracefully
			// (checkpoint, exit 0); a second one kills it.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Run(ctx, opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	logsapi.AddFlags(logOpts, cmd.Flags())
	return cmd
}

// agentGCPercent is the agent's GOGC unless the environment sets one.
const agentGCPercent = 50

// Run runs the agent until ctx ends, then checkpoints the metric cache and
// returns nil. Errors are for what prevents it from starting.
//
// In order: the API clients, what the node is read with (cgroup layout,
// collector, metric cache), the collect loop with its modules and the
// event recorder they report through, the health and metrics servers, and
// then the loop itself, protecting the node from its snapshot until the
// informers sync. Everything started is stopped in the reverse order.
func Run(ctx context.Context, o *Options) error {
	logger := klog.FromContext(ctx).WithValues("node", o.NodeName)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting waterline-agent", "version", version.Get().String())
	if o.Release {
		return release(ctx, o)
	}

	c, err := newClients(o)
	if err != nil {
		return err
	}
	clk := clock.RealClock{}
	src, err := openSources(ctx, o, clk)
	if err != nil {
		return err
	}
	defer src.collector.Close()

	reg := prometheus.NewRegistry()
	metrics, err := newAgentMetrics(reg, src.cache)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	states := agent.NewStates(o.NodeName, c.kube, c.waterline, 0)
	h := newHealth(clk, o.CollectInterval)
	a := newLoop(o, states, src, clk, metrics, h)

	recorder, stopRecorder, err := newRecorder(ctx, c.kube, o.NodeName)
	if err != nil {
		return err
	}
	defer stopRecorder()
	rc, err := addModules(a, Deps{
		NodeName:   o.NodeName,
		Kube:       c.kube,
		Waterline:  c.waterline,
		Clock:      clk,
		Layout:     src.layout,
		StateDir:   o.StateDir,
		Recorder:   recorder,
		Prometheus: reg,

		EvictionTimeout:          ptr.To(o.EvictionTimeout),
		MemoryEvictionsPerMinute: ptr.To(o.MemoryEvictionsPerMinute),
		QoSMetrics:               src.qosMetrics,
	})
	if err != nil {
		return err
	}
	logger.Info("Modules", "modules", moduleNames(a))

	// Serve health first: a liveness probe must answer while the
	// informers sync.
	stopServers, err := startServers(ctx, o, h, reg, c.config)
	if err != nil {
		return err
	}
	defer stopServers()

	stopStates := startStates(ctx, o, states, h)
	defer stopStates()
	return runLoop(ctx, o, a, src.cache, c.kube, rc)
}

// clients are the agent's API clients.
type clients struct {
	// config is what they were made from; the secure /metrics server
	// asks the API server with it who its callers are.
	config    *rest.Config
	kube      kubernetes.Interface
	waterline versioned.Interface
}

// newClients builds the clients from --kubeconfig (or the in-cluster
// config), with the agent's QPS and a user agent naming the node.
func newClients(o *Options) (*clients, error) {
	cfg, err := cmdutil.RESTConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cfg = rest.AddUserAgent(cfg, "waterline-agent/"+o.NodeName)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	wlClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Waterline client: %w", err)
	}
	return &clients{config: cfg, kube: kube, waterline: wlClient}, nil
}

// sources are what the agent reads the node with.
type sources struct {
	layout    *cgroups.Layout
	collector *collector.Collector
	cache     *metriccache.Cache
	// qosMetrics holds the --custom-metrics a NodeQOS rule may name; nil
	// without the flag.
	qosMetrics *qos.Registry
}

// openSources detects the cgroup layout, loads --custom-metrics, starts the
// collector and restores the metric cache from its checkpoint in
// --state-dir. On an error nothing stays open.
func openSources(ctx context.Context, o *Options, clk clock.WithTicker) (_ *sources, err error) {
	logger := klog.FromContext(ctx)
	layout, err := cgroups.Detect(o.cgroupOptions())
	if err != nil {
		return nil, fmt.Errorf("detecting the cgroup layout under --cgroup-root %s: %w", o.CgroupRoot, err)
	}
	logger.Info("Cgroup layout", "root", layout.Root(), "version", layout.Version(), "driver", layout.Driver(), "kubepods", layout.KubepodsCgroup())
	custom, err := o.customMetrics()
	if err != nil {
		return nil, fmt.Errorf("--custom-metrics: %w", err)
	}
	src := &sources{layout: layout}
	colCfg := o.collectorConfig()
	if custom != nil {
		colCfg.CustomMetrics, src.qosMetrics = custom.Collector, custom.QoSMetrics
		logger.Info("Custom metrics", "file", o.CustomMetrics, "metrics", len(custom.Collector))
	}
	if src.collector, err = collector.New(colCfg, layout, clk); err != nil {
		return nil, fmt.Errorf("starting the collector: %w", err)
	}
	defer func() {
		if err != nil {
			src.collector.Close()
		}
	}()
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating --state-dir: %w", err)
	}
	if src.cache, err = metriccache.New(ctx, o.cacheConfig(), clk); err != nil {
		return nil, fmt.Errorf("starting the metric cache: %w", err)
	}
	if st := src.cache.Stats(); st.Samples > 0 {
		logger.Info("Restored the metric cache from its checkpoint", "samples", st.Samples, "series", st.Series, "oldest", st.Oldest, "newest", st.Newest)
	}
	return src, nil
}

// newLoop builds the collect loop, feeding the agent's own metrics and
// the liveness probe each cycle. The modules are added by addModules.
func newLoop(o *Options, states *agent.States, src *sources, clk clock.WithTicker, metrics *agentMetrics, h *health) *agent.Agent {
	metrics.usage.onSample = func(s *collector.Sample) {
		metrics.podsMissing.Add(float64(s.Stats.PodsMissing))
		metrics.readErrors.Add(float64(s.Stats.ReadErrors))
		metrics.counterResets.Add(float64(s.Stats.CounterResets))
	}
	a := agent.New(states, src.collector, src.cache, clk, o.CollectInterval)
	a.OnCycle = func(took time.Duration, _ int) {
		metrics.observeCycle(took)
		h.cycled()
	}
	a.OnModuleError = metrics.observeModuleError
	a.Add(metrics.usage)
	return a
}

func moduleNames(a *agent.Agent) []string {
	names := make([]string, 0, len(a.Modules()))
	for _, m := range a.Modules() {
		names = append(names, m.Name())
	}
	return names
}

// newRecorder returns the recorder of the agent's events (source
// waterline-agent on the node) and the function that flushes and stops it.
func newRecorder(ctx context.Context, kube kubernetes.Interface, nodeName string) (record.EventRecorder, func(), error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "waterline-agent", Host: nodeName})
	return recorder, broadcaster.Shutdown, nil
}

// startServers serves /healthz and /readyz on --health-address,
// /metrics on --metrics-address (on the health server when both are the
// same; not at all when it is "0"; over HTTPS to callers the API server
// cfg reaches authorizes, with --metrics-secure) and, when asked, Go's
// profiles on --profiling-address. They outlive ctx until the returned
// function stops them, so that probes answer while the agent checkpoints.
// On an error no server is left running.
func startServers(ctx context.Context, o *Options, h *health, reg *prometheus.Registry, cfg *rest.Config) (func(), error) {
	var servers sync.WaitGroup
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() {
		stopServing()
		servers.Wait()
	}
	healthMux := http.NewServeMux()
	h.install(healthMux)
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	if o.sameAddress() {
		healthMux.Handle("/metrics", metricsHandler)
	}
	if err := serve(serveCtx, &servers, "health", o.HealthAddress, healthMux, nil); err != nil {
		stop()
		return nil, err
	}
	if o.MetricsAddress != "0" && !o.sameAddress() {
		var tlsConfig *tls.Config
		if o.MetricsSecure {
			var err error
			if tlsConfig, err = securemetrics.TLSConfig(o.MetricsCertDir); err != nil {
				stop()
				if o.MetricsCertDir != "" {
					err = fmt.Errorf("--metrics-cert-dir: %w", err)
				}
				return nil, err
			}
			authz, err := securemetrics.NewAuthorizer(cfg)
			if err != nil {
				stop()
				return nil, err
			}
			metricsHandler = authz.Wrap(metricsHandler)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler)
		if err := serve(serveCtx, &servers, "metrics", o.MetricsAddress, mux, tlsConfig); err != nil {
			stop()
			return nil, err
		}
	}
	if o.ProfilingAddress != "0" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		if err := serve(serveCtx, &servers, "profiling", o.ProfilingAddress, mux, nil); err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

// startStates starts the node's view of the cluster. Protection starts
// from what the node knows -- the node snapshot a previous run saved (its
// pods, Node, NodeQOS objects) and the cgroup marks -- without waiting for
// the API server; the informers take over once they sync, and the
// snapshot is saved every snapshotInterval while the view changes. A
// restart during an API outage thus keeps throttling. The returned
// function stops the snapshots, then the informers.
func startStates(ctx context.Context, o *Options, states *agent.States, h *health) func() {
	logger := klog.FromContext(ctx)
	snapPath := filepath.Join(o.StateDir, agent.NodeSnapshotFile)
	if err := states.UseSnapshot(snapPath); err != nil {
		logger.Error(err, "Starting without the node snapshot; node protection waits for the API server")
	} else if saved := states.SnapshotTime(); !saved.IsZero() {
		logger.Info("Loaded the node snapshot; protecting the node from it until the API server answers", "saved", saved, "pods", len(states.Pods()), "nodeQOS", len(states.NodeQOSes()))
	}
	states.StartInBackground(ctx, func() {
		h.synced.Store(true)
		logger.Info("Informers synced")
	})
	snapCtx, stopSnap := context.WithCancel(context.WithoutCancel(ctx))
	snapDone := make(chan struct{})
	go func() {
		defer close(snapDone)
		states.RunSnapshots(snapCtx, snapshotInterval)
	}()
	return func() {
		stopSnap()
		<-snapDone
		states.Shutdown()
	}
}

// runLoop runs the collect loop until ctx ends. The cache checkpoints on
// its own context, ended only after the loop stopped, so the final
// checkpoint holds the last cycle's sample. With --release-on-uninstall
// the cgroup changes are released when the agent is being uninstalled.
func runLoop(ctx context.Context, o *Options, a *agent.Agent, cache *metriccache.Cache, kube kubernetes.Interface, rc *resctl.Reconciler) error {
	logger := klog.FromContext(ctx)
	cacheCtx, stopCache := context.WithCancel(context.WithoutCancel(ctx))
	cacheDone := make(chan struct{})
	go func() {
		defer close(cacheDone)
		cache.Run(cacheCtx)
	}()
	runErr := a.Run(ctx)
	if o.ReleaseOnUninstall {
		releaseIfUninstalled(logger, kube, o, rc)
	}
	logger.Info("Collect loop stopped, writing the last checkpoint")
	stopCache()
	<-cacheDone
	if runErr != nil {
		return fmt.Errorf("running the collect loop: %w", runErr)
	}
	logger.Info("Stopped waterline-agent")
	return nil
}

// release is --release: undo every cgroup change the marks in --state-dir
// record and exit. It needs neither the API server nor the pods: the marks
// name each cgroup and what kubelet had in it.
func release(ctx context.Context, o *Options) error {
	logger := klog.FromContext(ctx)
	layout, err := cgroups.Detect(o.cgroupOptions())
	if err != nil {
		return fmt.Errorf("detecting the cgroup layout under --cgroup-root %s: %w", o.CgroupRoot, err)
	}
	rc, err := resctl.New(layout, nil)
	if err != nil {
		return err
	}
	path := filepath.Join(o.StateDir, resctl.MarksFile)
	if err := rc.UseMarks(path); err != nil {
		return fmt.Errorf("releasing: %w", err)
	}
	n := len(rc.Marks())
	if err := rc.Release(logger); err != nil {
		return fmt.Errorf("releasing the cgroups of %d pods (%d left marked in %s): %w", n, len(rc.Marks()), path, err)
	}
	logger.Info("Released every pod cgroup the agent had changed", "pods", n, "marks", path)
	return nil
}

// releaseIfUninstalled releases the agent's cgroup changes when it is
// stopping because it is being uninstalled: its DaemonSet is gone or being
// deleted. A rolling update or a restart keeps the DaemonSet, and the next
// agent takes over from the marks. When the answer cannot be had (no
// --pod-name, API server unreachable), nothing is released: the next
// agent, or --release, heals from the marks.
func releaseIfUninstalled(logger klog.Logger, kube kubernetes.Interface, o *Options, rc *resctl.Reconciler) {
	if o.PodName == "" || o.PodNamespace == "" {
		logger.V(2).Info("Not checking for an uninstall on shutdown: --pod-name or --pod-namespace unset")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	uninstalled, why, err := daemonSetGone(ctx, kube, o.PodNamespace, o.PodName)
	if err != nil {
		logger.Error(err, "Cannot tell whether the agent is being uninstalled; leaving the cgroups to the next agent or --release")
		return
	}
	if !uninstalled {
		logger.V(2).Info("Stopping without releasing: the agent's DaemonSet stays", "reason", why)
		return
	}
	logger.Info("The agent is being uninstalled; releasing every pod cgroup it changed", "reason", why)
	if err := rc.Release(logger); err != nil {
		logger.Error(err, "Releasing the pod cgroups on uninstall")
	}
}

// daemonSetGone reports whether the DaemonSet controlling the pod is gone
// or being deleted (and why, for the log).
func daemonSetGone(ctx context.Context, kube kubernetes.Interface, ns, name string) (bool, string, error) {
	pod, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "own pod not found", fmt.Errorf("getting the agent's pod %s/%s: %w", ns, name, err)
	}
	if err != nil {
		return false, "", fmt.Errorf("getting the agent's pod %s/%s: %w", ns, name, err)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "DaemonSet" {
		return false, "not run by a DaemonSet", nil
	}
	ds, err := kube.AppsV1().DaemonSets(ns).Get(ctx, owner.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, "DaemonSet " + owner.Name + " is gone", nil
	case err != nil:
		return false, "", fmt.Errorf("getting DaemonSet %s/%s: %w", ns, owner.Name, err)
	case ds.UID != owner.UID:
		return true, "DaemonSet " + owner.Name + " was replaced by another of the same name", nil
	case ds.DeletionTimestamp != nil:
		return true, "DaemonSet " + owner.Name + " is being deleted", nil
	}
	return false, "DaemonSet " + owner.Name + " stays", nil
}

// snapshotInterval is how often the node snapshot is saved when the
// informers' view changed.
const snapshotInterval = 10 * time.Second

// serve listens on addr at once (so a taken port fails the start) and
// serves mux until ctx ends, over TLS when tlsConfig is not nil.
func serve(ctx context.Context, wg *sync.WaitGroup, name, addr string, mux http.Handler, tlsConfig *tls.Config) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for %s on %s: %w", name, addr, err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger := klog.FromContext(ctx)
	logger.Info("Serving", "server", name, "address", l.Addr().String(), "tls", tlsConfig != nil)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "HTTP server failed", "server", name)
		}
	}()
	go func() {
		defer wg.Done()
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	return nil
}

// health answers the probes. Ready: the informers synced and one cycle
// ran, so the node's usage is being collected with the API server's view.
// Healthy: the loop that protects the node runs -- a cycle finished within
// stallAfter (since the start, before the first one). The loop does not
// wait for the API server (it runs from the node snapshot), so an
// unreachable API server is a readiness matter, and a loop that does not
// cycle is a liveness one.
type health struct {
	clock      clock.PassiveClock
	stallAfter time.Duration
	started    time.Time
	synced     atomic.Bool
	lastCycle  atomic.Int64 // unix nanos; 0 before the first cycle
}

func newHealth(clk clock.PassiveClock, interval time.Duration) *health {
	return &health{clock: clk, stallAfter: max(30*time.Second, 10*interval), started: clk.Now()}
}

func (h *health) cycled() { h.lastCycle.Store(h.clock.Now().UnixNano()) }

func (h *health) install(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if last := h.lastCycle.Load(); last != 0 {
			if since := h.clock.Since(time.Unix(0, last)); since > h.stallAfter {
				http.Error(w, fmt.Sprintf("no collect cycle finished for %s", since.Round(time.Second)), http.StatusServiceUnavailable)
				return
			}
		} else if since := h.clock.Since(h.started); since > h.stallAfter {
			http.Error(w, fmt.Sprintf("no collect cycle in the %s since the start", since.Round(time.Second)), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case !h.synced.Load():
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
		case h.lastCycle.Load() == 0:
			http.Error(w, "no collect cycle yet", http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	})
}
