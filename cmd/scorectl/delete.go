package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newDeleteCommand() *cobra.Command {
	var (
		flags clusterFlags
		files []string
	)
	cmd := &cobra.Command{
		Use:   "delete NAME... | -f score.yaml [-f DIR ...]",
		Short: "Delete Workloads and show their dependencies being released",
		Long: `Delete Workloads, named or read from Score files as kubectl delete -f does, and wait until
each is gone, showing each dependency's release per its policy: Delete dependencies are
removed (and waited for), Retain ones are kept with their data, Orphan ones are left as they
are. A Workload that does not exist is reported and skipped.`,
		Example: `  scorectl delete orders -n score-demo
  scorectl delete -f score.yaml -n score-demo
  scorectl delete -f apps/ -n shop`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(files) == 0 {
				return errors.New("name the Workloads, or give -f")
			}
			c, ns, err := flags.connect()
			if err != nil {
				return err
			}
			names := args
			if len(files) > 0 {
				workloads, err := readWorkloads(files, ns, "")
				if err != nil {
					return err
				}
				for _, w := range workloads {
					names = append(names, w.Name)
				}
			}
			for _, name := range names {
				if err := deleteWorkload(cmd.Context(), c, client.ObjectKey{Namespace: ns, Name: name}, flags.timeout, cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	flags.bind(cmd, true)
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "a Score file, or a directory of them, naming the Workloads to delete; repeat for several")
	return cmd
}

// deleteWorkload deletes a Workload and waits until it is gone, saying what its deletion
// waits for.
func deleteWorkload(ctx context.Context, c client.Client, key client.ObjectKey, timeout time.Duration, out io.Writer) error {
	w := &scorev1b1.Workload{}
	switch err := c.Get(ctx, key, w); {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(out, "workload.score.dev/%s not found\n", key.Name)
		return nil
	case err != nil:
		return err
	}
	var claims scorev1b1.ResourceClaimList
	if err := c.List(ctx, &claims, client.InNamespace(key.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil && !apierrors.IsForbidden(err) {
		return err
	}
	for _, cl := range claims.Items {
		if metav1.IsControlledBy(&cl, w) {
			fmt.Fprintf(out, "  %s (%s): %s\n", cl.Spec.Key, cl.Spec.Type, policyText(cl.Spec.DeprovisionPolicy))
		}
	}
	if err := c.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
		return err
	}
	fmt.Fprintf(out, "workload.score.dev/%s deleted; releasing its dependencies\n", w.Name)
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		err := c.Get(ctx, key, w)
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(out, "workload.score.dev/%s is gone\n", w.Name)
			return nil
		}
		if err != nil {
			return err
		}
		// The Workload's own status says what its deletion waits for; it needs no rights on
		// the internal kinds.
		if ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); ready != nil && ready.Message != last {
			fmt.Fprintf(out, "  %s\n", termtext.Escape(ready.Message))
			last = ready.Message
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workload %s is still being deleted after %s: %s", w.Name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
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
