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

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// soakEnv names the soak's length (a Go duration); unset, TestSoak skips.
const soakEnv = "WATERLINE_SOAK"

// soakRetention is the agent's --metric-retention in the soak.
const soakRetention = 3 * time.Minute

// soakSample is what TestSoak reads of the system at one time.
type soakSample struct {
	at time.Duration
	// The agent's and the manager's own figures, from their /metrics.
	agent, manager processFigures
	// cacheSeries and cacheBytes: the agent's metric cache.
	cacheSeries, cacheBytes float64
	// stateBytes: the agent's state directory (marks, checkpoints).
	stateBytes int64
	// marks: pods the agent holds a changed cgroup value for; markedGone:
	// of those, pods that no longer exist.
	marks, markedGone int
	// reportPods and reportBytes: pods in the NodeMetric's status, and the
	// object's size.
	reportPods, reportBytes int
	// livePods: the workload's pods that exist; events: Events in the
	// workload's namespace.
	livePods, events int
}

type processFigures struct{ rss, heap, goroutines, fds float64 }

func readProcessFigures(page string) processFigures {
	v := func(name string) float64 { f, _ := testutil.MetricValue(page, name); return f }
	return processFigures{v("process_resident_memory_bytes"), v("go_memstats_heap_inuse_bytes"), v("go_goroutines"), v("process_open_fds")}
}

