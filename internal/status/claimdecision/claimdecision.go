// Package claimdecision decides a ResourceClaim's status from what a pass of the provisioner
// observed, and what the pass does next: From(observed) is the provisioner's state machine.
// The provisioner reads (Observed), asks From, does the next action it names (run the
// provisioner, publish, retire a moved instance), adds what the action did to Observed and
// asks again, until the decision is Done; then it writes the status decided. It reads no
// cluster: every path of a pass is a row of its table test.
package claimdecision

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// Observed is what a pass read, and what its actions did so far. The fields are filled in the
// order of a pass; each is zero until the pass got there.
type Observed struct {
	// Claim is the claim as the pass read it.
	Claim *scorev1b1.ResourceClaim
	// Now stamps a condition that changes, and tells how long a status that only reports
	// progress has been held.
	Now metav1.Time
	// ProgressHold is how long a status that only reports the provisioned objects' progress
	// keeps what was written, from the moment the claim began Binding (hold); 0 writes every
	// step.
	ProgressHold time.Duration

	// NoConfig: no valid config yet. RevisionNotKept: the revision the claim (or the oldest
	// claim of its instance) names is not kept. Revision is the config's revision otherwise.
	NoConfig, RevisionNotKept bool
	Revision                  string
	// Definition is the provisioner that serves the claim; nil when none does, and Unserved
	// says why.
	Definition *orchconfig.Provisioner
	Unserved   string
	// CmdEnabled: cmd:// provisioners may run (--enable-cmd-provisioners).
	CmdEnabled bool
	// InstanceNamespace is where the platform shares the instance from ("": the claim's own
	// namespace); SharingDenied and HostnameDenied say why the platform's rules refuse the
	// claim ("": they do not).
	InstanceNamespace, SharingDenied, HostnameDenied string
	// ParamsRefused says which param the definition's supported params refuse and why ("":
	// none): the orchestrator refuses such a Workload first, this holds for params composed
	// after it checked them.
	ParamsRefused string
	// Cluster is the member cluster the instance goes to ("": the hub). MemberPending: it is
	// registered and not probed yet. Unreachable: why it cannot be reached.
	Cluster       string
	MemberPending bool
	Unreachable   error
	// Instance is the instance's identity hash.
	Instance string
	// PlatformPolicy is the deprovision policy the platform gives the claim's instance (its
	// class's, else its definition's; "" is Delete), which a consumer of a shared instance
	// keeps unless the definition's sharing allows an override.
	PlatformPolicy scorev1b1.DeprovisionPolicy
	// Shares is what the sharing ledger says of the claim's namespace, when its definition
	// bounds the instances a consumer namespace holds and the claim's instance is shared from
	// another namespace (shares.go); nil otherwise.
	Shares *Shares

	// Recorded is what recording the claim's instance in the sharing ledger did, once made
	// (Record).
	Recorded *Recorded
	// Run is the provisioning run, once made (Provision).
	Run *Run
	// Published is what the publishing writes did, once made (Publish).
	Published *Published
	// Retired is what retiring a moved instance did, once made (Retire).
	Retired *Retired
}

// Run is a provisioning run's outcome.
type Run struct {
	Outcome provisioning.Outcome
	// Err is the *provisioning.StepError that stopped it.
	Err error
}

// Published is what the writes after a complete run did.
type Published struct {
	// PruneErr: pruning what the run no longer produces failed.
	PruneErr error
	// SecretErr: writing the outputs Secret failed; a *ForeignSecret when the Secret of its
	// name is not the claim's.
	SecretErr error
}

// Retired is what releasing a moved instance's objects on the clusters its Workload left did.
type Retired struct {
	// Held are the entries still held elsewhere (on a cluster the Workload still runs on,
	// being deleted, or on a cluster that does not answer).
	Held []scorev1b1.AppliedObject
	Err  error
}

// Next is what a pass does after a decision.
type Next int

