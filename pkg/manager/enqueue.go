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

package manager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EnqueueAllNodes maps any event to a request for every node: what a change
// of a ColocationPolicy, which may govern any node, needs.
func EnqueueAllNodes(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes); err != nil {
			klog.FromContext(ctx).Error(err, "Listing nodes to reconcile them all")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(nodes.Items))
		for i := range nodes.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: nodes.Items[i].Name}})
		}
		return reqs
	}
}

// Pointers returns pointers to the items of a list, for the pure cores that
// take []*T.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
