package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
)

func newRenderCommand() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render -f score.yaml [-f other.yaml | -f DIR ...] --config orchestrator-config.yaml",
		Short: "Show what the platform would do with Score files, without a cluster",
		Long: `Run the orchestrator's, the provisioners' and the runtime's own pipeline offline, with the
functions the controllers call: select the profile and backend, provision each dependency with
its provisioner, build the WorkloadPlan, render the backend's template and prepare every object
as the applier does (namespace, identity labels and annotations, owner reference, apply order).
Prints, per Workload, the decision, the plan, the claims with the objects their provisioners
apply, and the objects the runtime applies, as YAML documents.

Several files (repeat -f) or a directory (every *.yaml and *.yml file below it) render
together, as one app: a provisioner sees the other Workloads of the namespace, as in the
cluster.

The output is byte-identical across runs. What only a cluster knows is shown as a stand-in:
random values in provisioner templates (generated passwords) are deterministic (so rendered
secrets are not usable), secret values are <secret resources.KEY.OUTPUT> markers, UIDs are
<uid of ...> markers, and the pods' secrets-revision label is left out.

Templates referenced as configmap://<ns>/<name>/<key> (manifests, helm charts) are read from
--templates DIR/<key>; kustomize templates referenced as configmap://<ns>/<name> from the
files of the directory DIR/<name>. Each is verified against its digest; oci:// templates are
fetched and verified.

A Workload runs as copies, one per cluster its backend's placement chooses (one, or
placement.clusters N or All; one on the hub without placement): render prints every copy, each
with its plan (NAME, then NAME.1, ...), its claims and their objects on its cluster, and its
runtime manifests, with the overrides of its cluster. Render reads no registration: --member
NAME:k=v,... (repeat it; scorectl cluster list shows the names and labels) gives the clusters
placement chooses from, and each Workload is placed as the orchestrator places it.

--cluster NAME renders only what the member cluster NAME gets: the copy placed there. Without
--member, NAME is the only registered cluster, with the labels of --cluster-labels k=v,...
(none without it). A Workload that would not run on NAME (its backend runs on the hub, its
placement does not match, or its copies go to other members) fails, saying why.

Without --member or --cluster, placement is not decided: a placed backend's Workload shows as
many copies as its placement asks for (one for All, whose number is the fleet's), on no
cluster and with no override.`,
		Example: `  scorectl render -f examples/web-postgres-redis/score.yaml \
    --config .dev/orchestrator-config.yaml --templates config/templates
  scorectl render -f examples/hello/score.yaml --config .dev/orchestrator-config.yaml \
    --templates config/templates --cluster eu-1 --cluster-labels env=prod,region=eu
  scorectl render -f examples/hello/score.yaml --config .dev/orchestrator-config.yaml \
    --templates config/templates --member eu-1:env=prod,region=eu --member us-1:env=prod,region=us`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringArrayVarP(&o.files, "file", "f", nil, "a Score file, or a directory of them; repeat for several")
	cmd.Flags().StringVar(&o.configFile, "config", "", "the Orchestrator Config document")
	cmd.Flags().StringVar(&o.templatesDir, "templates", "", "directory of configmap:// templates, by key")
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "default", "namespace the Workloads would live in")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write to this file instead of standard output")
	cmd.Flags().StringVar(&o.image, "image", "", `the image of every container whose image is "." (score-k8s's --image)`)
	cmd.Flags().StringVar(&o.region, "region", "", "the orchestrator's region, for backends restricted to regions")
	cmd.Flags().BoolVar(&o.plainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP")
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "render only what this member cluster gets: the copy placed there, with its overrides")
	cmd.Flags().StringSliceVar(&o.clusterLabels, "cluster-labels", nil, "the labels of --cluster, k=v,..., when no --member is given (render reads no registration)")
	cmd.Flags().StringArrayVar(&o.members, "member", nil, "a member cluster to place on, NAME:k=v,... (repeatable)")
	return cmd
}

// renderOptions are scorectl render's flags.
type renderOptions struct {
	files                                                      []string
	configFile, templatesDir, namespace, output, region, image string
	plainHTTP                                                  bool
	cluster                                                    string
	clusterLabels, members                                     []string
}

