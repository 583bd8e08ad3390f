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
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/waterline-dev/waterline/pkg/audit"
)

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Audit a cluster before switching a Waterline feature on",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAuditPreemptionCommand())
	return cmd
}

func newAuditPreemptionCommand() *cobra.Command {
	var (
		kubeconfig  string
		kubeContext string
		output      string
		dsClass     string
	)
	cmd := &cobra.Command{
		Use:   "preemption",
		Short: "Report what switching preemption on would do",
		Long: `Reports pods without a priority, PriorityClasses with globalDefault,
malformed Waterline PriorityClass annotations, DaemonSets below the DaemonSet
class, and -- for every pending pod, in scheduling order -- which pods the
scheduler would preempt if preemption were switched on now, with the same
victim rules as the BandPreemption plugin (NonPreemptible classes, DaemonSet
and static pods spared, PodDisruptionBudgets respected where possible).

It only reads the cluster: it needs list on nodes, pods, priorityclasses,
daemonsets and poddisruptionbudgets.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			config, err := restConfig(kubeconfig, kubeContext)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				return fmt.Errorf("creating a client: %w", err)
			}
			objs, err := audit.Collect(cmd.Context(), client)
			if err != nil {
				return err
			}
			report := audit.Build(objs, audit.Options{DaemonSetPriorityClass: dsClass})
			if output == "json" {
				return report.WriteJSON(cmd.OutOrStdout())
			}
			return report.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "path of the kubeconfig file; default $KUBECONFIG or ~/.kube/config")
	cmd.Flags().StringVar(&kubeContext, "context", "", "kubeconfig context to use; default the current context")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().StringVar(&dsClass, "daemonset-priority-class", audit.DefaultDaemonSetPriorityClass,
		"PriorityClass whose value DaemonSet pods should reach")
	return cmd
}
