package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/render"
	"github.com/score-orchestrator/score-orchestrator/internal/templates"
)

func newRenderCommand() *cobra.Command {
	var (
		files                                                      []string
		configFile, templatesDir, namespace, output, region, image string
		plainHTTP                                                  bool
	)
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
fetched and verified.`,
		Example: `  scorectl render -f examples/web-postgres-redis/score.yaml \
    --config .dev/orchestrator-config.yaml --templates config/templates`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 || configFile == "" {
				return errors.New("-f and --config are required")
			}
			workloads, err := readWorkloads(files, namespace, image)
			if err != nil {
				return err
			}
			cfgData, err := os.ReadFile(configFile)
			if err != nil {
				return err
			}
			cfg, err := orchconfig.Parse(cfgData)
			if err != nil {
				return fmt.Errorf("%s: %w", configFile, err)
			}
			fetcher := &ocifetch.Fetcher{PlainHTTP: plainHTTP}
			results, runErr := offline.Run(cmd.Context(), offline.Input{Workloads: workloads, Config: cfg, Region: region, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
				return templates.FromDir(cmd.Context(), ref, templatesDir, fetcher)
			}})
			out := cmd.OutOrStdout()
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			for _, res := range results {
				if res.Err != nil {
					continue // in runErr, which names it
				}
				if err := writeRender(out, res); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "a Score file, or a directory of them; repeat for several")
	cmd.Flags().StringVar(&configFile, "config", "", "the Orchestrator Config document")
	cmd.Flags().StringVar(&templatesDir, "templates", "", "directory of configmap:// templates, by key")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace the Workloads would live in")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	cmd.Flags().StringVar(&image, "image", "", `the image of every container whose image is "." (score-k8s's --image)`)
	cmd.Flags().StringVar(&region, "region", "", "the orchestrator's region, for backends restricted to regions")
	cmd.Flags().BoolVar(&plainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP")
	return cmd
}

func writeRender(out io.Writer, res offline.Result) error {
	w, sel := res.Workload, res.Selection
	fmt.Fprintf(out, "# Workload %s/%s: profile %s (by %s), backend %s (runtime %s)\n", w.Namespace, w.Name, sel.Profile, sel.ProfileDetail, sel.Backend.BackendID, sel.Backend.RuntimeClass)
	if err := writeDocument(out, withoutStatus(res.Plan)); err != nil {
		return err
	}
	for _, c := range res.Claims {
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
	fmt.Fprintln(out, "# Runtime manifests")
	for _, m := range res.Objects {
		if err := writeDocument(out, m.Object); err != nil {
			return err
		}
	}
	return nil
}
