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

package qos

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
)

func TestNewCandidate(t *testing.T) {
	type fields struct {
		Band                                      extension.Band
		Priority                                  int32
		QOSClass                                  corev1.PodQOSClass
		CPURequest, CPULimit, TierCPULimit, Quota int64
		MemoryRequest, MemoryLimit                int64
	}
	withInit := func(b *podBuilder, restart bool, cpu string) *podBuilder {
		ic := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}
		if restart {
			ic.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, ic)
		return b
	}
	tests := []struct {
		name  string
		pod   *podBuilder
		quota int64
		want  fields
	}{
		{
			name: "cpu and memory, requests below limits: Burstable",
			pod:  makePod("p").cpu("1500m", "2").memory("1Gi", "2Gi"),
			want: fields{Band: extension.BandBatch, Priority: 5500, QOSClass: corev1.PodQOSBurstable,
				CPURequest: 1500, CPULimit: 2000, Quota: NoQuota, MemoryRequest: gib, MemoryLimit: 2 * gib},
		},
		{
			name: "batch-cpu counts millicores as they are: 500 is half a core; tier pods are BestEffort",
			pod:  makePod("p").priority(0).batchCPU("500", "1000"),
			want: fields{Band: extension.BandBatch, QOSClass: corev1.PodQOSBestEffort,
				CPURequest: 500, CPULimit: 1000, TierCPULimit: 1000, Quota: NoQuota},
		},
		{
			name:  "limit only: request defaults to the limit; equal limits and requests for both: Guaranteed",
			pod:   makePod("p").cpu("", "2").memory("", "1Gi"),
			quota: 700,
			want: fields{Band: extension.BandBatch, Priority: 5500, QOSClass: corev1.PodQOSGuaranteed,
				CPURequest: 2000, CPULimit: 2000, Quota: 700, MemoryRequest: gib, MemoryLimit: gib},
		},
		{
			name: "a container without a limit leaves the pod without one",
			pod: func() *podBuilder {
				b := makePod("p").cpu("1", "2")
				b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: "side"})
				return b
			}(),
			want: fields{Band: extension.BandBatch, Priority: 5500, QOSClass: corev1.PodQOSBurstable,
				CPURequest: 1000, Quota: NoQuota},
		},
		{
			name: "a plain init container bigger than the app raises the request to its own",
			pod:  withInit(makePod("p").cpu("1", ""), false, "3"),
			want: fields{Band: extension.BandBatch, Priority: 5500, QOSClass: corev1.PodQOSBurstable,
				CPURequest: 3000, Quota: NoQuota},
		},
		{
			name: "a sidecar init container adds to the app",
			pod:  withInit(makePod("p").cpu("1", ""), true, "500m"),
			want: fields{Band: extension.BandBatch, Priority: 5500, QOSClass: corev1.PodQOSBurstable,
				CPURequest: 1500, Quota: NoQuota},
		},
		{
			name: "status.qosClass wins over the computed class; the band label wins over priority",
			pod:  makePod("p").band(extension.BandFree).qos(corev1.PodQOSGuaranteed),
			want: fields{Band: extension.BandFree, Priority: 5500, QOSClass: corev1.PodQOSGuaranteed, Quota: NoQuota},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.quota
			if q == 0 {
				q = NoQuota
			}
			c := NewCandidate(tt.pod.obj(), PodUsage{CPUMilli: 1, MemoryBytes: 2, CPUQuotaMilli: q})
			got := fields{c.Band, c.Priority, c.QOSClass, c.CPURequestMilli, c.CPULimitMilli, c.TierCPULimitMilli,
				c.CPUQuotaMilli, c.MemoryRequestBytes, c.MemoryLimitBytes}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("candidate (-want +got):\n%s", diff)
			}
			if c.CPUUsageMilli != 1 || c.MemoryUsageBytes != 2 || c.Name != "p" || c.UID != "p-uid" {
				t.Errorf("usage and identity not copied: %+v", c.PodRef)
			}
		})
	}
}

func TestEligible(t *testing.T) {
	tests := []struct {
		name string
		c    Candidate
		want bool
	}{
		{"batch pod", cand(makePod("p"), usage{}), true},
		{"free pod", cand(makePod("p").band(extension.BandFree), usage{}), true},
		{"prod pod", cand(makePod("p").priority(9500), usage{}), false},
		{"mid pod", cand(makePod("p").band(extension.BandMid), usage{}), false},
		{"DaemonSet batch pod", cand(makePod("p").owner("DaemonSet"), usage{}), false},
		{"mirror batch pod", cand(makePod("p").mirror(), usage{}), false},
		{"system-critical batch pod", cand(makePod("p").systemCritical(), usage{}), false},
		{"terminating batch pod", cand(makePod("p").terminating(), usage{}), false},
		{"fields edited to batch, pod is prod", func() Candidate {
			c := cand(makePod("p").priority(9500), usage{})
			c.Band = extension.BandBatch
			return c
		}(), false},
		{"no pod", Candidate{Band: extension.BandBatch}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eligible(&tt.c); got != tt.want {
				t.Errorf("eligible = %v, want %v", got, tt.want)
			}
		})
	}
}
