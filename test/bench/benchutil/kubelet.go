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

package benchutil

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Kubelet writes what kubelets write to the control plane for their
// nodes, so a bench can set the cost of Waterline's writes beside the
// heartbeats every cluster already pays for.
type Kubelet struct {
	Kube   kubernetes.Interface
	leases sync.Map // node → the *coordinationv1.Lease last written
}

// CreateLease creates node's Lease, as kubelet does when it registers.
func (k *Kubelet) CreateLease(ctx context.Context, node string) error {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	created, err := k.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the Lease of node %s: %w", node, err)
	}
	k.leases.Store(node, created)
	return nil
}

// RenewLease is kubelet's heartbeat proper: an update of its Lease's
// renewTime (every 10 s, a quarter of the 40 s lease), written from the
// copy it last wrote, with no read.
func (k *Kubelet) RenewLease(ctx context.Context, node string) error {
	client := k.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, ok := k.leases.Load(node)
	if !ok {
		got, err := client.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l = got
	}
	obj := l.(*coordinationv1.Lease).DeepCopy()
	obj.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	written, err := client.Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	k.leases.Store(node, written)
	return nil
}

// PatchNodeStatus is kubelet's node status report (every
// nodeStatusReportFrequency, 5 min, or on a change): a strategic merge
// patch of the conditions with a new heartbeat time.
func (k *Kubelet) PatchNodeStatus(ctx context.Context, node string) error {
	now := time.Now().UTC().Format(time.RFC3339)
	var conds []string
	for _, t := range []string{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"} {
		status := "False"
		if t == "Ready" {
			status = "True"
		}
		conds = append(conds, fmt.Sprintf(`{"type":%q,"status":%q,"lastHeartbeatTime":%q}`, t, status, now))
	}
	patch := `{"status":{"conditions":[` + strings.Join(conds, ",") + `]}}`
	_, err := k.Kube.CoreV1().Nodes().PatchStatus(ctx, node, []byte(patch))
	return err
}
