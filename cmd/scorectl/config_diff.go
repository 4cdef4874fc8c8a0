package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/configdiff"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/rollout"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// errRisky is a diff with a risky change, under --fail-on-risky.
var errRisky = errors.New("the change is risky")

func newConfigDiffCommand() *cobra.Command {
	var o configDiffOptions
	cmd := &cobra.Command{
		Use:   "diff OLD NEW (--workloads DIR | --cluster)",
		Short: "Show what changing the Orchestrator Config would do to each Workload",
		Long: `Run the offline pipeline (as scorectl render does) for each Workload with the old and with the
new config, and show per Workload what would change: the profile and backend, the claims (a
claim replaced is a new instance with new data and credentials; a claim released, or another
provisioner for it, is flagged risky too), and the objects that would be created, changed or
pruned. Nothing is written to a cluster.

Workloads come from the Score files under --workloads DIR, or from the cluster with
--cluster (read only). configmap:// templates are read from --templates DIR (and
--old-templates DIR for the old config, when its templates differ) and verified against
their digests. With --fail-on-risky the exit code is 1 when any change is risky, for CI.

Backends that place on member clusters are placed as the orchestrator places them, and each
Workload's diff names its cluster and the values of its plan that change there (a placement
override's), copy by copy for a Workload on several clusters: with --cluster, among the
clusters the controllers see (the ConfigMap score-system/score-clusters), each copy kept on
the cluster its plan names while it matches; with --workloads, among the clusters given with
--member NAME:k=v,... (repeat it; none given: placement is not decided, no override applies).`,
		Example: `  scorectl config diff main/orchestrator-config.yaml pr/orchestrator-config.yaml \
    --workloads examples --templates pr/templates --old-templates main/templates
  scorectl config diff old.yaml new.yaml --cluster --templates config/templates -o json
  scorectl config diff old.yaml new.yaml --workloads examples --templates config/templates \
    --member eu-1:env=prod,region=eu --member us-1:env=prod,region=us`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0], args[1]) },
	}
	o.flags.bind(cmd, false)
	cmd.Flags().StringVar(&o.workloadsDir, "workloads", "", "directory of Score files (searched recursively)")
	cmd.Flags().BoolVar(&o.fromCluster, "cluster", false, "read the Workloads from the cluster (read only)")
	cmd.Flags().StringVar(&o.newTempl, "templates", "", "directory of configmap:// templates for the new config")
	cmd.Flags().StringVar(&o.oldTempl, "old-templates", "", "directory of configmap:// templates for the old config (default: --templates)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "text or json")
	cmd.Flags().BoolVar(&o.failOnRisky, "fail-on-risky", false, "exit 1 when a change is risky")
	cmd.Flags().StringArrayVar(&o.memberFlags, "member", nil, "a member cluster to place on, NAME:k=v,... (repeatable; with --workloads)")
	return cmd
}

// configDiffOptions are scorectl config diff's flags.
type configDiffOptions struct {
	flags                            clusterFlags
	workloadsDir, newTempl, oldTempl string
	output                           string
	fromCluster, failOnRisky         bool
	memberFlags                      []string
}

// run renders the Workloads under the configs at oldPath and newPath, prints what changes for
// each and in which wave a rollout would change it, and fails on a risky change with
// --fail-on-risky.
func (o *configDiffOptions) run(cmd *cobra.Command, oldPath, newPath string) error {
	if (o.workloadsDir == "") == !o.fromCluster {
		return errors.New("give exactly one of --workloads DIR and --cluster")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("-o must be text or json, not %q", o.output)
	}
	if o.oldTempl == "" {
		o.oldTempl = o.newTempl
	}
	before, err := readConfig(oldPath)
	if err != nil {
		return err
	}
	after, err := readConfig(newPath)
	if err != nil {
		return err
	}
	if o.fromCluster && len(o.memberFlags) > 0 {
		return errors.New("--member describes clusters for --workloads; with --cluster the registered clusters are read")
	}
	workloads, fleet, where, err := o.readFleet(cmd.Context(), after)
	if err != nil {
		return err
	}
	diffs, err := o.compare(cmd.Context(), workloads, where, before, after)
	if err != nil {
		return err
	}
	fleet.Workloads = workloads
	waves, err := wavesOf(fleet, before, after, diffs)
	if err != nil {
		return err
	}
	if err := printDiffs(cmd.OutOrStdout(), diffs, waves, o.output); err != nil {
		return err
	}
	for _, d := range diffs {
		if o.failOnRisky && d.Risky() {
			return errRisky
		}
	}
	return nil
}

