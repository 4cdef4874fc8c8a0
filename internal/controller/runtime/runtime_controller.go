// Package runtime is the Kubernetes runtime (runtimeClass kubernetes): it renders each
// WorkloadPlan's template, server-side-applies the result, judges its health with kstatus,
// writes WorkloadPlan.status and publishes endpoints in WorkloadExposure.status. It never
// writes Workload.status.
package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workers"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/status/plandecision"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// The runtime's permissions: it writes plan and exposure status (never their spec, never a
// Workload) and the kinds the default templates create.
//
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans;workloadexposures,verbs=get;list;watch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans,verbs=patch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans/status;workloadexposures/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// Reconciler reconciles WorkloadPlans of runtime class kubernetes.
type Reconciler struct {
	Client    client.Client
	Templates *templates.Source
	// Recorder writes events on the plan (optional).
	Recorder recorder.EventRecorder
	// Config supplies the health rules and the allowed kinds; kstatus judges alone, and the
	// default kinds are allowed, until a config is loaded.
	Config *configsource.Store
	// Secrets reads the claims' outputs Secrets for files composed with secret outputs,
	// without caching them (default: Client), and is asked about an outputs Secret the
	// metadata cache does not hold yet.
	Secrets client.Reader
	// Concurrency is the most plans reconciled at once.
	Concurrency int
	// Workers moves the number reconciled at once up to Concurrency, with the API server's
	// room; nil: Concurrency, fixed.
	Workers *workers.Adaptive
	// Shard selects the plans this instance applies; nil: every plan.
	Shard labels.Selector
	// ProgressHold is how long a plan keeps what was written while its objects only progress,
	// and its exposure's first status waits for their health (plandecision.Observed.ProgressHold);
	// 0 writes every step.
	ProgressHold time.Duration
	// Namespace is the control plane's, where member clusters are registered; empty applies
	// on the hub only.
	Namespace string

	applier *apply.Applier
	// routes watches the routes and Ingresses a plan's dependencies provisioned (labelled
	// with their instance, not the Workload).
	routes  *apply.Watcher
	blocked blocked
	// members are the registered member clusters; clusterChanged brings back the plans of one
	// that started or stopped answering.
	members        *members.Pool
	clusterChanged chan event.GenericEvent
	// written tells a cached plan older than this controller's last status write.
	written ownwrites.Tracker
}

// Reconcile renders, applies and judges one plan. A pass reads and applies (observe), decides
// the plan's and the exposure's status from what it found and did (plandecision.From, pure), and
// writes them (write).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &scorev1b1.WorkloadPlan{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.Spec.RuntimeClass != scorev1b1.RuntimeClassKubernetes {
		return ctrl.Result{}, nil
	}
	if !shard.Owns(r.Shard, p) {
		// Another shard's (its Workload's): that shard's runtime answers for it.
		r.blocked.clear(req.NamespacedName)
		r.written.Forget(p.UID)
		return ctrl.Result{}, nil
	}
	if !p.DeletionTimestamp.IsZero() {
		r.blocked.clear(req.NamespacedName)
		return ctrl.Result{}, r.release(ctx, p)
	}
	if r.written.Stale(p) {
		return ctrl.Result{}, nil // the cache is behind our last write; its event brings the plan back
	}
	// Kept as read: the status is written at the end, once, and only when it changed.
	patch := statuspatch.Begin(p)
	ps := r.observe(ctx, p)
	d := plandecision.From(ps.Observed)
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, r.write(ctx, patch, ps, d)
}

// pass is one reconcile of a plan: what it read and did, filled step by step.
type pass struct {
	plandecision.Observed
	// objs are the rendered objects (and on a member the outputs Secrets' copies), marks the
	// plan's identity marks, tgt the cluster they go to: filled by gather.
	objs  []*unstructured.Unstructured
	marks prepare.Marks
	tgt   members.Target
	// exposure is the Workload's exposure as read, for its status write.
	exposure *scorev1b1.WorkloadExposure
}

// stop records the step an error stopped the pass at, and reports false.
func (ps *pass) stop(step plandecision.Step, err error) bool {
	ps.Stopped, ps.Err = step, err
	return false
}

