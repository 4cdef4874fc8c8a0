// Package offline runs the orchestrator's, the provisioner's and the runtime's pure pipeline
// without a cluster, for scorectl render: selection, claims provisioned by their template
// provisioners (in dependency order), the plan, and the manifests the runtime would apply.
// Random values in provisioner templates are replaced by deterministic ones, so the output
// is byte-identical across runs; they are not usable secrets.
package offline

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/render"
	"github.com/score-orchestrator/score-orchestrator/internal/runnable"
	"github.com/score-orchestrator/score-orchestrator/internal/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
)

// Input is what an offline run needs.
type Input struct {
	// Workload is the converted Workload, with its namespace set.
	Workload *scorev1b1.Workload
	Config   *orchconfig.Config
	// Template returns a backend template's content by its ref, verified against its digest.
	Template func(scorev1b1.TemplateRef) (render.Template, error)
	Region   string
}

// Claim is one provisioned claim.
type Claim struct {
	Key, Name, Provisioner, Instance string
	Spec                             scorev1b1.ResourceClaimSpec
	Outputs                          map[string]any
	SecretKeys                       []string
	Manifests                        []*unstructured.Unstructured
}

// Result is everything an offline run decided and produced.
type Result struct {
	Selection selection.Result
	Claims    []Claim
	Plan      *scorev1b1.WorkloadPlanSpec
	Manifests []*unstructured.Unstructured
}

// Run runs the pipeline. Inputs the orchestrator would report as SpecInvalid, a failed
// selection, a claim no provisioner serves or an unresolved output are errors here.
func Run(in Input) (Result, error) {
	w := in.Workload
	if problems := planner.CheckInputs(w); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return Result{}, fmt.Errorf("the workload is invalid:\n  %s", strings.Join(msgs, "\n  "))
	}
	sel, err := selection.New(in.Config)
	if err != nil {
		return Result{}, err
	}
	res := Result{Selection: sel.Select(selection.Input{Workload: w, Region: in.Region})}
	if !res.Selection.OK {
		return res, fmt.Errorf("selection: %s", res.Selection.Message)
	}

	views := map[string]planner.ClaimView{}
	for len(views) < len(w.Spec.Resources) {
		desired, err := planner.DesiredClaims(planner.ClaimsInput{Workload: w, Provisioners: in.Config.Provisioners, Classes: in.Config.Classes, Observed: views})
		if err != nil {
			return res, err
		}
		progressed := false
		for _, d := range desired {
			if _, done := views[d.Key]; done || len(d.WaitingFor) > 0 {
				continue
			}
			c, err := provision(in, d)
			if err != nil {
				return res, fmt.Errorf("resource %s: %w", d.Key, err)
			}
			res.Claims = append(res.Claims, c)
			views[d.Key] = planner.ClaimView{Name: c.Name, Phase: scorev1b1.ClaimPhaseBound, Ready: true, Outputs: c.Outputs,
				SecretName: secretName(c), SecretKeys: c.SecretKeys, Instance: c.Instance}
			progressed = true
		}
		if !progressed {
			return res, fmt.Errorf("the resources' params wait for each other")
		}
	}
	sort.Slice(res.Claims, func(i, j int) bool { return res.Claims[i].Key < res.Claims[j].Key })

	built, err := planner.BuildPlan(planner.PlanInput{Workload: w, Profile: res.Selection.Profile, Backend: *res.Selection.Backend, Claims: views})
	if err != nil {
		return res, err
	}
	if len(built.Unresolved) > 0 {
		return res, fmt.Errorf("outputs not provided by the provisioners: %s", strings.Join(built.Unresolved, ", "))
	}
	res.Plan = built.Spec
	tpl, err := in.Template(built.Spec.Template)
	if err != nil {
		return res, fmt.Errorf("template %s: %w", built.Spec.Template.Ref, err)
	}
	res.Manifests, err = render.Render(render.Input{Workload: w.Name, Namespace: w.Namespace, Spec: built.Spec, Template: tpl, SecretValue: secretMarker})
	// The runtime applies every object in the Workload's namespace.
	for _, m := range res.Manifests {
		if m.GetNamespace() == "" {
			m.SetNamespace(w.Namespace)
		}
	}
	return res, err
}

func secretName(c Claim) string {
	if len(c.SecretKeys) == 0 {
		return ""
	}
	return c.Name + "-outputs"
}

