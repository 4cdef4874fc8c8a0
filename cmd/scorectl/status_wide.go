package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// copyView is one copy of a Workload as -o wide shows it: its plan (the Workload's name, or
// NAME.N on several clusters), the cluster it is placed on, the runtime's phase and reason,
// its exposure's first endpoint.
type copyView struct {
	Name, Cluster, Phase, Reason, Endpoint, Message string
	slot                                            int
}

// readCopies reads the plans and exposures of the Workloads' namespace, by Workload: every
// copy's cluster and endpoint.
func readCopies(ctx context.Context, c client.Client, ns string, items []scorev1b1.Workload) (map[string][]copyView, error) {
	var plans scorev1b1.WorkloadPlanList
	if err := c.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the plans (-o wide reads them): %w", err)
	}
	var exposures scorev1b1.WorkloadExposureList
	if err := c.List(ctx, &exposures, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the exposures (-o wide reads them): %w", err)
	}
	uids := map[string]string{}
	for _, w := range items {
		uids[w.Name] = string(w.UID)
	}
	endpoints := map[string]string{}
	for _, e := range exposures.Items {
		if len(e.Status.Exposures) > 0 && e.Spec.WorkloadRef.UID == uids[e.Spec.WorkloadRef.Name] {
			endpoints[e.Name] = e.Status.Exposures[0].URL
		}
	}
	out := map[string][]copyView{}
	for _, p := range plans.Items {
		w := p.Spec.WorkloadRef.Name
		slot, ok := planner.CopySlot(w, p.Name)
		if !ok || p.Spec.WorkloadRef.UID != uids[w] {
			continue
		}
		v := copyView{Name: p.Name, Cluster: cmp.Or(p.Spec.Cluster, "hub"), Phase: cmp.Or(string(p.Status.Phase), "Pending"), Reason: string(p.Status.Reason),
			Endpoint: cmp.Or(endpoints[p.Name], "-"), slot: slot}
		if a := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); a != nil && a.Status != metav1.ConditionTrue {
			v.Message = a.Message
		}
		out[w] = append(out[w], v)
	}
	for _, copies := range out {
		slices.SortFunc(copies, func(a, b copyView) int { return a.slot - b.slot })
	}
	return out, nil
}

// printWide is the table with the cluster each Workload runs on; a Workload on several
// clusters has a row per copy under it, with the copy's cluster, phase and endpoint.
func printWide(out io.Writer, items []scorev1b1.Workload, copies map[string][]copyView) error {
	tw := tabwriter.NewWriter(termtext.NewWriter(out), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tREASON\tCLUSTER\tENDPOINT\tDEPENDENCIES\tMESSAGE")
	for _, w := range items {
		ready, reason, message, endpoint, bound := row(w)
		// The cluster is the one whose copy's endpoint the Workload shows (the first in
		// placement order), else its own plan's.
		cluster := "-"
		for _, c := range copies[w.Name] {
			if c.slot == 0 || c.Endpoint == endpoint {
				cluster = c.Cluster
			}
			if c.Endpoint == endpoint {
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", w.Name, ready, reason, cluster, endpoint, bound, len(w.Spec.Resources), message)
		if len(copies[w.Name]) < 2 {
			continue
		}
		for _, c := range copies[w.Name] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t-\t%s\n", c.Name, c.Phase, termtext.Escape(cmp.Or(c.Reason, "-")), c.Cluster, termtext.Escape(c.Endpoint), termtext.Escape(c.Message))
		}
	}
	return tw.Flush()
}
