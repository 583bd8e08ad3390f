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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// FuzzQoSProtection: whatever a pod's namespace, band label, priority,
// class and owner say, the absolute rules hold: kube-system, Mid/Prod
// priority, system-critical, DaemonSet and static pods are protected, and
// a pod node QoS may act on is in the Batch or Free band.
func FuzzQoSProtection(f *testing.F) {
	f.Add("kube-system", "batch", int32(5500), true, "", "ReplicaSet", "")
	f.Add("default", "batch", int32(9500), true, "", "", "")
	f.Add("default", "free", int32(2000000000), true, "", "", "")
	f.Add("default", "Batch ", int32(0), false, "system-node-critical", "DaemonSet", "file")
	f.Add("default", "", int32(3500), true, "", "Node", "api")
	f.Fuzz(func(t *testing.T, ns, band string, priority int32, hasPriority bool, class, ownerKind, configSource string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p",
			Labels: map[string]string{LabelBand: band}, Annotations: map[string]string{}},
			Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c"}}}}
		if hasPriority {
			pod.Spec.Priority = ptr.To(priority)
		}
		if ownerKind != "" {
			pod.OwnerReferences = []metav1.OwnerReference{{Kind: ownerKind, Name: "o", Controller: ptr.To(true)}}
		}
		if configSource != "" {
			pod.Annotations[annotationConfigSource] = configSource
		}
		b, _ := BandOfExplained(pod)
		if !slices.Contains(Bands, b) {
			t.Fatalf("BandOf returned %q", b)
		}
		r := QoSProtection(pod)
		mustProtect := ns == metav1.NamespaceSystem ||
			hasPriority && priority >= lowestProtectedPriority() ||
			class == "system-node-critical" || class == "system-cluster-critical" ||
			ownerKind == "DaemonSet" || ownerKind == "Node" || configSource != "" && configSource != "api"
		if mustProtect && r == NotProtected {
			t.Fatalf("pod %+v is not protected", pod)
		}
		if r == NotProtected && !b.IsLowPriority() {
			t.Fatalf("a %s pod may be acted on", b)
		}
	})
}
