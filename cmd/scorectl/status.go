package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newStatusCommand() *cobra.Command {
	var (
		flags  clusterFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the abstract status of Workloads",
		Long: "Show each Workload's readiness, the reason that blocks it, its endpoint and its dependencies. " +
			"-o wide adds the cluster each runs on and, for a Workload on several clusters, a row per copy with its cluster and endpoint.",
		Example: `  scorectl status -n score-demo
  scorectl status orders -n score-demo -o yaml
  scorectl status -n score-demo -o wide`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := flags.connect()
			if err != nil {
				return err
			}
			var items []scorev1b1.Workload
			if len(args) == 1 {
				w := &scorev1b1.Workload{}
				if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, w); err != nil {
					return err
				}
				items = []scorev1b1.Workload{*w}
			} else {
				var list scorev1b1.WorkloadList
				if err := c.List(cmd.Context(), &list, client.InNamespace(ns)); err != nil {
					return err
				}
				items = list.Items
			}
			if output == "wide" {
				copies, err := readCopies(cmd.Context(), c, ns, items)
				if err != nil {
					return err
				}
				return printWide(cmd.OutOrStdout(), items, copies)
			}
			return printStatus(cmd.OutOrStdout(), items, output)
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, yaml or json")
	return cmd
}

type statusView struct {
	Name      string                   `json:"name"`
	Namespace string                   `json:"namespace"`
	Status    scorev1b1.WorkloadStatus `json:"status"`
}

func printStatus(out io.Writer, items []scorev1b1.Workload, output string) error {
	views := make([]statusView, len(items))
	for i, w := range items {
		views[i] = statusView{Name: w.Name, Namespace: w.Namespace, Status: w.Status}
	}
	switch output {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(views)
	case "yaml":
		b, err := yaml.Marshal(views)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "table":
	default:
		return fmt.Errorf("-o must be table, yaml or json")
	}
	tw := tabwriter.NewWriter(termtext.NewWriter(out), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tREASON\tENDPOINT\tDEPENDENCIES\tMESSAGE")
	for _, w := range items {
		ready, reason, message, endpoint, bound := row(w)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\n", w.Name, ready, reason, endpoint, bound, len(w.Spec.Resources), message)
	}
	return tw.Flush()
}

// row is what the table shows of a Workload's status: Ready's status, reason and message, the
// endpoint ("-" without one) and how many of its claims are bound.
func row(w scorev1b1.Workload) (ready, reason, message, endpoint string, bound int) {
	ready, endpoint = "Unknown", "-"
	if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c != nil {
		ready, reason, message = string(c.Status), termtext.Escape(c.Reason), termtext.Escape(c.Message)
	}
	if w.Status.Endpoint != nil {
		endpoint = termtext.Escape(*w.Status.Endpoint)
	}
	for _, c := range w.Status.Claims {
		if c.Phase == scorev1b1.ClaimPhaseBound {
			bound++
		}
	}
	return ready, reason, message, endpoint, bound
}
