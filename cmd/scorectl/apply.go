package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/scorefile"
)

// errNotReady is a wait that ended before the Workload was Ready.
var errNotReady = errors.New("the workload did not become ready")

func newApplyCommand() *cobra.Command {
	var (
		flags  clusterFlags
		file   string
		noWait bool
	)
	cmd := &cobra.Command{
		Use:   "apply -f score.yaml",
		Short: "Convert a Score file, apply it, and wait until the Workload is Ready",
		Long: `Convert a Score file to a Workload, apply it server-side, and wait until it is Ready,
showing its phases as they change (dependencies, deployment). On timeout the command exits
with 1 and prints what blocks the Workload.`,
		Example: `  scorectl apply -f score.yaml -n team-a
  scorectl apply -f score.yaml --timeout 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("-f is required")
			}
			c, ns, err := flags.connect()
			if err != nil {
				return err
			}
			results, err := scorefile.ReadFile(file, ns)
			if err != nil {
				return err
			}
			var names []string
			for _, res := range results {
				u := &unstructured.Unstructured{Object: withoutStatus(res.Workload)}
				if err := c.Patch(cmd.Context(), u, client.Apply, client.FieldOwner("scorectl"), client.ForceOwnership); err != nil {
					return fmt.Errorf("applying %s: %w", res.Workload.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "workload.score.dev/%s applied\n", res.Workload.Name)
				names = append(names, res.Workload.Name)
			}
			if noWait {
				return nil
			}
			for _, name := range names {
				if err := waitReady(cmd.Context(), c, ns, name, flags.timeout, cmd.ErrOrStderr()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "workload.score.dev/%s is Ready\n", name)
			}
			return nil
		},
	}
	flags.bind(cmd, true)
	cmd.Flags().StringVarP(&file, "file", "f", "", "the Score file")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "apply and return without waiting")
	return cmd
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// waitReady shows the Workload's phase until it is Ready, the timeout passes or ctx ends.
func waitReady(ctx context.Context, c client.Client, ns, name string, timeout time.Duration, progress io.Writer) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for i := 0; ; i++ {
		w := &scorev1b1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
		if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == w.Generation {
			fmt.Fprintf(progress, "\r%s\r", spaces(len(last)+4))
			return nil
		}
		line := phaseLine(w)
		if line != last {
			fmt.Fprintf(progress, "\r%s\r", spaces(len(last)+4))
			last = line
		}
		fmt.Fprintf(progress, "\r%s %s", spinner[i%len(spinner)], line)
		if time.Now().After(deadline) {
			fmt.Fprintln(progress)
			reason := "no status yet"
			if ready != nil {
				reason = ready.Reason + ": " + ready.Message
			}
			return fmt.Errorf("%w within %s: %s", errNotReady, timeout, reason)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func phaseLine(w *scorev1b1.Workload) string {
	bound := 0
	for _, c := range w.Status.Claims {
		if c.Phase == scorev1b1.ClaimPhaseBound {
			bound++
		}
	}
	runtime := "waiting"
	if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionRuntimeReady); c != nil {
		runtime = c.Reason
	}
	return fmt.Sprintf("%s: dependencies %d/%d bound, deployment %s", w.Name, bound, len(w.Spec.Resources), runtime)
}

func spaces(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}
