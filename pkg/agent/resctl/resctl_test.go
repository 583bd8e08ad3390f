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

package resctl_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

func TestMain(m *testing.M) {
	resctltest.RunBurnerIfAsked()
	os.Exit(m.Run())
}

// fixture is a node of pods in a fixture cgroup tree (no root needed);
// kubelet's values are written into it the way kubelet and the runtime
// would.
type fixture struct {
	t      *testing.T
	layout *cgroups.Layout
	tree   cgroupstest.Tree
	reg    *prometheus.Registry
	r      *resctl.Reconciler
	pods   []*corev1.Pod
	cgs    map[types.UID]podCgroups
}

type podCgroups struct {
	pod        string
	containers map[string]string
}

func newFixture(t *testing.T, v cgroups.Version) *fixture {
	t.Helper()
	layout, err := cgroups.NewLayout(filepath.Join(t.TempDir(), "cgroup"), v, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, layout: layout, tree: cgroupstest.Tree{Layout: layout}, cgs: map[types.UID]podCgroups{}}
	if err := f.tree.Init(); err != nil {
		t.Fatal(err)
	}
	f.restart()
	return f
}

// restart replaces the Reconciler with a new one, as an agent restart does:
// what the old one remembered is lost, the cgroups stay.
func (f *fixture) restart() {
	f.t.Helper()
	f.reg = prometheus.NewRegistry()
	r, err := resctl.New(f.layout, f.reg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.r = r
}

// addPod creates the pod's cgroups with kubelet's values; a nil create
// only adds the pod to the node (its cgroup does not exist yet).
func (f *fixture) addPod(pod *corev1.Pod, create bool) podCgroups {
	f.t.Helper()
	f.pods = append(f.pods, pod)
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = resctl.PodQOSClass(pod)
	}
	pc := podCgroups{pod: f.layout.PodCgroup(pod.UID, pod.Status.QOSClass), containers: map[string]string{}}
	f.cgs[pod.UID] = pc
	if !create {
		return pc
	}
	f.createCgroups(pod)
	return pc
}

func (f *fixture) createCgroups(pod *corev1.Pod) {
	f.t.Helper()
	pc := f.cgs[pod.UID]
	must(f.t, f.tree.Cgroup(pc.pod, cgroupstest.Usage{}))
	kl := resctl.KubeletLimits(pod)
	f.setQuota(pc.pod, kl.CPUQuotaMilli)
	must2(f.t)(f.layout.SetCPUShares(pc.pod, kl.CPUShares))
	if kl.MemoryBytes != resctl.Unlimited {
		must2(f.t)(f.layout.SetMemoryLimit(pc.pod, kl.MemoryBytes))
	}
	for i, c := range pod.Spec.Containers {
		id := strings.Repeat(strconv.Itoa(i), 8) + string(pod.UID[:8])
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, ContainerID: "containerd://" + id})
		cg := pc.pod + "/" + id
		must(f.t, f.tree.Cgroup(cg, cgroupstest.Usage{}))
		q, _ := resctl.KubeletContainerQuotaMilli(pod, c.Name)
		f.setQuota(cg, q)
		pc.containers[c.Name] = cg
	}
}

func (f *fixture) setQuota(cg string, milli int64) {
	f.t.Helper()
	q := cgroups.CPUQuota{QuotaMicros: cgroups.Unlimited, PeriodMicros: 100000}
	if milli != resctl.Unlimited {
		q.QuotaMicros = milli * 100
	}
	must2(f.t)(f.layout.SetCPUQuota(cg, q))
}

func (f *fixture) quota(cg string) int64 {
	f.t.Helper()
	q, err := f.layout.ReadCPUQuota(cg)
	if err != nil {
		f.t.Fatal(err)
	}
	if q.QuotaMicros == cgroups.Unlimited {
		return resctl.Unlimited
	}
	return q.QuotaMicros * 1000 / int64(q.PeriodMicros)
}

func (f *fixture) cycle() error {
	f.t.Helper()
	err := f.r.Cycle(f.t.Context(), &agent.Snapshot{Pods: f.pods})
	f.kernelize()
	return err
}