// readFleet reads the Workloads and where placement decides from: from the cluster, with the
// fleet a rollout of the new config would move through; or from the Score files, among the
// clusters --member gives.
func (o *configDiffOptions) readFleet(ctx context.Context, after *orchconfig.Config) ([]*scorev1b1.Workload, rollout.Fleet, placedWhere, error) {
	var workloads []*scorev1b1.Workload
	var fleet rollout.Fleet
	var where placedWhere
	var err error
	if o.fromCluster {
		workloads, err = clusterWorkloads(ctx, &o.flags)
		if err == nil {
			fleet, err = clusterFleet(ctx, &o.flags, after.Rollout)
		}
		if err == nil {
			where, err = clusterPlacement(ctx, &o.flags)
		}
	} else {
		workloads, err = readWorkloads([]string{o.workloadsDir}, o.flags.namespace, "")
		if err == nil {
			where.members, err = parseMembers(o.memberFlags)
		}
	}
	return workloads, fleet, where, err
}

// compare renders the Workloads under each config, each with its templates, and compares each
// Workload's results.
func (o *configDiffOptions) compare(ctx context.Context, workloads []*scorev1b1.Workload, where placedWhere, before, after *orchconfig.Config) ([]configdiff.Workload, error) {
	fetcher := &ocifetch.Fetcher{}
	// Each config renders every Workload together, as one app.
	run := func(cfg *orchconfig.Config, dir string) ([]offline.Result, error) {
		return offline.Run(ctx, offline.Input{Workloads: workloads, Config: cfg, Members: where.members, Placed: where.placed, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
			return templates.FromDir(ctx, ref, dir, fetcher)
		}})
	}
	olds, err := run(before, o.oldTempl)
	if err != nil && len(olds) == 0 {
		return nil, err
	}
	news, err := run(after, o.newTempl)
	if err != nil && len(news) == 0 {
		return nil, err
	}
	diffs := make([]configdiff.Workload, 0, len(workloads))
	for i, w := range workloads {
		diffs = append(diffs, configdiff.Compare(w.Namespace+"/"+w.Name, configdiff.Side{Result: olds[i], Err: olds[i].Err}, configdiff.Side{Result: news[i], Err: news[i].Err}))
	}
	return diffs, nil
}

// placedWhere is what placement decides from in a diff: the member clusters, and where each
// Workload's copies run now.
type placedWhere struct {
	members []placement.Cluster
	placed  func(namespace, name string) []placement.Copy
}

// parseMembers reads --member NAME:k=v,... flags; none leaves placement undecided.
func parseMembers(flags []string) ([]placement.Cluster, error) {
	var out []placement.Cluster
	for _, f := range flags {
		name, labels, _ := strings.Cut(f, ":")
		var list []string
		if labels != "" {
			list = strings.Split(labels, ",")
		}
		m, err := renderMembers(name, list)
		if err != nil {
			return nil, fmt.Errorf("--member %q: %w", f, err)
		}
		out = append(out, m...)
	}
	return out, nil
}

// clusterPlacement reads the registered clusters as the orchestrator does (names and labels
// from the ConfigMap the runtime publishes, never the registrations) and where each plan is
// placed.
func clusterPlacement(ctx context.Context, flags *clusterFlags) (placedWhere, error) {
	c, _, err := flags.connect()
	if err != nil {
		return placedWhere{}, err
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: clusters.StatusConfigMap}, cm); client.IgnoreNotFound(err) != nil {
		return placedWhere{}, fmt.Errorf("reading the registered clusters: %w", err)
	}
	var plans scorev1b1.WorkloadPlanList
	var opts []client.ListOption
	if flags.namespace != "" {
		opts = append(opts, client.InNamespace(flags.namespace))
	}
	if err := c.List(ctx, &plans, opts...); err != nil {
		return placedWhere{}, fmt.Errorf("reading where the plans are placed: %w", err)
	}
	placed := func(namespace, name string) []placement.Copy {
		var out []placement.Copy
		for _, p := range plans.Items {
			// A plan being deleted is a copy being removed, as the orchestrator counts them.
			if slot, ok := planner.CopySlot(name, p.Name); ok && p.Namespace == namespace && p.DeletionTimestamp.IsZero() {
				out = append(out, placement.Copy{Slot: slot, Cluster: p.Spec.Cluster})
			}
		}
		return out
	}
	return placedWhere{members: clusters.Placeable(clusters.Decode(cm)), placed: placed}, nil
}

