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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

func pod(uid string, phase corev1.PodPhase, req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
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
	m := Model{CPUFactor: 0.5, MemoryFactor: 0.25, Wave: 1e-12, SystemCPU: 0.1, SystemMemory: 100}
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

func TestWaveStaysInBand(t *testing.T) {
	m := Model{CPUFactor: 1, MemoryFactor: 1, Wave: 0.2, Period: time.Minute}
	m.SetDefaults()
	p := pod("w", corev1.PodRunning, rl("1", "1"), nil)
	lo, hi := 10.0, 0.0
	for s := 0; s < 60; s++ {
		cpu, _ := m.PodUsage(p, time.Unix(int64(s), 0))
		lo, hi = min(lo, cpu), max(hi, cpu)
	}
	if lo < 0.8-1e-9 || hi > 1.2+1e-9 || hi-lo < 0.3 {
		t.Errorf("over a period the usage spans %.3f-%.3f, want within 0.8-1.2 and swinging most of it", lo, hi)
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