// kernelize does what the kernel does with a v1 memory limit of -1 and a
// fixture file does not: it stores the largest page-aligned value, which
// is what reads return.
func (f *fixture) kernelize() {
	f.t.Helper()
	if f.layout.Version() != cgroups.V1 {
		return
	}
	for _, pc := range f.cgs {
		p := f.layout.Path(cgroups.ControllerMemory, pc.pod) + "/memory.limit_in_bytes"
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) == "-1" {
			must(f.t, os.WriteFile(p, []byte("9223372036854771712\n"), 0o644))
		}
	}
}

func (f *fixture) mustCycle() {
	f.t.Helper()
	if err := f.cycle(); err != nil {
		f.t.Fatalf("Cycle: %v", err)
	}
}

func (f *fixture) writes(resource, result string) float64 {
	return promtest.ToFloat64(mustCounter(f.t, f.reg, "waterline_agent_resctl_writes_total", map[string]string{"resource": resource, "result": result}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func must2(t *testing.T) func(cgroups.Undo, error) {
	return func(_ cgroups.Undo, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// mustCounter finds a counter of a gathered family by labels, or a zero
// counter when it was never incremented.
func mustCounter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := 0.0
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
	next:
		for _, m := range fam.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			v = m.GetCounter().GetValue()
		}
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name})
	c.Add(v)
	return c
}

var versions = []cgroups.Version{cgroups.V1, cgroups.V2}

// TestThrottleAndUndo: a Batch pod with a 300m limit is throttled to 100m,
// then 200m, then released: the pod's quota follows, and on v1 its
// container's kubelet quota (300m, above the pod's new one, which the
// kernel would refuse) is lowered first and given back at the end.
func TestThrottleAndUndo(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			f := newFixture(t, v)
			pod := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj()
			pc := f.addPod(pod, true)
			ctr := pc.containers["main"]
			type state struct{ Pod, Container int64 }
			containerWhenThrottled := func(q int64) int64 {
				if v == cgroups.V1 {
					return q
				}
				return 300 // v2 caps children by the parent; no need to touch them
			}
			steps := []struct {
				name   string
				intent int64 // 0: withdrawn
				want   state
			}{
				{"throttled to 100m", 100, state{100, containerWhenThrottled(100)}},
				{"raised to 200m", 200, state{200, containerWhenThrottled(200)}},
				{"held", 200, state{200, containerWhenThrottled(200)}},
				{"released: kubelet's 300m back", 0, state{300, 300}},
				{"nothing left to do", 0, state{300, 300}},
			}
			for _, s := range steps {
				intents := map[types.UID]resctl.Intent{}
				if s.intent > 0 {
					intents[pod.UID] = resctl.Intent{CPUQuotaMilli: s.intent, BelowOwnLimits: true}
				}
				f.r.SetIntents("qos", intents)
				f.mustCycle()
				got := state{f.quota(pc.pod), f.quota(ctr)}
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("%s: quotas (-want +got):\n%s", s.name, diff)
				}
			}
			// Writes: pod 100, 200, 300 (3); v1 also container 100, 200, 300 (3).
			want := 3.0
			if v == cgroups.V1 {
				want = 6
			}
			if got := f.writes("cpu_quota", "ok"); got != want {
				t.Errorf("cpu_quota writes = %v, want %v (only differences are written)", got, want)
			}
		})
	}
}

// TestHealsKubeletReset: kubelet (or anyone) writes the pod's quota back
// behind the reconciler's back; the next cycle writes the intent again.
func TestHealsKubeletReset(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			f := newFixture(t, v)
			pod := resctltest.MakePod("batch").Band(extension.BandBatch).Obj()
			pc := f.addPod(pod, true)
			f.r.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 150, BelowOwnLimits: true}})
			f.mustCycle()
			f.setQuota(pc.pod, resctl.Unlimited) // kubelet resets it
			f.mustCycle()
			if got := f.quota(pc.pod); got != 150 {
				t.Errorf("quota after a reset and one cycle = %s, want 150m", q(got))
			}
		})
	}
}

