package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/statesign"
)

func newStateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Work with the provisioner's state Secrets (platform only)",
	}
	cmd.AddCommand(newStateSignCommand())
	return cmd
}

func newStateSignCommand() *cobra.Command {
	var flags clusterFlags
	var controlPlane string
	cmd := &cobra.Command{
		Use:   "sign SECRET",
		Short: "Sign a state Secret the platform changed by hand, so that the provisioner reads it",
		Long: `The provisioner signs the state it writes (the annotation score.dev/state-mac) and reads only
state whose signature verifies: a state Secret changed by anyone else — a tenant who may write
Secrets in the namespace, or the platform rotating a password by hand — is refused, and its
claim says PermissionDenied. After a change you mean, sign the Secret with the provisioner's key
(the Secret score-provisioner-state-key in the control plane's namespace, which only the
platform may read); the provisioner reads it again on its next pass (scorectl reconcile
WORKLOAD for one now). The command signs what the Secret holds: read it before you sign.`,
		Example: `  kubectl edit secret -n team-a score-state-3f2a…   # the platform's change
  scorectl state sign score-state-3f2a… -n team-a
  scorectl reconcile orders -n team-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, ns, err := flags.connect()
			if err != nil {
				return err
			}
			key := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: statesign.KeySecret}, key); err != nil {
				if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
					return fmt.Errorf("reading the provisioner's signing key %s/%s (signing is the platform's, with read on that Secret): %w", controlPlane, statesign.KeySecret, err)
				}
				return err
			}
			raw, err := statesign.KeyOf(key.Data)
			if err != nil {
				return err
			}
			s := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, s); err != nil {
				return err
			}
			state, ok := s.Data[statesign.StateKey]
			if !ok {
				return errors.New("secret " + s.Name + " holds no " + statesign.StateKey + ": it is not a provisioner's state")
			}
			signature := statesign.Sign(raw, s.Namespace, s.Name, state)
			if s.Annotations[statesign.Annotation] == signature {
				fmt.Fprintf(cmd.OutOrStdout(), "secret/%s is signed as it is\n", s.Name)
				return nil
			}
			// Signed as read: a change made since (the resourceVersion differs) is refused.
			patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, statesign.Annotation, signature)
			if err := c.Patch(ctx, s, patch); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "secret/%s signed: the provisioner reads it on its next pass\n", s.Name)
			return nil
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVar(&controlPlane, "control-plane-namespace", "score-system", "the namespace the controllers run in (where the signing key is)")
	return cmd
}
