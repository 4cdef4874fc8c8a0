// Package provisioner is the provisioner controller: the one writer of ResourceClaim.status. It
// finds the provisioner definition that serves a claim, runs it with the instance's stable
// state, applies the manifests server-side, judges their health with kstatus, and publishes
// the outputs: non-secret ones in status, secret ones in a Secret the claim owns.
package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters/members"
	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionercmd"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
)

// The provisioner's permissions: it writes claim status and finalizers, the state and
// outputs Secrets, and the kinds the development catalog's definitions create.
//
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=score.dev,resources=resourceclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=score.dev,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=score.dev,resources=workloadplans,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;services;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles ResourceClaims.
type Reconciler struct {
	Client   client.Client
	Config   *configsource.Store
	Recorder recorder.EventRecorder
	// EnableCmd allows cmd:// provisioners, which run binaries inside the controller. Off by
	// default.
	EnableCmd bool
	// CmdLimits bound each cmd:// run; zero fields take provisionercmd.DefaultLimits.
	CmdLimits provisionercmd.Limits
	// APINamespace is where http+api:// credentials Secrets live: the controller's own
	// namespace, never a claim's.
	APINamespace string
	// HTTPClient makes http+api:// requests; nil is a client with a 30s timeout.
	HTTPClient *http.Client
	// Clock tells http+api:// progress the time; nil is the real clock.
	Clock clock.PassiveClock
	// Charts fetches the charts of helm:// provisioners by digest, verified and cached.
	Charts *templates.Source
	// Concurrency is the number of claims reconciled at once.
	Concurrency int
	// Shard selects the claims this instance provisions; nil: every claim. The cache holds
	// every claim still: whether an instance has other consumers is a question about all of
	// them.
	Shard labels.Selector

	applier *apply.Applier
	// secrets reads Secrets: the manager's cache holds only the outputs Secrets, the API
	// server answers for the rest (referenced and credentials Secrets, the shared state);
	// state Secrets are read with readState.
	secrets apply.CacheFirst
	// raced are the state Secrets to read from the API server on their next pass (readState).
	raced stateRaces
	// readers remembers, per config, which definitions can read other Workloads' ports.
	readers workloadReaders
	// phases times each claim's phases for the metrics.
	phases phaseClock
	// written tells a cached claim older than this controller's last status write.
	written ownwrites.Tracker
	// revisions reads the kept config revisions a rollout provisions claims from (nil: the
	// current config only).
	revisions *configsource.Revisions
	// members are the registered member clusters; clusterChanged brings back the claims of
	// one that started or stopped answering.
	members        *members.Pool
	clusterChanged chan event.GenericEvent
}

// Reconcile brings one claim one step closer to Bound, or releases it when deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := &scorev1b1.ResourceClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.phases.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !shard.Owns(r.Shard, c) {
		// Another shard's (its Workload's): that shard's provisioner answers for it.
		r.phases.forget(req.NamespacedName)
		r.written.Forget(c.UID)
		return ctrl.Result{}, nil
	}
	if r.written.Stale(c) {
		return ctrl.Result{}, nil
	}
	patch := statuspatch.Begin(c)
	before := patch.Before().(*scorev1b1.ResourceClaim)
	defer func() {
		if !c.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(c, scorev1b1.ClaimFinalizer) {
			r.phases.forget(req.NamespacedName)
			r.written.Forget(c.UID)
			return
		}
		wrote, err := patch.Finish(ctx, r.Client, &r.written)
		if err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if wrote && (before.Status.Phase != c.Status.Phase || before.Status.Reason != c.Status.Reason) {
			ctrl.LoggerFrom(ctx).Info("Phase changed", "phase", c.Status.Phase, "reason", c.Status.Reason, "provisioner", c.Status.Provisioner, "objects", len(c.Status.Resources))
		}
		r.phases.observe(c, before.Status.Phase, r.clock().Now())
	}()

	if !c.DeletionTimestamp.IsZero() {
		return r.release(ctx, c)
	}
	// Until the config source has made its first attempt, nothing is decided: the store's
	// notification brings every claim back.
	if !r.Config.Settled() {
		return ctrl.Result{}, nil
	}
	// The orchestrator creates claims with the finalizer; a claim made otherwise gets it here,
	// before anything is provisioned.
	if controllerutil.AddFinalizer(c, scorev1b1.ClaimFinalizer) {
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
		patch.Rebase()
	}
	return r.provision(ctx, c)
}

