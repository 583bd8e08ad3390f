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
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// newUninstallAgentsCommand is the chart's pre-delete hook: it deletes the
// agent DaemonSet in the foreground and waits until its pods are gone, so
// every agent sees its DaemonSet being deleted on SIGTERM and undoes its
// throttles and tier limits while its ServiceAccount and RBAC still exist
// (Helm deletes those right after the hook).
func newUninstallAgentsCommand() *cobra.Command {
	var (
		kubeconfig, namespace, daemonSet string
		timeout                          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "uninstall-agents",
		Short: "Remove the agent DaemonSet and wait until every agent has released its node",
		Long: `Deletes the agent DaemonSet with foreground propagation and waits until it
and its pods are gone. Each agent, told to stop while its DaemonSet is being
deleted, gives back every CPU quota and tier limit it set before exiting.
charts/waterline runs this as a pre-delete hook; run it by hand before
removing the agent any other way. Agents that do not stop within --timeout
(a node that is down) are listed: run "waterline-agent --release" on them.

It needs get and delete on the DaemonSet and list on pods in its namespace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return fmt.Errorf("--timeout %v: want a positive duration", timeout)
			}
			client, err := clientFor(kubeconfig)
			if err != nil {
				return err
			}
			return uninstallAgents(cmd.Context(), client, cmd.OutOrStdout(), namespace, daemonSet, timeout)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "path of the kubeconfig file; default in-cluster, then $KUBECONFIG or ~/.kube/config")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "waterline-system", "namespace of the agent DaemonSet")
	cmd.Flags().StringVar(&daemonSet, "daemonset", "waterline-agent", "name of the agent DaemonSet")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the agents to stop")
	return cmd
}

func uninstallAgents(ctx context.Context, client kubernetes.Interface, out io.Writer, ns, name string, timeout time.Duration) error {
	ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(out, "DaemonSet %s/%s is gone already\n", ns, name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting DaemonSet %s/%s: %w", ns, name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return fmt.Errorf("DaemonSet %s/%s selector: %w", ns, name, err)
	}
	err = client.AppsV1().DaemonSets(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &ds.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting DaemonSet %s/%s: %w", ns, name, err)
	}
	fmt.Fprintf(out, "Deleting DaemonSet %s/%s; waiting up to %v for its agents to release their nodes and stop\n", ns, name, timeout)
	deadline := time.Now().Add(timeout)
	for {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return fmt.Errorf("listing the agent pods in %s: %w", ns, err)
		}
		_, dsErr := client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if len(pods.Items) == 0 && apierrors.IsNotFound(dsErr) {
			fmt.Fprintf(out, "Every agent of %s/%s stopped\n", ns, name)
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(out, "WARNING: %d agent pods did not stop within %v; on their nodes run \"waterline-agent --release\":\n", len(pods.Items), timeout)
			for _, p := range pods.Items {
				fmt.Fprintf(out, "  %s on node %s\n", p.Name, p.Spec.NodeName)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