// TestNeverHoldsProtectedPodsBelowTheirLimits: whatever a module asks, a
// Prod, Mid, DaemonSet or terminating pod keeps its own quota; a Mid pod's
// tier limit (not below its own limits) is applied.
func TestNeverHoldsProtectedPodsBelowTheirLimits(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			f := newFixture(t, v)
			protected := []*corev1.Pod{
				resctltest.MakePod("prod").Band(extension.BandProd).CPU("1", "2").Obj(),
				resctltest.MakePod("mid").Band(extension.BandMid).Obj(),
				resctltest.MakePod("ds").Band(extension.BandBatch).OwnedBy("DaemonSet").Obj(),
				resctltest.MakePod("leaving").Band(extension.BandBatch).Terminating().Obj(),
				resctltest.MakePod("labelled").Band(extension.BandProd).Label(extension.LabelBand, "batch").Obj(),
			}
			intents := map[types.UID]resctl.Intent{}
			for _, p := range protected {
				f.addPod(p, true)
				intents[p.UID] = resctl.Intent{CPUQuotaMilli: 50, BelowOwnLimits: true}
			}
			mid := resctltest.MakePod("mid-tier").Band(extension.BandMid).Tier(extension.ResourceMidCPU, "700").Obj()
			midCg := f.addPod(mid, true)
			f.r.SetIntents("qos", intents)
			f.r.SetIntents("tier", map[types.UID]resctl.Intent{mid.UID: {CPUQuotaMilli: 700, CPUShares: 716}})
			f.mustCycle()
			f.mustCycle()
			for _, p := range protected {
				want := resctl.KubeletLimits(p).CPUQuotaMilli
				if got := f.quota(f.cgs[p.UID].pod); got != want {
					t.Errorf("protected pod %s: quota %s, want kubelet's %s", p.Name, q(got), q(want))
				}
			}
			if got := f.quota(midCg.pod); got != 700 {
				t.Errorf("Mid pod with mid-cpu 700: quota %s, want its tier limit 700m", q(got))
			}
			refused := promtest.ToFloat64(mustCounter(t, f.reg, "waterline_agent_resctl_refused_intents_total", map[string]string{"source": "qos"}))
			// 5 protected pods × 2 cycles.
			if refused != 10 {
				t.Errorf("refused intents = %v, want 10", refused)
			}
		})
	}
}

// TestRestartHealsWhatAPreviousRunLeft: after a restart nothing is
// remembered; a Batch or Free pod whose quota is below kubelet's (a
// throttle the previous run never released) gets kubelet's value back on
// the first cycle, containers included (v1); a Prod pod is never touched,
// and no pod is tightened.
func TestRestartHealsWhatAPreviousRunLeft(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			f := newFixture(t, v)
			batch := f.addPod(resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj(), true)
			free := f.addPod(resctltest.MakePod("free").Band(extension.BandFree).Obj(), true)
			prod := f.addPod(resctltest.MakePod("prod").Band(extension.BandProd).Obj(), true)
			loose := f.addPod(resctltest.MakePod("loose").Band(extension.BandBatch).CPU("300m", "300m").Obj(), true)

			f.r.SetIntents("qos", map[types.UID]resctl.Intent{
				f.pods[0].UID: {CPUQuotaMilli: 50, BelowOwnLimits: true},
				f.pods[1].UID: {CPUQuotaMilli: 100, BelowOwnLimits: true},
			})
			f.mustCycle()
			// The previous run is killed here. Someone else left the Prod
			// pod at 100m and the "loose" pod unlimited.
			f.setQuota(prod.pod, 100)
			f.setQuota(loose.pod, resctl.Unlimited)
			f.restart()
			f.mustCycle()

			type quotas struct{ Batch, BatchContainer, Free, Prod, Loose int64 }
			want := quotas{Batch: 300, BatchContainer: 300, Free: resctl.Unlimited, Prod: 100, Loose: resctl.Unlimited}
			got := quotas{f.quota(batch.pod), f.quota(batch.containers["main"]), f.quota(free.pod), f.quota(prod.pod), f.quota(loose.pod)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after a restart and one cycle (-want +got):\n%s", diff)
			}
			before := f.writes("cpu_quota", "ok")
			f.mustCycle()
			if after := f.writes("cpu_quota", "ok"); after != before {
				t.Errorf("the second cycle after the restart wrote %v quotas, want none", after-before)
			}
		})
	}
}

