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
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/waterline-dev/waterline/pkg/check"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// errCheckFailed makes the command exit non-zero after it printed the
// report.
var errCheckFailed = errors.New("a check failed")

func newCheckCommand() *cobra.Command {
	var (
		kubeconfig, kubeContext string
		namespace, scheduler    string
		managerLease, output    string
		expect                  []string
		staleAfter              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that Waterline is installed and working in a cluster",
		Long: `Checks, in Waterline's namespace: the waterline.dev CRDs served;
waterline-manager and waterline-scheduler available, each with a leader
renewing its lease; an agent ready on every node the waterline-agent
DaemonSet covers (with the DaemonSet's last warning event when it could not
create their pods); every node with an agent reporting, and no NodeMetric
older than --stale-after (LoadAware refuses a node with an older one), and
each node's clock against the API server's; the
Mid and Batch tier resources on the nodes that report; every Waterline
admission webhook with a CA bundle and a ready endpoint, and the API server
reaching the manager's webhook server (a dry-run request only the manager's
probe webhook sees). Prints a line per check and exits non-zero when one
fails. The chart's "helm test" runs it.

It only reads the cluster, but for the probe's ConfigMap, created with
dryRun=All and never stored: get on the namespace's deployments, daemonsets
and leases (and on kube-system's kube-scheduler Lease for a scheduler named
default-scheduler), list on its pods and events, create on its configmaps;
list on nodes, nodemetrics, webhook configurations and endpointslices.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			for _, c := range expect {
				if !slices.Contains([]string{check.Manager, check.Scheduler, check.Agent}, c) {
					return fmt.Errorf("--expect %q: want %s, %s or %s", c, check.Manager, check.Scheduler, check.Agent)
				}
			}
			if staleAfter <= 0 {
				return fmt.Errorf("--stale-after %s: must be positive", staleAfter)
			}
			config, err := restConfig(kubeconfig, kubeContext)
			if err != nil {
				return err
			}
			kube, err := kubernetes.NewForConfig(config)
			if err != nil {
				return fmt.Errorf("creating a client: %w", err)
			}
			wl, err := versioned.NewForConfig(config)
			if err != nil {
				return fmt.Errorf("creating a client: %w", err)
			}
			schedulerLease := check.SchedulerLeaseOf(scheduler)
			snap, err := check.Collect(cmd.Context(), kube, wl, namespace, managerLease, schedulerLease)
			if err != nil {
				return err
			}
			report := check.Evaluate(snap, check.Options{Now: time.Now(), Expect: expect, ManagerLease: managerLease, SchedulerLease: schedulerLease, StaleAfter: staleAfter})
			write := report.WriteTable
			if output == "json" {
				write = report.WriteJSON
			}
			if err := write(cmd.OutOrStdout()); err != nil {
				return err
			}
			if report.Failed {
				return errCheckFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig (default: in-cluster or $KUBECONFIG)")
	f.StringVar(&kubeContext, "context", "", "The kubeconfig context to use")
	f.StringVarP(&namespace, "namespace", "n", "waterline-system", "Waterline's namespace")
	f.StringVar(&scheduler, "scheduler-name", "waterline-scheduler", "The scheduler's name, which is also its leader-election lease's (kube-system/kube-scheduler for default-scheduler, as the chart sets it)")
	f.StringVar(&managerLease, "manager-lease", check.DefaultManagerLease, "The manager's leader-election lease; empty when it elects no leader")
	f.StringSliceVar(&expect, "expect", nil, "Components that must be installed (waterline-manager, waterline-scheduler, waterline-agent); others are checked when found")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.DurationVar(&staleAfter, "stale-after", nodeload.DefaultNodeMetricExpiration, "How old a NodeMetric may be (LoadAware's nodeMetricExpirationSeconds)")
	return cmd
}
