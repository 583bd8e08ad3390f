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

package colocation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestMatch(t *testing.T) {
	profiles := []v1alpha1.ColocationProfile{
		{Name: "spark", Band: "batch",
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}},
			Selector:          &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"app": "spark"}}},
		{Name: "data-ns", Band: "mid",
			NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "data"}}},
		{Name: "free-label", Band: "free",
			Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "free"}}},
	}
	tests := []struct {
		name      string
		ns, pod   map[string]string
		want      string
		wantError bool
	}{
		{name: "first matching profile wins", ns: map[string]string{"team": "data"}, pod: map[string]string{"app": "spark"}, want: "spark"},
		{name: "namespace-only profile", ns: map[string]string{"team": "data"}, pod: map[string]string{"app": "web"}, want: "data-ns"},
		{name: "pod-only profile in any namespace", ns: map[string]string{"team": "web"}, pod: map[string]string{"tier": "free"}, want: "free-label"},
		{name: "nothing matches", ns: map[string]string{"team": "web"}, pod: map[string]string{"app": "web"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Match(profiles, tt.ns, tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Errorf("Match() = %q, want %q", name, tt.want)
			}
		})
	}
	bad := []v1alpha1.ColocationProfile{{Name: "broken", Band: "batch",
		Selector: &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "a", Operator: "Maybe"}}}}}
	if _, err := Match(bad, nil, nil); err == nil || !strings.Contains(err.Error(), `profile "broken"`) {
		t.Errorf("Match(invalid selector) error = %v, want one naming the profile", err)
	}
}

func batchPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-1", Namespace: "data", Labels: map[string]string{"app": "spark"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
				Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("cpu", "250m", "memory", "64Mi")}}},
			Containers: []corev1.Container{
				// request 500m, limit 1.5 CPU -> 1500 millicores; memory request only -> held to it.
				{Name: "exec", Resources: corev1.ResourceRequirements{
					Requests: rl("cpu", "500m", "memory", "1Gi", "ephemeral-storage", "1Gi"), Limits: rl("cpu", "1500m")}},
				// No resources at all: nothing to translate.
				{Name: "sidecar"},
			},
		},
	}
}

func TestApplyBatchTranslation(t *testing.T) {
	pod := batchPod()
	profile := &v1alpha1.ColocationProfile{Name: "spark", Band: "batch", PriorityClassName: "waterline-batch",
		SchedulerName: "waterline-scheduler", Labels: map[string]string{"colocated": "yes"}}
	never := corev1.PreemptNever
	class := &PriorityClass{Name: "waterline-batch", Value: 5500, PreemptionPolicy: &never}
	if err := Apply(pod, profile, class); err != nil {
		t.Fatalf("Apply: %v", err)
	}

	wantExec := corev1.ResourceRequirements{
		Requests: rl(string(extension.ResourceBatchCPU), "1500", string(extension.ResourceBatchMemory), "1Gi", "ephemeral-storage", "1Gi"),
		Limits:   rl(string(extension.ResourceBatchCPU), "1500", string(extension.ResourceBatchMemory), "1Gi"),
	}
	if diff := cmp.Diff(wantExec, pod.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("exec resources (-want +got):\n%s", diff)
	}
	wantInit := corev1.ResourceRequirements{
		Requests: rl(string(extension.ResourceBatchCPU), "250", string(extension.ResourceBatchMemory), "64Mi"),
		Limits:   rl(string(extension.ResourceBatchCPU), "250", string(extension.ResourceBatchMemory), "64Mi"),
	}
	if diff := cmp.Diff(wantInit, pod.Spec.InitContainers[0].Resources); diff != "" {
		t.Errorf("init resources (-want +got):\n%s", diff)
	}
	if len(pod.Spec.Containers[1].Resources.Requests) != 0 || len(pod.Spec.Containers[1].Resources.Limits) != 0 {
		t.Errorf("sidecar without resources got %v", pod.Spec.Containers[1].Resources)
	}

	var orig OriginalResources
	if err := json.Unmarshal([]byte(pod.Annotations[extension.AnnotationOriginalResources]), &orig); err != nil {
		t.Fatalf("original-resources annotation: %v", err)
	}
	wantOrig := OriginalResources{
		Containers: map[string]corev1.ResourceRequirements{"exec": {Requests: rl("cpu", "500m", "memory", "1Gi"), Limits: rl("cpu", "1500m")}},
		InitContainers: map[string]corev1.ResourceRequirements{"init": {
			Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("cpu", "250m", "memory", "64Mi")}},
	}
	if diff := cmp.Diff(wantOrig, orig); diff != "" {
		t.Errorf("original resources (-want +got):\n%s", diff)
	}

	wantLabels := map[string]string{"app": "spark", "colocated": "yes",
		extension.LabelBand: "batch", extension.LabelColocationProfile: "spark"}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if pod.Spec.PriorityClassName != "waterline-batch" || *pod.Spec.Priority != 5500 || *pod.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("priority = %q %d %v, want waterline-batch 5500 Never", pod.Spec.PriorityClassName, *pod.Spec.Priority, *pod.Spec.PreemptionPolicy)
	}
	if pod.Spec.SchedulerName != "waterline-scheduler" {
		t.Errorf("schedulerName = %q", pod.Spec.SchedulerName)
	}
	if got := extension.BandOf(pod); got != extension.BandBatch {
		t.Errorf("BandOf(translated pod) = %s, want batch", got)
	}

	// Idempotent: a second application (webhook reinvocation) changes nothing.
	again := pod.DeepCopy()
	if err := Apply(again, profile, class); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if diff := cmp.Diff(pod, again); diff != "" {
		t.Errorf("second Apply changed the pod (-first +second):\n%s", diff)
	}
}

