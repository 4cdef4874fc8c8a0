package provisioning

import (
	"context"
	"errors"
	"fmt"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/runnable"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
)

// ErrNotOneShot is a strategy that is not one run (http+api is a sequence of requests over
// several passes, with its progress in the state).
var ErrNotOneShot = errors.New("the strategy is not a single run")

// Env is what a run may reach beyond the definition and its data. The controller and the
// offline render differ only here.
type Env struct {
	// Funcs replace functions of the templates' set, tplfuncs.Provisioner() (offline passes
	// tplfuncs.Deterministic's stand-ins for the random ones); nil replaces none.
	Funcs template.FuncMap
	// Chart returns a helm:// definition's chart archive, fetched by digest and verified.
	Chart func(ctx context.Context, ref scorev1b1.TemplateRef) ([]byte, error)
	// Command runs a cmd:// definition's command over data; nil refuses cmd:// definitions.
	Command func(ctx context.Context, def orchconfig.Provisioner, data Data) (Result, error)
	// API takes an http+api:// instance one step (its create request, or a status request
	// when one is due), keeping its progress in the state with save: the instance's Progress
	// while it is not ready, else its state and outputs. nil refuses http+api:// definitions.
	API func(ctx context.Context, def orchconfig.Provisioner, data Data, save func(context.Context, Result) error) (Result, *Progress, error)
	// SaveState keeps the state a run produced (Result.State, and Result.Shared merged into
	// the namespace's shared state) on top of the state its data was read with; nil keeps
	// nothing.
	SaveState func(ctx context.Context, res Result) error
	// Apply places a run's objects (the controller's applier; offline, the applier's Prepare)
	// and, for a runnable:// definition, reads the outputs run (the stamped run) publishes.
	// It calls save, which keeps the state (SaveState), once, and before it has changed any
	// object that exists or placed anything beyond creating objects that did not exist: the
	// state holds the credentials the objects are made with, and is durable before anything
	// can use them (apply.Applier.ApplyAfter). Its error is returned, and stops the placing.
	// nil places nothing, and keeps the state.
	Apply func(ctx context.Context, objs []*unstructured.Unstructured, run *unstructured.Unstructured, save func(context.Context) error) (Applied, error)
	// Secret reads a Secret an output refers to that the run's manifests do not create, in the
	// instance's namespace: the key's value and what tells whose the Secret is (Run resolves
	// only the instance's and those the definition lists); nil refuses such outputs.
	Secret func(ctx context.Context, ref SecretRef) (ReferencedSecret, error)
	// Offline runs nothing that reaches beyond the process: a cmd:// or http+api://
	// definition is not run, and its outputs are stand-ins (Outcome.StandIn). scorectl render
	// runs offline.
	Offline bool
}

// Provision runs def's strategy over data: template:// renders its templates; helm:// renders
// them, then its chart over the rendered init and state; runnable:// renders them and stamps
// their one object as the run (Result.Run, its only manifest); cmd:// runs its command through
// env.Command. http+api:// is not one run (ErrNotOneShot).
func Provision(ctx context.Context, s orchconfig.Strategy, def orchconfig.Provisioner, data Data, env Env) (Result, error) {
	funcs := env.Funcs
	switch s {
	case orchconfig.StrategyCmd:
		if env.Command == nil {
			return Result{}, fmt.Errorf("%w: command provisioners cannot run here", ErrNotRunnable)
		}
		res, err := env.Command(ctx, def, data)
		res.Outputs = markCommand(res.Outputs)
		return res, err
	case orchconfig.StrategyAPI:
		return Result{}, ErrNotOneShot
	case orchconfig.StrategyTemplate, orchconfig.StrategyHelm, orchconfig.StrategyRunnable:
	default:
		return Result{}, fmt.Errorf("%w: %s", orchconfig.ErrUnknownStrategy, s)
	}
	res, err := RenderTemplatesWith(funcs, def, data)
	if err != nil {
		return Result{}, err
	}
	// Only the outputs keep the run's references; what is kept or applied holds score-k8s's.
	res.Init, res.State, res.Shared = unmarkMap(res.Init), unmarkMap(res.State), unmarkMap(res.Shared)
	unmarkManifests(res.Manifests)
	switch s {
	case orchconfig.StrategyHelm:
		if env.Chart == nil {
			return Result{}, errors.New("no chart source is configured")
		}
		if def.Helm == nil {
			return Result{}, errors.New("the definition has no helm block")
		}
		chart, err := env.Chart(ctx, ChartRef(def))
		if err != nil {
			return Result{}, err
		}
		data.Init, data.State, data.Shared = res.Init, res.State, PatchMap(data.Shared, res.Shared)
		objs, err := RenderHelmWith(funcs, def, data, chart)
		if err != nil {
			return Result{}, err
		}
		unmarkManifests(objs)
		res.Manifests = append(res.Manifests, objs...)
	case orchconfig.StrategyRunnable:
		if len(res.Manifests) != 1 {
			return Result{}, fmt.Errorf("a runnable provisioner renders exactly one run, this one rendered %d objects", len(res.Manifests))
		}
		if res.Run, err = runnable.Stamp(res.Manifests[0], data.Namespace, data.Instance); err != nil {
			return Result{}, err
		}
		res.Manifests = []map[string]any{res.Run.Object}
	}
	return res, nil
}

// ChartRef is where a helm:// definition's chart comes from, pinned by digest.
func ChartRef(def orchconfig.Provisioner) scorev1b1.TemplateRef {
	ref := scorev1b1.TemplateRef{Kind: scorev1b1.TemplateHelm, Ref: def.Helm.Chart, Digest: def.Helm.Digest}
	if parsed, err := orchconfig.ParseRef(def.Helm.Chart); err == nil && parsed.Digest != "" {
		ref.Digest = parsed.Digest
	}
	return ref
}

// ErrNotRunnable is a definition that cannot run as configured (a command that cannot be
// found or is not allowed here): terminal until the config changes.
var ErrNotRunnable = errors.New("the provisioner cannot run")

// Objects are a run's manifests as objects for the applier, their values of JSON's types
// (a template's YAML decodes numbers as int, which unstructured objects do not hold).
func (r Result) Objects() ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(r.Manifests))
	for i, m := range r.Manifests {
		u, err := prepare.FromMap(m)
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// InstanceCluster is the cluster an instance of def goes to for a claim placed on cluster
// ("" is the hub): the claim's, or the hub when the definition keeps its instances there. An
// http+api:// instance lives behind an external API the hub calls: it has no objects to
// place, and is the hub's.
func InstanceCluster(def orchconfig.Provisioner, cluster string) string {
	if strategy, _ := orchconfig.StrategyOf(def.URI); def.OnHub() || strategy == orchconfig.StrategyAPI {
		return ""
	}
	return cluster
}