// TestSoak runs the whole system on the real node for $WATERLINE_SOAK
// under a workload that churns: Batch pods that live 30 s to 2 min each
// (deleted as a Job controller would, and replaced), Batch pods of the
// colocation profile (tier resources and the agent's tier limits) and
// sleeping Prod pods (the predictor's per-pod history) likewise, and a
// Prod pod that burns a core 40 s in every 80, so the node crosses the
// throttle line and goes back under the restore line all the time. The
// agent reports every 2 s (30 times the default rate), so half an hour is
// some 15 hours of reports. Every 30 s it reads the agent's and the
// manager's memory, goroutines and open files, the agent's metric cache,
// state directory and marks, and the NodeMetric; at the end it fails when
// what should stay level grows from the second quarter of the run to the
// last (heap in use, goroutines, open files, the metric cache, the state
// directory), when a mark or a report entry names a pod that is gone, and
// when nothing was throttled. The
// agent's metric retention is soakRetention here, so that the cache has
// levelled before the second quarter (with the default 30 min it fills
// for half an hour).
//
// It is a measurement that takes as long as it is told, not a check for
// every `make test`: `make soak` runs it (WATERLINE_SOAK=30m by default).
func TestSoak(t *testing.T) {
	length, err := time.ParseDuration(os.Getenv(soakEnv))
	if os.Getenv(soakEnv) == "" {
		t.Skipf("SKIPPING: a soak of the whole system on the real node for $%s, not a check: `make soak` runs it", soakEnv)
	}
	if err != nil || length < 4*(soakRetention+2*time.Minute) {
		t.Fatalf("%s=%q: want a duration of %v or more (the second quarter, where the comparison starts, must begin after the agent's metric retention)", soakEnv, os.Getenv(soakEnv), 4*(soakRetention+2*time.Minute))
	}
	s := startSystem(t)
	// The metric cache keeps a deleted pod's samples for its retention
	// (30 min by default): its size and its checkpoint's grow that long
	// before they level. A retention of 3 min levels them before the
	// second quarter of the shortest soak, where the comparison starts.
	old := s.agentPod(t)
	s.c.Helm(t, "upgrade", release, testutil.ChartDir(), "-n", agentNamespace, "-f", s.valuesFile,
		"--set-json", fmt.Sprintf(`agent.extraArgs=["--collect-interval=1s","--metric-retention=%s"]`, soakRetention))
	s.waitAgentReady(t, string(old.UID))
	s.ownTheNode(t)
	s.nodeQOS(t, "soak", v1alpha1.NodeQOSSpec{
		CPU:            &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](60), RestorePercent: ptr.To[int32](50)},
		AvoidanceCount: ptr.To[int32](2), RestoreCount: ptr.To[int32](2),
	})
	ns := s.namespace(t, "soak")
	tierNS := s.namespace(t, "soak-tier", map[string]string{"colocation": "batch"})
	reader := s.c.CreateMetricsReader(t, agentNamespace, "soak-scraper")
	agentTLS := s.c.VerifyingTLSConfig(t, agentNamespace, agentMetricsSecret, "ca.crt", agentMetricsHost)
	stateDir := filepath.Join(s.node.Dir, "agent-state")
	ctx := t.Context()

	// The Prod pod: a core for 40 s, then 40 s idle, for the whole run.
	s.createPod(t, ns, podSpec{name: "prod", class: "waterline-prod", cpuRequest: "500m",
		script: "trap 'kill 0; exit 0' TERM; while :; do (while :; do :; done) & b=$!; sleep 40; kill $b; sleep 40; done"})
	s.waitRunning(t, ns, "prod")

	type job struct {
		ns, name, kind string
		ends           time.Time
	}
	var jobs []job
	seq := 0
	churn := func(now time.Time) {
		kept := jobs[:0]
		for _, j := range jobs {
			if now.Before(j.ends) {
				kept = append(kept, j)
				continue
			}
			if err := s.c.Kube.CoreV1().Pods(j.ns).Delete(ctx, j.name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
				t.Errorf("Deleting %s/%s: %v", j.ns, j.name, err)
			}
		}
		jobs = kept
		count := func(kind string) int {
			n := 0
			for _, j := range jobs {
				if j.kind == kind {
					n++
				}
			}
			return n
		}
		// Three Batch burners held to 300m by their limits (0.9 core with
		// the Prod pod idle: under the restore line; 1.9 with it busy:
		// over the throttle line), two sleeping pods of the profile, and
		// a sleeping Prod pod (the predictor's per-pod history).
		for _, k := range []struct {
			kind, ns string
			want     int
			spec     podSpec
		}{
			{"batch", ns, 3, podSpec{class: "waterline-batch", burners: 1, cpuRequest: "100m", cpuLimit: "300m"}},
			{"tier", tierNS, 2, podSpec{memRequest: "16Mi"}},
			{"web", ns, 1, podSpec{class: "waterline-prod", cpuRequest: "100m", memRequest: "16Mi"}},
		} {
			for count(k.kind) < k.want {
				seq++
				life := 30*time.Second + time.Duration(seq*37%90)*time.Second
				p := k.spec
				p.name = fmt.Sprintf("%s-%d", k.kind, seq)
				s.createPod(t, k.ns, p)
				jobs = append(jobs, job{k.ns, p.name, k.kind, now.Add(life)})
			}
		}
	}

	sample := func(at time.Duration) soakSample {
		var out soakSample
		out.at = at
		code, page := testutil.ScrapeTLS(t, fmt.Sprintf("https://127.0.0.1:%d/metrics", s.agentMetrics), reader, agentTLS)
		if code != 200 {
			t.Fatalf("the agent's /metrics: %d %.200s", code, page)
		}
		out.agent = readProcessFigures(page)
		out.cacheSeries, _ = testutil.MetricValue(page, "waterline_agent_metric_cache_series")
		out.cacheBytes, _ = testutil.MetricValue(page, "waterline_agent_metric_cache_bytes")
		code, page = testutil.Scrape(t, fmt.Sprintf("https://127.0.0.1:%d/metrics", s.managerMetrics), reader)
		if code != 200 {
			t.Fatalf("the manager's /metrics: %d %.200s", code, page)
		}
		out.manager = readProcessFigures(page)

		entries, err := os.ReadDir(stateDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if info, err := e.Info(); err == nil && !info.IsDir() {
				out.stateBytes += info.Size()
			}
		}
		live := map[types.UID]bool{}
		for _, n := range []string{ns, tierNS, agentNamespace} {
			pods, err := s.c.Kube.CoreV1().Pods(n).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				live[p.UID] = true
				if n != agentNamespace {
					out.livePods++
				}
			}
		}
		marks, err := resctl.ReadMarks(filepath.Join(stateDir, resctl.MarksFile))
		if err != nil {
			t.Fatal(err)
		}
		out.marks = len(marks)
		for uid := range marks {
			if !live[uid] {
				out.markedGone++
			}
		}
		nm, err := s.c.Waterline.WaterlineV1alpha1().NodeMetrics().Get(ctx, s.node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out.reportPods = len(nm.Status.PodsMetric)
		if b, err := yaml.Marshal(nm); err == nil {
			out.reportBytes = len(b)
		}
		for _, n := range []string{ns, tierNS} {
			evs, err := s.c.Kube.CoreV1().Events(n).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out.events += len(evs.Items)
		}
		return out
	}

	begin := time.Now()
	var samples []soakSample
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	nextSample := begin
	for now := begin; now.Sub(begin) < length; now = <-tick.C {
		churn(now)
		if !now.Before(nextSample) {
			samples = append(samples, sample(now.Sub(begin)))
			nextSample = nextSample.Add(30 * time.Second)
		}
	}
	var files []string
	if entries, err := os.ReadDir(stateDir); err == nil {
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				files = append(files, fmt.Sprintf("%s %d B", e.Name(), info.Size()))
			}
		}
	}
	t.Logf("The agent's state directory at the end: %s", strings.Join(files, ", "))
	throttles := 0
	for _, e := range s.agentEventList(t, ns, "") {
		if e.Reason == "Throttled" {
			throttles += int(max(e.Count, 1)) // the recorder folds repeats into Count
		}
	}
	t.Logf("Soak of %v: %d Batch, tier and Prod pods created, %d Throttled events\n%s", length, seq, throttles, soakTable(samples))

	// What should stay level: the second quarter against the last.
	q := len(samples) / 4
	early, late := samples[q:2*q], samples[len(samples)-q:]
	median := func(ss []soakSample, f func(soakSample) float64) float64 {
		v := make([]float64, len(ss))
		for i, x := range ss {
			v[i] = f(x)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	for _, c := range []struct {
		what  string
		f     func(soakSample) float64
		ratio float64
		slack float64
	}{
		{"the agent's heap in use (bytes)", func(x soakSample) float64 { return x.agent.heap }, 1.25, 4 << 20},
		{"the agent's goroutines", func(x soakSample) float64 { return x.agent.goroutines }, 1, 10},
		{"the agent's open files", func(x soakSample) float64 { return x.agent.fds }, 1, 5},
		// About 1.5 KiB of series a pod: a cache that kept the pods of
		// the run would grow by some 200 KiB.
		{"the agent's metric cache (series)", func(x soakSample) float64 { return x.cacheSeries }, 1.25, 10},
		{"the agent's metric cache (bytes)", func(x soakSample) float64 { return x.cacheBytes }, 1.25, 64 << 10},
		{"the agent's state directory (bytes)", func(x soakSample) float64 { return float64(x.stateBytes) }, 1.5, 16 << 10},
		{"the manager's heap in use (bytes)", func(x soakSample) float64 { return x.manager.heap }, 1.25, 4 << 20},
		{"the manager's goroutines", func(x soakSample) float64 { return x.manager.goroutines }, 1, 10},
		{"the manager's open files", func(x soakSample) float64 { return x.manager.fds }, 1, 5},
	} {
		e, l := median(early, c.f), median(late, c.f)
		if l > c.ratio*e+c.slack {
			t.Errorf("%s grew from %.0f (median of the second quarter) to %.0f (of the last), over %.2f× + %.0f", c.what, e, l, c.ratio, c.slack)
		}
	}
	for _, x := range samples {
		if x.markedGone > 0 {
			t.Errorf("at %v the agent's marks name %d pods that are gone", x.at.Round(time.Second), x.markedGone)
		}
		// The report names the workload's pods and the agent's, at most
		// the ones that exist plus those deleted within a report.
		if x.reportPods > x.livePods+1+4 {
			t.Errorf("at %v the NodeMetric names %d pods, with %d of the workload's alive", x.at.Round(time.Second), x.reportPods, x.livePods)
		}
	}
	if throttles == 0 {
		t.Error("no Batch pod was throttled in the whole soak: the workload did not cross the line, and the soak measured an idle agent")
	}
}

// soakTable prints the samples, one line a minute.
func soakTable(samples []soakSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6s | %8s %8s %5s %4s | %7s %8s | %6s | %5s %4s | %6s %7s | %5s %6s | %8s %8s %5s %4s\n",
		"min", "agentRSS", "heap", "gor", "fds", "series", "cacheKiB", "state", "marks", "gone", "pods", "report", "live", "events",
		"mgrRSS", "heap", "gor", "fds")
	mib := func(v float64) string { return fmt.Sprintf("%.1fM", v/(1<<20)) }
	last := time.Duration(-1)
	for i, x := range samples {
		if last >= 0 && x.at-last < time.Minute && i != len(samples)-1 {
			continue
		}
		last = x.at
		fmt.Fprintf(&b, "%6.1f | %8s %8s %5.0f %4.0f | %7.0f %8.0f | %6d | %5d %4d | %6d %7d | %5d %6d | %8s %8s %5.0f %4.0f\n",
			x.at.Minutes(), mib(x.agent.rss), mib(x.agent.heap), x.agent.goroutines, x.agent.fds,
			x.cacheSeries, x.cacheBytes/1024, x.stateBytes, x.marks, x.markedGone, x.reportPods, x.reportBytes,
			x.livePods, x.events, mib(x.manager.rss), mib(x.manager.heap), x.manager.goroutines, x.manager.fds)
	}
	return b.String()
}
