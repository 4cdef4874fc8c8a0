package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "See and steer the rollout of the latest config change to the fleet",
		Long: `With a rollout policy in the Orchestrator Config, each admitted revision reaches the
Workloads it renders differently in health-gated waves (a ConfigRollout in the control plane's
namespace). A wave that fails its gate halts the rollout and renders its Workloads from the
previous revision again.`,
	}
	cmd.AddCommand(newRolloutStatusCommand(), newRolloutPinCommand(),
		newRolloutSteerCommand("pause", "Start no further wave", func(r *scorev1b1.ConfigRollout) error { r.Spec.Paused = true; return nil }),
		newRolloutSteerCommand("resume", "Go on after a pause, or try a halted wave again", func(r *scorev1b1.ConfigRollout) error {
			r.Spec.Paused = false
			if r.Status.Phase == scorev1b1.RolloutHalted {
				r.Spec.Retry = r.Status.Retried + 1
			}
			return nil
		}),
		newRolloutSteerCommand("abort", "Render every Workload of the rollout from the previous revision again", func(r *scorev1b1.ConfigRollout) error {
			if r.Spec.From == "" {
				return errors.New("the first revision has nothing to go back to")
			}
			r.Spec.Aborted = true
			return nil
		}))
	return cmd
}

// latestRollout returns the newest rollout in the control plane's namespace.
func latestRollout(ctx context.Context, c client.Client, namespace string) (*scorev1b1.ConfigRollout, error) {
	var list scorev1b1.ConfigRolloutList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the rollouts: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errors.New("no rollout: the config has no rollout policy, or no revision was admitted since it has")
	}
	slices.SortFunc(list.Items, func(a, b scorev1b1.ConfigRollout) int { return strings.Compare(a.Name, b.Name) })
	return &list.Items[len(list.Items)-1], nil
}

// onLatestRollout completes cmd with the connection flags and --control-plane-namespace, and a
// RunE that reads the latest rollout and hands it to run with a client and the Workloads'
// namespace (-n, or the context's).
func onLatestRollout(cmd *cobra.Command, run func(cmd *cobra.Command, c client.Client, r *scorev1b1.ConfigRollout, ns string, args []string) error) *cobra.Command {
	var flags clusterFlags
	var controlPlane string
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, ns, err := flags.connect()
		if err != nil {
			return err
		}
		r, err := latestRollout(cmd.Context(), c, controlPlane)
		if err != nil {
			return err
		}
		return run(cmd, c, r, ns, args)
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVar(&controlPlane, "control-plane-namespace", "score-system", "the namespace the controllers run in")
	return cmd
}

func newRolloutStatusCommand() *cobra.Command {
	return onLatestRollout(&cobra.Command{
		Use:   "status",
		Short: "Show the latest rollout: its revisions, phase, waves and what it waits for",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, _ client.Client, r *scorev1b1.ConfigRollout, _ string, _ []string) error {
		return printRollout(cmd.OutOrStdout(), r)
	})
}

// printRollout is rollout status: the revisions, phase and message, and each wave's state.
func printRollout(out io.Writer, r *scorev1b1.ConfigRollout) error {
	fmt.Fprintf(out, "Rollout %s: %s\n  from %s\n  to   %s\n", r.Name, orDash(r.Status.Phase), orDash(r.Spec.From), r.Spec.To)
	if r.Spec.Paused {
		fmt.Fprintln(out, "  paused")
	}
	fmt.Fprintf(out, "  %d Workloads affected; %s\n", r.Status.Affected, termtext.Escape(r.Status.Message))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tSIZE\tWORKLOADS\tSTATE\tFAILED")
	for i, w := range r.Status.Waves {
		state := map[bool]string{true: "done", false: "waiting"}[i < int(r.Status.Wave) || r.Status.Phase == scorev1b1.RolloutCompleted]
		if i == int(r.Status.Wave) && r.Status.Phase != scorev1b1.RolloutCompleted {
			state = strings.ToLower(r.Status.Phase)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", i+1, w.Size, len(w.Workloads), state, strings.Join(w.Failed, ","))
	}
	return tw.Flush()
}

// newRolloutSteerCommand changes the latest rollout's spec with change.
func newRolloutSteerCommand(verb, short string, change func(*scorev1b1.ConfigRollout) error) *cobra.Command {
	return onLatestRollout(&cobra.Command{Use: verb, Short: short, Args: cobra.NoArgs},
		func(cmd *cobra.Command, c client.Client, r *scorev1b1.ConfigRollout, _ string, _ []string) error {
			switch r.Status.Phase {
			case scorev1b1.RolloutCompleted, scorev1b1.RolloutAborted, scorev1b1.RolloutSuperseded:
				return fmt.Errorf("rollout %s is %s: there is nothing to %s", r.Name, r.Status.Phase, verb)
			}
			before := r.DeepCopy()
			if err := change(r); err != nil {
				return err
			}
			if err := c.Patch(cmd.Context(), r, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("%s rollout %s: %w", verb, r.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rollout %s: %s requested; `scorectl rollout status` shows it taken up\n", r.Name, verb)
			return nil
		})
}

func newRolloutPinCommand() *cobra.Command {
	var unpin bool
	cmd := onLatestRollout(&cobra.Command{
		Use:   "pin WORKLOAD [REVISION] [-n NS] [--unpin]",
		Short: "Render a Workload from a kept config revision whatever the rollout does (or let it go again)",
		Long: `A pinned Workload is rendered from the revision given (its sha256 digest, or the first 12
hex digits of it: scorectl rollout status and the plans show them) while the pin holds, left
out of its rollout's waves and gates, and carried over to the next rollout. The revision must
be kept (a ConfigMap score-config-<digest> in the control plane's namespace).`,
		Example: `  scorectl rollout pin web -n team-a sha256:4f1c...
  scorectl rollout pin web -n team-a --unpin`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 || unpin == (len(args) == 2) {
				return errors.New("give a WORKLOAD and a REVISION to pin it to, or a WORKLOAD and --unpin")
			}
			return nil
		},
	}, func(cmd *cobra.Command, c client.Client, r *scorev1b1.ConfigRollout, ns string, args []string) error {
		key := ns + "/" + args[0]
		if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, &scorev1b1.Workload{}); err != nil {
			return fmt.Errorf("workload %s: %w", key, err)
		}
		before := r.DeepCopy()
		if unpin {
			delete(r.Spec.Pins, key)
		} else {
			cm := &corev1.ConfigMap{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: r.Namespace, Name: configsource.RevisionConfigMap(args[1])}, cm); err != nil {
				return fmt.Errorf("revision %s is not kept: %w", args[1], err)
			}
			if r.Spec.Pins == nil {
				r.Spec.Pins = map[string]string{}
			}
			r.Spec.Pins[key] = cm.Annotations[configsource.LabelRevision]
		}
		if err := c.Patch(cmd.Context(), r, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("pinning %s: %w", key, err)
		}
		if unpin {
			fmt.Fprintf(cmd.OutOrStdout(), "%s follows rollout %s again\n", key, r.Name)
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "%s is rendered from %s until unpinned\n", key, r.Spec.Pins[key])
		}
		return nil
	})
	cmd.Flags().BoolVar(&unpin, "unpin", false, "let the Workload follow the rollout again")
	return cmd
}