// run renders the Workloads of the Score files offline and writes the results of those that
// render; the error names those that do not.
func (o *renderOptions) run(cmd *cobra.Command) error {
	if len(o.files) == 0 || o.configFile == "" {
		return errors.New("-f and --config are required")
	}
	members, err := renderClusters(o.cluster, o.clusterLabels, o.members)
	if err != nil {
		return err
	}
	workloads, err := readWorkloads(o.files, o.namespace, o.image)
	if err != nil {
		return err
	}
	cfg, err := o.readConfig()
	if err != nil {
		return err
	}
	fetcher := &ocifetch.Fetcher{PlainHTTP: o.plainHTTP}
	results, runErr := offline.Run(cmd.Context(), offline.Input{Workloads: workloads, Config: cfg, Region: o.region, Members: members, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
		return templates.FromDir(cmd.Context(), ref, o.templatesDir, fetcher)
	}})
	if o.cluster != "" {
		runErr = errors.Join(runErr, onlyOn(results, o.cluster))
	}
	if err := o.write(cmd.OutOrStdout(), results); err != nil {
		return err
	}
	return runErr
}

// readConfig reads and parses --config.
func (o *renderOptions) readConfig() (*orchconfig.Config, error) {
	cfgData, err := os.ReadFile(o.configFile)
	if err != nil {
		return nil, err
	}
	cfg, err := orchconfig.Parse(cfgData)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.configFile, err)
	}
	return cfg, nil
}

// write writes the results that rendered to --output, or to stdout.
func (o *renderOptions) write(stdout io.Writer, results []offline.Result) error {
	out := stdout
	if o.output != "" && o.output != "-" {
		f, err := os.Create(o.output)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	for _, res := range results {
		if res.Err != nil {
			continue // in the run's error, which names it
		}
		if err := writeRender(out, res); err != nil {
			return err
		}
	}
	return nil
}

// renderMembers is the one member cluster --cluster names, with its --cluster-labels; none
// without --cluster.
func renderMembers(name string, labels []string) ([]placement.Cluster, error) {
	if name == "" {
		if len(labels) > 0 {
			return nil, errors.New("--cluster-labels are the labels of --cluster NAME: give the name too")
		}
		return nil, nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("--cluster %q: %s", name, errs[0])
	}
	set, err := parseLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("--cluster-labels: %w", err)
	}
	return []placement.Cluster{{Name: name, Labels: set}}, nil
}

// renderClusters are the member clusters placement chooses from: the --member flags, or else
// the one --cluster names, with its --cluster-labels; none without either.
func renderClusters(cluster string, labels, members []string) ([]placement.Cluster, error) {
	if len(members) == 0 {
		return renderMembers(cluster, labels)
	}
	if len(labels) > 0 {
		return nil, errors.New("--cluster-labels are the labels of --cluster without --member: give the labels in --member NAME:k=v,...")
	}
	out, err := parseMembers(members)
	if err != nil {
		return nil, err
	}
	if cluster != "" && !slices.ContainsFunc(out, func(c placement.Cluster) bool { return c.Name == cluster }) {
		return nil, fmt.Errorf("--cluster %s is none of the --member clusters", cluster)
	}
	return out, nil
}

// onlyOn keeps of each Workload the copy placed on cluster, and fails those with none there:
// their backend runs them on the hub, or their copies go to other clusters.
func onlyOn(results []offline.Result, cluster string) error {
	var errs []error
	for i := range results {
		res := &results[i]
		if res.Err != nil {
			continue
		}
		i := slices.IndexFunc(res.Copies, func(c offline.Copy) bool { return c.Cluster == cluster })
		switch {
		case i >= 0:
			res.Copies = res.Copies[i : i+1]
			continue
		case res.Selection.Backend.Placement == nil:
			res.Err = fmt.Errorf("workload %s/%s: backend %s runs it on the hub (it has no placement), not on cluster %s",
				res.Workload.Namespace, res.Workload.Name, res.Selection.Backend.BackendID, cluster)
		default:
			res.Err = fmt.Errorf("workload %s/%s: backend %s places its copies on %s, not on cluster %s",
				res.Workload.Namespace, res.Workload.Name, res.Selection.Backend.BackendID, copiesOn(res.Copies), cluster)
		}
		errs = append(errs, res.Err)
	}
	return errors.Join(errs...)
}

// copiesOn lists the clusters of copies, for an error.
func copiesOn(copies []offline.Copy) string {
	names := make([]string, len(copies))
	for i, c := range copies {
		names[i] = c.Cluster
	}
	return strings.Join(names, ", ")
}

