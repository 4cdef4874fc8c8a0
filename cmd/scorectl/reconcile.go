package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func newReconcileCommand() *cobra.Command {
	var flags clusterFlags
	cmd := &cobra.Command{
		Use:   "reconcile NAME",
		Short: "Make every controller process a Workload again, and wait until they have",
		Long: `Set the score.dev/reconcile-requested-at annotation on a Workload to the current time. The
orchestrator processes the Workload again and hands the request on to its claims and plan, so
the provisioner and the runtime process them again too; the command returns once the Workload's
status.lastHandledReconcileAt shows the request.`,
		Example: `  scorectl reconcile orders -n score-demo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, w, err := flags.workload(ctx, args[0])
			if err != nil {
				return err
			}
			requested := time.Now().UTC().Format(time.RFC3339Nano)
			patch := client.MergeFrom(w.DeepCopy())
			if w.Annotations == nil {
				w.Annotations = map[string]string{}
			}
			w.Annotations[scorev1b1.AnnotationReconcileRequestedAt] = requested
			if err := c.Patch(ctx, w, patch); err != nil {
				return err
			}
			deadline := time.Now().Add(flags.timeout)
			for {
				if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
					return err
				}
				if w.Status.LastHandledReconcileAt == requested {
					fmt.Fprintf(cmd.OutOrStdout(), "workload.score.dev/%s reconciled (request %s)\n", w.Name, requested)
					return nil
				}
				if time.Now().After(deadline) {
					return errors.New("the orchestrator has not handled the request yet; is it running?")
				}
				time.Sleep(250 * time.Millisecond)
			}
		},
	}
	flags.bind(cmd, true)
	return cmd
}
