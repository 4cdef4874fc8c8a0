package orchestrator

// Fleet rollouts: when the config has a rollout policy, each admitted revision reaches the
// Workloads it renders differently in health-gated waves, one ConfigRollout per revision in
// the control plane's namespace. The rollout controller here starts, advances, halts and
// completes them; the Workload reconciler renders each Workload from the revision the latest
// rollout gives it (rollout.Choose). Everything is read from the API (the rollout's status is
// where it is), so a restart resumes where it was: no wave twice, none skipped.

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/rollout"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
)

// +kubebuilder:rbac:groups=score.dev,resources=configrollouts,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=configrollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list
//
// The revisions' ConfigMaps are created and deleted in the control plane's namespace only
// (config/rbac/leader-election.yaml).

var rolloutHalts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "score_orchestrator_rollout_halts_total",
	Help: "Config rollouts halted by their health gate, their Workloads pinned back to the previous revision.",
})

func init() { metrics.Registry.MustRegister(rolloutHalts) }

// fleetKey is the rollout controller's one request: the fleet.
var fleetKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "fleet"}}

// rollouts runs the fleet's config rollouts.
type rollouts struct {
	*Reconciler
	revisions *configsource.Revisions
	// pruned names the rollout after which the kept revisions were last pruned.
	pruned string
	// written tells a cached rollout older than this controller's last status write: a pass
	// on it waits for the newer copy's event instead of writing over it.
	written ownwrites.Tracker
	// gateExpr is the policy's gate expression, compiledGate its program.
	gateExpr     string
	compiledGate *rollout.GateExpr
}

