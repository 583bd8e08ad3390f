// Package app builds the waterline command tree.
package app

import (
	"github.com/spf13/cobra"
)

// NewCommand returns the root waterline command.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "waterline",
		Short: "Waterline colocation tools: simulate, evaluate predictors, audit preemption",
		Long: `waterline is the command-line tool of Waterline, a Kubernetes colocation
system that runs online services and batch work on the same nodes.`,
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	cmd.AddCommand(newVersionCommand())
	cmd.AddCommand(newPredictCommand())
	cmd.AddCommand(newAuditCommand())
	cmd.AddCommand(newSimCommand())
	cmd.AddCommand(newUninstallAgentsCommand())
	return cmd
}
