// Package rollout is the fleet's rollout controller: when the Orchestrator Config has a
// rollout policy, each admitted revision reaches the Workloads it renders differently in
// health-gated waves, one ConfigRollout per revision in the control plane's namespace. It
// starts, advances, halts and completes them, and keeps the revisions they name
// (configsource.Revisions); it is the one writer of their status.
//
// It runs once for the whole fleet, under a lease of its own, whatever the shards: every
// orchestrator instance reads the governing rollout's status to choose the revision each of
// its Workloads is rendered from (rollout.Choose), so the shards follow one rollout. A pass
// reads (gather), decides (rollout.Step, a pure function of what was read) and writes.
// Everything is read from the API, so a restart resumes where it was: no wave twice, none
// skipped.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	core "github.com/score-orchestrator/score-orchestrator/internal/planning/rollout"
)

// The rollout controller's permissions: it creates rollouts and writes their status, and
// reads the Workloads, plans and claims (which revisions are in use) of the whole fleet.
//
// +kubebuilder:rbac:groups=score.dev,resources=configrollouts,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=score.dev,resources=configrollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloads;workloadplans,verbs=get;list;watch
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims,verbs=list
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The revisions' ConfigMaps are created and deleted in the control plane's namespace only
// (config/rbac/leader-election.yaml).

// Reconciler runs the fleet's config rollouts.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache: the kept revisions, the namespaces' labels, the claims.
	APIReader client.Reader
	Config    *configsource.Store
	Recorder  recorder.EventRecorder
	// Namespace is the control plane's; Region the orchestrators'.
	Namespace string
	Region    string
	// Now is the clock; tests inject one.
	Now func() time.Time

	revisions *configsource.Revisions
	// pruned names the state (revision, latest rollout and its phase) after which the kept
	// revisions were last pruned.
	pruned string
	// written tells a cached rollout older than this controller's last status write: a pass
	// on it waits for the newer copy's event instead of writing over it.
	written ownwrites.Tracker
	// created is the rollout this controller last created, until the cache shows it: a pass
	// on a list without it waits for its event instead of starting it again. Trusted for
	// ownwrites.MaxAge at most (one deleted before the cache showed it is not waited for).
	created   string
	createdAt time.Time
	// gateExpr is the policy's gate expression, compiledGate its program.
	gateExpr     string
	compiledGate *core.GateExpr
}

// soon is when a step that must be followed by another (a wave passed, one retried) looks
// again, should its own write's event be late.
const soon = 10 * time.Millisecond

// Reconcile takes the fleet's rollouts one step: gather, decide, write.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	current, ok := r.Config.Get()
	if !ok {
		return reconcile.Result{}, nil
	}
	// 1. Read: the rollouts, and what the latest one's step needs.
	o, rollouts, fresh, err := r.gather(ctx, current)
	if err != nil || !fresh {
		return reconcile.Result{}, err
	}
	// 2. Decide, from what was read only.
	d := core.Step(o)
	// 3. Write what was decided.
	if err := r.write(ctx, current, rollouts, o.Last, d); err != nil {
		return reconcile.Result{}, err
	}
	if d.Requeue.Now {
		return reconcile.Result{RequeueAfter: soon}, nil
	}
	return reconcile.Result{RequeueAfter: d.Requeue.After}, nil
}

