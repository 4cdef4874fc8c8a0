package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func newDeleteCommand() *cobra.Command {
	var flags clusterFlags
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a Workload and show its dependencies being released",
		Long: `Delete a Workload and wait until it is gone, showing each dependency's release per its
policy: Delete dependencies are removed (and waited for), Retain ones are kept with their data,
Orphan ones are left as they are.`,
		Example: `  scorectl delete orders -n score-demo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			c, w, err := flags.workload(ctx, args[0])
			if err != nil {
				return err
			}
			ns := w.Namespace
			var claims scorev1b1.ResourceClaimList
			if err := c.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
				return err
			}
			for _, cl := range claims.Items {
				if metav1.IsControlledBy(&cl, w) {
					fmt.Fprintf(out, "  %s (%s): %s\n", cl.Spec.Key, cl.Spec.Type, policyText(cl.Spec.DeprovisionPolicy))
				}
			}
			if err := c.Delete(ctx, w); err != nil {
				return err
			}
			fmt.Fprintf(out, "workload.score.dev/%s deleted; releasing its dependencies\n", w.Name)
			deadline := time.Now().Add(flags.timeout)
			last := ""
			for {
				err := c.Get(ctx, client.ObjectKeyFromObject(w), w)
				if apierrors.IsNotFound(err) {
					fmt.Fprintf(out, "workload.score.dev/%s is gone\n", w.Name)
					return nil
				}
				if err != nil {
					return err
				}
				if err := c.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
					return err
				}
				var waiting []string
				for _, cl := range claims.Items {
					if !cl.DeletionTimestamp.IsZero() {
						waiting = append(waiting, cl.Spec.Key)
					}
				}
				sort.Strings(waiting)
				if line := strings.Join(waiting, ", "); line != last && line != "" {
					fmt.Fprintf(out, "  waiting for %s to be released\n", line)
					last = line
				}
				if time.Now().After(deadline) {
					return errors.New("the workload is still being deleted; see scorectl status " + w.Name)
				}
				time.Sleep(500 * time.Millisecond)
			}
		},
	}
	flags.bind(cmd, true)
	return cmd
}

func policyText(p scorev1b1.DeprovisionPolicy) string {
	switch p {
	case scorev1b1.DeprovisionRetain:
		return "Retain: kept with its data"
	case scorev1b1.DeprovisionOrphan:
		return "Orphan: left as it is"
	default:
		return "Delete: removed"
	}
}