// setupRollouts adds the rollout controller: it watches the rollouts, the config store, and
// the Workloads' Ready and plans' revisions (what a wave's gate reads); its timers are the
// bake time and the progress deadline.
func (r *Reconciler) setupRollouts(mgr ctrl.Manager) error {
	r.revisions = &configsource.Revisions{Client: r.Client, APIReader: r.APIReader, Namespace: r.Namespace, Store: r.Config}
	ro := &rollouts{Reconciler: r, revisions: r.revisions}
	fleet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{fleetKey} })
	readyChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*scorev1b1.Workload), e.ObjectNew.(*scorev1b1.Workload)
		return !reflect.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, scorev1b1.ConditionReady), meta.FindStatusCondition(n.Status.Conditions, scorev1b1.ConditionReady))
	}}
	planChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*scorev1b1.WorkloadPlan), e.ObjectNew.(*scorev1b1.WorkloadPlan)
		return o.Spec.ConfigRevision != n.Spec.ConfigRevision || o.Status.ObservedGeneration != n.Status.ObservedGeneration ||
			!reflect.DeepEqual(o.Status.Objects, n.Status.Objects) // what a gate expression reads
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("configrollout").
		WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), &scorev1b1.ConfigRollout{}, fleet)).
		WatchesRawSource(source.Channel(r.Config.Subscribe(), fleet)).
		Watches(&scorev1b1.Workload{}, fleet, builder.WithPredicates(readyChanged)).
		Watches(&scorev1b1.WorkloadPlan{}, fleet, builder.WithPredicates(planChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(ro)
}

// governing is the rollout the Workloads are rendered under: the latest one. With a rollout
// policy and none yet (the first revision), nil: the current revision.
func (r *Reconciler) governing(ctx context.Context) (*scorev1b1.ConfigRollout, error) {
	list, err := r.listRollouts(ctx)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[len(list)-1], nil
}

// listRollouts lists the rollouts, oldest first.
func (r *Reconciler) listRollouts(ctx context.Context) ([]scorev1b1.ConfigRollout, error) {
	var list scorev1b1.ConfigRolloutList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the config rollouts: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b scorev1b1.ConfigRollout) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// renderFrom is the config a Workload is rendered from: the current one, or the revision the
// governing rollout gives it. reached is true when the Workload is in a wave the rollout has
// reached (under way, passed, halted or aborted): its plan then records the revision even
// when its content is the same (a change of its claims' definitions alone), since the
// rollout's gate reads it there. A wave not reached yet keeps its plans as they are.
func (r *Reconciler) renderFrom(ctx context.Context, s *scope, current *configsource.Loaded) (render *configsource.Loaded, reached bool, err error) {
	if current.Config.Rollout == nil || r.revisions == nil {
		return current, false, nil
	}
	gov, err := r.governing(ctx)
	if err != nil {
		return nil, false, err
	}
	planned := ""
	if s.plan != nil {
		planned = s.plan.Spec.ConfigRevision
	}
	key := s.workload.Namespace + "/" + s.workload.Name
	revision := rollout.Choose(gov, key, planned)
	if gov != nil && gov.Status.Phase != scorev1b1.RolloutCompleted && gov.Status.Phase != scorev1b1.RolloutSuperseded {
		wave := rollout.WaveOf(gov.Status.Waves, key)
		reached = wave >= 0 && wave <= int(gov.Status.Wave)
	}
	if revision == "" || revision == current.Revision {
		return current, reached, nil
	}
	render, err = r.revisions.Get(ctx, revision)
	return render, reached, err
}

// claimRevisions records in each desired claim the revision whose provisioner definitions
// provision it: none without a rollout policy (the provisioner takes the current one), else
// the revision the Workload is rendered from — or the one the claim already names when the
// two provision it the same, so that a change that does not touch a claim writes nothing to
// it. A claim always names one under a policy: a new revision then reaches it only through
// the rollout.
func (r *Reconciler) claimRevisions(ctx context.Context, s *scope, desired []planner.DesiredClaim, render, current *configsource.Loaded) error {
	if current.Config.Rollout == nil || r.revisions == nil {
		return nil
	}
	owned := s.owned()
	for i := range desired {
		d := &desired[i]
		d.Spec.ConfigRevision = render.Revision
		existing := owned[d.Name]
		if existing == nil || existing.Spec.ConfigRevision == "" || existing.Spec.ConfigRevision == render.Revision {
			continue
		}
		have, err := r.revisions.Get(ctx, existing.Spec.ConfigRevision)
		if apierrors.IsNotFound(err) {
			continue // no longer kept: the claim takes the Workload's revision
		}
		if err != nil {
			return err
		}
		params, _ := values.Object(d.Spec.Params)
		if provisionermatch.Same(have.Config, render.Config, provisionermatch.Claim{Type: d.Spec.Type, Class: d.Spec.Class, ID: d.Spec.ID, Params: params}) {
			d.Spec.ConfigRevision = existing.Spec.ConfigRevision
		}
	}
	return nil
}

func terminal(phase string) bool {
	return phase == scorev1b1.RolloutCompleted || phase == scorev1b1.RolloutAborted || phase == scorev1b1.RolloutSuperseded
}

// Reconcile starts, advances, halts or completes the fleet's rollout.
func (ro *rollouts) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	current, ok := ro.Config.Get()
	if !ok {
		return reconcile.Result{}, nil
	}
	if err := ro.revisions.Save(ctx, current); err != nil {
		return reconcile.Result{}, err
	}
	list, err := ro.listRollouts(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var last, active *scorev1b1.ConfigRollout
	if len(list) > 0 {
		last = &list[len(list)-1]
		if ro.written.Stale(last) {
			return reconcile.Result{}, nil
		}
		if !terminal(last.Status.Phase) {
			active = last
		}
	}
	policy := current.Config.Rollout
	switch {
	case policy == nil && active != nil:
		// The policy was removed: every Workload renders the current revision.
		return reconcile.Result{}, ro.setStatus(ctx, active, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Message = scorev1b1.RolloutCompleted, "The config no longer has a rollout policy: every Workload is rendered from the current revision."
		})
	case policy == nil:
		return reconcile.Result{}, ro.pruneOnce(ctx, list, current.Revision)
	case last == nil:
		// The first revision seen: nothing to roll out from.
		return reconcile.Result{}, ro.start(ctx, len(list), "", current, nil)
	case active == nil && last.Spec.To != current.Revision:
		from := last.Spec.To
		if last.Status.Phase == scorev1b1.RolloutAborted && last.Spec.From != "" {
			from = last.Spec.From
		}
		return reconcile.Result{}, ro.start(ctx, len(list), from, current, last.Spec.Pins)
	case active != nil && active.Spec.To != current.Revision && (active.Status.Phase == scorev1b1.RolloutHalted || active.Spec.Aborted):
		// A new revision supersedes a halted or aborted rollout; one under way goes on, the new
		// revision waits for it.
		if err := ro.setStatus(ctx, active, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Message = scorev1b1.RolloutSuperseded, "Superseded by revision "+current.Revision+"."
		}); err != nil {
			return reconcile.Result{}, err
		}
		from := active.Spec.From
		if from == "" {
			from = active.Spec.To
		}
		return reconcile.Result{}, ro.start(ctx, len(list), from, current, active.Spec.Pins)
	case active == nil:
		return reconcile.Result{}, ro.pruneOnce(ctx, list, current.Revision)
	}
	return ro.advance(ctx, active, current)
}

