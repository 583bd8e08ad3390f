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

package resctltest

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
)

// PodBuilder makes pods the way st.MakePod does for the scheduler (which
// the agent must not import): MakePod(name).Priority(5500).CPU("300m", "").Obj().
type PodBuilder struct{ pod *corev1.Pod }

// MakePod returns a running pod in namespace "default" with a UID
// derived from its name (UIDOf), one container "main" and no resources or
// priority.
func MakePod(name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: UIDOf(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

// UIDOf derives a stable, UUID-shaped pod UID from a name.
func UIDOf(name string) types.UID {
	h := sha256.Sum256([]byte(name))
	x := hex.EncodeToString(h[:16])
	return types.UID(x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32])
}

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.pod }

// Namespace sets the namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// Node binds the pod to a node.
func (b *PodBuilder) Node(name string) *PodBuilder { b.pod.Spec.NodeName = name; return b }

// Priority sets spec.priority.
func (b *PodBuilder) Priority(p int32) *PodBuilder { b.pod.Spec.Priority = ptr.To(p); return b }

// Band puts the pod in a band by priority: the middle of the band's default
// range (prod 9500, mid 7500, batch 5500, free 3500).
func (b *PodBuilder) Band(band extension.Band) *PodBuilder {
	for _, r := range extension.DefaultBandRanges {
		if r.Band == band {
			return b.Priority((r.Min + r.Max + 1) / 2)
		}
	}
	return b
}

// Label sets a label.
func (b *PodBuilder) Label(k, v string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// Resources sets the requests and limits of the first container; an empty
// string leaves a value out.
func (b *PodBuilder) Resources(name corev1.ResourceName, request, limit string) *PodBuilder {
	c := &b.pod.Spec.Containers[0]
	if request != "" {
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[name] = resource.MustParse(request)
	}
	if limit != "" {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[name] = resource.MustParse(limit)
	}
	return b
}

// CPU sets the cpu request and limit of the first container.
func (b *PodBuilder) CPU(request, limit string) *PodBuilder {
	return b.Resources(corev1.ResourceCPU, request, limit)
}

// Memory sets the memory request and limit of the first container.
func (b *PodBuilder) Memory(request, limit string) *PodBuilder {
	return b.Resources(corev1.ResourceMemory, request, limit)
}

// Tier gives the first container a tier resource as an extended resource:
// request = limit = value.
func (b *PodBuilder) Tier(name corev1.ResourceName, value string) *PodBuilder {
	return b.Resources(name, value, value)
}

// Container adds a container with cpu request and limit (empty: none).
func (b *PodBuilder) Container(name, cpuRequest, cpuLimit string) *PodBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name, Image: "busybox"})
	last := len(b.pod.Spec.Containers) - 1
	b.pod.Spec.Containers[0], b.pod.Spec.Containers[last] = b.pod.Spec.Containers[last], b.pod.Spec.Containers[0]
	b.CPU(cpuRequest, cpuLimit)
	b.pod.Spec.Containers[0], b.pod.Spec.Containers[last] = b.pod.Spec.Containers[last], b.pod.Spec.Containers[0]
	return b
}

// OwnedBy gives the pod a controller of a kind (DaemonSet, Job, ...).
func (b *PodBuilder) OwnedBy(kind string) *PodBuilder {
	b.pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "owner-uid", Controller: ptr.To(true)}}
	return b
}

// QOS sets status.qosClass.
func (b *PodBuilder) QOS(q corev1.PodQOSClass) *PodBuilder { b.pod.Status.QOSClass = q; return b }

// Terminating marks the pod as being deleted.
func (b *PodBuilder) Terminating() *PodBuilder {
	now := metav1.Now()
	b.pod.DeletionTimestamp = &now
	return b
}