const (
	// Done: the status is decided; the pass writes it and returns.
	Done Next = iota
	// Provision runs the provisioner (provisioning.Run) and decides again with Observed.Run.
	Provision
	// Publish prunes what the run no longer produces (Decision.Prune) and writes the outputs
	// Secret, then decides again with Observed.Published.
	Publish
	// Retire releases a moved instance's objects on the clusters its Workload left
	// (Decision.Elsewhere), then decides again with Observed.Retired.
	Retire
	// Record records the claim's instance among those its namespace holds in the sharing
	// ledger, before it is provisioned, then decides again with Observed.Recorded.
	Record
)

// Decision is the claim's status and what the pass does next.
type Decision struct {
	Status scorev1b1.ResourceClaimStatus
	Next   Next
	// Prune are the entries on the instance's cluster the run may no longer list (Publish).
	Prune []scorev1b1.AppliedObject
	// Elsewhere are a moved instance's entries on other clusters (Retire).
	Elsewhere []scorev1b1.AppliedObject
	// RequeueAfter brings the claim back after it (an http+api:// instance's next request).
	RequeueAfter time.Duration
	// Retry is the error the pass returns, so that it is retried with backoff.
	Retry error
}

// From decides the claim's status from what the pass observed, and what it does next.
func From(o Observed) Decision {
	d := &decision{o: o, Decision: Decision{Status: *o.Claim.Status.DeepCopy()}}
	switch {
	case o.RevisionNotKept:
		// Not admitted by this process's config source yet (its notification brings every
		// claim back), or no longer kept (the orchestrator keeps what a claim names).
		d.mark(scorev1b1.ClaimPhasePending, "", fmt.Sprintf("Waiting for config revision %s.", o.Claim.Spec.ConfigRevision))
	case o.NoConfig:
		d.mark(scorev1b1.ClaimPhasePending, "", "Waiting for the platform configuration.")
	case o.Definition == nil:
		// An unknown class or no provisioner: terminal until the config changes; the config
		// watch brings the claim back.
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, o.Unserved)
	default:
		d.served()
	}
	d.hold()
	return d.Decision
}

// decision is a Decision being made from o.
type decision struct {
	Decision
	o Observed
}

// served decides for a claim a definition serves: the platform's refusals, where the instance
// goes, then the run and what follows it.
func (d *decision) served() {
	o := d.o
	d.Status.Provisioner = o.Definition.URI
	d.Status.ConfigRevision = ""
	if o.Claim.Spec.ConfigRevision != "" {
		d.Status.ConfigRevision = o.Revision
	}
	if d.refused() {
		return
	}
	d.Status.InstanceNamespace = o.InstanceNamespace
	switch {
	case o.MemberPending:
		return // the cluster's first probe brings the claim back
	case o.Unreachable != nil:
		d.unreachable(o.Unreachable) // its registration or its next answer brings the claim back
		return
	}
	// A shared instance the ledger does not list is recorded first: until then it is not the
	// claim's (a claim that records it is not taken as one provisioned on it before).
	if o.Run == nil && d.records() {
		return
	}
	d.Status.InstanceCluster, d.Status.Instance = o.Cluster, o.Instance
	// The policy its release follows, recorded with the instance it is bound to: a spec turned
	// to Delete and deleted before the next pass is released by it (ReleasePolicy).
	d.Status.PlatformPolicy = FixedPolicy(o)
	switch {
	case o.Run == nil:
		d.Next = Provision
	case o.Run.Err != nil:
		d.runFailed(o.Run.Err)
	case o.Run.Outcome.Progress != nil:
		d.progressed(*o.Run.Outcome.Progress)
	case !o.Run.Outcome.Applied.Complete():
		// Definitions applied, the rest waits for them to be served; their watch brings the
		// claim back. Nothing is pruned: the run is not applied completely.
		d.Status.Resources = inventory.Union(d.Status.Resources, o.Run.Outcome.Applied.Objects)
		d.mark(scorev1b1.ClaimPhaseBinding, "", "Waiting for "+strings.Join(o.Run.Outcome.Applied.Waiting, ", ")+" to be established.")
	case o.Published == nil:
		d.Next, d.Prune = Publish, d.previous()
	default:
		d.published()
	}
}