// provision runs the matching definition and publishes the result.
func (r *Reconciler) provision(ctx context.Context, c *scorev1b1.ResourceClaim) (ctrl.Result, error) {
	loaded, err := r.configOf(ctx, c)
	if errors.Is(err, errNotKept) {
		// Not admitted by this process's config source yet (its notification brings every
		// claim back), or no longer kept (the orchestrator keeps what a claim names).
		setPhase(c, scorev1b1.ClaimPhasePending, "", fmt.Sprintf("Waiting for config revision %s.", c.Spec.ConfigRevision))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if loaded == nil {
		setPhase(c, scorev1b1.ClaimPhasePending, "", "Waiting for the platform configuration.")
		return ctrl.Result{}, nil
	}
	claimParams, _ := values.Object(c.Spec.Params)
	served, message, ok := provisionermatch.Resolve(provisionermatch.Input{
		Classes: loaded.Config.Classes, Provisioners: loaded.Config.Provisioners,
		Claim: provisionermatch.Claim{Type: c.Spec.Type, Class: c.Spec.Class, ID: c.Spec.ID, Params: claimParams},
	})
	if !ok {
		// An unknown class or no provisioner: terminal until the config changes; the config
		// watch brings the claim back.
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, message)
		return ctrl.Result{}, nil
	}
	def, params := loaded.Config.Provisioners[served.Index], served.Params
	c.Status.Provisioner = def.URI
	c.Status.ConfigRevision = ""
	if c.Spec.ConfigRevision != "" {
		c.Status.ConfigRevision = loaded.Revision
	}
	strategy, err := provisioning.StrategyOf(def.URI)
	if err != nil {
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s uses a strategy this controller does not run.", def.URI))
		return ctrl.Result{}, nil // terminal until the config changes; its watch brings the claim back
	}
	if strategy == provisioning.StrategyCmd && !r.EnableCmd {
		// Terminal until the operator restarts the controller with the flag.
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, cmdDisabledMessage(def.URI))
		return ctrl.Result{}, nil
	}

	home, denied, err := r.instanceNamespace(ctx, c, def)
	if err != nil {
		return ctrl.Result{}, err
	}
	if denied != "" {
		// Terminal until the namespace's labels or the config change; both are watched.
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, denied)
		return ctrl.Result{}, nil
	}
	if denied, err := r.hostnameDenied(ctx, c, def, params, loaded.Config); err != nil || denied != "" {
		if denied != "" {
			// Terminal until the namespace's labels or the config change; both are watched.
			setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPolicyViolation, denied)
		}
		return ctrl.Result{}, err
	}
	c.Status.InstanceNamespace = home
	cluster := instanceCluster(c, def)
	if cluster != "" && r.members.Pending(ctx, cluster) {
		return ctrl.Result{}, nil // the cluster's first probe brings the claim back
	}
	tgt, err := r.members.Target(cluster, identityOn(c, cluster).Namespace, r.applier)
	if err != nil {
		unreachable(c, err)
		return ctrl.Result{}, nil // the cluster's registration or its next answer brings the claim back
	}
	c.Status.InstanceCluster = cluster
	previous, elsewhere := clusters.Split(c.Status.Resources, cluster)
	id := claimIdentity(c)
	c.Status.Instance = id.Hash()
	state, err := r.loadState(ctx, id, readsShared(def))
	if err != nil {
		return ctrl.Result{}, err
	}
	data, err := r.templateData(ctx, c, def, id, served.Class, params, state)
	if err != nil {
		return ctrl.Result{}, err
	}
	if strategy == provisioning.StrategyAPI {
		return r.provisionAPI(ctx, c, def, id, data, state)
	}
	res, err := provisioning.Provision(ctx, strategy, def, data, r.env())
	var waiting *tplfuncs.Waiting
	if errors.As(err, &waiting) {
		// Not a failure: what it waits for (another Workload, in the catalog's service type)
		// brings the claim back when it happens, through the Workload watch.
		setPhase(c, scorev1b1.ClaimPhaseBinding, "", fmt.Sprintf("Waiting for %s.", waiting.For))
		c.Status.ObservedGeneration, c.Status.OutputsAvailable = c.Generation, false
		return ctrl.Result{}, nil
	}
	if err != nil {
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s failed: %v.", def.URI, err))
		if errors.Is(err, provisioning.ErrNotRunnable) {
			return ctrl.Result{}, nil // terminal until the config changes; its watch brings the claim back
		}
		return ctrl.Result{}, reconcileErr(err)
	}
	if err := r.saveState(ctx, id, &state, res); err != nil {
		return ctrl.Result{}, err
	}
	if c.Status.Phase != scorev1b1.ClaimPhaseBound {
		setPhase(c, scorev1b1.ClaimPhaseBinding, "", "Provisioning.")
	}

	marks := prepare.InstanceMarks(id.Namespace, id.Hash())
	objs, err := res.Objects()
	var applied apply.Result
	if err == nil && tgt.Member != nil {
		err = tgt.Member.EnsureNamespace(ctx, id.Namespace)
	}
	if err == nil {
		applied, err = tgt.Applier.Apply(ctx, objs, marks)
	}
	if err == nil && res.Run != nil {
		var runOutputs map[string]any
		runOutputs, err = r.judgeRun(ctx, tgt.Applier, def, &applied, marks)
		res.Outputs = provisioning.PatchMap(res.Outputs, runOutputs)
	}
	clusters.Tag(applied.Objects, cluster)
	if err != nil && tgt.Member != nil && r.members.Failed(tgt.Member, id.Namespace, err) {
		unreachable(c, fmt.Errorf("cluster %s does not answer: %w", cluster, err))
		return ctrl.Result{}, nil // its next answer brings the claim back
	}
	if err != nil && apierror.NamespaceTerminating(err) {
		// The instance's namespace is being deleted, and this claim with it: nothing to report
		// or retry.
		return ctrl.Result{}, nil
	}
	if err != nil && apierror.Passing(err) {
		// Not a failure of the claim: the API server was busy, unreachable or raced; retried
		// with backoff, it clears by itself. A Bound claim stays Bound (its objects are there).
		phase, reason := c.Status.Phase, c.Status.Reason
		if phase != scorev1b1.ClaimPhaseBound {
			phase, reason = scorev1b1.ClaimPhaseBinding, ""
		}
		setPhase(c, phase, reason, fmt.Sprintf("Provisioner %s: retrying after a transient error: %v.", def.URI, err))
		return ctrl.Result{}, reconcileErr(err)
	}
	if err != nil {
		// Reported (a denial, an invalid object, a kind not served), and retried with backoff:
		// what lifts it (a quota raised, a CRD installed) is not something the provisioner
		// watches.
		reason := scorev1b1.ReasonClaimFailed
		if denial, denied := apierror.Reason(err); denied {
			reason = denial
		}
		if errors.Is(err, prepare.ErrNotAllowed) || errors.Is(err, members.ErrNotPlaceable) {
			reason = scorev1b1.ReasonPermissionDenied
		}
		setPhase(c, scorev1b1.ClaimPhaseFailed, reason, fmt.Sprintf("Provisioner %s: %v.", def.URI, err))
		if errors.Is(err, errRunFailed) {
			// Terminal for these inputs: the run is immutable and is not retried. A change of
			// the inputs, the config or the run brings the claim back.
			c.Status.Resources = append(applied.Objects, elsewhere...)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, reconcileErr(err)
	}
	if !applied.Complete() {
		// Definitions applied, the rest waits for them to be served; their watch brings the
		// claim back. Nothing is pruned: the run is not applied completely.
		c.Status.Resources = inventory.Union(c.Status.Resources, applied.Objects)
		setPhase(c, scorev1b1.ClaimPhaseBinding, "", "Waiting for "+strings.Join(applied.Waiting, ", ")+" to be established.")
		return ctrl.Result{}, nil
	}
	if err := tgt.Applier.Prune(ctx, previous, applied.Objects, func(o scorev1b1.AppliedObject) (bool, error) { return r.usedByOthers(ctx, c, o) }); err != nil {
		if tgt.Member != nil && r.members.Failed(tgt.Member, id.Namespace, err) {
			unreachable(c, fmt.Errorf("cluster %s does not answer: %w", cluster, err))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	secrets := r.secrets.Get
	if tgt.Member != nil {
		secrets = tgt.Member.Client.Get // a Secret an output refers to is the instance's, on its cluster
	}

	manifestSecrets := provisioning.SecretsInManifests(res.Manifests)
	plain, secret, err := provisioning.SplitOutputs(res.Outputs, func(ref provisioning.SecretRef) (string, error) {
		if v, ok := manifestSecrets[ref]; ok {
			return v, nil
		}
		return readSecretKey(ctx, secrets, id.Namespace, ref)
	})
	if err != nil {
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %v.", def.URI, err))
		return ctrl.Result{}, reconcileErr(err)
	}
	if err := r.publish(ctx, c, def, plain, secret, applied.Objects); err != nil {
		return ctrl.Result{}, err
	}
	// A moved instance: the old cluster's objects stay listed until the Workload has left it.
	if c.Status.Phase == scorev1b1.ClaimPhaseBound {
		if elsewhere, err = r.retire(ctx, c, elsewhere); err != nil {
			return ctrl.Result{}, err
		}
	}
	c.Status.Resources = append(c.Status.Resources, elsewhere...)
	return ctrl.Result{}, nil
}

// publish writes the outputs (secret ones into the outputs Secret), the inventory, and the
// phase they add up to: Binding while objects are not healthy (with the outputs available if
// every expected one is there), Failed when an expected output is missing, else Bound.
func (r *Reconciler) publish(ctx context.Context, c *scorev1b1.ResourceClaim, def orchconfig.Provisioner, plain map[string]any, secret map[string]string, applied []scorev1b1.AppliedObject) error {
	if err := r.publishSecretOutputs(ctx, c, secret); err != nil {
		var foreign *foreignOutputsSecret
		if errors.As(err, &foreign) {
			// Retried with backoff: the Secret's removal lifts it, and Secrets the claims do
			// not control are not watched. What was applied stays listed, for the release.
			c.Status.Outputs, c.Status.SecretRef, c.Status.Resources = nil, nil, applied
			setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, foreign.message())
			return reconcileErr(err)
		}
		return err
	}
	c.Status.Outputs = nil
	if len(plain) > 0 {
		raw, err := json.Marshal(plain)
		if err != nil {
			return err
		}
		c.Status.Outputs = &apiextensionsv1.JSON{Raw: raw}
	}
	c.Status.SecretRef = nil
	if len(secret) > 0 {
		keys := make([]string, 0, len(secret))
		for k := range secret {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		c.Status.SecretRef = &scorev1b1.OutputsSecretRef{Name: scorev1b1.OutputsSecretName(c.Name), Keys: keys}
	}
	c.Status.Resources = applied

	missing := provisioning.MissingOutputs(def.ExpectedOutputs, plain, secret)
	unhealthy := unhealthyObjects(applied)
	switch {
	case len(unhealthy) > 0:
		// The outputs are published while the objects become healthy, so that a consumer may
		// roll out meanwhile (dependencies.deployWhen: OutputsAvailable); the claim is Bound
		// once they are.
		c.Status.OutputsAvailable = len(missing) == 0 && len(plain)+len(secret) > 0
		setPhase(c, scorev1b1.ClaimPhaseBinding, "", "Waiting for "+strings.Join(unhealthy, ", ")+".")
	case len(missing) > 0:
		c.Status.OutputsAvailable = false
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s did not produce the expected outputs %s.", def.URI, strings.Join(missing, ", ")))
	default:
		c.Status.OutputsAvailable = len(plain)+len(secret) > 0
		setPhase(c, scorev1b1.ClaimPhaseBound, scorev1b1.ReasonSucceeded, fmt.Sprintf("Provisioned by %s.", def.URI))
	}
	c.Status.ObservedGeneration = c.Generation
	return nil
}

// env is what provisioning runs may reach: the chart source, and the command runner when
// command provisioners are enabled.
func (r *Reconciler) env() provisioning.Env {
	env := provisioning.Env{Chart: func(ctx context.Context, ref scorev1b1.TemplateRef) ([]byte, error) {
		if r.Charts == nil {
			return nil, errors.New("no chart source is configured")
		}
		chart, err := r.Charts.Get(ctx, ref)
		return chart.Data, err
	}}
	if r.EnableCmd {
		env.Command = provisionercmd.Runner(r.CmdLimits)
	}
	return env
}

// cmdDisabledMessage says why a cmd:// definition was refused and how to allow it.
func cmdDisabledMessage(uri string) string {
	return fmt.Sprintf("Provisioner %s runs a command inside the controller, and command provisioners are disabled; the operator allows them with --enable-cmd-provisioners.", uri)
}

// reconcileErr turns a provisioning failure into an error, so that it is retried with
// exponential backoff.
func reconcileErr(err error) error {
	return fmt.Errorf("provisioning failed, retrying with backoff: %w", err)
}

func setPhase(c *scorev1b1.ResourceClaim, phase scorev1b1.ClaimPhase, reason scorev1b1.Reason, message string) {
	c.Status.Phase, c.Status.Reason, c.Status.Message = phase, reason, message
	status := metav1.ConditionFalse
	if phase == scorev1b1.ClaimPhaseBound {
		status = metav1.ConditionTrue
	}
	condReason := string(reason)
	if condReason == "" {
		condReason = string(phase)
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: scorev1b1.ClaimConditionReady, Status: status, Reason: condReason, Message: message, ObservedGeneration: c.Generation})
	if phase == scorev1b1.ClaimPhaseFailed {
		c.Status.ObservedGeneration = c.Generation
		c.Status.OutputsAvailable = false
	}
}

// readSecretKey reads, with get, a key of an existing Secret a provisioner's outputs refer to.
func readSecretKey(ctx context.Context, get func(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error, namespace string, ref provisioning.SecretRef) (string, error) {
	s := &corev1.Secret{}
	if err := get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err != nil {
		return "", fmt.Errorf("secret %s referenced by an output: %w", ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
	}
	return string(v), nil
}

// publishSecretOutputs writes the secret outputs into the claim's outputs Secret, only when
// they changed, and removes it when there are none. It writes, removes or reads back only a
// Secret the claim controls (ownsOutputsSecret); one of that name that it does not control —
// a tenant's, unowned, or another object's — is left as it is, and refused
// (*foreignOutputsSecret) when there are outputs to write.
//
// The Secret is read from the cache, its absence included: outputs Secrets carry the Workload
// label the cache selects (taken-over ones get it), and one the cache does not hold is
// created, which fails when a Secret of that name exists after all (the cache a moment
// behind, or a Secret not ours); only then is the API server asked. Asking it first was one
// of the reads a pass over a new claim waited for (make bench).
func (r *Reconciler) publishSecretOutputs(ctx context.Context, c *scorev1b1.ResourceClaim, secret map[string]string) error {
	key := client.ObjectKey{Namespace: c.Namespace, Name: scorev1b1.OutputsSecretName(c.Name)}
	data := map[string][]byte{}
	for k, v := range secret {
		data[k] = []byte(v)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{scorev1b1.LabelWorkload: c.Spec.WorkloadRef.Name}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := controllerutil.SetControllerReference(c, s, r.Client.Scheme()); err != nil {
		return err
	}
	existing := &corev1.Secret{}
	err := r.Client.Get(ctx, key, existing)
	if apierrors.IsNotFound(err) {
		if len(secret) == 0 {
			return nil
		}
		if err = r.Client.Create(ctx, s); !apierrors.IsAlreadyExists(err) {
			return err
		}
		err = r.secrets.APIServer.Get(ctx, key, existing)
	}
	if err != nil {
		return err
	}
	if !ownsOutputsSecret(c, existing) {
		if len(secret) == 0 {
			return nil // nothing to publish, and not ours to remove
		}
		return newForeignOutputsSecret(existing)
	}
	if len(secret) == 0 {
		return client.IgnoreNotFound(r.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}))
	}
	if metav1.IsControlledBy(existing, c) && existing.Labels[scorev1b1.LabelWorkload] == s.Labels[scorev1b1.LabelWorkload] && equality.Semantic.DeepEqual(existing.Data, data) {
		return nil
	}
	if !metav1.IsControlledBy(existing, c) {
		// An earlier claim's, taken over: with this claim's metadata only, so nothing set on
		// it by whoever made it (an annotation another tool acts on) stays on the credentials.
		existing.Labels, existing.Annotations = nil, nil
	}
	existing.Data, existing.OwnerReferences = data, s.OwnerReferences
	metav1.SetMetaDataLabel(&existing.ObjectMeta, scorev1b1.LabelWorkload, s.Labels[scorev1b1.LabelWorkload])
	return r.Client.Update(ctx, existing)
}

// ownsOutputsSecret reports whether the Secret of a claim's outputs Secret name is the claim's
// to write: controlled by the claim, or by an earlier claim of the same name (a claim reset,
// before the garbage collector removed it: a name holds one claim at a time, so that claim is
// gone). The new claim takes the latter over, so that the collector leaves it and the pods
// that read it keep their values. Anything else — no controller at all, another kind's, a
// Secret of another type — was not written by the provisioner, and is not taken over.
func ownsOutputsSecret(c *scorev1b1.ResourceClaim, s *corev1.Secret) bool {
	owner := metav1.GetControllerOf(s)
	if owner == nil {
		return false
	}
	if owner.UID == c.UID {
		return true
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	return err == nil && gv.Group == scorev1b1.GroupVersion.Group && owner.Kind == "ResourceClaim" && owner.Name == c.Name &&
		s.Type == corev1.SecretTypeOpaque
}

// foreignOutputsSecret is a Secret of a claim's outputs Secret name that the claim does not
// control.
type foreignOutputsSecret struct {
	Name string
	// Controller is the Secret's controller ("<Kind> <name>"), "" when it has none.
	Controller string
}

func newForeignOutputsSecret(s *corev1.Secret) *foreignOutputsSecret {
	e := &foreignOutputsSecret{Name: s.Name}
	if owner := metav1.GetControllerOf(s); owner != nil {
		e.Controller = owner.Kind + " " + owner.Name
	}
	return e
}

func (e *foreignOutputsSecret) Error() string {
	return fmt.Sprintf("secret %s exists and was not created for this claim (%s)", e.Name, e.held())
}

// message is the claim's status message.
func (e *foreignOutputsSecret) message() string {
	return fmt.Sprintf("Secret %s exists and was not created for this claim (%s); it is left as it is and the claim's secret outputs are not written into it: remove or rename it.", e.Name, e.held())
}

func (e *foreignOutputsSecret) held() string {
	if e.Controller == "" {
		return "it has no controller"
	}
	return "it is controlled by " + e.Controller
}

// unhealthyObjects names the applied objects kstatus does not judge Current.
func unhealthyObjects(applied []scorev1b1.AppliedObject) []string {
	var out []string
	for _, o := range applied {
		if o.Health != scorev1b1.HealthCurrent {
			out = append(out, fmt.Sprintf("%s %s (%s)", o.Kind, o.Name, strings.ToLower(o.Health)))
		}
	}
	return out
}
