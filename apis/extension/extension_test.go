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

package extension

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type podOpt func(*corev1.Pod)

func makePod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func priority(v int32) podOpt       { return func(p *corev1.Pod) { p.Spec.Priority = ptr.To(v) } }
func label(k, v string) podOpt      { return func(p *corev1.Pod) { p.Labels[k] = v } }
func annotation(k, v string) podOpt { return func(p *corev1.Pod) { p.Annotations[k] = v } }
func className(name string) podOpt  { return func(p *corev1.Pod) { p.Spec.PriorityClassName = name } }
func owner(kind string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "o", Controller: ptr.To(true)}}
	}
}
func tier(name corev1.ResourceName) podOpt {
	return func(p *corev1.Pod) {
		q := resource.MustParse("100")
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{name: q}
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{name: q}
	}
}

func TestBandOf(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		want    Band
		wantErr string
	}{
		{"no priority, nothing: prod (safe default)", makePod(), BandProd, ""},
		{"priority 0: prod", makePod(priority(0)), BandProd, ""},
		{"prod range", makePod(priority(9500)), BandProd, ""},
		{"mid range low edge", makePod(priority(7000)), BandMid, ""},
		{"batch range high edge", makePod(priority(5999)), BandBatch, ""},
		{"free range", makePod(priority(3000)), BandFree, ""},
		{"between ranges: prod", makePod(priority(6500)), BandProd, ""},
		{"label wins over priority", makePod(priority(9500), label(LabelBand, "batch")), BandBatch, ""},
		{"batch tier resources without priority", makePod(tier(ResourceBatchCPU)), BandBatch, ""},
		{"mid tier memory without priority", makePod(tier(ResourceMidMemory)), BandMid, ""},
		{"prod priority wins over batch tier resources", makePod(priority(9500), tier(ResourceBatchCPU)), BandProd, ""},
		{"malformed label is ignored with an error", makePod(priority(5500), label(LabelBand, "gold")), BandBatch, `ignoring label waterline.dev/band of pod ns/p: unknown band "gold"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BandOfExplained(tt.pod)
			if got != tt.want {
				t.Errorf("band = %s, want %s", got, tt.want)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
			if BandOf(tt.pod) != got {
				t.Errorf("BandOf and BandOfExplained disagree")
			}
		})
	}
}

func TestQoSProtection(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name string
		pod  *corev1.Pod
		want ProtectionReason
	}{
		{"batch pod is a candidate", makePod(priority(5500)), NotProtected},
		{"free pod is a candidate", makePod(priority(3500)), NotProtected},
		{"no priority: prod, protected", makePod(), ProtectedBand},
		{"mid pod", makePod(priority(7500)), ProtectedBand},
		{"prod pod labelled batch stays protected by its priority", makePod(priority(9500), label(LabelBand, "batch")), ProtectedPriority},
		{"prod priority asking batch-cpu", makePod(priority(9500), tier(ResourceBatchCPU)), ProtectedBand},
		{"batch-cpu pod without priority is a candidate", makePod(tier(ResourceBatchCPU)), NotProtected},
		{"batch DaemonSet pod", makePod(priority(5500), owner("DaemonSet")), ProtectedDaemonSet},
		{"batch pod listing a DaemonSet owner that is not its controller", makePod(priority(5500), func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", Controller: ptr.To(true)}, {Kind: "DaemonSet", Name: "d"}}
		}), ProtectedDaemonSet},
		{"batch pod of a Job is a candidate", makePod(priority(5500), owner("Job")), NotProtected},
		{"mirror pod", makePod(priority(5500), annotation(corev1.MirrorPodAnnotationKey, "x")), ProtectedStaticOrMirror},
		{"static pod by config source", makePod(priority(5500), annotation("kubernetes.io/config.source", "file")), ProtectedStaticOrMirror},
		{"pod owned by its node", makePod(priority(5500), owner("Node")), ProtectedStaticOrMirror},
		{"system-critical priority", makePod(priority(2000001000), label(LabelBand, "free")), ProtectedSystemCritical},
		{"system-critical class name", makePod(priority(5500), className("system-node-critical")), ProtectedSystemCritical},
		{"terminating", makePod(priority(5500), func(p *corev1.Pod) { p.DeletionTimestamp = &now }), ProtectedTerminating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QoSProtection(tt.pod); got != tt.want {
				t.Errorf("QoSProtection = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestKubeSystemProtected: a kube-system pod is never a node QoS
// candidate, even at Batch priority or labelled into the batch band.
func TestKubeSystemProtected(t *testing.T) {
	inNS := func(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want ProtectionReason
	}{
		{"kube-system at Batch priority", makePod(inNS("kube-system"), priority(5500)), ProtectedNamespace},
		{"kube-system labelled batch", makePod(inNS("kube-system"), label(LabelBand, "batch")), ProtectedNamespace},
		{"kube-system labelled free at Free priority", makePod(inNS("kube-system"), priority(3000), label(LabelBand, "free")), ProtectedNamespace},
		{"the same pod elsewhere is a candidate", makePod(inNS("default"), priority(5500)), NotProtected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := QoSProtection(tc.pod); got != tc.want {
				t.Errorf("QoSProtection = %q, want %q", got, tc.want)
			}
		})
	}
	if !IsProtectedNamespace("waterline-system", "waterline-system") || IsProtectedNamespace("default", "waterline-system") {
		t.Error("IsProtectedNamespace ignores its extra namespaces")
	}
}

func TestTierResources(t *testing.T) {
	for band, want := range map[Band][2]corev1.ResourceName{
		BandMid:   {ResourceMidCPU, ResourceMidMemory},
		BandBatch: {ResourceBatchCPU, ResourceBatchMemory},
	} {
		cpu, mem, ok := band.TierResources()
		if !ok || cpu != want[0] || mem != want[1] {
			t.Errorf("%s.TierResources() = %s, %s, %v", band, cpu, mem, ok)
		}
	}
	for _, band := range []Band{BandProd, BandFree} {
		if _, _, ok := band.TierResources(); ok {
			t.Errorf("%s has tier resources", band)
		}
	}
}

func TestRequestsTierResources(t *testing.T) {
	one := resource.MustParse("1")
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"cpu and memory only", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: one}}}}}, false},
		{"a request", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{ResourceBatchCPU: one}}}}}, true},
		{"a limit alone", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{ResourceMidMemory: one}}}}}, true},
		{"an init container's", corev1.PodSpec{Containers: []corev1.Container{{}}, InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{ResourceMidCPU: one}}}}}, true},
		{"another waterline.dev name", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{Domain + "/gpu": one}}}}}, false},
	} {
		if got := RequestsTierResources(&corev1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: RequestsTierResources = %v, want %v", tc.name, got, tc.want)
		}
	}
}
