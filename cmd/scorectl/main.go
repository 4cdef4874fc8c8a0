// Command scorectl is the Score Orchestrator's command line: it converts Score files to
// Workloads and back, and validates Orchestrator Config documents. Installed as kubectl-score
// it also runs as a kubectl plugin (kubectl score ...).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
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
		// An error may quote the cluster (a Workload's message, a provisioner's).
		fmt.Fprintln(os.Stderr, "Error:", termtext.Escape(err.Error()))
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
		// What a command prints for a person goes through termtext: a message from the cluster
		// (a tenant's param in a claim's message, a container's termination message) cannot
		// retitle the terminal, clear it or colour a fake line. The commands that print data
		// for another program (annotated dataOutput) write it as their encoders made it.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Annotations[dataOutput] == "" {
				cmd.SetOut(termtext.NewWriter(cmd.OutOrStdout()))
			}
		},
	}
	root.AddCommand(dataCommand(newConvertCommand()), newConfigCommand(), dataCommand(newRenderCommand()), newApplyCommand(), dataCommand(newStatusCommand()), newWhyCommand(), newDashboardCommand(), newClusterCommand(), newHostCommand(), newRolloutCommand(), newDeleteCommand(), newPreviewCommand(), newReconcileCommand(), newStateCommand(), newDevCommand(), newVersionCommand())
	return root
}

// dataOutput annotates a command whose standard output is data (YAML, a log) that termtext's
// writer must not change: it escapes, field by field, what it prints for a person.
const dataOutput = "scorectl/data-output"

// dataCommand annotates cmd as printing data.
func dataCommand(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[dataOutput] = "true"
	return cmd
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
