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
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	"github.com/waterline-dev/waterline/pkg/agent/tierlimits"
)

// BenchmarkEnforcerCycle measures one Enforcer cycle over 200 pods -- 120
// Batch pods (batch-cpu 500, batch-memory 1Gi), 40 Mid pods (mid-cpu 300),
// 40 Prod pods -- on a node whose Batch allocatable (30000m) is below the
// Batch pods' 60000m of limits, so the band cap binds on every Batch pod.
// Baseline, same run: TierOf of the 200 pods alone, the pod walk any
// enforcer does.
func BenchmarkEnforcerCycle(b *testing.B) {
	var pods []*corev1.Pod
	for i := range 200 {
		name := fmt.Sprintf("pod-%03d", i)
		var p *corev1.Pod
		switch {
		case i < 120:
			p = resctltest.MakePod(name).Band(extension.BandBatch).Tier(extension.ResourceBatchCPU, "500").Tier(extension.ResourceBatchMemory, "1Gi").Obj()
		case i < 160:
			p = resctltest.MakePod(name).Band(extension.BandMid).Tier(extension.ResourceMidCPU, "300").Obj()
		default:
			p = resctltest.MakePod(name).Band(extension.BandProd).CPU("1", "2").Obj()
		}
		pods = append(pods, p)
	}
	snap := &agent.Snapshot{Node: nodeWithBatch("30000"), Pods: pods}
	layout, err := cgroups.NewLayout(b.TempDir(), cgroups.V1, cgroups.DriverCgroupfs, "/")
	if err != nil {
		b.Fatal(err)
	}
	rc, err := resctl.New(layout, nil)
	if err != nil {
		b.Fatal(err)
	}
	e, err := tierlimits.New(tierlimits.Config{}, rc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := klog.NewContext(context.Background(), klog.Background())
	b.Run("enforcer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Cycle(ctx, snap); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
		b.ReportMetric(float64(len(rc.Intents(tierlimits.SourceBatchBand))), "capped-pods")
	})
	b.Run("tierof-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pods {
				_, _ = tierlimits.TierOf(p)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200, "ns/pod")
	})
}
