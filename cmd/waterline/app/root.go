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

// Package app builds the waterline command tree.
package app

import (
	"github.com/spf13/cobra"
)

// NewCommand returns the root waterline command.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "waterline",
		Short: "Waterline colocation tools: simulate, evaluate predictors, audit preemption, check an installation",
		Long: `waterline is the command-line tool of Waterline, a Kubernetes colocation
system that runs online services and batch work on the same nodes.`,
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	cmd.AddCommand(newVersionCommand())
	cmd.AddCommand(newPredictCommand())
	cmd.AddCommand(newAuditCommand())
	cmd.AddCommand(newCheckCommand())
	cmd.AddCommand(newSimCommand())
	cmd.AddCommand(newUninstallAgentsCommand())
	cmd.AddCommand(newRemoveTierResourcesCommand())
	return cmd
}
