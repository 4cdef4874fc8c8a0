package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/why"
	"github.com/score-orchestrator/score-orchestrator/internal/why/ask"
	"github.com/score-orchestrator/score-orchestrator/internal/why/observe"
)

func newWhyCommand() *cobra.Command {
	var (
		flags                       clusterFlags
		configNamespace, configName string
		configKey, region           string
		askControlPlane             bool
		timeout                     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "why NAME",
		Short: "Explain the platform's decisions for a Workload and what blocks it",
		Long: `Recompute, with the orchestrator's own selection code and the current Orchestrator Config,
which profile the Workload gets and why, every backend candidate with the constraint that
filtered it or its rank, the provisioner chosen for each dependency, the one thing that
currently keeps the Workload from Ready, and the objects in the way in their own words: a
dependency and its provisioner's message, a StatefulSet with no ready replica and its pod's
waiting reason, a Job that failed and its last condition, a route no Gateway accepted and its
Gateway, a quota at its limit, an output not published.

For platform engineers it reads the internal objects, the config and, bounded, the objects not
healthy (a Secret only for whether it exists). A user who may not read the config (a team bound
to score-workload-editor) gets the trace from the control plane instead: scorectl why asks for
it with a WorkloadTrace in the Workload's namespace, which the orchestrator answers with what
concerns that Workload only, prints the answer and deletes the request (--ask does so for
anyone). Either way the objects in the way are read with your own rights, and what they do not
let it read, it says. Nothing else is written.`,
		Example: `  scorectl why orders -n score-demo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, w, err := flags.workload(ctx, args[0])
			if err != nil {
				return err
			}
			cm := &corev1.ConfigMap{}
			if !askControlPlane {
				err = c.Get(ctx, client.ObjectKey{Namespace: configNamespace, Name: configName}, cm)
			}
			switch {
			case askControlPlane || apierrors.IsForbidden(err):
				return askWhy(ctx, cmd.OutOrStdout(), c, w, timeout, err)
			case err != nil:
				return fmt.Errorf("reading the Orchestrator Config: %w", err)
			}
			doc := []byte(cm.Data[configKey])
			cfg, err := orchconfig.Parse(doc)
			if err != nil {
				return fmt.Errorf("the Orchestrator Config in %s/%s is invalid (the orchestrator keeps using its last valid one): %w", configNamespace, configName, err)
			}
			var claims scorev1b1.ResourceClaimList
			if err := c.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
				return err
			}
			plan := &scorev1b1.WorkloadPlan{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), plan); err != nil {
				plan = nil
			}
			exposure := &scorev1b1.WorkloadExposure{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), exposure); err != nil {
				exposure = nil
			}
			status := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: configNamespace, Name: clusters.StatusConfigMap}, status); err != nil {
				status = nil // no cluster registered, or not readable by this user
			}
			in := why.Input{Workload: w, Config: cfg, ConfigRevision: orchconfig.Revision(doc), Region: region, Claims: claims.Items, Plan: plan, Exposure: exposure,
				Clusters: clusters.Decode(status), ConfigSource: configNamespace + "/" + configName}
			var plans scorev1b1.WorkloadPlanList
			if err := c.List(ctx, &plans, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err == nil {
				in.Copies = why.CopiesOf(w, plans.Items)
			}
			in.Observed = observe.Read(ctx, c, in)
			return why.Explain(cmd.OutOrStdout(), in)
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVar(&configNamespace, "config-namespace", "score-system", "namespace of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&configName, "config-name", "orchestrator-config", "name of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&configKey, "config-key", "config.yaml", "key of the document in the ConfigMap")
	cmd.Flags().StringVar(&region, "region", "", "the orchestrator's region")
	cmd.Flags().BoolVar(&askControlPlane, "ask", false, "ask the control plane (a WorkloadTrace) even when you may read the config: the trace a tenant gets")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the control plane's answer, when it is asked")
	return cmd
}

// askWhy asks the control plane for the trace of w (a WorkloadTrace), reads the objects in the
// way its answer names with the user's rights, and prints it. denied is why the config was not
// read (nil with --ask).
func askWhy(ctx context.Context, out io.Writer, c client.WithWatch, w *scorev1b1.Workload, timeout time.Duration, denied error) error {
	tr, err := ask.Trace(ctx, c, w.Namespace, w.Name, timeout)
	if err != nil {
		if denied != nil && apierrors.IsForbidden(err) {
			return fmt.Errorf("your rights let you neither read the Orchestrator Config (%v) nor ask the control plane for the trace: %w", denied, err)
		}
		return err
	}
	why.Print(out, w.Namespace, w.Name, why.Resolve(tr, observe.Probes(ctx, c, tr)))
	fmt.Fprintln(out, "\nAnswered by the control plane (a WorkloadTrace): what concerns this Workload, in its namespace, and nothing of another's.")
	return nil
}
