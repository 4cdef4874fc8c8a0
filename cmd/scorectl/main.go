// Command scorectl is the Score Orchestrator's command line: it converts Score files to
// Workloads and back, and validates Orchestrator Config documents. Installed as kubectl-score
// it also runs as a kubectl plugin (kubectl score ...).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/score-orchestrator/score-orchestrator/internal/version"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return exitError
	}
	return exitOK
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "scorectl",
		Short:         "Work with Score workloads on the Score Orchestrator",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newConvertCommand(), newConfigCommand(), newRenderCommand(), newApplyCommand(), newStatusCommand(), newWhyCommand(), newDashboardCommand(), newClusterCommand(), newRolloutCommand(), newDeleteCommand(), newPreviewCommand(), newReconcileCommand(), newStateCommand(), newDevCommand(), newVersionCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit scorectl was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "scorectl", version.String())
			return err
		},
	}
}
