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
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
	"github.com/waterline-dev/waterline/pkg/cmdutil"
)

// CheckpointFile is the metric cache's checkpoint inside --state-dir.
const CheckpointFile = "metriccache.ckpt"

// Options are waterline-agent's flags. Every field is a flag of the same
// meaning; NewOptions holds the defaults and Validate lists every problem,
// naming the flag.
type Options struct {
	// NodeName is the node the agent runs on; it watches only this node's
	// Node, pods and NodeMetric. Default: $NODE_NAME (set it from the
	// downward API, spec.nodeName). Required.
	NodeName string
	// Kubeconfig is a kubeconfig file; empty uses the in-cluster config.
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst limit the agent's requests to the API
	// server: one agent per node adds up. QPS > 0, burst ≥ 1. Defaults 10
	// and 20.
	KubeAPIQPS   float32
	KubeAPIBurst int

	// CgroupRoot is the cgroup filesystem mount point: /sys/fs/cgroup, or
	// the host's mounted elsewhere in a container (/host/sys/fs/cgroup).
	// Absolute path. Default /sys/fs/cgroup.
	CgroupRoot string
	// KubeletCgroupRoot is kubelet's --cgroup-root, under which kubelet
	// makes kubepods: an absolute cgroup path, "/" or, with the systemd
	// driver, a slice. Default "/".
	KubeletCgroupRoot string
	// CgroupVersion forces the cgroup version: v1, v2, or auto to detect
	// it (v2 when <cgroup-root>/cgroup.controllers exists). Default auto.
	CgroupVersion string
	// CgroupDriver forces kubelet's cgroup driver: cgroupfs, systemd, or
	// auto to detect it from which of kubepods and kubepods.slice exists.
	// Default auto.
	CgroupDriver string
	// ProcRoot is the proc filesystem holding stat and meminfo (the
	// host's, /host/proc, in a container without hostPID). Absolute path.
	// Default /proc.
	ProcRoot string

	// CollectInterval is the collect loop's period. Range 100ms–1m,
	// default 1s.
	CollectInterval time.Duration
	// ContainerCollectInterval is how often a cycle also reads every
	// container's cgroup (no decision needs it). 0 never; otherwise
	// between --collect-interval and 10m. Default 0.
	ContainerCollectInterval time.Duration
	// MemoryStatInterval is how often each pod's memory.stat (its inactive
	// file pages) is read; its charge is read every cycle. Between
	// --collect-interval and 1m. Default 10s.
	MemoryStatInterval time.Duration
	// MetricRetention is how long raw samples are kept in memory. Range
	// 1m–24h, default 30m.
	MetricRetention time.Duration
	// MetricMemoryBudget is the hard limit on the metric cache's memory,
	// a quantity of bytes ("16Mi"); at least 1Mi and twice the timestamp
	// ring (8 B per sample of the retention). Default 16Mi; 200 pods for
	// 30 min take about 3.5Mi.
	MetricMemoryBudget string
	// StateDir is a directory that survives restarts (a hostPath), for
	// the metric cache's checkpoint and modules' state. Absolute path,
	// created if missing. Default /var/lib/waterline-agent.
	StateDir string
	// CheckpointInterval is how often the metric cache is checkpointed; a
	// kill -9 loses at most this much history (SIGTERM loses nothing).
	// Range 1s–1h, default 30s.
	CheckpointInterval time.Duration

	// EvictionTimeout bounds one node QoS eviction request; evictions run
	// beside the collect loop. Range 1s-5m, default 10s.
	EvictionTimeout time.Duration
	// MemoryEvictionsPerMinute is the memory-relief eviction budget, apart
	// from the NodeQOS eviction.maxPerMinute. Range 1-600, default 60.
	MemoryEvictionsPerMinute int32
	// CustomMetrics is the path of a YAML file of custom metrics read from
	// each pod's cgroup, with their attributes, that NodeQOS rules may then
	// name (executor.CustomMetricsFile; docs/design/node-qos.md#custom-metrics).
	// Empty: only the built-in metrics.
	CustomMetrics string

	// Release undoes every cgroup change the agent's marks in --state-dir
	// record (throttles, tier limits; kubelet's values back) and exits,
	// without the API server: the chart's pre-delete hook, or by hand
	// after removing the agent. Default false.
	Release bool
	// ReleaseOnUninstall: on SIGTERM, when the agent's own DaemonSet is
	// gone or being deleted (an uninstall, not a rolling update or a
	// restart), release as --release does before exiting. Needs
	// --pod-name and --pod-namespace. Default true.
	ReleaseOnUninstall bool
	// PodName and PodNamespace are the agent's own pod (downward API;
	// defaults $POD_NAME and $POD_NAMESPACE), to find its DaemonSet.
	PodName, PodNamespace string

	// HealthAddress serves /healthz and /readyz (host:port). Default
	// :9320.
	HealthAddress string
	// MetricsAddress serves Prometheus /metrics (host:port); "0" turns it
	// off; the same address as --health-address serves all three on one
	// port, in plain HTTP (--metrics-secure=false). Default :9321.
	MetricsAddress string
	// MetricsSecure serves /metrics over HTTPS, only to callers whose
	// bearer token the API server authenticates and who may get /metrics
	// (TokenReview and SubjectAccessReview; pkg/securemetrics). The agent
	// is on the host network, so with it off anyone who reaches the node
	// reads its pods' names and usage. Default true.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the secure /metrics,
	// read again when they change; empty: a certificate the agent signs
	// itself at start.
	MetricsCertDir string
	// ProfilingAddress serves Go's /debug/pprof/ (host:port); "0", the
	// default, turns it off. The agent runs on the host network: give a
	// loopback address.
	ProfilingAddress string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		NodeName:                 os.Getenv("NODE_NAME"),
		KubeAPIQPS:               10,
		KubeAPIBurst:             20,
		CgroupRoot:               cgroups.DefaultRoot,
		KubeletCgroupRoot:        cgroups.DefaultKubeletCgroupRoot,
		CgroupVersion:            string(cgroups.VersionAuto),
		CgroupDriver:             string(cgroups.DriverAuto),
		ProcRoot:                 collector.DefaultProcRoot,
		CollectInterval:          collector.DefaultInterval,
		ContainerCollectInterval: collector.DefaultContainerInterval,
		MemoryStatInterval:       collector.DefaultMemoryStatInterval,
		MetricRetention:          metriccache.DefaultRetention,
		MetricMemoryBudget:       "16Mi",
		StateDir:                 "/var/lib/waterline-agent",
		CheckpointInterval:       metriccache.DefaultCheckpointInterval,
		EvictionTimeout:          executor.DefaultEvictionTimeout,
		MemoryEvictionsPerMinute: executor.DefaultMemoryEvictionsPerMinute,
		ReleaseOnUninstall:       true,
		PodName:                  os.Getenv("POD_NAME"),
		PodNamespace:             os.Getenv("POD_NAMESPACE"),
		HealthAddress:            ":9320",
		MetricsAddress:           ":9321",
		MetricsSecure:            true,
		ProfilingAddress:         "0",
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "The node this agent runs on (default $NODE_NAME). Required.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty uses the in-cluster configuration.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second to the API server (> 0).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the API server (≥ 1).")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", o.CgroupRoot, "Where the cgroup filesystem is mounted (e.g. /host/sys/fs/cgroup in a container).")
	fs.StringVar(&o.KubeletCgroupRoot, "kubelet-cgroup-root", o.KubeletCgroupRoot, "Kubelet's --cgroup-root: the cgroup kubepods lives under (/, or a slice with the systemd driver).")
	fs.StringVar(&o.CgroupVersion, "cgroup-version", o.CgroupVersion, "Cgroup version: v1, v2, or auto to detect it.")
	fs.StringVar(&o.CgroupDriver, "cgroup-driver", o.CgroupDriver, "Kubelet's cgroup driver: cgroupfs, systemd, or auto to detect it.")
	fs.StringVar(&o.ProcRoot, "proc-root", o.ProcRoot, "Proc filesystem to read stat and meminfo from (e.g. /host/proc).")
	fs.DurationVar(&o.CollectInterval, "collect-interval", o.CollectInterval, "Period of the collect loop (100ms-1m).")
	fs.DurationVar(&o.ContainerCollectInterval, "container-collect-interval", o.ContainerCollectInterval, "How often a cycle also reads container cgroups; nothing uses them yet (0 = never, else collect-interval-10m).")
	fs.DurationVar(&o.MemoryStatInterval, "memory-stat-interval", o.MemoryStatInterval, "How often each pod's memory.stat is read for its inactive file pages; its charge is read every cycle, and memory.stat again at once when the charge moved by more than 4MiB (collect-interval-1m).")
	fs.DurationVar(&o.MetricRetention, "metric-retention", o.MetricRetention, "How long raw samples are kept in memory (1m-24h).")
	fs.StringVar(&o.MetricMemoryBudget, "metric-memory-budget", o.MetricMemoryBudget, "Hard limit on the metric cache's memory, a byte quantity such as 16Mi (at least 1Mi).")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "Directory kept across restarts for the metric cache checkpoint and module state; created if missing.")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", o.CheckpointInterval, "How often the metric cache is checkpointed; a crash loses at most this much history (1s-1h).")
	fs.DurationVar(&o.EvictionTimeout, "eviction-timeout", o.EvictionTimeout, "Timeout of one node QoS eviction request; evictions run beside the collect loop (1s-5m).")
	fs.StringVar(&o.CustomMetrics, "custom-metrics", o.CustomMetrics, "YAML file of custom metrics read from each pod's cgroup (name, controller, file, key, type counter|gauge, divisor, and the attributes actionPriority, sortable, evictable, evictQuantified) that NodeQOS rules may name. Empty: cpu and memory only.")
	fs.Int32Var(&o.MemoryEvictionsPerMinute, "memory-evictions-per-minute", o.MemoryEvictionsPerMinute, "Budget of memory-relief evictions, apart from the NodeQOS eviction.maxPerMinute (1-600).")
	fs.BoolVar(&o.Release, "release", o.Release, "Undo every cgroup change recorded in --state-dir (throttles, tier limits) and exit; no API server needed. For uninstalling.")
	fs.BoolVar(&o.ReleaseOnUninstall, "release-on-uninstall", o.ReleaseOnUninstall, "On SIGTERM, release as --release does when the agent's DaemonSet is gone or being deleted.")
	fs.StringVar(&o.PodName, "pod-name", o.PodName, "The agent's own pod (default $POD_NAME), to find its DaemonSet on SIGTERM.")
	fs.StringVar(&o.PodNamespace, "pod-namespace", o.PodNamespace, "The agent's own pod's namespace (default $POD_NAMESPACE).")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "host:port of /healthz and /readyz.")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "host:port of Prometheus /metrics; \"0\" disables it; may equal --health-address with --metrics-secure=false.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve /metrics over HTTPS, only to callers whose bearer token the API server authenticates and who may get /metrics (a ClusterRole rule nonResourceURLs [/metrics], verbs [get]); the agent's ServiceAccount must create tokenreviews and subjectaccessreviews. false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Directory with tls.crt and tls.key for --metrics-secure, read again when they change; empty: a certificate the agent signs itself at start.")
	fs.StringVar(&o.ProfilingAddress, "profiling-address", o.ProfilingAddress, "host:port of Go's /debug/pprof/ profiles; \"0\" (the default) disables it. The agent runs on the host network: use a loopback address such as 127.0.0.1:9322.")
}