// observe reads what the plan needs and applies it: every read of the plan's inputs first
// (gather), then the writes the plan's spec asks for (act), then what the exposure's endpoints
// are derived from. It stops at the first error.
func (r *Reconciler) observe(ctx context.Context, p *scorev1b1.WorkloadPlan) *pass {
	ps := &pass{Observed: plandecision.Observed{Plan: p, Now: time.Now(), ProgressHold: r.ProgressHold}}
	if p.Spec.Cluster != "" && r.members.Pending(ctx, p.Spec.Cluster) {
		ps.MemberPending = true
		return ps
	}
	if r.gather(ctx, ps) && r.act(ctx, ps) {
		r.readExposure(ctx, ps)
	}
	return ps
}

// gather reads the template and the claims' outputs, renders, and finds the target cluster.
func (r *Reconciler) gather(ctx context.Context, ps *pass) bool {
	p := ps.Plan
	tpl, err := r.Templates.Get(ctx, p.Spec.Template)
	if err != nil {
		ps.DigestMismatch = errors.Is(err, templates.ErrDigestMismatch)
		return ps.stop(plandecision.Template, err)
	}
	revision, err := r.secretsRevision(ctx, p)
	if err != nil {
		return ps.stop(plandecision.Outputs, err)
	}
	ps.objs, err = render.Render(render.Input{Workload: p.Spec.WorkloadRef.Name, Namespace: p.Namespace, Spec: &p.Spec, Template: tpl,
		SecretValue: r.secretValue(ctx, p), SecretsRevision: revision})
	if err != nil {
		return ps.stop(plandecision.Render, err)
	}
	if ps.tgt, err = r.members.Target(p.Spec.Cluster, p.Namespace, r.applier); err != nil {
		return ps.stop(plandecision.Target, err)
	}
	ps.Cluster, ps.marks = ps.tgt.Cluster, prepare.PlanMarks(p)
	if ps.Cluster == "" {
		return true
	}
	// No owner reference crosses clusters: the identity marks and the inventory carry
	// ownership. The outputs Secrets go with the objects that consume them.
	ps.marks.Controller = nil
	copies, err := r.outputsCopies(ctx, p)
	if err != nil {
		return ps.stop(plandecision.Outputs, err)
	}
	ps.objs = append(copies, ps.objs...)
	return true
}

// act applies the render. On a member the plan is held and its namespace placed first. It
// reports whether the render was applied completely and settled (settle).
func (r *Reconciler) act(ctx context.Context, ps *pass) bool {
	p, tgt := ps.Plan, ps.tgt
	if tgt.Member != nil {
		// The plan is held before anything reaches the member: only the runtime deletes there.
		if err := r.hold(ctx, p); err != nil {
			return ps.stop(plandecision.Hold, err)
		}
		if err := tgt.Member.EnsureNamespace(ctx, p.Namespace); err != nil {
			ps.NotPlaceable = errors.Is(err, clusters.ErrNotPlaceable)
			r.memberFailed(ps, err)
			return ps.stop(plandecision.Place, err)
		}
	}
	res, err := tgt.Applier.Apply(ctx, ps.objs, ps.marks)
	ps.Applied, ps.Live, ps.Waiting = clusters.Tag(res.Objects, tgt.Cluster), res.Live, res.Waiting
	if err != nil {
		var owned *apply.OwnedElsewhere
		if errors.As(err, &owned) {
			ps.Owned = &plandecision.Owned{GroupKind: owned.GroupKind, Namespace: owned.Namespace, Name: owned.Name,
				OwnerValue: owned.OwnerValue, OwnerName: owned.OwnerName, Message: owned.Error()}
		}
		r.memberFailed(ps, err)
		return ps.stop(plandecision.Apply, err)
	}
	if len(plandecision.NotCollected(ps.Applied)) > 0 {
		if err := r.hold(ctx, p); err != nil {
			return ps.stop(plandecision.Hold, err)
		}
	}
	return res.Complete() && r.settle(ctx, ps)
}