// TestSharesAndMemory: a tier intent's shares and memory limit are written
// (v2: the weight kubelet's conversion gives), and kubelet's values return
// when it is withdrawn.
func TestSharesAndMemory(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			f := newFixture(t, v)
			pod := resctltest.MakePod("batch").Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "500").Obj()
			pc := f.addPod(pod, true)
			read := func() (uint64, int64) {
				t.Helper()
				s, err := f.layout.ReadCPUShares(pc.pod)
				must(t, err)
				m, err := f.layout.ReadMemoryLimit(pc.pod)
				must(t, err)
				return s, m
			}
			f.r.SetIntents("tier", map[types.UID]resctl.Intent{pod.UID: {CPUShares: 512, MemoryLimitBytes: 1 << 30}})
			f.mustCycle()
			shares, mem := read()
			if v == cgroups.V2 {
				// cpu.weight 20: kubelet's 1 + ⌊510 × 9999 / 262142⌋
				// for 512 shares.
				b, err := os.ReadFile(f.layout.Path(cgroups.ControllerCPU, pc.pod) + "/cpu.weight")
				must(t, err)
				if got := strings.TrimSpace(string(b)); got != "20" {
					t.Errorf("cpu.weight = %s, want 20", got)
				}
			} else if shares != 512 {
				t.Errorf("cpu.shares = %d, want 512", shares)
			}
			if mem != 1<<30 {
				t.Errorf("memory limit = %d, want %d", mem, 1<<30)
			}
			f.mustCycle()
			if got := f.writes("cpu_shares", "ok") + f.writes("memory_limit", "ok"); got != 2 {
				t.Errorf("writes after two cycles = %v, want 2 (v2 shares compared as weights)", got)
			}
			f.r.SetIntents("tier", nil)
			f.mustCycle()
			shares, mem = read()
			if shares != 2 || mem != resctl.Unlimited {
				t.Errorf("after withdrawal: shares, memory = %d, %d; want kubelet's 2, unlimited", shares, mem)
			}
		})
	}
}

// TestPodWithoutCgroupYet: a pod bound but not started has no cgroup: no
// error; once it exists, the intent is applied.
func TestPodWithoutCgroupYet(t *testing.T) {
	f := newFixture(t, cgroups.V1)
	pod := resctltest.MakePod("pending").Band(extension.BandBatch).Obj()
	pc := f.addPod(pod, false)
	f.r.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 200, BelowOwnLimits: true}})
	f.mustCycle()
	f.createCgroups(pod)
	f.mustCycle()
	if got := f.quota(pc.pod); got != 200 {
		t.Errorf("quota once the cgroup exists = %s, want 200m", q(got))
	}
}

// TestInvalidIntentIsRefused: shares outside the kernel's range are never
// written.
func TestInvalidIntentIsRefused(t *testing.T) {
	f := newFixture(t, cgroups.V1)
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).Obj()
	pc := f.addPod(pod, true)
	f.r.SetIntents("tier", map[types.UID]resctl.Intent{pod.UID: {CPUShares: 1}})
	f.mustCycle()
	s, err := f.layout.ReadCPUShares(pc.pod)
	must(t, err)
	if s != 2 {
		t.Errorf("shares = %d, want kubelet's 2", s)
	}
	if got := promtest.ToFloat64(mustCounter(t, f.reg, "waterline_agent_resctl_refused_intents_total", map[string]string{"source": "tier"})); got != 1 {
		t.Errorf("refused = %v, want 1", got)
	}
}

func q(milli int64) string {
	if milli == resctl.Unlimited {
		return "unlimited"
	}
	return strconv.FormatInt(milli, 10) + "m"
}