func readConfig(path string) (*orchconfig.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := orchconfig.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// clusterWorkloads lists the Workloads of the namespace given with -n, or of every namespace.
func clusterWorkloads(ctx context.Context, flags *clusterFlags) ([]*scorev1b1.Workload, error) {
	explicit := flags.namespace
	c, _, err := flags.connect()
	if err != nil {
		return nil, err
	}
	var list scorev1b1.WorkloadList
	var opts []client.ListOption
	if explicit != "" {
		opts = append(opts, client.InNamespace(explicit))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, err
	}
	out := make([]*scorev1b1.Workload, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// wavesOf sets the wave of each affected Workload under the new config's rollout policy, as
// the orchestrator would assign them (pinned Workloads are in none), and returns how many
// waves there are (0 without a policy).
func wavesOf(fleet rollout.Fleet, before, after *orchconfig.Config, diffs []configdiff.Workload) (int, error) {
	if after.Rollout == nil {
		return 0, nil
	}
	from, err := selection.New(before)
	if err != nil {
		return 0, err
	}
	to, err := selection.New(after)
	if err != nil {
		return 0, err
	}
	_, waves := rollout.Waves(fleet, rollout.Revision{Config: before, Selector: from}, rollout.Revision{Config: after, Selector: to})
	for i := range diffs {
		diffs[i].Wave = rollout.WaveOf(waves, diffs[i].Name) + 1
	}
	return len(waves), nil
}

// clusterFleet reads what the waves depend on besides the Workloads: the pins of the latest
// rollout (none when there is no rollout or the user may not read them) and, when the policy
// orders waves by a namespace label, the namespaces' labels.
func clusterFleet(ctx context.Context, flags *clusterFlags, policy *orchconfig.RolloutPolicy) (rollout.Fleet, error) {
	c, _, err := flags.connect()
	if err != nil {
		return rollout.Fleet{}, err
	}
	var fleet rollout.Fleet
	if r, err := latestRollout(ctx, c, "score-system"); err == nil {
		fleet.Pins = r.Spec.Pins
	}
	if policy == nil || policy.OrderBy == nil || policy.OrderBy.NamespaceLabel == "" {
		return fleet, nil
	}
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces); err != nil {
		return rollout.Fleet{}, fmt.Errorf("the waves are ordered by a namespace label: reading the namespaces: %w", err)
	}
	fleet.NamespaceLabels = map[string]map[string]string{}
	for _, ns := range namespaces.Items {
		fleet.NamespaceLabels[ns.Name] = ns.Labels
	}
	return fleet, nil
}

func printDiffs(w io.Writer, diffs []configdiff.Workload, waves int, output string) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(diffs)
	}
	risky, changed := 0, 0
	for _, d := range diffs {
		name := d.Name
		if d.Cluster != "" {
			name += " on cluster " + d.Cluster
		}
		if d.Empty() {
			fmt.Fprintf(w, "%s: no change\n", name)
			continue
		}
		changed++
		mark := ""
		if d.Risky() {
			risky++
			mark = " (RISKY)"
		}
		if d.Wave > 0 {
			mark += fmt.Sprintf(" (wave %d of %d)", d.Wave, waves)
		}
		fmt.Fprintf(w, "%s%s:\n", name, mark)
		for _, c := range d.Changes {
			flag := "  "
			if c.Risky {
				flag = "! "
			}
			fmt.Fprintf(w, "  %s%s\n", flag, termtext.Escape(c.What))
		}
		for _, o := range d.Objects {
			fmt.Fprintf(w, "    %-8s %s\n", o.Action, termtext.Escape(o.Object))
		}
	}
	fmt.Fprintf(w, "%d workloads, %d would change, %d risky\n", len(diffs), changed, risky)
	return nil
}
