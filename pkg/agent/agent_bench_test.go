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

package agent

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/pkg/agent/collector"
)

func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)),
				Labels: map[string]string{"waterline.dev/band": "batch"}},
			Status: corev1.PodStatus{QOSClass: corev1.PodQOSBurstable, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "a", ContainerID: fmt.Sprintf("containerd://a%d", i)}, {Name: "b", ContainerID: fmt.Sprintf("containerd://b%d", i)}}},
		}
	}
	return pods
}

// TestPodRefsFollowPodObjects: cached refs equal freshly built ones; a
// replaced pod object gets a new ref, a pod that left is forgotten.
func TestPodRefsFollowPodObjects(t *testing.T) {
	a := &Agent{refCache: map[types.UID]cachedRef{}}
	pods := benchPods(3)
	fresh := func(pods []*corev1.Pod) []collector.PodRef {
		out := make([]collector.PodRef, len(pods))
		for i, p := range pods {
			out[i] = collector.PodRefOf(p)
		}
		return out
	}
	if diff := cmp.Diff(fresh(pods), a.podRefs(pods)); diff != "" {
		t.Errorf("first cycle (-want +got):\n%s", diff)
	}
	changed := pods[1].DeepCopy()
	changed.Labels["waterline.dev/band"] = "free"
	pods = []*corev1.Pod{pods[0], changed}
	if diff := cmp.Diff(fresh(pods), a.podRefs(pods)); diff != "" {
		t.Errorf("after an update and a removal (-want +got):\n%s", diff)
	}
	if len(a.refCache) != 2 {
		t.Errorf("cached refs = %d, want 2 (the pod that left forgotten)", len(a.refCache))
	}
}

// BenchmarkPodRefs: the collector's view of 200 pods per cycle, reused
// while the pod objects stay, against building every ref each cycle (the
// baseline, as the loop did).
func BenchmarkPodRefs(b *testing.B) {
	pods := benchPods(200)
	b.Run("cached", func(b *testing.B) {
		a := &Agent{refCache: map[types.UID]cachedRef{}}
		a.podRefs(pods)
		b.ReportAllocs()
		for b.Loop() {
			_ = a.podRefs(pods)
		}
	})
	b.Run("rebuild-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			refs := make([]collector.PodRef, len(pods))
			for i, p := range pods {
				refs[i] = collector.PodRefOf(p)
			}
		}
	})
}