// memberFailed tells the member's pool that a request to it failed (not a refusal of our own
// making): one that got no answer marks the member unreachable until its next probe.
func (r *Reconciler) memberFailed(ps *pass, err error) {
	if ps.tgt.Member != nil && !ps.NotPlaceable && !apply.IsRefusal(err) {
		r.members.Failed(ps.tgt.Member, ps.Plan.Namespace, err)
	}
}

// settle follows a complete apply: the runs' history kept, what the render dropped pruned,
// and, after a move, the earlier cluster's objects deleted once everything is healthy here.
func (r *Reconciler) settle(ctx context.Context, ps *pass) bool {
	a := ps.tgt.Applier
	for _, live := range ps.Live {
		limit, _ := strconv.Atoi(live.GetAnnotations()[scorev1b1.AnnotationHistoryLimit])
		history, err := a.KeepRuns(ctx, live, limit, ps.marks)
		if err != nil {
			return ps.stop(plandecision.Settle, err)
		}
		ps.Runs = append(ps.Runs, clusters.Tag(history, ps.Cluster)...)
	}
	previous, elsewhere := clusters.Split(ps.Plan.Status.Objects, ps.Cluster)
	applied := append(slices.Clone(ps.Applied), ps.Runs...)
	if err := a.Prune(ctx, previous, applied, nil); err != nil {
		return ps.stop(plandecision.Settle, err)
	}
	if plandecision.Leave(applied, elsewhere) {
		left, err := r.leave(ctx, elsewhere)
		if err != nil {
			return ps.stop(plandecision.Settle, err)
		}
		ps.Left = &left
		if len(left.Deleted) > 0 {
			moveCoexistence.Observe(coexisted(ps.Plan, time.Now()).Seconds())
		}
	}
	return true
}

// write records what the pass decided: the exposure's status and the plan's (each through
// statuspatch, only when it changed), the events, and the plans an object blocks.
func (r *Reconciler) write(ctx context.Context, patch *statuspatch.Patch, ps *pass, d plandecision.Decision) error {
	p := ps.Plan
	before := patch.Before().(*scorev1b1.WorkloadPlan)
	switch key := client.ObjectKeyFromObject(p); {
	case d.Blocked != nil:
		if len(d.Events) > 0 {
			ctrl.LoggerFrom(ctx).Info("Refused an object another workload owns", "kind", d.Blocked.GroupKind.Kind, "name", d.Blocked.Name, "owner", d.Blocked.OwnerName)
		}
		r.blocked.add(blockingKey(d.Blocked.GroupKind, d.Blocked.Namespace, d.Blocked.Name), key)
	case d.Unblocked:
		r.blocked.clear(key)
	}
	r.record(p, d.Events)
	var exposureErr error
	if d.Exposure != nil && ps.exposure != nil {
		exposureErr = r.writeExposure(ctx, ps.exposure, *d.Exposure)
	}
	// The finalizer this pass may have added (hold) is the status patch's reference: the
	// patch carries the status only, not that write's version, which a later write by the
	// orchestrator would make a conflict.
	patch.Rebase()
	p.Status = d.Status
	wrote, err := patch.Finish(ctx, r.Client, &r.written)
	if wrote && (before.Status.Phase != p.Status.Phase || before.Status.Reason != p.Status.Reason) {
		ctrl.LoggerFrom(ctx).Info("Phase changed", "phase", p.Status.Phase, "reason", p.Status.Reason)
	}
	return errors.Join(d.Retry, exposureErr, err)
}

// record records the decided events: on the plan, or on the Workload one names.
func (r *Reconciler) record(p *scorev1b1.WorkloadPlan, events []plandecision.Event) {
	if r.Recorder == nil {
		return
	}
	for _, e := range events {
		var regarding kruntime.Object = p
		if e.Workload != nil {
			w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: e.Workload.Name, UID: types.UID(e.Workload.UID)}}
			w.SetGroupVersionKind(scorev1b1.GroupVersion.WithKind("Workload"))
			regarding = w
		}
		r.Recorder.Eventf(regarding, nil, e.Type, e.Reason, e.Action, "%s", termtext.Escape(e.Message))
	}
}