// refused reports whether the definition may not serve the claim here, and decides why. Each
// is terminal until what it names changes (the config, the namespace's labels: both watched;
// the controller's flags).
func (d *decision) refused() bool {
	def := d.o.Definition
	strategy, err := orchconfig.StrategyOf(def.URI)
	switch {
	case err != nil:
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s uses a strategy this controller does not run.", def.URI))
	case strategy == orchconfig.StrategyCmd && !d.o.CmdEnabled:
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, CmdDisabledMessage(def.URI))
	case d.o.SharingDenied != "":
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, d.o.SharingDenied)
	case d.o.HostnameDenied != "":
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPolicyViolation, d.o.HostnameDenied)
	case d.o.ParamsRefused != "":
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonSpecInvalid, d.o.ParamsRefused)
	case policyOverridden(d.o) != "":
		// Nothing of the shared instance is the claim's: its release, whatever its policy,
		// deletes none of it (DeprovisionsInstance). The platform's policy recorded when it was
		// bound is kept, for a release decided before this pass is written.
		d.Status.Resources, d.Status.Instance = nil, ""
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, policyOverridden(d.o))
	case overBound(d.o) != "":
		// Retried with backoff, as a quota is: a place freed in the namespace (a claim of it
		// deleted) is not something the provisioner watches.
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPolicyViolation, overBound(d.o))
		d.Retry = errAtBound
	default:
		return false
	}
	return true
}

// runFailed decides on the error that stopped the run, by the step it stopped at.
func (d *decision) runFailed(err error) {
	uri := d.o.Definition.URI
	var waiting *tplfuncs.Waiting
	switch step := provisioning.StepOf(err); {
	case errors.Is(err, provisioning.ErrReferenceRefused):
		// A secret reference the run does not resolve: the tenant's text, or a Secret the
		// definition may not name. Terminal until the claim or the config changes (both
		// watched); nothing of the Secret was used.
		d.Status.Resources = inventory.Union(d.Status.Resources, d.o.Run.Outcome.Applied.Objects)
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, fmt.Sprintf("Provisioner %s: %v.", uri, err))
	case errors.As(err, &waiting):
		// Not a failure: what it waits for (another Workload, in the catalog's service type)
		// brings the claim back when it happens, through the Workload watch.
		d.mark(scorev1b1.ClaimPhaseBinding, "", fmt.Sprintf("Waiting for %s.", waiting.For))
		d.Status.ObservedGeneration, d.Status.OutputsAvailable = d.o.Claim.Generation, false
	case step == provisioning.StepProvision:
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s failed: %v.", uri, err))
		if !errors.Is(err, provisioning.ErrNotRunnable) { // terminal until the config changes; its watch brings the claim back
			d.Retry = retry(err)
		}
	case step == provisioning.StepState:
		// Another claim of the instance wrote the state first, or the cache was behind: the
		// next pass provisions again from the state written.
		d.Retry = err
	case step == provisioning.StepApply:
		// What was placed before the apply stopped is listed, so that it is released with the
		// claim: the applies of a stage run at once, and objects made before the set was
		// refused for one that exists are ours (apply.Applier.CreateUnseen).
		d.Status.Resources = inventory.Union(d.Status.Resources, d.o.Run.Outcome.Applied.Objects)
		d.provisioning()
		d.applyFailed(err)
	default: // StepOutputs
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %v.", uri, err))
		d.Retry = retry(err)
	}
}