// start creates the rollout of current from the revision from, numbered after the n before it
// (a name a second pass on a stale cache cannot create again).
func (ro *rollouts) start(ctx context.Context, n int, from string, current *configsource.Loaded, pins map[string]string) error {
	r := &scorev1b1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ro.Namespace, Name: fmt.Sprintf("rollout-%04d", n+1),
		Labels: map[string]string{configsource.LabelRevision: strings.TrimPrefix(current.Revision, "sha256:")[:12]}},
		Spec: scorev1b1.ConfigRolloutSpec{From: from, To: current.Revision, Pins: pins}}
	if err := ro.Client.Create(ctx, r); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache was behind; its event brings the fleet back
		}
		return fmt.Errorf("starting the rollout of %s: %w", current.Revision, err)
	}
	ctrl.LoggerFrom(ctx).Info("Rollout started", "rollout", r.Name, "from", from, "to", current.Revision)
	return ro.initialize(ctx, r, current)
}

// initialize lists the Workloads the change affects in their waves.
func (ro *rollouts) initialize(ctx context.Context, r *scorev1b1.ConfigRollout, current *configsource.Loaded) error {
	if r.Spec.From == "" {
		return ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Message, st.Progress = scorev1b1.RolloutCompleted, "The first revision with a rollout policy: nothing to roll out from.", "-"
		})
	}
	from, err := ro.revisions.Get(ctx, r.Spec.From)
	if err != nil {
		// The revision the fleet runs is not kept: the change cannot be staged.
		return ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Message, st.Progress = scorev1b1.RolloutCompleted, fmt.Sprintf("Applied at once: %v.", err), "-"
		})
	}
	fleet, err := ro.fleet(ctx, current.Config.Rollout.OrderBy)
	if err != nil {
		return err
	}
	fleet.Pins = r.Spec.Pins
	affected, waves := rollout.Waves(fleet, revisionOf(from), revisionOf(current))
	return ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
		st.Affected, st.Waves, st.Wave, st.WaveStarted = int32(affected), waves, 0, &metav1.Time{Time: ro.now()}
		st.Phase, st.Progress = scorev1b1.RolloutProgressing, progress(0, len(waves))
		if len(waves) == 0 {
			st.Phase, st.Message, st.Progress = scorev1b1.RolloutCompleted, "The change renders no Workload differently.", "-"
		}
	})
}

// fleet reads the Workloads a rollout is computed over, and their namespaces' labels when
// the waves are ordered by one.
func (ro *rollouts) fleet(ctx context.Context, order *orchconfig.RolloutOrder) (rollout.Fleet, error) {
	var workloads scorev1b1.WorkloadList
	if err := ro.Client.List(ctx, &workloads); err != nil {
		return rollout.Fleet{}, err
	}
	f := rollout.Fleet{Region: ro.Region}
	for i := range workloads.Items {
		f.Workloads = append(f.Workloads, &workloads.Items[i])
	}
	if order == nil || order.NamespaceLabel == "" {
		return f, nil
	}
	// Read once, when the rollout starts: the waves are fixed then.
	var namespaces metav1.PartialObjectMetadataList
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := ro.APIReader.List(ctx, &namespaces); err != nil {
		return rollout.Fleet{}, fmt.Errorf("reading the namespaces' labels for the rollout's order: %w", err)
	}
	f.NamespaceLabels = map[string]map[string]string{}
	for _, ns := range namespaces.Items {
		f.NamespaceLabels[ns.Name] = ns.Labels
	}
	return f, nil
}

func revisionOf(l *configsource.Loaded) rollout.Revision {
	return rollout.Revision{Config: l.Config, Selector: l.Selector}
}

func progress(wave, of int) string { return fmt.Sprintf("%d/%d", wave+1, of) }

