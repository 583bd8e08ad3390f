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

package preemption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
)

// t0 is the start of every test's timeline.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type podBuilder struct{ p *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}}
}

func (b *podBuilder) priority(p int32) *podBuilder { b.p.Spec.Priority = ptr.To(p); return b }
func (b *podBuilder) class(c string) *podBuilder   { b.p.Spec.PriorityClassName = c; return b }
func (b *podBuilder) node(n string) *podBuilder    { b.p.Spec.NodeName = n; return b }
func (b *podBuilder) label(k, v string) *podBuilder {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[k] = v
	return b
}

// cpu sets the request in millicores.
func (b *podBuilder) cpu(m int64) *podBuilder {
	b.p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}
	return b
}

// started sets status.startTime to t0 + minutes.
func (b *podBuilder) started(minutes int) *podBuilder {
	b.p.Status.StartTime = &metav1.Time{Time: t0.Add(time.Duration(minutes) * time.Minute)}
	return b
}

func (b *podBuilder) created(minutes int) *podBuilder {
	b.p.CreationTimestamp = metav1.Time{Time: t0.Add(time.Duration(minutes) * time.Minute)}
	return b
}

func (b *podBuilder) never() *podBuilder {
	b.p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	return b
}

func (b *podBuilder) ownedBy(kind string) *podBuilder {
	b.p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "owner", Controller: ptr.To(true)}}
	return b
}

func (b *podBuilder) mirror() *podBuilder {
	b.p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	return b
}

func (b *podBuilder) nodeSelector(k, v string) *podBuilder {
	b.p.Spec.NodeSelector = map[string]string{k: v}
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.p }

// makeNode has cpu millicores and room for 110 pods.
func makeNode(name string, cpuMilli int64) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:  *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
			corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI),
		}},
	}
}

func makeClass(name string, value int32, annotations map[string]string) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Value:      value,
	}
}

// nonPreemptible annotates a class NonPreemptible with a threshold ("" for
// none).
func nonPreemptible(threshold string) map[string]string {
	a := map[string]string{extension.AnnotationPreemptionPolicy: extension.PreemptionPolicyNonPreemptible}
	if threshold != "" {
		a[extension.AnnotationPreemptibleByPriority] = threshold
	}
	return a
}

// makePDB selects app=<app> in default and allows that many disruptions.
func makePDB(app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