// applyFailed decides on an error placing the run's objects, by its class.
func (d *decision) applyFailed(err error) {
	uri := d.o.Definition.URI
	switch class := apierror.Classify(err); {
	case d.o.Cluster != "" && class == apierror.Unreachable:
		d.unreachable(fmt.Errorf("cluster %s does not answer: %w", d.o.Cluster, err)) // its next answer brings the claim back
	case class == apierror.Gone && apierror.NamespaceTerminating(err):
		// The instance's namespace is being deleted, and this claim with it: nothing to report
		// or retry.
	case class == apierror.Transient || class == apierror.Unreachable:
		// Not a failure of the claim: the API server was busy, unreachable or raced; retried
		// with backoff, it clears by itself. A claim the provisioner has reported on (Binding,
		// Bound) keeps what it says, as a plan does: saying it would cost a write now and
		// another when it clears, for no transition; the log says it. One not
		// reported on yet is Binding, and says why it waits.
		d.Retry = retry(err)
		if phase := d.o.Claim.Status.Phase; phase == scorev1b1.ClaimPhaseBinding || phase == scorev1b1.ClaimPhaseBound {
			d.keepSaying()
			return
		}
		d.keepPhase(fmt.Sprintf("Provisioner %s: retrying after a transient error: %v.", uri, err))
	case errors.Is(err, prepare.ErrOwnedElsewhere):
		// An object under a name the instance's objects have, which no instance made (a
		// tenant's, made before the provisioner came): a conflict the user resolves, as the
		// runtime reports another owner's object. Not retried on the hub: the provisioner
		// watches that object, and its deletion brings the claim back; a member's objects are
		// not watched so, and are retried with backoff.
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied,
			fmt.Sprintf("Provisioner %s: %v; it is neither written over nor taken over, and the claim proceeds once it is deleted.", uri, err))
		if d.o.Cluster != "" {
			d.Retry = retry(err)
		}
	case errors.Is(err, prepare.ErrNotAllowed) && d.keptByARollout():
		// Refused by rules the claim was not bound under: nothing it is provisioned from
		// changed, so these are the controllers' (a newer version judging what the previous
		// one applied from the same revision). Nothing is applied and what was stays; the
		// claim stays Bound with its outputs until a rollout moves it to another revision or
		// its spec changes, which decides anew.
		d.keepPhase(fmt.Sprintf("Bound from revision %s; provisioning from it again is refused: %v. What was applied stays as it is, and nothing is applied until the claim moves to another revision or changes.", d.o.Revision, err))
	default:
		// Reported (a denial, an invalid object, a kind not served), and retried with backoff:
		// what lifts it (a quota raised, a CRD installed) is not something the provisioner
		// watches.
		reason := scorev1b1.ReasonClaimFailed
		if class == apierror.Denied {
			reason, _ = apierror.Reason(err)
		}
		if errors.Is(err, prepare.ErrNotAllowed) || errors.Is(err, clusters.ErrNotPlaceable) {
			reason = scorev1b1.ReasonPermissionDenied
		}
		d.mark(scorev1b1.ClaimPhaseFailed, reason, fmt.Sprintf("Provisioner %s: %v.", uri, err))
		if errors.Is(err, provisioning.ErrRunFailed) {
			// Terminal for these inputs: the run is immutable and is not retried. A change of
			// the inputs, the config or the run brings the claim back.
			d.Status.Resources = slices.Concat(d.o.Run.Outcome.Applied.Objects, d.elsewhere())
			return
		}
		d.Retry = retry(err)
	}
}

// keptByARollout reports whether the claim is one a config rollout keeps on a revision, Bound
// from that revision for its generation with its outputs: nothing it is provisioned from
// changed since it was bound.
func (d *decision) keptByARollout() bool {
	c := d.o.Claim
	return c.Spec.ConfigRevision != "" && c.Status.ConfigRevision == c.Spec.ConfigRevision &&
		c.Status.Phase == scorev1b1.ClaimPhaseBound && c.Status.ObservedGeneration == c.Generation && c.Status.OutputsAvailable
}

// progressed decides for an instance provisioned over several runs that is not ready.
func (d *decision) progressed(p provisioning.Progress) {
	uri := d.o.Definition.URI
	switch p.Phase {
	case provisioning.ProgressPending:
		d.mark(scorev1b1.ClaimPhaseBinding, "", fmt.Sprintf("Waiting for %s: %s.", uri, p.Message))
		d.Status.ObservedGeneration = d.o.Claim.Generation
	case provisioning.ProgressRetrying:
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %s.", uri, p.Message))
	default:
		// Terminal for this instance: deleting the claim (under Delete) sends the delete
		// request, and the re-created claim starts afresh.
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s failed: %s.", uri, p.Message))
	}
	d.RequeueAfter = p.After
}