// writeRender prints every copy of a rendered Workload, in placement order.
func writeRender(out io.Writer, res offline.Result) error {
	for i := range res.Copies {
		if err := writeCopy(out, res, i); err != nil {
			return err
		}
	}
	return nil
}

// writeCopy prints one copy: a header saying where it runs, its plan, its claims with the
// objects their provisioners apply, and the objects the runtime applies.
func writeCopy(out io.Writer, res offline.Result, i int) error {
	w, sel, cp := res.Workload, res.Selection, res.Copies[i]
	fmt.Fprintf(out, "# Workload %s/%s: profile %s (by %s), backend %s (runtime %s)%s\n", w.Namespace, w.Name, sel.Profile, sel.ProfileDetail, sel.Backend.BackendID, sel.Backend.RuntimeClass, placedOn(res, i))
	if err := writeDocument(out, withoutStatus(cp.Plan)); err != nil {
		return err
	}
	for _, c := range cp.Claims {
		claim := &scorev1b1.ResourceClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: scorev1b1.GroupVersion.String(), Kind: "ResourceClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: w.Namespace, Labels: map[string]string{scorev1b1.LabelWorkload: w.Name}},
			Spec:       c.Spec,
		}
		fmt.Fprintf(out, "# Claim %s: provisioner %s\n", c.Key, c.Provisioner)
		if err := writeDocument(out, withoutStatus(claim)); err != nil {
			return err
		}
		for _, m := range c.Objects {
			if err := writeDocument(out, m.Object); err != nil {
				return err
			}
		}
	}
	if cp.Project != nil {
		fmt.Fprintln(out, "# Docker containers (the Docker runtime's project; secret values stand as markers)")
		return writeDocument(out, projectDocument(*cp.Project))
	}
	fmt.Fprintln(out, "# Runtime manifests")
	for _, m := range cp.Objects {
		if err := writeDocument(out, m.Object); err != nil {
			return err
		}
	}
	return nil
}

// placedOn says, for the header of copy i, which copy it is when the Workload has several (its
// plan's name, in placement order), the cluster a render placed it on and which of its backend's overrides (by index)
// apply there; nothing more on the hub, and "cluster not decided" for a placed copy without
// members.
func placedOn(res offline.Result, i int) string {
	cp := res.Copies[i]
	var copy string
	if len(res.Copies) > 1 {
		copy = fmt.Sprintf(", copy %s (%d of %d)", cp.Plan.Name, i+1, len(res.Copies))
	}
	switch b := res.Selection.Backend; {
	case cp.Cluster == "" && b.Placement != nil:
		return copy + ", cluster not decided, no override"
	case cp.Cluster == "":
		return copy
	}
	var applied []string
	for _, i := range res.Selection.Backend.Placement.Matching(cp.Labels) {
		applied = append(applied, fmt.Sprintf("overrides[%d]", i))
	}
	if len(applied) == 0 {
		return copy + ", cluster " + cp.Cluster + ", no override"
	}
	return copy + ", cluster " + cp.Cluster + ", " + strings.Join(applied, ", ")
}

// projectDocument is a Docker project as a document: its containers, with the text of their
// files, and the ports the host publishes.
func projectDocument(p compose.Project) map[string]any {
	var containers []map[string]any
	for _, c := range p.Containers {
		var files []map[string]any
		for _, f := range c.Files {
			files = append(files, map[string]any{"target": f.Target, "mode": fmt.Sprintf("%04o", f.Mode), "content": string(f.Content)})
		}
		doc := map[string]any{"name": c.Name, "image": c.Image}
		for key, v := range map[string][]string{"entrypoint": c.Entrypoint, "cmd": c.Cmd, "env": c.Env} {
			if len(v) > 0 {
				doc[key] = v
			}
		}
		if len(files) > 0 {
			doc["files"] = files
		}
		if c.Memory > 0 {
			doc["memory"] = c.Memory
		}
		if c.NanoCPUs > 0 {
			doc["nanoCPUs"] = c.NanoCPUs
		}
		if c.Ready != nil {
			doc["ready"] = c.Ready
		}
		containers = append(containers, doc)
	}
	return map[string]any{"containers": containers, "ports": p.Ports, "hash": p.Hash}
}