// memoryBudgetBytes parses --metric-memory-budget.
func (o *Options) memoryBudgetBytes() (int64, error) {
	q, err := resource.ParseQuantity(o.MetricMemoryBudget)
	if err != nil {
		return 0, err
	}
	return q.Value(), nil
}

func (o *Options) cgroupOptions() cgroups.Options {
	return cgroups.Options{
		Root:              o.CgroupRoot,
		Version:           cgroups.Version(o.CgroupVersion),
		Driver:            cgroups.Driver(o.CgroupDriver),
		KubeletCgroupRoot: o.KubeletCgroupRoot,
	}
}

func (o *Options) collectorConfig() collector.Config {
	return collector.Config{
		ProcRoot:           o.ProcRoot,
		Interval:           o.CollectInterval,
		ContainerInterval:  ptr.To(o.ContainerCollectInterval),
		MemoryStatInterval: o.MemoryStatInterval,
	}
}

// customMetrics loads --custom-metrics; nil without the flag.
func (o *Options) customMetrics() (*executor.CustomMetrics, error) {
	if o.CustomMetrics == "" {
		return nil, nil
	}
	return executor.LoadCustomMetrics(o.CustomMetrics)
}

func (o *Options) cacheConfig() metriccache.Config {
	budget, _ := o.memoryBudgetBytes() // Validate reported a bad one
	cfg := metriccache.Config{
		Retention:          o.MetricRetention,
		Interval:           o.CollectInterval,
		MemoryBudgetBytes:  budget,
		CheckpointInterval: o.CheckpointInterval,
	}
	if o.StateDir != "" {
		cfg.CheckpointPath = filepath.Join(o.StateDir, CheckpointFile)
	}
	return cfg
}

