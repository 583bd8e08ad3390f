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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

func TestKubeletLimits(t *testing.T) {
	withOverhead := resctltest.MakePod("o").CPU("1", "1").Memory("1Gi", "1Gi").Obj()
	withOverhead.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	withInit := resctltest.MakePod("i").CPU("200m", "").Obj()
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want resctl.Limits
	}{
		{"BestEffort: shares 2, nothing else",
			resctltest.MakePod("be").Obj(), resctl.Limits{resctl.Unlimited, 2, resctl.Unlimited}},
		{"tier resources do not count: a batch-cpu pod is BestEffort to kubelet",
			resctltest.MakePod("t").Tier(extension.ResourceBatchCPU, "500").Tier(extension.ResourceBatchMemory, "1Gi").Obj(), resctl.Limits{resctl.Unlimited, 2, resctl.Unlimited}},
		// 500m × 1024 ÷ 1000 = 512 shares; no cpu limit, no quota; memory limit 2Gi.
		{"Burstable with a request and a memory limit",
			resctltest.MakePod("b").CPU("500m", "").Memory("1Gi", "2Gi").Obj(), resctl.Limits{resctl.Unlimited, 512, 2 << 30}},
		// 300m request, 600m limit: 307 shares (307.2 rounded down), quota 600m.
		{"Burstable with a CPU limit on its only container",
			resctltest.MakePod("bl").CPU("300m", "600m").Obj(), resctl.Limits{600, 307, resctl.Unlimited}},
		// The second container has no CPU limit: kubelet sets no pod quota.
		{"Burstable with one container unlimited",
			resctltest.MakePod("b2").CPU("300m", "600m").Container("side", "100m", "").Obj(), resctl.Limits{resctl.Unlimited, 409, resctl.Unlimited}},
		// 2 CPU → 2048 shares, quota 2000m, memory 4Gi.
		{"Guaranteed",
			resctltest.MakePod("g").CPU("2", "2").Memory("4Gi", "4Gi").Obj(), resctl.Limits{2000, 2048, 4 << 30}},
		// Overhead adds to requests and limits: 1100m → 1126 shares (1126.4), quota 1100m, 1Gi + 64Mi.
		{"Guaranteed with overhead",
			withOverhead, resctl.Limits{1100, 1126, 1<<30 + 64<<20}},
		// The init container needs 1 CPU alone: the pod's request is max(200m, 1) = 1 → 1024 shares.
		{"init container larger than the containers",
			withInit, resctl.Limits{resctl.Unlimited, 1024, resctl.Unlimited}},
		// 5m of CPU is below the kernel's 1 ms per 100 ms: kubelet writes 10m.
		{"tiny limit raised to the kernel minimum",
			resctltest.MakePod("tiny").CPU("5m", "5m").Memory("64Mi", "64Mi").Obj(), resctl.Limits{10, 5, 64 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, resctl.KubeletLimits(tt.pod)); diff != "" {
				t.Errorf("resctl.KubeletLimits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeletContainerQuota(t *testing.T) {
	pod := resctltest.MakePod("p").CPU("100m", "250m").Container("side", "", "").Obj()
	tests := []struct {
		container string
		want      int64
		ok        bool
	}{
		{"main", 250, true},
		{"side", resctl.Unlimited, true},
		{"missing", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.container, func(t *testing.T) {
			got, ok := resctl.KubeletContainerQuotaMilli(pod, tt.container)
			if got != tt.want || ok != tt.ok {
				t.Errorf("resctl.KubeletContainerQuotaMilli(%s) = %d, %v; want %d, %v", tt.container, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestMilliCPUToShares(t *testing.T) {
	for _, tt := range []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {1, 2}, {2, 2}, {3, 3}, // 3 × 1024 ÷ 1000 = 3.07
		{400, 409}, // 409.6
		{1000, 1024},
		{500000, 262144}, // capped
	} {
		if got := resctl.MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("resctl.MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
}

func TestPodQOSClass(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"status wins", resctltest.MakePod("s").QOS(corev1.PodQOSGuaranteed).Obj(), corev1.PodQOSGuaranteed},
		{"nothing", resctltest.MakePod("n").Obj(), corev1.PodQOSBestEffort},
		{"tier only", resctltest.MakePod("t").Tier(extension.ResourceBatchCPU, "100").Obj(), corev1.PodQOSBestEffort},
		{"limits equal requests", resctltest.MakePod("g").CPU("1", "1").Memory("1Gi", "1Gi").Obj(), corev1.PodQOSGuaranteed},
		{"limits only (requests default to them)", resctltest.MakePod("l").CPU("", "1").Memory("", "1Gi").Obj(), corev1.PodQOSGuaranteed},
		{"cpu only", resctltest.MakePod("c").CPU("1", "1").Obj(), corev1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resctl.PodQOSClass(tt.pod); got != tt.want {
				t.Errorf("resctl.PodQOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	kubeletBE := resctl.Limits{resctl.Unlimited, 2, resctl.Unlimited}
	kubeletCapped := resctl.Limits{600, 307, 1 << 30}
	tests := []struct {
		name    string
		kubelet resctl.Limits
		intents []resctl.SourcedIntent
		want    resctl.Desired
	}{
		{"no intent: kubelet's values", kubeletCapped, nil, resctl.Desired{Limits: kubeletCapped}},
		{"tier limit on a BestEffort pod",
			kubeletBE,
			[]resctl.SourcedIntent{{"tier", resctl.Intent{CPUQuotaMilli: 500, CPUShares: 512, MemoryLimitBytes: 2 << 30}}},
			resctl.Desired{Limits: resctl.Limits{500, 512, 2 << 30}, HasQuota: true, HasShares: true, HasMemory: true, QuotaSources: []resctl.Source{"tier"}}},
		// The throttle (200m) is below the tier limit (500m): the throttle
		// holds, the tier limit does not undo it.
		{"throttle below the tier limit wins",
			kubeletBE,
			[]resctl.SourcedIntent{{"qos", resctl.Intent{CPUQuotaMilli: 200, BelowOwnLimits: true}}, {"tier", resctl.Intent{CPUQuotaMilli: 500}}},
			resctl.Desired{Limits: resctl.Limits{200, 2, resctl.Unlimited}, HasQuota: true, QuotaSources: []resctl.Source{"qos"}}},
		// A throttle never raises a pod above its tier limit.
		{"throttle above the tier limit does not raise it",
			kubeletBE,
			[]resctl.SourcedIntent{{"qos", resctl.Intent{CPUQuotaMilli: 800, BelowOwnLimits: true}}, {"tier", resctl.Intent{CPUQuotaMilli: 500}}},
			resctl.Desired{Limits: resctl.Limits{500, 2, resctl.Unlimited}, HasQuota: true, QuotaSources: []resctl.Source{"tier"}}},
		{"a cap above kubelet's quota leaves kubelet's",
			kubeletCapped,
			[]resctl.SourcedIntent{{"qos", resctl.Intent{CPUQuotaMilli: 900}}},
			resctl.Desired{Limits: kubeletCapped, HasQuota: true}},
		{"equal caps name both sources",
			kubeletBE,
			[]resctl.SourcedIntent{{"band", resctl.Intent{CPUQuotaMilli: 300}}, {"qos", resctl.Intent{CPUQuotaMilli: 300}}},
			resctl.Desired{Limits: resctl.Limits{300, 2, resctl.Unlimited}, HasQuota: true, QuotaSources: []resctl.Source{"band", "qos"}}},
		{"caps below the kernel minimum become 10m",
			kubeletBE,
			[]resctl.SourcedIntent{{"qos", resctl.Intent{CPUQuotaMilli: 3}}},
			resctl.Desired{Limits: resctl.Limits{10, 2, resctl.Unlimited}, HasQuota: true, QuotaSources: []resctl.Source{"qos"}}},
		{"smallest shares and memory win",
			kubeletCapped,
			[]resctl.SourcedIntent{{"a", resctl.Intent{CPUShares: 900, MemoryLimitBytes: 2 << 30}}, {"b", resctl.Intent{CPUShares: 400, MemoryLimitBytes: 512 << 20}}},
			resctl.Desired{Limits: resctl.Limits{600, 400, 512 << 20}, HasShares: true, HasMemory: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, resctl.Combine(tt.kubelet, tt.intents)); diff != "" {
				t.Errorf("resctl.Combine (-want +got):\n%s", diff)
			}
		})
	}
}
