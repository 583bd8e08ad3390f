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

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// testBatchTier: the manager turns the agent's report into batch-cpu
// allocatable on the real node; a plain pod (cpu 200m, limit 400m) created
// in a namespace the colocation profile covers is rewritten by the webhook
// into a Batch pod asking for batch-cpu instead of cpu, placed on the node
// by waterline-scheduler, and held to its 400m limit in its kubelet-made
// cgroup by the agent (kubelet itself sets no quota: the pod has no cpu
// limit any more). The agent sees the node's pods only (the proc view).
func (s *system) testBatchTier(t *testing.T) {
	// Batch is sold from what the node does not use: the node's pods
	// only, so that other work on a shared machine does not leave none.
	s.view.SetMode(testutil.ViewPods)
	t.Cleanup(func() { s.view.SetMode(testutil.ViewMachine) })
	var batch int64
	deadline := time.Now().Add(90 * time.Second)
	for {
		n, err := s.c.Kube.CoreV1().Nodes().Get(t.Context(), s.node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := n.Status.Allocatable[extension.ResourceBatchCPU]
		// Enough on two reads 2 s apart: kubelet admits the pod against
		// its own (informer's) copy of the node, which may lag a value
		// the manager has just raised.
		enough := q.Value() >= 300
		if enough && batch >= 300 {
			batch = q.Value()
			break
		}
		batch = q.Value()
		if enough {
			time.Sleep(2 * time.Second)
			continue
		}
		if time.Now().After(deadline) {
			t.Skipf("SKIP: the manager sells %dm batch-cpu on the real node, too little for a 200m pod: the node's CPU is in use (%.0f %%, other work on this machine)", batch, 100*s.nodeCPUFraction(t))
		}
		time.Sleep(time.Second)
	}
	t.Logf("The manager sells %dm batch-cpu on %s", batch, s.node.Name)
	ns := s.namespace(t, "tiers", map[string]string{"colocation": "batch"})
	p := s.createPod(t, ns, podSpec{name: "job", burners: 1, cpuRequest: "200m", cpuLimit: "400m", memRequest: "32Mi", memLimit: "64Mi",
		scheduler: "default-scheduler"})
	if got := extension.BandOf(p); got != extension.BandBatch {
		t.Fatalf("the webhook made pod job band %q, want batch (schedulerName %q, priority class %q)", got, p.Spec.SchedulerName, p.Spec.PriorityClassName)
	}
	req := p.Spec.Containers[0].Resources.Requests
	if _, ok := req[extension.ResourceBatchCPU]; !ok {
		t.Fatalf("pod job requests %v, want batch-cpu", req)
	}
	if _, ok := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; ok {
		t.Fatalf("pod job kept a cpu limit %v: kubelet would set the quota itself", p.Spec.Containers[0].Resources.Limits)
	}
	p = s.waitRunning(t, ns, "job")["job"]
	testutil.Eventually(t, time.Minute, time.Second, func() (bool, error) {
		q := s.podQuota(t, p)
		return q == 400, fmt.Errorf("pod cgroup quota %dm, want 400m", q)
	}, "waiting for the agent to hold the Batch pod to its tier limit in its kubelet-made cgroup")
}