// secretsRevision identifies the versions of the outputs Secrets the plan's pods consume:
// 16 hex characters of their UIDs and resource versions, or "" when there are none. A
// rotated secret (rewritten) or a replaced one (a claim reset) changes it, and so rolls the
// pods; nothing of the values goes into it. The metadata comes from the cache of the Secrets
// watch (a rewrite the cache has not seen yet brings the plan back when it arrives); an
// absence is asked of Secrets, as a Secret created a moment ago may not be cached yet.
func (r *Reconciler) secretsRevision(ctx context.Context, p *scorev1b1.WorkloadPlan) (string, error) {
	h := sha256.New()
	found := false
	for _, c := range p.Spec.Claims {
		if c.SecretName == "" {
			continue
		}
		s := &metav1.PartialObjectMetadata{}
		s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		key := client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}
		err := r.Client.Get(ctx, key, s)
		if apierrors.IsNotFound(err) && r.Secrets != nil {
			err = r.Secrets.Get(ctx, key, s)
		}
		if err != nil {
			return "", fmt.Errorf("reading the outputs of %s: %w", c.Key, err)
		}
		fmt.Fprintf(h, "%s/%s/%s\n", c.Key, s.UID, s.ResourceVersion)
		found = true
	}
	if !found {
		return "", nil
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// secretValue reads a secret output from the outputs Secret of the plan's claim.
func (r *Reconciler) secretValue(ctx context.Context, p *scorev1b1.WorkloadPlan) render.SecretValue {
	reader := r.Secrets
	if reader == nil {
		reader = r.Client
	}
	return func(ref scorev1b1.OutputRef) (string, error) {
		for _, c := range p.Spec.Claims {
			if c.Key != ref.ClaimKey {
				continue
			}
			s := &corev1.Secret{}
			if err := reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}, s); err != nil {
				return "", fmt.Errorf("reading the outputs of %s: %w", ref.ClaimKey, err)
			}
			v, ok := s.Data[ref.OutputKey]
			if !ok {
				return "", fmt.Errorf("the outputs of %s have no %s", ref.ClaimKey, ref.OutputKey)
			}
			return string(v), nil
		}
		return "", fmt.Errorf("no claim %s in the plan", ref.ClaimKey)
	}
}

// hold adds the plan's finalizer, once. The write is recorded like a status write: a cached
// copy without the finalizer is older than it. It also resets the plan's managed fields, as the
// orchestrator's writes of a plan do: nothing applies plans server-side, and after the reset
// the API server records none for the plan's later status writes.
func (r *Reconciler) hold(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if controllerutil.ContainsFinalizer(p, scorev1b1.PlanFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(p, scorev1b1.PlanFinalizer)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{}}
	status, replaced := p.Status, p.ResourceVersion
	if err := r.Client.Patch(ctx, p, patch); err != nil {
		return fmt.Errorf("adding the finalizer: %w", err)
	}
	r.written.Wrote(p.UID, replaced, p.ResourceVersion)
	p.Status = status // the response carries the stored status; the pass decides from the one it read
	return nil
}

// release deletes a deleted plan's cluster-scoped objects and everything it applied on member
// clusters (its namespaced objects on the hub go with it by owner reference) and lets it go.
// A member that does not answer holds the plan, which says so; a member no longer registered
// has been let go of explicitly, and its objects are abandoned with an event.
func (r *Reconciler) release(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if !controllerutil.ContainsFinalizer(p, scorev1b1.PlanFinalizer) {
		return nil
	}
	left, err := r.leave(ctx, plandecision.NotCollected(p.Status.Objects))
	if err != nil {
		return err
	}
	r.record(p, plandecision.ReleaseEvents(p, left))
	if len(left.Waiting) > 0 {
		patch := statuspatch.Begin(p)
		p.Status = plandecision.Releasing(p, left.Waiting)
		_, err := patch.Finish(ctx, r.Client, &r.written)
		return err // the cluster's next answer brings the plan back
	}
	patch := client.MergeFrom(p.DeepCopy())
	controllerutil.RemoveFinalizer(p, scorev1b1.PlanFinalizer)
	r.written.Forget(p.UID)
	return client.IgnoreNotFound(r.Client.Patch(ctx, p, patch))
}
