// Package offline runs the control plane's pipeline without a cluster, for scorectl render:
// for each Workload, the pipeline the orchestrator walks (workloaddecision.Desired: the
// selection, its copies placed), then for each copy its claims provisioned in dependency
// order, its plan, and the objects the runtime and the provisioner would apply. It calls the
// functions the controllers call — the pipeline's stages, provisioning.Run (the provisioner's
// run, with the applier's Prepare in place of the applier), the renderer and the applier's
// Prepare — so what it shows is what they apply, on every cluster a copy runs on. Where only a cluster knows a value (UIDs the API server
// assigns, an instance's stored state, secret values, the secrets revision of the pods) it
// takes it from Cluster, or shows a stand-in: random values in provisioner templates are
// replaced by deterministic ones (not usable secrets), secret values by markers, and the
// outputs of a command (cmd://) or an external API (http+api://), which are never run
// offline, by references naming each expected output.
package offline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/config/runnable"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
)

// Input is what an offline run needs.
type Input struct {
	// Workloads are the converted Workloads, each with its namespace set. They are rendered
	// together: a provisioner sees the Workloads of its namespace, as in the cluster.
	Workloads []*scorev1b1.Workload
	Config    *orchconfig.Config
	// Template returns a backend template's (or a helm:// provisioner's chart's) content by
	// its ref, verified against its digest.
	Template func(scorev1b1.TemplateRef) (render.Template, error)
	Region   string
	// Cluster supplies what only a cluster knows; its zero value is the offline stand-ins.
	Cluster Cluster
	// Members are the member clusters placement chooses from (names and labels, as
	// registered), and Placed, when set, the copies a Workload runs as now (slot and cluster,
	// as its plans name them), which placement keeps while their clusters match. With Members
	// nil, placement is not decided: a placed backend's Workload shows as many copies as its
	// placement asks for (one for All), on no cluster, with no override.
	Members []placement.Cluster
	Placed  func(namespace, name string) []placement.Copy
}

// Cluster supplies the values only a cluster knows. Each nil field has an offline stand-in.
type Cluster struct {
	// PlanUID is the UID of a Workload's plan; offline a marker naming it.
	PlanUID func(namespace, name string) types.UID
	// State is an instance's stored state and its namespace's shared state; offline both
	// start empty (and templates' random values are deterministic stand-ins).
	State func(id provisioning.Identity) (state, shared map[string]any)
	// SecretValue is a secret output's value (a file composed with it needs it); offline a
	// marker.
	SecretValue func(w *scorev1b1.Workload, ref scorev1b1.OutputRef) (string, error)
	// SecretsRevision is the revision of the outputs Secrets a Workload's pods consume;
	// offline none (the label is left out).
	SecretsRevision func(w *scorev1b1.Workload) string
	// NamespaceLabels are a namespace's labels, which the config's probeHosts selects by;
	// offline none (a namespace is selected by its name only).
	NamespaceLabels func(namespace string) map[string]string
}

// probeHosts says whether the config admits probes that name a host in the Workload's
// namespace (orchconfig's ProbeHostsAllowed, which the orchestrator asks too).
func (in Input) probeHosts(w *scorev1b1.Workload) bool {
	var labels map[string]string
	if in.Cluster.NamespaceLabels != nil {
		labels = in.Cluster.NamespaceLabels(w.Namespace)
	}
	return in.Config.ProbeHostsAllowed(w.Namespace, labels)
}

// Claim is one provisioned claim.
type Claim struct {
	Key, Name, Provisioner, Instance string
	Spec                             scorev1b1.ResourceClaimSpec
	Outputs                          map[string]any
	SecretKeys                       []string
	// Objects are what the provisioner applies for it, prepared (marked, placed, in order).
	Objects []*unstructured.Unstructured
}

// Result is everything an offline run decided and produced for one Workload.
type Result struct {
	Workload  *scorev1b1.Workload
	Selection selection.Result
	// Placement is where the Workload's copies are placed, decided with Input.Members.
	Placement placement.Several
	// Copies are what each copy applies, in placement order; one on the hub when its backend
	// has no placement.
	Copies []Copy
	// Err is why the Workload could not be rendered (what the cluster would report on it);
	// the fields above hold what was decided before it.
	Err error
}

