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
	"github.com/score-orchestrator/score-orchestrator/internal/cli/whyask"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/whyobserve"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/status/why"
)

func newWhyCommand() *cobra.Command {
	var o whyOptions
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
		RunE:    func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.flags.bind(cmd, false)
	cmd.Flags().StringVar(&o.configNamespace, "config-namespace", "score-system", "namespace of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&o.configName, "config-name", "orchestrator-config", "name of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&o.configKey, "config-key", "config.yaml", "key of the document in the ConfigMap")
	cmd.Flags().StringVar(&o.region, "region", "", "the orchestrator's region")
	cmd.Flags().BoolVar(&o.askControlPlane, "ask", false, "ask the control plane (a WorkloadTrace) even when you may read the config: the trace a tenant gets")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the control plane's answer, when it is asked")
	return cmd
}

// whyOptions are scorectl why's flags.
type whyOptions struct {
	flags                       clusterFlags
	configNamespace, configName string
	configKey, region           string
	askControlPlane             bool
	timeout                     time.Duration
}

// run explains the Workload name from the config and its objects, or, with --ask or when the
// user may not read the config, asks the control plane for its trace.
func (o *whyOptions) run(cmd *cobra.Command, name string) error {
	ctx := cmd.Context()
	c, w, err := o.flags.workload(ctx, name)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{}
	if !o.askControlPlane {
		err = c.Get(ctx, client.ObjectKey{Namespace: o.configNamespace, Name: o.configName}, cm)
	}
	switch {
	case o.askControlPlane || apierrors.IsForbidden(err):
		return askWhy(ctx, cmd.OutOrStdout(), c, w, o.timeout, err)
	case err != nil:
		return fmt.Errorf("reading the Orchestrator Config: %w", err)
	}
	doc := []byte(cm.Data[o.configKey])
	cfg, err := orchconfig.Parse(doc)
	if err != nil {
		return fmt.Errorf("the Orchestrator Config in %s/%s is invalid (the orchestrator keeps using its last valid one): %w", o.configNamespace, o.configName, err)
	}
	in, err := o.input(ctx, c, w, cfg, doc)
	if err != nil {
		return err
	}
	in.Observed = whyobserve.Read(ctx, c, in)
	return why.Explain(cmd.OutOrStdout(), in)
}

// input reads what the trace of w is computed from, with the config cfg parsed from doc: its
// claims, plan, exposure and copies, and the clusters published. The claims must be read; a
// plan, an exposure, copies or a status that is missing or hidden from the user is left out.
func (o *whyOptions) input(ctx context.Context, c client.Client, w *scorev1b1.Workload, cfg *orchconfig.Config, doc []byte) (why.Input, error) {
	var claims scorev1b1.ResourceClaimList
	if err := c.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
		return why.Input{}, err
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
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.configNamespace, Name: clusters.StatusConfigMap}, status); err != nil {
		status = nil // no cluster registered, or not readable by this user
	}
	in := why.Input{Workload: w, Config: cfg, ConfigRevision: orchconfig.Revision(doc), Region: o.region, Claims: claims.Items, Plan: plan, Exposure: exposure,
		Clusters: clusters.Decode(status), ConfigSource: o.configNamespace + "/" + o.configName}
	var plans scorev1b1.WorkloadPlanList
	if err := c.List(ctx, &plans, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err == nil {
		in.Copies = why.CopiesOf(w, plans.Items)
	}
	return in, nil
}

// askWhy asks the control plane for the trace of w (a WorkloadTrace), reads the objects in the
// way its answer names with the user's rights, and prints it. denied is why the config was not
// read (nil with --ask).
func askWhy(ctx context.Context, out io.Writer, c client.WithWatch, w *scorev1b1.Workload, timeout time.Duration, denied error) error {
	tr, err := whyask.Trace(ctx, c, w.Namespace, w.Name, timeout)
	if err != nil {
		if denied != nil && apierrors.IsForbidden(err) {
			return fmt.Errorf("your rights let you neither read the Orchestrator Config (%v) nor ask the control plane for the trace: %w", denied, err)
		}
		return err
	}
	why.Print(out, w.Namespace, w.Name, why.Resolve(tr, whyobserve.Probes(ctx, c, tr)))
	fmt.Fprintln(out, "\nAnswered by the control plane (a WorkloadTrace): what concerns this Workload, in its namespace, and nothing of another's.")
	return nil
}