func (o *Options) qosConfig() executor.Config {
	return executor.Config{EvictionTimeout: ptr.To(o.EvictionTimeout), MemoryEvictionsPerMinute: ptr.To(o.MemoryEvictionsPerMinute)}
}

// Flag names of the fields of the component configurations the options
// fill, so their validation errors name the flag a user typed.
var (
	cgroupFlags    = map[string]string{"root": "cgroup-root", "version": "cgroup-version", "driver": "cgroup-driver", "kubeletCgroupRoot": "kubelet-cgroup-root"}
	collectorFlags = map[string]string{"procRoot": "proc-root", "interval": "collect-interval", "containerInterval": "container-collect-interval", "memoryStatInterval": "memory-stat-interval"}
	qosFlags       = map[string]string{"evictionTimeout": "eviction-timeout", "memoryEvictionsPerMinute": "memory-evictions-per-minute"}
	cacheFlags     = map[string]string{"retention": "metric-retention", "interval": "collect-interval", "memoryBudgetBytes": "metric-memory-budget", "checkpointPath": "state-dir", "checkpointInterval": "checkpoint-interval"}
)

// Validate returns every problem with the options, each naming its flag.
// The collector's, the cgroup layout's and the metric cache's own checks
// run here too, so a bad value fails at start with all the others.
func (o *Options) Validate() field.ErrorList {
	var errs field.ErrorList
	if o.NodeName == "" && !o.Release {
		errs = append(errs, field.Required(field.NewPath("node-name"), "set --node-name or $NODE_NAME"))
	}
	if o.KubeAPIQPS <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("kube-api-qps"), o.KubeAPIQPS, "must be positive"))
	}
	if o.KubeAPIBurst < 1 {
		errs = append(errs, field.Invalid(field.NewPath("kube-api-burst"), o.KubeAPIBurst, "must be at least 1"))
	}
	if !filepath.IsAbs(o.StateDir) {
		errs = append(errs, field.Invalid(field.NewPath("state-dir"), o.StateDir, "must be an absolute path"))
	}
	if err := cmdutil.ValidateAddress(o.HealthAddress); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("health-address"), o.HealthAddress, err.Error()))
	}
	if o.MetricsAddress != "0" {
		if err := cmdutil.ValidateAddress(o.MetricsAddress); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("metrics-address"), o.MetricsAddress, err.Error()))
		} else if o.MetricsSecure && o.sameAddress() {
			errs = append(errs, field.Invalid(field.NewPath("metrics-address"), o.MetricsAddress, "must differ from --health-address with --metrics-secure: kubelet probes the health server in plain HTTP"))
		}
	}
	if o.MetricsCertDir != "" && (!o.MetricsSecure || o.MetricsAddress == "0") {
		errs = append(errs, field.Invalid(field.NewPath("metrics-cert-dir"), o.MetricsCertDir, "needs --metrics-secure and a --metrics-address"))
	}
	if o.ProfilingAddress != "0" {
		if err := cmdutil.ValidateAddress(o.ProfilingAddress); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("profiling-address"), o.ProfilingAddress, err.Error()))
		}
	}
	budgetOK := true
	if _, err := o.memoryBudgetBytes(); err != nil {
		budgetOK = false
		errs = append(errs, field.Invalid(field.NewPath("metric-memory-budget"), o.MetricMemoryBudget, "must be a byte quantity such as 16Mi: "+err.Error()))
	}

	cg := o.cgroupOptions()
	errs = appendFlagErrors(errs, cg.Validate(nil), cgroupFlags)
	cc := o.collectorConfig()
	errs = appendFlagErrors(errs, cc.Validate(nil), collectorFlags)
	mc := o.cacheConfig()
	mcErrs := mc.Validate(nil)
	if !budgetOK {
		mcErrs = without(mcErrs, "memoryBudgetBytes") // already reported as unparsable
	}
	if !filepath.IsAbs(o.StateDir) {
		mcErrs = without(mcErrs, "checkpointPath")
	}
	errs = appendFlagErrors(errs, mcErrs, cacheFlags)
	if o.CustomMetrics != "" {
		if _, err := executor.LoadCustomMetrics(o.CustomMetrics); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("custom-metrics"), o.CustomMetrics, err.Error()))
		}
	}
	qc := o.qosConfig()
	qc.SetDefaults()
	errs = appendFlagErrors(errs, qc.Validate(nil), qosFlags)
	return errs
}

// appendFlagErrors renames the errors' fields to flags and appends those
// not already in errs (the collector and the cache both check the
// interval).
func appendFlagErrors(errs, add field.ErrorList, flags map[string]string) field.ErrorList {
	for _, e := range add {
		if f, ok := flags[e.Field]; ok {
			e.Field = f
		}
		dup := false
		for _, have := range errs {
			if have.Field == e.Field && have.Type == e.Type && fmt.Sprint(have.BadValue) == fmt.Sprint(e.BadValue) {
				dup = true
				break
			}
		}
		if !dup {
			errs = append(errs, e)
		}
	}
	return errs
}

func without(errs field.ErrorList, fld string) field.ErrorList {
	out := errs[:0:0]
	for _, e := range errs {
		if e.Field != fld {
			out = append(out, e)
		}
	}
	return out
}

// sameAddress reports whether the metrics go on the health server.
func (o *Options) sameAddress() bool {
	return strings.EqualFold(o.HealthAddress, o.MetricsAddress)
}
