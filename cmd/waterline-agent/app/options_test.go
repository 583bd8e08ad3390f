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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	valid := func() *Options {
		o := NewOptions()
		o.NodeName = "n1"
		return o
	}
	tests := []struct {
		name   string
		mutate func(*Options)
		// want lists "flag: type" of every error, in order.
		want []string
	}{
		{name: "defaults with a node name", mutate: func(*Options) {}},
		{name: "metrics off", mutate: func(o *Options) { o.MetricsAddress = "0" }},
		{name: "plain metrics on the health server", mutate: func(o *Options) { o.MetricsSecure, o.MetricsAddress = false, o.HealthAddress }},
		{
			// kubelet's probes are plain HTTP: secure metrics need a
			// server of their own.
			name:   "secure metrics on the health server",
			mutate: func(o *Options) { o.MetricsAddress = o.HealthAddress },
			want:   []string{"metrics-address: Invalid value"},
		},
		{name: "a certificate directory", mutate: func(o *Options) { o.MetricsCertDir = "/etc/waterline/metrics-certs" }},
		{
			name:   "a certificate directory without secure metrics",
			mutate: func(o *Options) { o.MetricsSecure, o.MetricsCertDir = false, "/etc/waterline/metrics-certs" },
			want:   []string{"metrics-cert-dir: Invalid value"},
		},
		{
			name: "every bad flag is reported, named as typed",
			mutate: func(o *Options) {
				o.NodeName = ""
				o.KubeAPIQPS = 0
				o.KubeAPIBurst = 0
				o.StateDir = "relative"
				o.HealthAddress = "nope"
				o.MetricsAddress = ":99999"
				o.ProfilingAddress = "localhost"
				o.MetricMemoryBudget = "lots"
				o.CgroupRoot = "sys/fs/cgroup"
				o.CgroupVersion = "v3"
				o.CgroupDriver = "docker"
				o.KubeletCgroupRoot = "kubepods"
				o.ProcRoot = "proc"
				o.CollectInterval = 10 * time.Millisecond
				o.ContainerCollectInterval = time.Hour
				o.MemoryStatInterval = time.Hour
				o.MetricRetention = 48 * time.Hour
				o.CheckpointInterval = 0
			},
			want: []string{
				"node-name: Required value",
				"kube-api-qps: Invalid value",
				"kube-api-burst: Invalid value",
				"state-dir: Invalid value",
				"health-address: Invalid value",
				"metrics-address: Invalid value",
				"profiling-address: Invalid value",
				"metric-memory-budget: Invalid value",
				"cgroup-root: Invalid value",
				"cgroup-version: Unsupported value",
				"cgroup-driver: Unsupported value",
				"kubelet-cgroup-root: Invalid value",
				"proc-root: Invalid value",
				// Checked by the collector and the cache alike; said once.
				"collect-interval: Invalid value",
				"container-collect-interval: Invalid value",
				"memory-stat-interval: Invalid value",
				"metric-retention: Invalid value",
				"checkpoint-interval: Invalid value",
			},
		},
		{
			// 30 min at 1 s is 1920 ring slots of 8 B: 15 KiB, so 1Mi
			// fits; 1000 (bytes) is below the 1 MiB floor.
			name:   "a budget below the cache's floor",
			mutate: func(o *Options) { o.MetricMemoryBudget = "1000" },
			want:   []string{"metric-memory-budget: Invalid value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mutate(o)
			var got []string
			for _, e := range o.Validate() {
				got = append(got, e.Field+": "+e.Type.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeNameFromEnvironment(t *testing.T) {
	t.Setenv("NODE_NAME", "from-env")
	if got := NewOptions().NodeName; got != "from-env" {
		t.Errorf("NodeName = %q, want $NODE_NAME", got)
	}
}

func TestCacheConfigFromFlags(t *testing.T) {
	o := NewOptions()
	o.StateDir = "/var/lib/x"
	o.MetricMemoryBudget = "32Mi"
	cfg := o.cacheConfig()
	if cfg.CheckpointPath != "/var/lib/x/metriccache.ckpt" || cfg.MemoryBudgetBytes != 32<<20 || cfg.Interval != time.Second {
		t.Errorf("cache config %+v", cfg)
	}
}