// published decides once the publishing writes are made: a failed write, else the outputs
// and the phase they add up to, then the moved instance's entries elsewhere.
func (d *decision) published() {
	p := d.o.Published
	d.provisioning() // until the outputs say otherwise
	var foreign *ForeignSecret
	switch {
	case p.PruneErr != nil && d.o.Cluster != "" && apierror.Classify(p.PruneErr) == apierror.Unreachable:
		d.keepApplied()
		d.unreachable(fmt.Errorf("cluster %s does not answer: %w", d.o.Cluster, p.PruneErr))
		return
	case errors.As(p.SecretErr, &foreign):
		// Retried with backoff: the Secret's removal lifts it, and Secrets the claims do not
		// control are not watched. What was applied stays listed, for the release.
		d.Status.Outputs, d.Status.SecretRef = nil, nil
		d.Status.Resources = slices.Concat(d.o.Run.Outcome.Applied.Objects, d.elsewhere())
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonPermissionDenied, foreign.Message())
		d.Retry = retry(p.SecretErr)
		return
	case p.PruneErr != nil || p.SecretErr != nil:
		d.keepApplied()
		d.Retry = errors.Join(p.PruneErr, p.SecretErr)
		return
	}
	if err := d.outputs(); err != nil {
		d.keepApplied()
		d.Retry = err
		return
	}
	held := d.elsewhere()
	// A moved instance: the old cluster's objects stay listed until the Workload has left it.
	switch r := d.o.Retired; {
	case d.Status.Phase != scorev1b1.ClaimPhaseBound || len(held) == 0:
	case r == nil:
		d.Next, d.Elsewhere = Retire, held
	case r.Err != nil:
		d.Retry = r.Err
	default:
		held = r.Held
	}
	d.Status.Resources = slices.Concat(d.Status.Resources, held)
}

