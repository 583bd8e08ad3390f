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

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/waterline-dev/waterline/apis/extension"
)

// removeTiersOptions are the flags of remove-tier-resources.
type removeTiersOptions struct {
	kubeconfig string
	// managerNamespace and managerSelector name the manager's pods, which
	// must be gone first: a running manager writes the resources back.
	managerNamespace string
	managerSelector  string
	timeout          time.Duration
	force            bool
}

// newRemoveTierResourcesCommand is the chart's post-delete hook: it takes
// the Mid and Batch tier resources waterline-manager published off every
// node's status. kubelet keeps extended resources others put in a node's
// capacity (and derives allocatable from capacity), so without it they
// would stay after an uninstall.
func newRemoveTierResourcesCommand() *cobra.Command {
	o := removeTiersOptions{timeout: 2 * time.Minute}
	cmd := &cobra.Command{
		Use:   "remove-tier-resources",
		Short: "Take the Mid and Batch tier resources off every node's status",
		Long: `Removes waterline.dev/mid-cpu, mid-memory, batch-cpu and batch-memory from
the capacity and allocatable of every node, once waterline-manager (the pods
--manager-selector selects in --manager-namespace) is gone: a running manager
writes them back. kubelet keeps extended resources someone else put in a
node's capacity, so they would otherwise stay after Waterline is removed.

A node where a pod that has not finished still requests a tier resource
keeps them (kubelet re-admits running pods when it restarts, and refuses a
pod requesting a resource its node lacks); such nodes and pods are listed.
Run the command again once those pods are done, or with --force.
charts/waterline runs it as a post-delete hook.

It needs list on pods, list on nodes and patch on nodes/status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.timeout <= 0 {
				return fmt.Errorf("--timeout %v: want a positive duration", o.timeout)
			}
			if _, err := labels.Parse(o.managerSelector); err != nil {
				return fmt.Errorf("--manager-selector %q: %w", o.managerSelector, err)
			}
			client, err := clientFor(o.kubeconfig)
			if err != nil {
				return err
			}
			return removeTierResources(cmd.Context(), client, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path of the kubeconfig file; default in-cluster, then $KUBECONFIG or ~/.kube/config")
	f.StringVar(&o.managerNamespace, "manager-namespace", "waterline-system", "namespace of waterline-manager's pods")
	f.StringVar(&o.managerSelector, "manager-selector", "app.kubernetes.io/name=waterline-manager",
		`label selector of waterline-manager's pods, waited for until none is left ("" to not wait)`)
	f.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for the manager's pods to go")
	f.BoolVar(&o.force, "force", false, "remove the resources also from nodes where pods still request them")
	return cmd
}

func removeTierResources(ctx context.Context, client kubernetes.Interface, out io.Writer, o removeTiersOptions) error {
	if o.managerSelector != "" {
		if err := waitNoPods(ctx, client, out, o.managerNamespace, o.managerSelector, o.timeout); err != nil {
			return err
		}
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	// Pods that have not finished, by node, that request a tier resource,
	// listed a page at a time: a cluster may have a hundred thousand.
	holders := map[string][]string{}
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	}
	err = pager.New(list).EachListItem(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermNotEqualSelector("spec.nodeName", ""),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
		).String(),
	}, func(obj runtime.Object) error {
		if p := obj.(*corev1.Pod); extension.RequestsTierResources(p) {
			holders[p.Spec.NodeName] = append(holders[p.Spec.NodeName], p.Namespace+"/"+p.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}

	var removed, kept int
	for i := range nodes.Items {
		n := &nodes.Items[i]
		names := publishedTierResources(n)
		if len(names) == 0 {
			continue
		}
		if held := holders[n.Name]; len(held) > 0 && !o.force {
			kept++
			slices.Sort(held)
			fmt.Fprintf(out, "Node %s keeps %s: pods still request them: %s\n", n.Name, joinNames(names), strings.Join(held, ", "))
			continue
		}
		if err := patchOutTierResources(ctx, client, n.Name, names); err != nil {
			return err
		}
		removed++
		fmt.Fprintf(out, "Node %s: removed %s\n", n.Name, joinNames(names))
	}
	fmt.Fprintf(out, "Tier resources removed from %d nodes", removed)
	if kept > 0 {
		fmt.Fprintf(out, "; %d nodes keep them until their pods requesting them are done: run \"waterline remove-tier-resources\" again then", kept)
	}
	fmt.Fprintln(out)
	return nil
}

// publishedTierResources returns the tier resources in n's capacity or
// allocatable.
func publishedTierResources(n *corev1.Node) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range extension.TierResourceNames() {
		_, inCapacity := n.Status.Capacity[name]
		_, inAllocatable := n.Status.Allocatable[name]
		if inCapacity || inAllocatable {
			out = append(out, name)
		}
	}
	return out
}

// patchOutTierResources deletes names from the node's status capacity and
// allocatable with one merge patch (a null value deletes a key).
func patchOutTierResources(ctx context.Context, client kubernetes.Interface, node string, names []corev1.ResourceName) error {
	gone := map[corev1.ResourceName]any{}
	for _, name := range names {
		gone[name] = nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": gone, "allocatable": gone}})
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("removing the tier resources of node %s: %w", node, err)
	}
	return nil
}

// waitNoPods waits until no pod in ns matches selector, up to timeout.
func waitNoPods(ctx context.Context, client kubernetes.Interface, out io.Writer, ns, selector string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	announced := false
	for {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return fmt.Errorf("listing the manager's pods in %s: %w", ns, err)
		}
		if len(pods.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			names := make([]string, 0, len(pods.Items))
			for _, p := range pods.Items {
				names = append(names, p.Name)
			}
			return fmt.Errorf("waterline-manager's pods %s in %s still run after %v: it would write the tier resources back; remove it first",
				strings.Join(names, ", "), ns, timeout)
		}
		if !announced {
			fmt.Fprintf(out, "Waiting up to %v for waterline-manager's pods (%s in %s) to go\n", timeout, selector, ns)
			announced = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func joinNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}