// gather reads what a pass decides from: the rollouts (oldest first), and for the latest one while it is
// under way the revision it rolls out and what its step needs (its waves' inputs, or its wave's
// members). fresh is false when the cache is behind this controller's last write: the pass
// waits for the newer copy's event.
func (r *Reconciler) gather(ctx context.Context, current *configsource.Loaded) (o core.Observed, rollouts []scorev1b1.ConfigRollout, fresh bool, err error) {
	var list scorev1b1.ConfigRolloutList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return o, nil, false, fmt.Errorf("listing the config rollouts: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b scorev1b1.ConfigRollout) int { return strings.Compare(a.Name, b.Name) })
	o = core.Observed{Now: r.now(), Current: current.Revision, Policy: current.Config.Rollout, Rollouts: len(list.Items), Last: core.Latest(list.Items)}
	last := o.Last
	if r.creationPending(list.Items) || last != nil && r.written.Stale(last) {
		return o, nil, false, nil
	}
	if last == nil || core.Terminal(last.Status.Phase) || o.Policy == nil {
		return o, list.Items, true, nil
	}
	to, err := r.revisions.Get(ctx, last.Spec.To)
	if err != nil {
		return o, nil, false, err
	}
	if to.Config.Rollout == nil {
		to = current // cannot be: a rollout is started only for a revision with a policy
	}
	o.To = revisionOf(to)
	switch {
	case core.Assigning(last):
		err = r.gatherWaves(ctx, &o)
	case core.Judging(last):
		o.Members, err = r.members(ctx, o.To, last)
	}
	return o, list.Items, err == nil, err
}

// gatherWaves reads what the latest rollout's waves are assigned from: the revision the fleet
// runs, and the fleet. A revision that is not kept, or does not load, is missing (the change
// is applied at once); one the API server did not give is read again.
func (r *Reconciler) gatherWaves(ctx context.Context, o *core.Observed) error {
	from, err := r.revisions.Get(ctx, o.Last.Spec.From)
	var status apierrors.APIStatus
	switch {
	case err == nil:
	case apierrors.IsNotFound(err) || !errors.As(err, &status) && !apierror.Passing(err):
		o.FromMissing = err
		return nil
	default:
		return err
	}
	o.From = revisionOf(from)
	o.Fleet, err = r.fleet(ctx, o.To.Config.Rollout.OrderBy)
	return err
}

// fleet reads the Workloads a rollout is computed over, and their namespaces' labels when
// the waves are ordered by one.
func (r *Reconciler) fleet(ctx context.Context, order *orchconfig.RolloutOrder) (core.Fleet, error) {
	var workloads scorev1b1.WorkloadList
	if err := r.Client.List(ctx, &workloads); err != nil {
		return core.Fleet{}, fmt.Errorf("listing the Workloads: %w", err)
	}
	f := core.Fleet{Region: r.Region}
	for i := range workloads.Items {
		f.Workloads = append(f.Workloads, &workloads.Items[i])
	}
	if order == nil || order.NamespaceLabel == "" {
		return f, nil
	}
	// Read once, when the rollout starts: the waves are fixed then.
	var namespaces metav1.PartialObjectMetadataList
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.APIReader.List(ctx, &namespaces); err != nil {
		return core.Fleet{}, fmt.Errorf("reading the namespaces' labels for the rollout's order: %w", err)
	}
	f.NamespaceLabels = map[string]map[string]string{}
	for _, ns := range namespaces.Items {
		f.NamespaceLabels[ns.Name] = ns.Labels
	}
	return f, nil
}

// members reads what the gate needs of the Workloads of the wave under way, pinned ones left
// out (they are in no gate); one deleted since is left out too.
func (r *Reconciler) members(ctx context.Context, to core.Revision, last *scorev1b1.ConfigRollout) ([]core.Member, error) {
	gate, err := r.gate(to.Config.Rollout.Gate)
	if err != nil {
		return nil, err
	}
	var out []core.Member
	for _, key := range last.Status.Waves[last.Status.Wave].Workloads {
		if _, pinned := last.Spec.Pins[key]; pinned {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		w := &scorev1b1.Workload{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		plans, err := r.plansOf(ctx, w)
		if err != nil {
			return nil, err
		}
		out = append(out, core.MemberOf(key, w, plans, to, r.Region, gate))
	}
	return out, nil
}

// plansOf reads the plans a Workload controls, in slot order: its own (named after it), then
// those of its copies on several clusters (planner.CopyName), but for a copy being removed. By
// the Workload's UID (indexed), so that a gate pass reads a Workload's plans and not its
// namespace's.
func (r *Reconciler) plansOf(ctx context.Context, w *scorev1b1.Workload) ([]*scorev1b1.WorkloadPlan, error) {
	var list scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingFields{indexWorkloadUID: string(w.UID)}); err != nil {
		return nil, fmt.Errorf("reading the plans of %s/%s: %w", w.Namespace, w.Name, err)
	}
	slots := map[*scorev1b1.WorkloadPlan]int{}
	var plans []*scorev1b1.WorkloadPlan
	for i := range list.Items {
		p := &list.Items[i]
		slot, ok := planner.CopySlot(w.Name, p.Name)
		if !ok || !metav1.IsControlledBy(p, w) || slot > 0 && !p.DeletionTimestamp.IsZero() {
			continue
		}
		slots[p] = slot
		plans = append(plans, p)
	}
	slices.SortFunc(plans, func(a, b *scorev1b1.WorkloadPlan) int { return slots[a] - slots[b] })
	return plans, nil
}

// gate is the policy's gate expression, compiled once per expression.
func (r *Reconciler) gate(expr string) (*core.GateExpr, error) {
	if r.gateExpr != expr || (expr != "" && r.compiledGate == nil) {
		g, err := core.CompileGate(expr)
		if err != nil {
			return nil, err // validated with the config
		}
		r.gateExpr, r.compiledGate = expr, g
	}
	return r.compiledGate, nil
}

// write applies a decision: the current revision kept (the rollout about to start names it),
// the latest rollout's status and its events, the next rollout created, the kept revisions
// pruned.
func (r *Reconciler) write(ctx context.Context, current *configsource.Loaded, rollouts []scorev1b1.ConfigRollout, last *scorev1b1.ConfigRollout, d core.Decision) error {
	if err := r.revisions.Save(ctx, current); err != nil {
		return err
	}
	if last != nil {
		if fresh, err := r.writeStatus(ctx, last, d.Status, d.Events); err != nil || !fresh {
			return err
		}
	}
	if d.Start != nil {
		if err := r.start(ctx, d.Start); err != nil {
			return err
		}
	}
	if d.Prune {
		return r.pruneOnce(ctx, rollouts, current.Revision)
	}
	return nil
}

// start creates a rollout Step decided; its waves are assigned on the pass its creation brings.
func (r *Reconciler) start(ctx context.Context, next *scorev1b1.ConfigRollout) error {
	next.Namespace = r.Namespace
	next.Labels = map[string]string{configsource.LabelRevision: strings.TrimPrefix(next.Spec.To, "sha256:")[:12]}
	if err := r.Client.Create(ctx, next); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache was behind; its event brings the fleet back
		}
		return fmt.Errorf("starting the rollout of %s: %w", next.Spec.To, err)
	}
	ctrl.LoggerFrom(ctx).Info("Rollout started", "rollout", next.Name, "from", next.Spec.From, "to", next.Spec.To)
	r.created, r.createdAt = next.Name, r.now()
	return nil
}

// creationPending reports whether the rollout this controller last created is missing from
// rollouts (the cache is behind its creation), and forgets it once it is there or too old.
func (r *Reconciler) creationPending(rollouts []scorev1b1.ConfigRollout) bool {
	if r.created == "" {
		return false
	}
	seen := slices.ContainsFunc(rollouts, func(ro scorev1b1.ConfigRollout) bool { return ro.Name == r.created })
	if seen || r.now().Sub(r.createdAt) >= ownwrites.MaxAge {
		r.created = ""
		return false
	}
	return true
}

func revisionOf(l *configsource.Loaded) core.Revision {
	return core.Revision{Config: l.Config, Selector: l.Selector}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