// outputs publishes the run's outputs (the secret ones by name, in the outputs Secret), its
// inventory, and the phase they add up to: Binding while objects are not healthy (with the
// outputs available if every expected one is there), Failed when an expected output is
// missing, else Bound.
func (d *decision) outputs() error {
	out, uri := d.o.Run.Outcome, d.o.Definition.URI
	d.Status.Outputs = nil
	if len(out.Plain) > 0 {
		raw, err := json.Marshal(out.Plain)
		if err != nil {
			return err
		}
		d.Status.Outputs = &apiextensionsv1.JSON{Raw: raw}
	}
	d.Status.SecretRef = nil
	if len(out.Secret) > 0 {
		keys := make([]string, 0, len(out.Secret))
		for k := range out.Secret {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d.Status.SecretRef = &scorev1b1.OutputsSecretRef{Name: scorev1b1.OutputsSecretName(d.o.Claim.Name), Keys: keys}
	}
	d.Status.Resources = slices.Clone(out.Applied.Objects)
	produced := len(out.Plain)+len(out.Secret) > 0
	missing := provisioning.MissingOutputs(d.o.Definition.ExpectedOutputs, out.Plain, out.Secret)
	switch unhealthy := unhealthyObjects(out.Applied.Objects); {
	case len(unhealthy) > 0:
		// The outputs are published while the objects become healthy, so that a consumer may
		// roll out meanwhile (dependencies.deployWhen: OutputsAvailable); the claim is Bound
		// once they are.
		d.Status.OutputsAvailable = len(missing) == 0 && produced
		d.mark(scorev1b1.ClaimPhaseBinding, "", waitingFor(unhealthy))
	case len(missing) > 0:
		d.mark(scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s did not produce the expected outputs %s.", uri, strings.Join(missing, ", ")))
	default:
		d.Status.OutputsAvailable = produced
		d.mark(scorev1b1.ClaimPhaseBound, scorev1b1.ReasonSucceeded, fmt.Sprintf("Provisioned by %s.", uri))
	}
	d.Status.ObservedGeneration = d.o.Claim.Generation
	return nil
}

// previous are the entries the claim listed on the instance's cluster; elsewhere, on others.
func (d *decision) previous() []scorev1b1.AppliedObject {
	on, _ := clusters.Split(d.o.Claim.Status.Resources, d.o.Cluster)
	return on
}

func (d *decision) elsewhere() []scorev1b1.AppliedObject {
	_, others := clusters.Split(d.o.Claim.Status.Resources, d.o.Cluster)
	return others
}

// keepApplied lists what a complete run applied with what the claim listed: a write after it
// failed, and what was applied must be released with the claim all the same.
func (d *decision) keepApplied() {
	d.Status.Resources = inventory.Union(d.o.Claim.Status.Resources, d.o.Run.Outcome.Applied.Objects)
}

// provisioning says a run is under way, unless the claim is Bound (its objects are there).
func (d *decision) provisioning() {
	if d.Status.Phase != scorev1b1.ClaimPhaseBound {
		d.mark(scorev1b1.ClaimPhaseBinding, "", "Provisioning.")
	}
}

// keepSaying keeps the phase, reason, message and conditions the claim has, as read.
func (d *decision) keepSaying() {
	read := d.o.Claim.Status
	d.Status.Phase, d.Status.Reason, d.Status.Message = read.Phase, read.Reason, read.Message
	d.Status.Conditions = slices.Clone(read.Conditions)
}

// unreachable reports an instance whose cluster does not answer or is not registered: a Bound
// claim stays Bound (its objects are there, nothing was changed or deleted), any other is
// Binding, and the cluster's next answer (or the orchestrator placing the Workload again)
// brings it back.
func (d *decision) unreachable(err error) {
	d.keepPhase(fmt.Sprintf("The instance cannot be provisioned: %v. Nothing was changed or deleted.", err))
}

// keepPhase says message, keeping a Bound claim Bound and making any other Binding.
func (d *decision) keepPhase(message string) {
	phase, reason := d.Status.Phase, d.Status.Reason
	if phase != scorev1b1.ClaimPhaseBound {
		phase, reason = scorev1b1.ClaimPhaseBinding, ""
	}
	d.mark(phase, reason, message)
}

func (d *decision) mark(phase scorev1b1.ClaimPhase, reason scorev1b1.Reason, message string) {
	SetPhase(&d.Status, d.o.Claim.Generation, d.o.Now, phase, reason, message)
}

// SetPhase sets a claim's phase, reason and message, and its Ready condition to match (True
// when Bound; a changed condition stamped now). A Failed claim has processed its generation
// and has no outputs available. The message is stored with its terminal controls escaped: it
// carries what params and provisioners said, and scorectl, kubectl and the dashboard print it.
func SetPhase(s *scorev1b1.ResourceClaimStatus, generation int64, now metav1.Time, phase scorev1b1.ClaimPhase, reason scorev1b1.Reason, message string) {
	message = termtext.Escape(message)
	s.Phase, s.Reason, s.Message = phase, reason, message
	status := metav1.ConditionFalse
	if phase == scorev1b1.ClaimPhaseBound {
		status = metav1.ConditionTrue
	}
	condReason := string(reason)
	if condReason == "" {
		condReason = string(phase)
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: scorev1b1.ClaimConditionReady, Status: status, Reason: condReason, Message: message, ObservedGeneration: generation, LastTransitionTime: now})
	if phase == scorev1b1.ClaimPhaseFailed {
		s.ObservedGeneration = generation
		s.OutputsAvailable = false
	}
}

// CmdDisabledMessage says why a cmd:// definition was refused and how to allow it.
func CmdDisabledMessage(uri string) string {
	return fmt.Sprintf("Provisioner %s runs a command inside the controller, and command provisioners are disabled; the operator allows them with --enable-cmd-provisioners.", uri)
}

// retry turns a provisioning failure into the pass's error, so that it is retried with
// exponential backoff.
func retry(err error) error {
	return fmt.Errorf("provisioning failed, retrying with backoff: %w", err)
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
