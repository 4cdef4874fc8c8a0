package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/plan"
	"github.com/score-orchestrator/score-orchestrator/internal/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/render"
	"github.com/score-orchestrator/score-orchestrator/internal/scorefile"
)

func newRenderCommand() *cobra.Command {
	var (
		file, configFile, templatesDir, namespace, output, region string
		plainHTTP                                                 bool
	)
	cmd := &cobra.Command{
		Use:   "render -f score.yaml --config orchestrator-config.yaml",
		Short: "Show what the platform would do with a Score file, without a cluster",
		Long: `Run the orchestrator's, the provisioners' and the runtime's own pipeline offline: select the
profile and backend, provision each dependency with its template provisioner, build the
WorkloadPlan and render the backend's template. Prints the decision, the plan, the claims,
the provisioners' manifests and the runtime's manifests as YAML documents.

The output is byte-identical across runs: random values in provisioner templates (generated
passwords) are replaced by deterministic stand-ins, so rendered secrets are not usable.
Templates referenced as configmap://<ns>/<name>/<key> (manifests, helm charts) are read from
--templates DIR/<key>; kustomize templates referenced as configmap://<ns>/<name> from the
files of the directory DIR/<name>. Each is verified against its digest; oci:// templates are
fetched and verified.`,
		Example: `  scorectl render -f examples/web-postgres-redis/score.yaml \
    --config .dev/orchestrator-config.yaml --templates config/templates`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" || configFile == "" {
				return errors.New("-f and --config are required")
			}
			w, err := readWorkload(file, namespace)
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
			res, err := offline.Run(offline.Input{Workload: w, Config: cfg, Region: region, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
				return readTemplate(cmd.Context(), ref, templatesDir, fetcher)
			}})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			return writeRender(out, w, res)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the Score file")
	cmd.Flags().StringVar(&configFile, "config", "", "the Orchestrator Config document")
	cmd.Flags().StringVar(&templatesDir, "templates", "", "directory of configmap:// templates, by key")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace the Workload would live in")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	cmd.Flags().StringVar(&region, "region", "", "the orchestrator's region, for backends restricted to regions")
	cmd.Flags().BoolVar(&plainHTTP, "oci-plain-http", false, "reach OCI registries over plain HTTP")
	return cmd
}

// readWorkload converts the first document of a Score file as a Workload of generation 1.
func readWorkload(file, namespace string) (*scorev1b1.Workload, error) {
	results, err := scorefile.ReadFile(file, namespace)
	if err != nil {
		return nil, err
	}
	w := results[0].Workload
	w.Generation = 1
	return w, nil
}

func readTemplate(ctx context.Context, ref scorev1b1.TemplateRef, dir string, fetcher *ocifetch.Fetcher) (render.Template, error) {
	parsed, err := orchconfig.ParseRef(ref.Ref)
	if err != nil {
		return render.Template{}, err
	}
	if parsed.Scheme == orchconfig.RefOCI {
		r, err := fetcher.Fetch(ctx, ref.Ref, plan.LayerMediaType(ref.Kind))
		if err != nil {
			return render.Template{}, err
		}
		return plan.FromLayer(ref.Kind, r.Data)
	}
	local := parsed.Key
	if ref.Kind == scorev1b1.TemplateKustomize {
		local = parsed.Name
	}
	if dir == "" {
		return render.Template{}, fmt.Errorf("%s is a ConfigMap template: pass --templates DIR holding %s", ref.Ref, local)
	}
	path := filepath.Join(dir, local)
	var tpl render.Template
	if ref.Kind == scorev1b1.TemplateKustomize {
		tpl.Files, err = readFlatDir(path)
	} else {
		tpl.Data, err = os.ReadFile(path)
	}
	if err != nil {
		return render.Template{}, err
	}
	if got := tpl.Digest(); ref.Digest != "" && got != ref.Digest {
		return render.Template{}, fmt.Errorf("%s is %s, the config pins %s", path, got, ref.Digest)
	}
	return tpl, nil
}

// readFlatDir reads a directory's regular files, not its subdirectories: what
// kubectl create configmap --from-file=DIR puts in a ConfigMap.
func readFlatDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func writeRender(out io.Writer, w *scorev1b1.Workload, res offline.Result) error {
	sel := res.Selection
	fmt.Fprintf(out, "# Workload %s/%s: profile %s (by %s), backend %s (runtime %s)\n", w.Namespace, w.Name, sel.Profile, sel.ProfileDetail, sel.Backend.BackendID, sel.Backend.RuntimeClass)
	p := &scorev1b1.WorkloadPlan{
		TypeMeta:   metav1.TypeMeta{APIVersion: scorev1b1.GroupVersion.String(), Kind: "WorkloadPlan"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace},
		Spec:       *res.Plan,
	}
	if err := writeDocument(out, withoutStatus(p)); err != nil {
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
		for _, m := range c.Manifests {
			if err := writeDocument(out, m.Object); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(out, "# Runtime manifests")
	for _, m := range res.Manifests {
		if err := writeDocument(out, m.Object); err != nil {
			return err
		}
	}
	return nil
}
