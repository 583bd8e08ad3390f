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

package tierlimits_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
)

func TestMain(m *testing.M) {
	resctltest.RunBurnerIfAsked()
	os.Exit(m.Run())
}

func TestTierOf(t *testing.T) {
	batch := extension.ResourceBatchCPU
	withInit := resctltest.MakePod("init").Tier(batch, "300").Obj()
	withInit.Spec.InitContainers = []corev1.Container{{Name: "setup", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{batch: resource.MustParse("800")}, Limits: corev1.ResourceList{batch: resource.MustParse("800")}}}}
	withOverhead := resctltest.MakePod("oh").Tier(batch, "500").Obj()
	withOverhead.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		want   tierlimits.PodTier
		wantOK bool
	}{
		{"no tier resources", resctltest.MakePod("prod").CPU("1", "2").Obj(), tierlimits.PodTier{}, false},
		{"Batch pod as the webhook makes it",
			resctltest.MakePod("b").Tier(batch, "500").Tier(extension.ResourceBatchMemory, "1Gi").Obj(),
			tierlimits.PodTier{CPU: true, Memory: true, BatchCPURequestMilli: 500, CPURequestMilli: 500, CPULimitMilli: 500, MemoryLimitBytes: 1 << 30}, true},
		{"Mid pod: no batch-cpu taken",
			resctltest.MakePod("m").Tier(extension.ResourceMidCPU, "400").Obj(),
			tierlimits.PodTier{CPU: true, CPURequestMilli: 400, CPULimitMilli: 400}, true},
		// 500 batch-cpu + a sidecar with a 200m cpu limit: request 500 +
		// 100 = 600m, limit 500 + 200 = 700m.
		{"tier and native CPU add up",
			resctltest.MakePod("mix").Tier(batch, "500").Container("side", "100m", "200m").Obj(),
			tierlimits.PodTier{CPU: true, BatchCPURequestMilli: 500, CPURequestMilli: 600, CPULimitMilli: 700}, true},
		{"a container without any CPU limit: no quota",
			resctltest.MakePod("open").Tier(batch, "500").Container("side", "100m", "").Obj(),
			tierlimits.PodTier{CPU: true, BatchCPURequestMilli: 500, CPURequestMilli: 600}, true},
		{"memory only",
			resctltest.MakePod("mem").Tier(extension.ResourceBatchMemory, "2Gi").Obj(),
			tierlimits.PodTier{Memory: true, MemoryLimitBytes: 2 << 30}, true},
		// The init container runs alone with 800: request and limit are
		// max(300, 800) = 800, as the scheduler counts them.
		{"init container larger than the containers",
			withInit, tierlimits.PodTier{CPU: true, BatchCPURequestMilli: 800, CPURequestMilli: 800, CPULimitMilli: 800}, true},
		// 500 + 50m overhead on both request and limit.
		{"overhead",
			withOverhead, tierlimits.PodTier{CPU: true, BatchCPURequestMilli: 500, CPURequestMilli: 550, CPULimitMilli: 550}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tierlimits.TierOf(tt.pod)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TierOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIntent(t *testing.T) {
	tests := []struct {
		name string
		tier tierlimits.PodTier
		want resctl.Intent
	}{
		// 500m → 500 × 1024 ÷ 1000 = 512 shares; quota 500m; 1Gi.
		{"cpu and memory", tierlimits.PodTier{CPU: true, Memory: true, CPURequestMilli: 500, CPULimitMilli: 500, MemoryLimitBytes: 1 << 30},
			resctl.Intent{CPUQuotaMilli: 500, CPUShares: 512, MemoryLimitBytes: 1 << 30}},
		{"no CPU limit: shares only", tierlimits.PodTier{CPU: true, CPURequestMilli: 600},
			resctl.Intent{CPUShares: 614}},
		{"memory only: CPU left to kubelet", tierlimits.PodTier{Memory: true, MemoryLimitBytes: 2 << 30},
			resctl.Intent{MemoryLimitBytes: 2 << 30}},
		{"tiny request: at least 2 shares", tierlimits.PodTier{CPU: true, CPURequestMilli: 1, CPULimitMilli: 1},
			resctl.Intent{CPUQuotaMilli: 1, CPUShares: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.tier.Intent()); diff != "" {
				t.Errorf("Intent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	var c tierlimits.Config
	c.SetDefaults()
	if !*c.BandCap || *c.BandCapFloorPercent != 10 {
		t.Errorf("defaults = %v, %d; want true, 10", *c.BandCap, *c.BandCapFloorPercent)
	}
	off := tierlimits.Config{BandCap: ptr.To(false)}
	off.SetDefaults()
	if *off.BandCap {
		t.Error("SetDefaults turned an explicit false into true")
	}
	bad := tierlimits.Config{BandCapFloorPercent: ptr.To[int32](0)}
	errs := bad.Validate(field.NewPath("tierLimits"))
	if len(errs) != 2 || !strings.Contains(errs.ToAggregate().Error(), "tierLimits.bandCapFloorPercent: Invalid value: 0") || !strings.Contains(errs.ToAggregate().Error(), "tierLimits.bandCap: Required") {
		t.Errorf("Validate = %v, want both fields named", errs)
	}
}
