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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// t0 is the tests' reference time; pods start relative to it.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// podBuilder makes pods the way st.MakePod does for the scheduler; a pure
// core cannot import k8s.io/kubernetes, so it is ours.
type podBuilder struct{ pod *corev1.Pod }

// makePod returns a running Batch pod (priority 5500) started at t0 with
// one container and no resources.
func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{
			Priority:   ptr.To[int32](5500),
			Containers: []corev1.Container{{Name: "main"}},
		},
		Status: corev1.PodStatus{StartTime: &metav1.Time{Time: t0}},
	}}
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

func (b *podBuilder) namespace(ns string) *podBuilder { b.pod.Namespace = ns; return b }

func (b *podBuilder) priority(p int32) *podBuilder { b.pod.Spec.Priority = &p; return b }

func (b *podBuilder) label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

func (b *podBuilder) band(band extension.Band) *podBuilder {
	return b.label(extension.LabelBand, string(band))
}

func (b *podBuilder) qos(q corev1.PodQOSClass) *podBuilder { b.pod.Status.QOSClass = q; return b }

func (b *podBuilder) started(d time.Duration) *podBuilder {
	b.pod.Status.StartTime = &metav1.Time{Time: t0.Add(d)}
	return b
}

func (b *podBuilder) notStarted() *podBuilder { b.pod.Status.StartTime = nil; return b }

func (b *podBuilder) resources(name corev1.ResourceName, req, lim string) *podBuilder {
	r := &b.pod.Spec.Containers[0].Resources
	if req != "" {
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = resource.MustParse(req)
	}
	if lim != "" {
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = resource.MustParse(lim)
	}
	return b
}

func (b *podBuilder) cpu(req, lim string) *podBuilder {
	return b.resources(corev1.ResourceCPU, req, lim)
}

func (b *podBuilder) batchCPU(req, lim string) *podBuilder {
	return b.resources(extension.ResourceBatchCPU, req, lim)
}

func (b *podBuilder) memory(req, lim string) *podBuilder {
	return b.resources(corev1.ResourceMemory, req, lim)
}

func (b *podBuilder) owner(kind string) *podBuilder {
	b.pod.OwnerReferences = append(b.pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "owner-uid", Controller: ptr.To(true),
	})
	return b
}

func (b *podBuilder) mirror() *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[corev1.MirrorPodAnnotationKey] = "x"
	return b
}

func (b *podBuilder) systemCritical() *podBuilder {
	b.pod.Spec.PriorityClassName = "system-node-critical"
	return b
}

func (b *podBuilder) terminating() *podBuilder {
	b.pod.DeletionTimestamp = &metav1.Time{Time: t0}
	return b
}

// usage is a candidate's measured usage in the tests' shorthand.
type usage struct {
	cpu   int64 // millicores
	mem   int64 // bytes
	quota int64 // millicores; 0 in a table means NoQuota
}

func cand(b *podBuilder, u usage) Candidate {
	q := u.quota
	if q == 0 {
		q = NoQuota
	}
	return NewCandidate(b.obj(), PodUsage{CPUMilli: u.cpu, MemoryBytes: u.mem, CPUQuotaMilli: q})
}

// nodeQOS returns a NodeQOS named name whose spec edit sets.
func nodeQOS(name string, edit func(s *v1alpha1.NodeQOSSpec)) *v1alpha1.NodeQOS {
	nq := &v1alpha1.NodeQOS{ObjectMeta: metav1.ObjectMeta{Name: name}}
	edit(&nq.Spec)
	return nq
}

// node10 is the tests' node: 10 cores and 10 GiB, so a percent of CPU is
// 100m and a percent of memory is ~107 MB.
var node10 = Capacity{CPUMilli: 10_000, MemoryBytes: 10 << 30}

const gib = int64(1) << 30

// mustPlanner builds waterlines from nqs on node10 and a planner with the
// default registry, failing the test on any error.
func mustPlanner(t testing.TB, nqs ...*v1alpha1.NodeQOS) *Planner {
	t.Helper()
	waterlines, errs := BuildWaterlines(nqs, node10)
	if len(errs) > 0 {
		t.Fatalf("BuildWaterlines: %v", errs)
	}
	p, err := NewPlanner(DefaultRegistry(), waterlines)
	if err != nil {
		t.Fatalf("NewPlanner: %v", err)
	}
	return p
}

// evicted lists the pods of the plan's evictions, in order.
func evicted(p Plan) []string {
	var out []string
	for _, e := range p.Evictions {
		out = append(out, e.Pod.Name)
	}
	return out
}

// changedQuotas maps each candidate whose quota the plan changes to its desired
// quota.
func changedQuotas(p Plan) map[string]int64 {
	out := map[string]int64{}
	for _, q := range p.Quotas {
		if q.Changed() {
			out[q.Pod.Name] = q.DesiredMilli
		}
	}
	return out
}
