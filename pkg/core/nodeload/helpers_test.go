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

package nodeload

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

const (
	Gi = 1024 * 1024 * 1024
	Mi = 1024 * 1024
)

// t0 is the time every test measures from.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// defaultSpec is the args' defaults (cpu 85 %/memory 70 % factors,
// thresholds cpu 65 %/memory 95 %, weights 1/1, expiry 180 s).
func defaultSpec() Spec {
	return Spec{
		NodeMetricExpiration:    180 * time.Second,
		ResourceWeights:         map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1},
		UsageThresholds:         map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95},
		EstimatedScalingFactors: map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70},
	}
}

func mustConfig(t testing.TB, s Spec) *Config {
	t.Helper()
	c, err := NewConfig(s)
	if err != nil {
		t.Fatalf("NewConfig: %v", err)
	}
	return c
}

// rl builds a ResourceList from name/quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// vec builds a Vector of cpu (millicores) and memory (bytes).
func vec(milliCPU, memory int64) Vector { return Vector{CPU: milliCPU, Memory: memory} }

// podBuilder builds pods the way the API server would store them.
type podBuilder struct{ pod *corev1.Pod }

func makePod(ns, name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c0"}}},
	}}
}

// req sets the requests of the first container.
func (b *podBuilder) req(pairs ...string) *podBuilder {
	b.pod.Spec.Containers[0].Resources.Requests = rl(pairs...)
	return b
}

// lim sets the limits of the first container.
func (b *podBuilder) lim(pairs ...string) *podBuilder {
	b.pod.Spec.Containers[0].Resources.Limits = rl(pairs...)
	return b
}

// container adds a container with requests and limits.
func (b *podBuilder) container(req, lim corev1.ResourceList) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{
		Name: "c" + string(rune('0'+len(b.pod.Spec.Containers))), Resources: corev1.ResourceRequirements{Requests: req, Limits: lim},
	})
	return b
}

func (b *podBuilder) initContainer(sidecar bool, req, lim corev1.ResourceList) *podBuilder {
	c := corev1.Container{Name: "i" + string(rune('0'+len(b.pod.Spec.InitContainers))), Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	return b
}

func (b *podBuilder) band(band extension.Band) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[extension.LabelBand] = string(band)
	return b
}

func (b *podBuilder) annotate(k, v string) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

func (b *podBuilder) ownedBy(kind string) *podBuilder {
	yes := true
	b.pod.OwnerReferences = append(b.pod.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: "owner", Controller: &yes})
	return b
}

func (b *podBuilder) initialized(at time.Time) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at),
	})
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

// metricBuilder builds NodeMetrics.
type metricBuilder struct{ nm *v1alpha1.NodeMetric }

func makeMetric(node string, updated time.Time) *metricBuilder {
	ut := metav1.NewTime(updated)
	return &metricBuilder{nm: &v1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status: v1alpha1.NodeMetricStatus{
			UpdateTime: &ut,
			NodeMetric: &v1alpha1.NodeMetricInfo{},
		},
	}}
}

func (b *metricBuilder) usage(pairs ...string) *metricBuilder {
	b.nm.Status.NodeMetric.NodeUsage = rl(pairs...)
	return b
}

func (b *metricBuilder) system(pairs ...string) *metricBuilder {
	b.nm.Status.NodeMetric.SystemUsage = rl(pairs...)
	return b
}

func (b *metricBuilder) pod(ns, name string, band extension.Band, pairs ...string) *metricBuilder {
	b.nm.Status.PodsMetric = append(b.nm.Status.PodsMetric, v1alpha1.PodMetricInfo{Namespace: ns, Name: name, Band: string(band), Usage: rl(pairs...)})
	return b
}

func (b *metricBuilder) aggregate(d time.Duration, typ v1alpha1.AggregationType, pairs ...string) *metricBuilder {
	info := b.nm.Status.NodeMetric
	for i := range info.AggregatedNodeUsages {
		if info.AggregatedNodeUsages[i].Duration.Duration == d {
			info.AggregatedNodeUsages[i].Usage[typ] = rl(pairs...)
			return b
		}
	}
	info.AggregatedNodeUsages = append(info.AggregatedNodeUsages, v1alpha1.AggregatedUsage{
		Duration: metav1.Duration{Duration: d},
		Usage:    map[v1alpha1.AggregationType]corev1.ResourceList{typ: rl(pairs...)},
	})
	return b
}

func (b *metricBuilder) prodPeak(pairs ...string) *metricBuilder {
	b.nm.Status.ProdPeak = rl(pairs...)
	return b
}

func (b *metricBuilder) forbid(status metav1.ConditionStatus) *metricBuilder {
	b.nm.Status.Conditions = append(b.nm.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionForbidScheduling, Status: status})
	return b
}

func (b *metricBuilder) reportInterval(seconds int64) *metricBuilder {
	b.nm.Spec.CollectPolicy = &v1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: &seconds}
	return b
}

func (b *metricBuilder) obj() *v1alpha1.NodeMetric { return b.nm }

func makeNode(name string, annotations map[string]string, alloc ...string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Status:     corev1.NodeStatus{Allocatable: rl(alloc...)},
	}
}