// Copy is one copy of a Workload: its slot and cluster ("" is the hub, or not decided), its
// claims, its plan and the objects the runtime applies for the plan, prepared.
type Copy struct {
	placement.Copy
	Claims  []Claim
	Plan    *scorev1b1.WorkloadPlan
	Objects []*unstructured.Unstructured
	// Project is what the Docker runtime runs for a docker backend's plan (no Objects then).
	Project *compose.Project
}

// Run runs the pipeline for every Workload and returns a result for each, in the order given.
// Inputs the orchestrator would report as SpecInvalid, a failed selection, no cluster to place
// on, a claim no provisioner serves or an unresolved output fail the Workload (Result.Err);
// the other Workloads still render, and the returned error joins the failures, each naming its
// Workload.
func Run(ctx context.Context, in Input) ([]Result, error) {
	sel, err := selection.New(in.Config)
	if err != nil {
		return nil, err
	}
	cfg := &workloaddecision.Config{Config: in.Config, Selector: sel}
	out := make([]Result, 0, len(in.Workloads))
	var errs []error
	for _, w := range in.Workloads {
		if w.UID == "" {
			w = w.DeepCopy()
			w.UID = types.UID(fmt.Sprintf("<uid of Workload %s/%s>", w.Namespace, w.Name))
		}
		res, err := runOne(ctx, in, cfg, w)
		res.Workload = w
		if err != nil {
			res.Err = fmt.Errorf("workload %s/%s: %w", w.Namespace, w.Name, err)
			errs = append(errs, res.Err)
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// runOne walks the pipeline for one Workload: its inputs, then Desired, then each copy.
func runOne(ctx context.Context, in Input, cfg *workloaddecision.Config, w *scorev1b1.Workload) (Result, error) {
	if problems := planner.CheckInputs(w, planner.Allowed{ProbeHosts: in.probeHosts(w)}); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return Result{}, fmt.Errorf("the workload is invalid:\n  %s", strings.Join(msgs, "\n  "))
	}
	desired := workloaddecision.DesiredInput{Workload: w, Config: cfg, Region: in.Region, ProbeHosts: in.probeHosts(w), Clusters: in.Members}
	if in.Placed != nil {
		desired.Current = in.Placed(w.Namespace, w.Name)
	}
	pipe := workloaddecision.Desired(desired)
	res := Result{Workload: w, Selection: pipe.Selection, Placement: pipe.Placement}
	switch b := res.Selection.Backend; {
	case !res.Selection.OK:
		return res, fmt.Errorf("selection: %s", res.Selection.Message)
	case in.Members == nil && b.Placement != nil:
		res.Placement = undecided(b.Placement)
	case !res.Placement.OK:
		return res, fmt.Errorf("placement: backend %s places on clusters matching %s, and no cluster given does%s",
			b.BackendID, res.Placement.Selector, memberList(res.Placement.Candidates))
	}
	for _, c := range res.Placement.Copies {
		copied, err := runCopy(ctx, in, pipe, w, c)
		res.Copies = append(res.Copies, copied)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// undecided is the placement render shows when no member cluster is known: as many copies as
// the placement asks for (All: one, since how many clusters match is the fleet's), in their
// slots, on no cluster, so no override applies.
func undecided(p *orchconfig.Placement) placement.Several {
	n, all := p.Copies()
	if all {
		n = 1
	}
	res := placement.Several{OK: true, Want: n, Selector: placement.SelectorString(p.ClusterSelector), Policy: p.Policy}
	for slot := range n {
		res.Copies = append(res.Copies, placement.Copy{Slot: slot})
	}
	return res
}

// runCopy runs one copy: its claims provisioned in dependency order (each with the outputs of
// those before it), its plan, and the objects the runtime applies for it.
func runCopy(ctx context.Context, in Input, pipe workloaddecision.Pipeline, w *scorev1b1.Workload, at placement.Copy) (Copy, error) {
	res := Copy{Copy: at}
	views := map[string]planner.ClaimView{}
	for len(views) < len(w.Spec.Resources) {
		desired, err := pipe.Claims(at, views)
		if err != nil {
			return res, err
		}
		progressed := false
		for _, d := range desired {
			if _, done := views[d.Key]; done || len(d.WaitingFor) > 0 {
				continue
			}
			c, err := provision(ctx, in, w, d)
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

	built, err := pipe.Plan(at, views)
	if err != nil {
		return res, err
	}
	if len(built.Unresolved) > 0 {
		return res, fmt.Errorf("outputs not provided by the provisioners: %s", strings.Join(built.Unresolved, ", "))
	}
	name := planner.CopyName(w.Name, at.Slot)
	res.Plan = &scorev1b1.WorkloadPlan{
		TypeMeta:   metav1.TypeMeta{APIVersion: scorev1b1.GroupVersion.String(), Kind: "WorkloadPlan"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace, UID: in.planUID(w.Namespace, name)},
		Spec:       *built.Spec,
	}
	secretValue := func(ref scorev1b1.OutputRef) (string, error) { return secretMarker(ref), nil }
	if in.Cluster.SecretValue != nil {
		secretValue = func(ref scorev1b1.OutputRef) (string, error) { return in.Cluster.SecretValue(w, ref) }
	}
	if built.Spec.Template.Kind == scorev1b1.TemplateCompose {
		project, err := compose.FromPlan(w.Name, &res.Plan.Spec, secretValue)
		res.Project = &project
		return res, err
	}
	tpl, err := in.Template(built.Spec.Template)
	if err != nil {
		return res, fmt.Errorf("template %s: %w", built.Spec.Template.Ref, err)
	}
	revision := ""
	if in.Cluster.SecretsRevision != nil {
		revision = in.Cluster.SecretsRevision(w)
	}
	objs, err := render.Render(render.Input{Workload: w.Name, Namespace: w.Namespace, Spec: &res.Plan.Spec, Template: tpl, SecretValue: secretValue, SecretsRevision: revision})
	if err != nil {
		return res, err
	}
	res.Objects, err = prepareFor(in, objs, prepare.PlanMarks(res.Plan))
	return res, err
}

// memberList says why each cluster placement saw was not chosen, for an error.
func memberList(candidates []placement.Candidate) string {
	var b strings.Builder
	for _, c := range candidates {
		fmt.Fprintf(&b, "; %s: %s", c.Name, c.Why)
	}
	return b.String()
}

// prepareFor marks and orders objects with prepare.Prepare, the applier's own first step.
func prepareFor(in Input, objs []*unstructured.Unstructured, marks prepare.Marks) ([]*unstructured.Unstructured, error) {
	prepared, err := prepare.Prepare(prepare.Input{Objects: objs, Marks: marks, Scope: prepare.OfflineScope, Allowed: in.Config.KindAllowed})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(prepared))
	for i, o := range prepared {
		out[i] = o.Unstructured
	}
	return out, nil
}

// planUID is the UID of the plan named name; offline a marker naming it.
func (in Input) planUID(namespace, name string) types.UID {
	if in.Cluster.PlanUID != nil {
		return in.Cluster.PlanUID(namespace, name)
	}
	return types.UID(fmt.Sprintf("<uid of WorkloadPlan %s/%s>", namespace, name))
}

func secretName(c Claim) string {
	if len(c.SecretKeys) == 0 {
		return ""
	}
	return scorev1b1.OutputsSecretName(c.Name)
}

// provision runs a claim's provisioner: the definition that serves it, then provisioning.Run,
// the run the provisioner controller makes, with the offline stand-ins for what only a cluster
// knows (Env.Offline: no command is run and no external API called).
func provision(ctx context.Context, in Input, w *scorev1b1.Workload, d planner.DesiredClaim) (Claim, error) {
	params, err := values.Object(d.Spec.Params)
	if err != nil {
		return Claim{}, err
	}
	served, message, ok := provisionermatch.Resolve(provisionermatch.Input{Classes: in.Config.Classes, Provisioners: in.Config.Provisioners,
		Claim: provisionermatch.Claim{Type: d.Spec.Type, Class: d.Spec.Class, ID: d.Spec.ID, Params: params, RuntimeClass: d.Spec.RuntimeClass}})
	if !ok {
		return Claim{}, errors.New(message)
	}
	def := in.Config.Provisioners[served.Index]
	metadata, err := values.Object(d.Spec.Metadata)
	if err != nil {
		return Claim{}, err
	}
	id := provisioning.NewIdentity(w.Namespace, w.Name, d.Key, d.Spec.Type, d.Spec.Class, d.Spec.ID)
	id.Cluster = provisioning.InstanceCluster(def, d.Spec.Cluster)
	data := provisioning.DataInput{Identity: id, Class: served.Class, Params: served.Params, Metadata: metadata,
		Source: w.Name, Workloads: namespaceOf(in.Workloads, w.Namespace)}
	if in.Cluster.State != nil {
		data.State, data.Shared = in.Cluster.State(id)
	}
	var objects []*unstructured.Unstructured
	out, err := provisioning.Run(ctx, provisioning.RunInput{Definition: def, Data: data}, offlineEnv(in, def, id, &objects))
	var waiting *tplfuncs.Waiting
	if errors.As(err, &waiting) {
		return Claim{}, fmt.Errorf("provisioner %s is waiting for %s; render the Score file of what it waits for together with this one", def.URI, waiting.For)
	}
	if err != nil {
		return Claim{}, fmt.Errorf("provisioner %s: %w", def.URI, err)
	}
	c := Claim{Key: d.Key, Name: d.Name, Provisioner: def.URI, Instance: id.Hash(), Spec: d.Spec, Outputs: out.Plain, Objects: objects}
	for k := range out.Secret {
		c.SecretKeys = append(c.SecretKeys, k)
	}
	sort.Strings(c.SecretKeys)
	return c, nil
}

// offlineEnv is what a run may reach offline: charts from the render's templates, the
// deterministic stand-ins for random values, the applier's Prepare in place of the applier
// (the prepared objects go to objects), a run's outputs as it carries them before it runs,
// and a marker for the value of a Secret the run does not create. Commands and external APIs
// are not reached: their outputs are stand-ins.
func offlineEnv(in Input, def orchconfig.Provisioner, id provisioning.Identity, objects *[]*unstructured.Unstructured) provisioning.Env {
	return provisioning.Env{
		Offline: true,
		Funcs:   tplfuncs.Deterministic(id.Uid()),
		Chart: func(_ context.Context, ref scorev1b1.TemplateRef) ([]byte, error) {
			chart, err := in.Template(ref)
			return chart.Data, err
		},
		Apply: func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (provisioning.Applied, error) {
			if err := save(ctx); err != nil {
				return provisioning.Applied{}, err
			}
			var err error
			if *objects, err = prepareFor(in, objs, provisioning.Marks(def, id.Namespace, id.Hash())); err != nil || run == nil {
				return provisioning.Applied{}, err
			}
			// Outputs the run only publishes in its status are unknown offline.
			outputs, err := runnable.Outputs(run, def.Runnable.Outputs)
			if err != nil {
				return provisioning.Applied{}, fmt.Errorf("%w; offline only outputs the run carries before it runs are known", err)
			}
			return provisioning.Applied{RunOutputs: outputs}, nil
		},
		Secret: func(_ context.Context, ref provisioning.SecretRef) (provisioning.ReferencedSecret, error) {
			// A Secret the platform owns (the environment type's) or the instance's objects make:
			// known only in the cluster, where the run also judges whose it is.
			return provisioning.ReferencedSecret{Labels: map[string]string{scorev1b1.LabelInstance: id.Hash()}, HasKey: true,
				Value: fmt.Sprintf("<secret %s key %s, known in the cluster>", ref.Name, ref.Key)}, nil
		},
	}
}

// namespaceOf are the Workloads of a namespace.
func namespaceOf(all []*scorev1b1.Workload, namespace string) []*scorev1b1.Workload {
	var out []*scorev1b1.Workload
	for _, w := range all {
		if w.Namespace == namespace {
			out = append(out, w)
		}
	}
	return out
}

// secretMarker stands in for a secret output's value offline, where it is unknown: files
// composed with secret outputs show where the value goes.
func secretMarker(ref scorev1b1.OutputRef) string {
	return "<secret resources." + ref.ClaimKey + "." + ref.OutputKey + ">"
}
