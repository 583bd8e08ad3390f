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

package predictor

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

const (
	gi = 1 << 30
	mi = 1 << 20
)

// t0 is a whole second, so the update grid of a fresh start falls on
// t0 + k·30s.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// podBuilder makes pods the way the informer hands them to the agent.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.Time{Time: t0.Add(-24 * time.Hour)}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b *podBuilder) priority(v int32) *podBuilder { b.pod.Spec.Priority = ptr.To(v); return b }
func (b *podBuilder) band(band extension.Band) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[extension.LabelBand] = string(band)
	return b
}

func (b *podBuilder) req(cpu, memory string) *podBuilder {
	b.pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return b
}

func (b *podBuilder) started(at time.Time) *podBuilder {
	b.pod.Status.StartTime = &metav1.Time{Time: at}
	return b
}

func (b *podBuilder) notStarted(created time.Time) *podBuilder {
	b.pod.Status.StartTime = nil
	b.pod.CreationTimestamp = metav1.Time{Time: created}
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

// podLoad is what one pod uses in a sample; a pod of the node without a
// podLoad has no cgroup yet (no usage at all).
type podLoad struct {
	pod    *corev1.Pod
	cpu    float64
	memory uint64
}

// load is what the node uses in one sample; the system is node − Σ pods.
type load struct {
	nodeCPU    float64
	nodeMemory uint64
	pods       []podLoad
}

func (l load) sample(t time.Time) *collector.Sample {
	s := &collector.Sample{Time: t, Node: collector.Usage{CPU: l.nodeCPU, HasCPU: true, Memory: l.nodeMemory, HasMemory: true}}
	sysCPU, sysMem := l.nodeCPU, int64(l.nodeMemory)
	for _, pl := range l.pods {
		s.Pods = append(s.Pods, collector.PodSample{Pod: collector.PodRefOf(pl.pod),
			Usage: collector.Usage{CPU: pl.cpu, HasCPU: true, Memory: pl.memory, HasMemory: true}})
		sysCPU -= pl.cpu
		sysMem -= int64(pl.memory)
	}
	s.System = collector.Usage{CPU: max(sysCPU, 0), HasCPU: true, Memory: uint64(max(sysMem, 0)), HasMemory: true}
	return s
}

// fakeReports counts early-report requests. Cycle calls it on the test's
// goroutine.
type fakeReports struct{ n int }

func (f *fakeReports) RequestReport() { f.n++ }

// env is an agent without a collector: the test says what the node uses
// each second, the metric cache stores it, and the predictor cycles on it,
// all on one fake clock.
type env struct {
	t       testing.TB
	ctx     context.Context
	clock   *clocktesting.FakeClock
	cache   *metriccache.Cache
	p       *Predictor
	reports *fakeReports
	// pods are the node's pods as the informer has them.
	pods []*corev1.Pod
	nm   *v1alpha1.NodeMetric
	// load says what the node uses at t.
	load func(t time.Time) load
	// writeOnRequest emulates a reporter that writes the status at once
	// whenever the predictor asks for an early report, into status.
	writeOnRequest bool
	status         v1alpha1.NodeMetricStatus
}

func testContext(t testing.TB) context.Context {
	return klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))))
}

// newEnv starts at t0 with an empty metric cache (30 min retention).
func newEnv(t testing.TB, cfg Config, policy *v1alpha1.PredictPolicy) *env {
	t.Helper()
	return newEnvWithCache(t, cfg, policy, metriccache.Config{})
}

func newEnvWithCache(t testing.TB, cfg Config, policy *v1alpha1.PredictPolicy, cacheCfg metriccache.Config) *env {
	t.Helper()
	ctx := testContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cache, err := metriccache.New(ctx, cacheCfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, clock: clk, cache: cache, reports: &fakeReports{},
		nm: &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: v1alpha1.NodeMetricSpec{PredictPolicy: policy}}}
	e.p = e.newPredictor(cfg)
	return e
}

func (e *env) newPredictor(cfg Config) *Predictor {
	e.t.Helper()
	p, err := New(cfg, Deps{Clock: e.clock, Reports: e.reports})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) snapshot() *agent.Snapshot {
	return &agent.Snapshot{Time: e.clock.Now(), Cache: e.cache, Pods: e.pods, NodeMetric: e.nm}
}

// run advances the clock one second at a time for d: each second the
// node's load is appended to the cache and every predictor cycles, as the
// agent's loop does.
func (e *env) run(d time.Duration, ps ...*Predictor) {
	e.t.Helper()
	if len(ps) == 0 {
		ps = []*Predictor{e.p}
	}
	for range int(d / time.Second) {
		e.clock.Step(time.Second)
		now := e.clock.Now()
		if err := e.cache.AppendSample(e.load(now).sample(now)); err != nil {
			e.t.Fatal(err)
		}
		for _, p := range ps {
			asked := e.reports.n
			if err := p.Cycle(e.ctx, e.snapshot()); err != nil {
				e.t.Fatalf("Cycle at %s: %v", now.Sub(t0), err)
			}
			if e.writeOnRequest && e.reports.n > asked {
				p.ContributeStatus(&e.status)
			}
		}
	}
}

// window returns the 1-based update window (of 30 s from t0) t is in.
func window(t time.Time) int { return int((t.Sub(t0)-1)/(30*time.Second)) + 1 }

// latest returns the predictor's latest result, failing without one.
func latest(t testing.TB, p *Predictor) Result {
	t.Helper()
	r, ok := p.Latest()
	if !ok {
		t.Fatal("No prediction yet")
	}
	return r
}

// stats is a histogram's figures, for comparing with hand-computed ones.
type stats struct {
	Mean, StdDev, Weight float64
}

// histStats is what the tests read of a histogram.
type histStats interface {
	Mean() float64
	StdDev() float64
	TotalWeight(time.Time) float64
}

func statsOf(p *Predictor, res int, hist func(*resourceState) histStats) stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := hist(p.res[res])
	return stats{Mean: h.Mean(), StdDev: h.StdDev(), Weight: h.TotalWeight(time.Time{})}
}

func (s stats) String() string {
	return fmt.Sprintf("mean %g sd %g weight %g", s.Mean, s.StdDev, s.Weight)
}

// noDecay is a policy whose histograms do not decay (half-life 0), so a
// histogram's total weight is its number of samples.
func noDecay(p v1alpha1.PredictPolicy) *v1alpha1.PredictPolicy {
	p.HalfLifeSeconds = ptr.To[int64](0)
	return &p
}
