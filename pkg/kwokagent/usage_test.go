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

package kwokagent

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// pod is a Batch pod (by its band label); prodPod the same in the Prod band.
func pod(uid string, phase corev1.PodPhase, req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Labels: map[string]string{extension.LabelBand: string(extension.BandBatch)}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func prodPod(uid string, phase corev1.PodPhase, req, lim corev1.ResourceList) *corev1.Pod {
	p := pod(uid, phase, req, lim)
	p.Labels = nil // no band label, no priority: Prod
	return p
}

func rl(cpu, mem string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if cpu != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

// flat is a model without a swing (Wave tiny), to check the scaling.
func flat() Model {
	m := Model{CPUFactor: 0.5, MemoryFactor: 0.25, ProdCPUFactor: 0.25, ProdMemoryFactor: 0.125,
		Wave: 1e-12, MemoryWave: 1e-12, SystemCPU: 0.1, SystemMemory: 100}
	m.SetDefaults()
	return m
}

func TestPodUsage(t *testing.T) {
	now := time.Unix(1000, 0)
	m := flat()
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		cpu     float64
		memory  float64
		epsilon float64
	}{
		{"requests scaled", pod("a", corev1.PodRunning, rl("2", "400"), nil), 1, 100, 1e-6},
		{"a Prod pod's requests scaled by the Prod factors", prodPod("p", corev1.PodRunning, rl("2", "400"), nil), 0.5, 50, 1e-6},
		{"limits when no request", pod("b", corev1.PodRunning, nil, rl("1", "800")), 0.5, 200, 1e-6},
		{"cpu request, memory limit only", pod("c", corev1.PodRunning, rl("1", ""), rl("", "40")), 0.5, 10, 1e-6},
		{"best effort uses nothing", pod("d", corev1.PodRunning, nil, nil), 0, 0, 0},
		{"pending uses nothing", pod("e", corev1.PodPending, rl("2", "400"), nil), 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, mem := m.PodUsage(tc.pod, now)
			if d := cpu - tc.cpu; d > tc.epsilon || d < -tc.epsilon {
				t.Errorf("cpu = %g, want %g", cpu, tc.cpu)
			}
			if d := mem - tc.memory; d > tc.epsilon*tc.memory+tc.epsilon || d < -(tc.epsilon*tc.memory+tc.epsilon) {
				t.Errorf("memory = %g, want %g", mem, tc.memory)
			}
		})
	}
}

// TestWaveStaysInBand: over a period a pod's CPU swings through most of
// (1±Wave) times its scaled request and never out of it, its memory
// within (1±MemoryWave).
func TestWaveStaysInBand(t *testing.T) {
	m := Model{CPUFactor: 1, MemoryFactor: 1, Wave: 0.2, MemoryWave: 0.05, Period: time.Minute}
	m.SetDefaults()
	p := pod("w", corev1.PodRunning, rl("1", "1"), nil)
	lo, hi := 10.0, 0.0
	mlo, mhi := 10.0, 0.0
	for s := 0; s < 60; s++ {
		cpu, mem := m.PodUsage(p, time.Unix(int64(s), 0))
		lo, hi = min(lo, cpu), max(hi, cpu)
		mlo, mhi = min(mlo, mem), max(mhi, mem)
	}
	if lo < 0.8-1e-9 || hi > 1.2+1e-9 || hi-lo < 0.3 {
		t.Errorf("over a period the CPU usage spans %.3f-%.3f, want within 0.8-1.2 and swinging most of it", lo, hi)
	}
	if mlo < 0.95-1e-9 || mhi > 1.05+1e-9 || mhi-mlo < 0.07 {
		t.Errorf("over a period the memory usage spans %.3f-%.3f, want within 0.95-1.05 and swinging most of it", mlo, mhi)
	}
}

// TestPodsFollowOneDay: the pods of a node peak together, within the
// phase spread, so the node's usage swings as a day does rather than
// averaging out: with 50 pods the node's CPU still spans most of the
// single pod's band.
func TestPodsFollowOneDay(t *testing.T) {
	m := Model{CPUFactor: 1, Wave: 0.2, Period: time.Hour}
	m.SetDefaults()
	var pods []*corev1.Pod
	for i := range 50 {
		pods = append(pods, pod(fmt.Sprintf("uid-%d", i), corev1.PodRunning, rl("1", "1"), nil))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for s := 0; s < 3600; s += 30 {
		var node float64
		for _, p := range pods {
			cpu, _ := m.PodUsage(p, time.Unix(int64(s), 0))
			node += cpu
		}
		lo, hi = min(lo, node), max(hi, node)
	}
	// One pod spans 40 % of its scaled request (0.8-1.2); phases within
	// 1/12 of the day keep the sum's swing above 95 % of that (cos(π/12)).
	if (hi-lo)/50 < 0.4*0.95 {
		t.Errorf("50 pods together span %.1f-%.1f cores over a day: %.3f per pod, want most of 0.4 (their peaks coincide)", lo, hi, (hi-lo)/50)
	}
}

func TestSample(t *testing.T) {
	m := flat()
	now := time.Unix(1000, 0)
	got := m.Sample([]*corev1.Pod{
		pod("a", corev1.PodRunning, rl("2", "400"), nil),
		pod("e", corev1.PodPending, rl("2", "400"), nil),
	}, now)
	round := func(ps []metriccache.Point) map[metriccache.SeriesKey]float64 {
		out := map[metriccache.SeriesKey]float64{}
		for _, p := range ps {
			out[p.Key] = float64(int64(p.Value*1e6+0.5)) / 1e6
		}
		return out
	}
	want := map[metriccache.SeriesKey]float64{
		metriccache.PodKey("a", metriccache.ResourceCPU):    1,
		metriccache.PodKey("a", metriccache.ResourceMemory): 100,
		metriccache.SystemKey(metriccache.ResourceCPU):      0.1,
		metriccache.SystemKey(metriccache.ResourceMemory):   100,
		metriccache.NodeKey(metriccache.ResourceCPU):        1.1,
		metriccache.NodeKey(metriccache.ResourceMemory):     200,
	}
	if d := cmp.Diff(want, round(got)); d != "" {
		t.Errorf("Sample (-want +got):\n%s", d)
	}
}

func TestModelValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Model
		want string
	}{
		{"cpu factor", Model{CPUFactor: 5}, "model.cpuFactor: Invalid value: 5"},
		{"wave", Model{Wave: 2}, "model.wave: Invalid value: 2"},
		{"memory wave", Model{MemoryWave: -0.5}, "model.memoryWave: Invalid value: -0.5"},
		{"prod cpu factor", Model{ProdCPUFactor: 4.5}, "model.prodCPUFactor: Invalid value: 4.5"},
		{"phase spread", Model{PhaseSpread: 1.5}, "model.phaseSpread: Invalid value: 1.5"},
		{"period", Model{Period: time.Millisecond}, `model.period: Invalid value: "1ms"`},
		{"negative memory", Model{SystemMemory: -1}, "model.systemMemory: Invalid value: -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.m.SetDefaults()
			errs := tc.m.Validate(field.NewPath("model"))
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Errorf("Validate = %v, want an error containing %q", errs, tc.want)
			}
		})
	}
	ok := Model{}
	ok.SetDefaults()
	if errs := ok.Validate(field.NewPath("model")); len(errs) > 0 {
		t.Errorf("the defaults are refused: %v", errs)
	}
}