func TestApplyMidAndProd(t *testing.T) {
	mid := batchPod()
	if err := Apply(mid, &v1alpha1.ColocationProfile{Name: "mid", Band: "mid"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := mid.Spec.Containers[0].Resources.Limits[extension.ResourceMidCPU]; got.Value() != 1500 {
		t.Errorf("mid-cpu limit = %s, want 1500", got.String())
	}
	if mid.Spec.PriorityClassName != "" || mid.Spec.Priority != nil {
		t.Errorf("a profile without a class set priority %q %v", mid.Spec.PriorityClassName, mid.Spec.Priority)
	}

	// Prod and Free have no tier resources: only labels change.
	for _, band := range []string{"prod", "free"} {
		pod := batchPod()
		before := pod.DeepCopy()
		if err := Apply(pod, &v1alpha1.ColocationProfile{Name: band, Band: band}, nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before.Spec, pod.Spec); diff != "" {
			t.Errorf("%s profile changed the spec:\n%s", band, diff)
		}
		if pod.Labels[extension.LabelBand] != band {
			t.Errorf("%s profile: band label %q", band, pod.Labels[extension.LabelBand])
		}
	}
}

func TestApplyRefusals(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*corev1.Pod)
		profile v1alpha1.ColocationProfile
		class   *PriorityClass
		want    string
	}{
		{
			name:    "cpu below a millicore",
			mutate:  func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("1500500u") },
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    `container "exec": cpu 1500500u is not a whole number of millicores`,
		},
		{
			// 10P cores is more millicores than an int64 counts: the
			// check for whole millicores would see an overflowed zero.
			name:    "cpu past what a tier resource holds",
			mutate:  func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("10P") },
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    `container "exec": cpu 10P is more than a tier resource holds (9223372036854775807m)`,
		},
		{
			// Refused from its float, without computing 10^8888888.
			name:    "cpu with a vast exponent",
			mutate:  func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("100e8888886") },
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    `container "exec": cpu 100e8888886 is more than a tier resource holds (9223372036854775807m)`,
		},
		{
			name:    "memory past what a tier resource holds",
			mutate:  func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["memory"] = resource.MustParse("100E") },
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    `container "exec": memory 100E is more than a tier resource holds (9223372036854775807)`,
		},
		{
			// Kubernetes admits a fractional memory with a warning, but
			// refuses it in an extended resource ("must be an integer").
			name:    "memory not a whole number of bytes",
			mutate:  func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits["memory"] = resource.MustParse("0.3Gi") },
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    `container "exec": memory 322122547200m is not a whole number of bytes`,
		},
		{
			name: "already in another tier",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[1].Resources.Requests = rl(string(extension.ResourceMidCPU), "100")
				p.Spec.Containers[1].Resources.Limits = rl(string(extension.ResourceMidCPU), "100")
			},
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    "requests mid tier resources but the profile puts it in band batch",
		},
		{
			name: "cpu and batch-cpu at once",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[extension.ResourceBatchCPU] = resource.MustParse("100")
			},
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    `container "exec": asks for both cpu and waterline.dev/batch-cpu`,
		},
		{
			// The scheduler and kubelet would count the pod-level cpu and
			// memory as the pod's, while the band says it runs on Batch.
			name: "pod-level cpu and memory",
			mutate: func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Gi")}
			},
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch"},
			want:    "spec.resources sets pod-level cpu",
		},
		{
			name:    "pod-level memory limit",
			mutate:  func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("memory", "1Gi")} },
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "mid"},
			want:    "spec.resources sets pod-level memory",
		},
		{
			name:    "missing priority class",
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "batch", PriorityClassName: "nope"},
			want:    `PriorityClass "nope" does not exist`,
		},
		{
			name:    "bad band",
			profile: v1alpha1.ColocationProfile{Name: "b", Band: "gold"},
			want:    `unknown band "gold"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := batchPod()
			if tt.mutate != nil {
				tt.mutate(pod)
			}
			err := Apply(pod, &tt.profile, tt.class)
			var te *TranslationError
			if !errors.As(err, &te) {
				t.Fatalf("Apply() error = %v, want a TranslationError", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `profile "b"`) {
				t.Errorf("Apply() error = %q, want it to name the profile and contain %q", err, tt.want)
			}
		})
	}
}

// TestApplyKeepsTheCause: a caller can errors.As the error a translation
// failed on through the TranslationError.
func TestApplyKeepsTheCause(t *testing.T) {
	pod := batchPod()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[extension.AnnotationOriginalResources] = "{not json"
	err := Apply(pod, &v1alpha1.ColocationProfile{Name: "b", Band: "batch"}, nil)
	var te *TranslationError
	if !errors.As(err, &te) {
		t.Fatalf("Apply() error = %v, want a TranslationError", err)
	}
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("Apply() error = %v: errors.As cannot reach the *json.SyntaxError", err)
	}
	if !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("Apply() error = %q, want it to say the annotation is not valid JSON", err)
	}
}