// advance takes an active rollout one step: the platform engineer's instructions first, then
// the gate of the wave under way, under the policy of the revision it rolls out (a newer one
// may be waiting behind it).
func (ro *rollouts) advance(ctx context.Context, r *scorev1b1.ConfigRollout, current *configsource.Loaded) (reconcile.Result, error) {
	to, err := ro.revisions.Get(ctx, r.Spec.To)
	if err != nil {
		return reconcile.Result{}, err
	}
	if to.Config.Rollout == nil {
		to = current // cannot be: a rollout is started only for a revision with a policy
	}
	if r.Status.Phase == "" {
		return reconcile.Result{}, ro.initialize(ctx, r, to)
	}
	now := ro.now()
	switch {
	case r.Spec.Aborted:
		ro.event(r, corev1.EventTypeWarning, "Aborted", "Every Workload of the rollout is rendered from %s again.", r.Spec.From)
		return reconcile.Result{}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Message = scorev1b1.RolloutAborted, "Aborted: every Workload is rendered from the previous revision."
		})
	case r.Status.Phase == scorev1b1.RolloutHalted && r.Spec.Retry > r.Status.Retried:
		ro.event(r, corev1.EventTypeNormal, "Retried", "Wave %d is tried again.", r.Status.Wave+1)
		return reconcile.Result{Requeue: true}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Retried, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutProgressing, r.Spec.Retry, &metav1.Time{Time: now}, nil, "Retried."
			st.Waves[st.Wave].Failed = nil
		})
	case r.Status.Phase == scorev1b1.RolloutHalted:
		return reconcile.Result{}, nil
	case r.Spec.Paused:
		// The bake stops: a wave resumed bakes for the whole bake time again.
		return reconcile.Result{}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.WaveStarted, st.BakeStarted = scorev1b1.RolloutPaused, nil, nil
			st.Message = fmt.Sprintf("Paused at wave %d; its bake and progress deadline start again on resume.", st.Wave+1)
		})
	}
	if int(r.Status.Wave) >= len(r.Status.Waves) {
		return reconcile.Result{}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Message = scorev1b1.RolloutCompleted, "Completed: no wave is left."
		})
	}
	members, err := ro.members(ctx, revisionOf(to), slices.DeleteFunc(slices.Clone(r.Status.Waves[r.Status.Wave].Workloads), func(k string) bool { _, pinned := r.Spec.Pins[k]; return pinned }))
	if err != nil {
		return reconcile.Result{}, err
	}
	var waveStarted, bakeStarted *time.Time
	if r.Status.WaveStarted != nil {
		waveStarted = &r.Status.WaveStarted.Time
	}
	if r.Status.BakeStarted != nil {
		bakeStarted = &r.Status.BakeStarted.Time
	}
	v := rollout.Gate(r.Spec.To, members, waveStarted, bakeStarted, now, *to.Config.Rollout)
	bake, _ := to.Config.Rollout.Durations()
	wave, of := int(r.Status.Wave), len(r.Status.Waves)
	switch {
	case v.Fail:
		rolloutHalts.Inc()
		ro.event(r, corev1.EventTypeWarning, "Halted", "Wave %d of %d failed its health gate (%s): its Workloads are rendered from the previous revision again.", wave+1, of, strings.Join(v.Failed, ", "))
		return reconcile.Result{}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Waves[wave].Failed = scorev1b1.RolloutHalted, v.Failed
			st.Message = fmt.Sprintf("Halted at wave %d: %s not Ready by the progress deadline; pinned back to the previous revision. `scorectl rollout resume` tries the wave again, `abort` pins every Workload back.", wave+1, strings.Join(v.Failed, ", "))
		})
	case v.Pass && wave == of-1:
		ro.event(r, corev1.EventTypeNormal, "Completed", "All %d waves passed: %d Workloads are rendered from %s.", of, r.Status.Affected, r.Spec.To)
		return reconcile.Result{}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.WaveStarted, st.BakeStarted, st.Message = scorev1b1.RolloutCompleted, nil, nil, fmt.Sprintf("Completed: %d Workloads in %d waves.", st.Affected, of)
		})
	case v.Pass:
		ro.event(r, corev1.EventTypeNormal, "WavePassed", "Wave %d of %d passed; wave %d starts.", wave+1, of, wave+2)
		return reconcile.Result{Requeue: true}, ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
			st.Phase, st.Wave, st.WaveStarted, st.BakeStarted, st.Progress = scorev1b1.RolloutProgressing, int32(wave+1), &metav1.Time{Time: now}, nil, progress(wave+1, of)
			st.Message = fmt.Sprintf("Wave %d of %d started.", wave+2, of)
		})
	}
	err = ro.setStatus(ctx, r, func(st *scorev1b1.ConfigRolloutStatus) {
		// The message names the step, not how many Workloads are through it: a count would be
		// a write for each Workload rendered or Ready.
		st.Phase, st.Message = scorev1b1.RolloutProgressing, fmt.Sprintf("Wave %d of %d: its Workloads are being rendered from the new revision.", wave+1, of)
		if v.Start || st.BakeStarted != nil {
			st.Message = fmt.Sprintf("Wave %d of %d baking: each of its Workloads must be Ready for %s.", wave+1, of, bake)
		}
		if st.WaveStarted == nil {
			st.WaveStarted = &metav1.Time{Time: now}
		}
		if v.Start {
			st.BakeStarted = &metav1.Time{Time: now}
		}
	})
	return reconcile.Result{RequeueAfter: v.After}, err
}