// provision runs a claim's template provisioner as the provisioner controller does.
func provision(in Input, d planner.DesiredClaim) (Claim, error) {
	params, err := values.Object(d.Spec.Params)
	if err != nil {
		return Claim{}, err
	}
	served, message, ok := provisionermatch.Resolve(provisionermatch.Input{Classes: in.Config.Classes, Provisioners: in.Config.Provisioners,
		Claim: provisionermatch.Claim{Type: d.Spec.Type, Class: d.Spec.Class, ID: d.Spec.ID, Params: params}})
	if !ok {
		return Claim{}, errors.New(message)
	}
	def, params := in.Config.Provisioners[served.Index], served.Params
	isRunnable, isHelm := strings.HasPrefix(def.URI, "runnable://"), strings.HasPrefix(def.URI, "helm://")
	if !strings.HasPrefix(def.URI, "template://") && !isRunnable && !isHelm {
		return Claim{}, fmt.Errorf("provisioner %s cannot run offline: only template://, runnable:// and helm:// provisioners can", def.URI)
	}
	w := in.Workload
	id := provisioner.NewIdentity(w.Namespace, w.Name, d.Key, d.Spec.Type, d.Spec.Class, d.Spec.ID)
	metadata, err := values.Object(d.Spec.Metadata)
	if err != nil {
		return Claim{}, err
	}
	data := provisioner.Data{
		Guid: id.Guid(), Uid: id.Uid(), Type: id.Type, Class: id.Class, Id: id.ID,
		Params: params, Metadata: metadata, State: map[string]any{}, Shared: map[string]any{},
		SourceWorkload: w.Name, Namespace: w.Namespace, Instance: id.Hash(),
		WorkloadMetadata: planner.Metadata(w), WorkloadServices: map[string]provisioner.NetworkService{w.Name: provisioner.ServiceOf(w.Name, w.Spec.Service)},
	}
	if served.Class != "" {
		data.Class = served.Class // as the provisioner controller does
	}
	funcs := tplfuncs.Deterministic(tplfuncs.Provisioner(), id.Uid())
	r, err := provisioner.RenderTemplatesWith(funcs, def, data)
	if err != nil {
		return Claim{}, err
	}
	if isHelm {
		ref := scorev1b1.TemplateRef{Kind: scorev1b1.TemplateHelm, Ref: def.Helm.Chart, Digest: def.Helm.Digest}
		chart, err := in.Template(ref)
		if err != nil {
			return Claim{}, fmt.Errorf("provisioner %s: %w", def.URI, err)
		}
		data.Init, data.State, data.Shared = r.Init, r.State, provisioner.PatchMap(data.Shared, r.Shared)
		objs, err := provisioner.RenderHelmWith(funcs, def, data, chart.Data)
		if err != nil {
			return Claim{}, fmt.Errorf("provisioner %s: %w", def.URI, err)
		}
		r.Manifests = append(r.Manifests, objs...)
	}
	if isRunnable {
		// The run as the controller stamps it; outputs it publishes in its status are unknown
		// offline.
		if len(r.Manifests) != 1 {
			return Claim{}, fmt.Errorf("provisioner %s renders %d objects; a runnable renders exactly one run", def.URI, len(r.Manifests))
		}
		run, err := runnable.Stamp(r.Manifests[0], w.Namespace, id.Hash())
		if err != nil {
			return Claim{}, err
		}
		outputs, err := runnable.Outputs(run, def.Runnable.Outputs)
		if err != nil {
			return Claim{}, fmt.Errorf("provisioner %s: %w; offline only outputs the run carries before it runs are known", def.URI, err)
		}
		r.Manifests = []map[string]any{run.Object}
		r.Outputs = provisioner.PatchMap(r.Outputs, outputs)
	}
	secrets := provisioner.SecretsInManifests(r.Manifests)
	plain, secret, err := provisioner.SplitOutputs(r.Outputs, func(ref provisioner.SecretRef) (string, error) {
		if v, ok := secrets[ref]; ok {
			return v, nil
		}
		return "", fmt.Errorf("secret %s is not among the provisioner's manifests; offline, its value is unknown", ref.Name)
	})
	if err != nil {
		return Claim{}, err
	}
	c := Claim{Key: d.Key, Name: d.Name, Provisioner: def.URI, Instance: id.Hash(), Spec: d.Spec, Outputs: plain}
	for k := range secret {
		c.SecretKeys = append(c.SecretKeys, k)
	}
	sort.Strings(c.SecretKeys)
	for _, m := range r.Manifests {
		u := &unstructured.Unstructured{Object: m}
		if u.GetNamespace() == "" {
			u.SetNamespace(w.Namespace)
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[provisioner.LabelInstance] = id.Hash()
		u.SetLabels(labels)
		c.Manifests = append(c.Manifests, u)
	}
	return c, nil
}

// secretMarker stands in for a secret output's value offline, where it is unknown: files
// composed with secret outputs show where the value goes.
func secretMarker(ref scorev1b1.OutputRef) (string, error) {
	return "<secret resources." + ref.ClaimKey + "." + ref.OutputKey + ">", nil
}
