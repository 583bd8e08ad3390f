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

package audit

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// Collect lists what the audit reads, page by page so that a large cluster
// does not need one huge response. It needs list on nodes, pods,
// priorityclasses, daemonsets and poddisruptionbudgets cluster-wide.
func Collect(ctx context.Context, client kubernetes.Interface) (*Objects, error) {
	objs := &Objects{}
	lists := []struct {
		what string
		list func(context.Context, metav1.ListOptions) (runtime.Object, error)
		add  func(runtime.Object) error
	}{
		{"nodes", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Nodes().List(ctx, o)
		}, func(o runtime.Object) error { objs.Nodes = append(objs.Nodes, *o.(*corev1.Node)); return nil }},
		{"pods", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		}, func(o runtime.Object) error { objs.Pods = append(objs.Pods, *o.(*corev1.Pod)); return nil }},
		{"priorityclasses", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.SchedulingV1().PriorityClasses().List(ctx, o)
		}, func(o runtime.Object) error {
			objs.PriorityClasses = append(objs.PriorityClasses, *o.(*schedulingv1.PriorityClass))
			return nil
		}},
		{"daemonsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, o)
		}, func(o runtime.Object) error {
			objs.DaemonSets = append(objs.DaemonSets, *o.(*appsv1.DaemonSet))
			return nil
		}},
		{"poddisruptionbudgets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, o)
		}, func(o runtime.Object) error {
			objs.PDBs = append(objs.PDBs, *o.(*policyv1.PodDisruptionBudget))
			return nil
		}},
	}
	for _, l := range lists {
		p := pager.New(l.list)
		if err := p.EachListItem(ctx, metav1.ListOptions{}, l.add); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	return objs, nil
}