// members reads what the gate needs of a wave's Workloads; one deleted since is left out.
func (ro *rollouts) members(ctx context.Context, to rollout.Revision, keys []string) ([]rollout.Member, error) {
	gate, err := ro.gate(to.Config.Rollout.Gate)
	if err != nil {
		return nil, err
	}
	var out []rollout.Member
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		w := &scorev1b1.Workload{}
		if err := ro.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		m := rollout.Member{Key: key}
		m.Bake, m.Deadline = rollout.Timing(w, to, ro.Region)
		p := &scorev1b1.WorkloadPlan{}
		switch err := ro.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); {
		case err == nil:
			m.Revision = p.Spec.ConfigRevision
			m.Settled = p.Status.ObservedGeneration == p.Generation
		case !apierrors.IsNotFound(err):
			return nil, err
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c != nil {
			m.Ready, m.Since = c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation, c.LastTransitionTime.Time
		}
		m.Ready = m.Ready && gate.Holds(p.Status.Objects, w)
		out = append(out, m)
	}
	return out, nil
}

// gate is the policy's gate expression, compiled once per expression.
func (ro *rollouts) gate(expr string) (*rollout.GateExpr, error) {
	if ro.gateExpr != expr || (expr != "" && ro.compiledGate == nil) {
		g, err := rollout.CompileGate(expr)
		if err != nil {
			return nil, err // validated with the config
		}
		ro.gateExpr, ro.compiledGate = expr, g
	}
	return ro.compiledGate, nil
}

// setStatus writes the rollout's status as change leaves it, when it changed.
func (ro *rollouts) setStatus(ctx context.Context, r *scorev1b1.ConfigRollout, change func(*scorev1b1.ConfigRolloutStatus)) error {
	next := r.DeepCopy()
	change(&next.Status)
	if reflect.DeepEqual(next.Status, r.Status) {
		return nil
	}
	if next.Status.Phase != r.Status.Phase {
		ctrl.LoggerFrom(ctx).Info("Rollout", "rollout", r.Name, "phase", next.Status.Phase, "wave", next.Status.Wave, "message", next.Status.Message)
	}
	replaced := next.ResourceVersion
	if err := ro.Client.Status().Update(ctx, next); err != nil {
		if apierrors.IsConflict(err) {
			return nil // read from a cache behind the last write: its event brings the fleet back
		}
		return err
	}
	ro.written.Wrote(next.UID, replaced, next.ResourceVersion)
	return nil
}

// pruneOnce prunes the kept revisions once for each state of the config and its rollouts.
func (ro *rollouts) pruneOnce(ctx context.Context, list []scorev1b1.ConfigRollout, current string) error {
	key := current
	if len(list) > 0 {
		last := list[len(list)-1]
		key += "/" + last.Name + "/" + last.Status.Phase
	}
	if ro.pruned == key {
		return nil
	}
	if err := ro.prune(ctx, list); err != nil {
		return err
	}
	ro.pruned = key
	return nil
}

// prune drops the kept revisions no plan and no rollout uses, beyond the newest few.
func (ro *rollouts) prune(ctx context.Context, list []scorev1b1.ConfigRollout) error {
	inUse := map[string]bool{}
	for _, r := range list[max(0, len(list)-2):] {
		inUse[r.Spec.From], inUse[r.Spec.To] = true, true
		for _, pinned := range r.Spec.Pins {
			inUse[pinned] = true
		}
	}
	var plans scorev1b1.WorkloadPlanList
	if err := ro.Client.List(ctx, &plans); err != nil {
		return err
	}
	for _, p := range plans.Items {
		inUse[p.Spec.ConfigRevision] = true
	}
	var claims scorev1b1.ResourceClaimList
	if err := ro.Client.List(ctx, &claims); err != nil {
		return err
	}
	for _, c := range claims.Items {
		inUse[c.Spec.ConfigRevision] = true
	}
	return ro.revisions.Prune(ctx, inUse)
}

func (ro *rollouts) now() time.Time {
	if ro.Now != nil {
		return ro.Now()
	}
	return time.Now()
}

func (ro *rollouts) event(r *scorev1b1.ConfigRollout, typ, reason, format string, args ...any) {
	if ro.Recorder != nil {
		ro.Recorder.Eventf(r, nil, typ, reason, "Rollout", format, args...)
	}
}
