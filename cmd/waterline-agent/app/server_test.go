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
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
)

func TestHealth(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// synced, cycled (at start) and then how long passes.
		synced, cycled bool
		after          time.Duration
		wantHealthz    int
		wantReadyz     int
	}{
		{name: "starting: alive, not ready", wantHealthz: 200, wantReadyz: 503},
		{name: "synced, no cycle yet", synced: true, wantHealthz: 200, wantReadyz: 503},
		{name: "synced and cycled", synced: true, cycled: true, after: time.Second, wantHealthz: 200, wantReadyz: 200},
		// 1 s interval: a stall is 30 s (the floor) without a cycle.
		// The loop never cycled (it used to wait for the informers while
		// /healthz said ok): not alive once the stall time has passed.
		{name: "no cycle 31 s after the start", after: 31 * time.Second, wantHealthz: 503, wantReadyz: 503},
		{name: "loop stalled 31 s", synced: true, cycled: true, after: 31 * time.Second, wantHealthz: 503, wantReadyz: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(start)
			h := newHealth(clk, time.Second)
			h.synced.Store(tt.synced)
			if tt.cycled {
				h.cycled()
			}
			clk.Step(tt.after)
			mux := http.NewServeMux()
			h.install(mux)
			var got []int
			for _, path := range []string{"/healthz", "/readyz"} {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				got = append(got, rec.Code)
			}
			if diff := cmp.Diff([]int{tt.wantHealthz, tt.wantReadyz}, got); diff != "" {
				t.Errorf("healthz, readyz (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsageGaugesFollowTheLatestSample: a pod's gauges are there while it
// is in the latest sample and gone the cycle after it left; absent values
// (a pod's first cycle has no CPU rate) are not served as zeros.
func TestUsageGaugesFollowTheLatestSample(t *testing.T) {
	u := &usageCollector{}
	ref := func(name string) collector.PodRef {
		return collector.PodRef{Namespace: "ns", Name: name, Band: extension.BandBatch}
	}
	cycle := func(pods ...collector.PodSample) {
		s := &collector.Sample{Node: collector.Usage{CPU: 2, HasCPU: true, Memory: 1 << 30, HasMemory: true}, Pods: pods}
		if err := u.Cycle(t.Context(), &agent.Snapshot{Sample: s}); err != nil {
			t.Fatal(err)
		}
	}
	const header = "# HELP waterline_agent_pod_cpu_usage_cores Pod CPU usage in the latest cycle, in cores.\n# TYPE waterline_agent_pod_cpu_usage_cores gauge\n"

	cycle(
		collector.PodSample{Pod: ref("a"), Usage: collector.Usage{CPU: 0.5, HasCPU: true, Memory: 10, HasMemory: true}},
		collector.PodSample{Pod: ref("new"), Usage: collector.Usage{Memory: 10, HasMemory: true}},
	)
	want := header + `waterline_agent_pod_cpu_usage_cores{band="batch",namespace="ns",pod="a"} 0.5` + "\n"
	if err := testutil.CollectAndCompare(u, strings.NewReader(want), "waterline_agent_pod_cpu_usage_cores"); err != nil {
		t.Errorf("first cycle: %v", err)
	}
	cycle(collector.PodSample{Pod: ref("new"), Usage: collector.Usage{CPU: 0.25, HasCPU: true, Memory: 10, HasMemory: true}})
	want = header + `waterline_agent_pod_cpu_usage_cores{band="batch",namespace="ns",pod="new"} 0.25` + "\n"
	if err := testutil.CollectAndCompare(u, strings.NewReader(want), "waterline_agent_pod_cpu_usage_cores"); err != nil {
		t.Errorf("after pod a left: %v", err)
	}
	if n := testutil.CollectAndCount(u, "waterline_agent_node_cpu_usage_cores"); n != 1 {
		t.Errorf("node CPU gauges: %d, want 1", n)
	}
}

// TestStartServersLeavesNothingOnError: when the metrics port is taken the
// agent fails to start, and the health server it had already started is
// stopped, its port free again for the restart.
func TestStartServersLeavesNothingOnError(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthAddr := free.Addr().String()
	if err := free.Close(); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	o := NewOptions()
	o.HealthAddress, o.MetricsAddress = healthAddr, taken.Addr().String()
	h := newHealth(testingclock.NewFakeClock(time.Now()), time.Second)
	stop, err := startServers(t.Context(), o, h, prometheus.NewRegistry(), &rest.Config{Host: "https://127.0.0.1:1"})
	if err == nil {
		stop()
		t.Fatal("startServers succeeded with the metrics port taken")
	}
	if !strings.Contains(err.Error(), "listening for metrics on "+o.MetricsAddress) {
		t.Errorf("error %q does not name the metrics address", err)
	}
	l, err := net.Listen("tcp", healthAddr)
	if err != nil {
		t.Fatalf("the health port is still held after the failed start: %v", err)
	}
	l.Close()

	// A --metrics-cert-dir without its files stops the start, naming the
	// flag and the file.
	o.MetricsAddress = "127.0.0.1:0"
	o.MetricsCertDir = t.TempDir()
	if stop, err := startServers(t.Context(), o, h, prometheus.NewRegistry(), &rest.Config{Host: "https://127.0.0.1:1"}); err == nil {
		stop()
		t.Error("startServers succeeded with an empty --metrics-cert-dir")
	} else if !strings.Contains(err.Error(), "--metrics-cert-dir") || !strings.Contains(err.Error(), "tls.crt") {
		t.Errorf("error %q does not name --metrics-cert-dir and tls.crt", err)
	}
	if l, err := net.Listen("tcp", healthAddr); err != nil {
		t.Fatalf("the health port is still held after the failed start: %v", err)
	} else {
		l.Close()
	}
	o.MetricsCertDir = ""

	// Both free: the health server answers until stopped.
	o.MetricsAddress = "0"
	stop, err = startServers(t.Context(), o, h, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + healthAddr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", resp.StatusCode)
	}
	stop()
	if resp, err := http.Get("http://" + healthAddr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("the health server still answers after stop")
	}
}
