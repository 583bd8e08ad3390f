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

package reporter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestReportAgainstAPIServer runs Report against a real kube-apiserver
// with the NodeMetric CRD: the status subresource, resourceVersion
// conflicts and creation are the API server's, not a fake's.
func TestReportAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: starts etcd and kube-apiserver (-short)")
	}
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	nms := c.Waterline.WaterlineV1alpha1().NodeMetrics()
	node, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(t0.Add(10 * time.Second))
	state := &fakeState{node: node}
	r, err := New(Config{}, Deps{
		NodeName: "n1", Client: nms, State: state, Cache: newCache(t, nodeSeries()), Clock: clk,
		Contributors: ContributorsOf([]agent.CycleModule{conditionSetter{metav1.ConditionTrue}}),
	})
	if err != nil {
		t.Fatal(err)
	}

	// No NodeMetric yet (no manager): the reporter creates it, owned by
	// the node, and writes the status.
	if err := r.Report(ctx); err != nil {
		t.Fatalf("Report without a NodeMetric: %v", err)
	}
	created, err := nms.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.OwnerReferences) != 1 || created.OwnerReferences[0].UID != node.UID {
		t.Errorf("owner references %+v, want the node %s", created.OwnerReferences, node.UID)
	}
	if created.Status.UpdateTime == nil || created.Status.NodeMetric == nil {
		t.Fatalf("status after the first report: %+v", created.Status)
	}

	// The informer's copy is stale: another writer (the manager's spec,
	// another module's condition) changed the object since. The write
	// conflicts, the reporter re-reads and writes again, and keeps what
	// the other writer set.
	state.nm = created.DeepCopy()
	other := created.DeepCopy()
	other.Status.Conditions = append(other.Status.Conditions, metav1.Condition{
		Type: "SomethingElse", Status: metav1.ConditionTrue, Reason: "Other", LastTransitionTime: metav1.NewTime(t0),
	})
	if _, err := nms.UpdateStatus(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	if err := r.Report(ctx); err != nil {
		t.Fatalf("Report with a stale informer copy: %v", err)
	}
	got, err := nms.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var conds []string
	for _, c := range got.Status.Conditions {
		conds = append(conds, c.Type+"="+string(c.Status))
	}
	if diff := cmp.Diff([]string{v1alpha1.ConditionThrottling + "=True", "SomethingElse=True"}, conds); diff != "" {
		t.Errorf("conditions after a conflict (-want +got):\n%s", diff)
	}
	// updateTime travels with one-second precision.
	if want := clk.Now().Truncate(time.Second); !got.Status.UpdateTime.Time.Equal(want) {
		t.Errorf("updateTime = %v, want %v", got.Status.UpdateTime.Time, want)
	}
	if got.Spec.CollectPolicy != nil {
		t.Errorf("the reporter wrote the spec: %+v", got.Spec)
	}

	// Deleted under it: created again.
	if err := nms.Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Report(ctx); err != nil {
		t.Fatalf("Report after the NodeMetric was deleted: %v", err)
	}
	if _, err := nms.Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Errorf("NodeMetric not recreated: %v", err)
	}
}
