package claimdecision

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

const uri = "template://dev/postgres"

var now = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// object is an inventory entry named name on cluster, Current unless health says otherwise.
func object(name, cluster string, health ...string) scorev1b1.AppliedObject {
	h := scorev1b1.HealthCurrent
	if len(health) > 0 {
		h = health[0]
	}
	return scorev1b1.AppliedObject{Cluster: cluster, APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: name, Health: h}
}

// observed is a claim of generation 3 that a definition serves, before its run; with
// applies changes to it.
func observed(with ...func(*Observed)) Observed {
	c := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-db", Generation: 3},
		Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web"}, Key: "db", Type: "postgres"}}
	o := Observed{Claim: c, Now: now, Revision: "r2", Instance: "0123456789abcdef", CmdEnabled: true,
		Definition: &orchconfig.Provisioner{URI: uri, Type: "postgres", ExpectedOutputs: []string{"host"}}}
	for _, w := range with {
		w(&o)
	}
	return o
}

// bound makes the claim as read Bound, listing resources.
func bound(resources ...scorev1b1.AppliedObject) func(*Observed) {
	return func(o *Observed) {
		SetPhase(&o.Claim.Status, o.Claim.Generation, now, scorev1b1.ClaimPhaseBound, scorev1b1.ReasonSucceeded, "Provisioned by "+uri+".")
		o.Claim.Status.Resources = resources
	}
}

// boundFrom is a claim a rollout keeps on revision, Bound from it with its outputs.
func boundFrom(revision string) func(*Observed) {
	return func(o *Observed) {
		bound(live)(o)
		o.Claim.Spec.ConfigRevision, o.Claim.Status.ConfigRevision, o.Revision = revision, revision, revision
		o.Claim.Status.OutputsAvailable, o.Claim.Status.ObservedGeneration = true, o.Claim.Generation
	}
}

// definition serves the claim with the definition of uri.
func definition(uri string) func(*Observed) {
	return func(o *Observed) { o.Definition = &orchconfig.Provisioner{URI: uri, Type: "postgres"} }
}

// ran is a complete run that applied objects and produced plain outputs.
func ran(plain map[string]any, secret map[string]string, objects ...scorev1b1.AppliedObject) func(*Observed) {
	return func(o *Observed) {
		o.Run = &Run{Outcome: provisioning.Outcome{Plain: plain, Secret: secret, Applied: provisioning.Applied{Objects: objects}}}
	}
}

// failedAt is a run stopped at step by err, having applied objects.
func failedAt(step provisioning.Step, err error, objects ...scorev1b1.AppliedObject) func(*Observed) {
	return func(o *Observed) {
		o.Run = &Run{Outcome: provisioning.Outcome{Applied: provisioning.Applied{Objects: objects}}, Err: &provisioning.StepError{Step: step, Err: err}}
	}
}

func progressed(phase provisioning.ProgressPhase, message string, after time.Duration) func(*Observed) {
	return func(o *Observed) {
		o.Run = &Run{Outcome: provisioning.Outcome{Progress: &provisioning.Progress{Phase: phase, Message: message, After: after}}}
	}
}

func published(prune, secret error) func(*Observed) {
	return func(o *Observed) { o.Published = &Published{PruneErr: prune, SecretErr: secret} }
}

func on(cluster string) func(*Observed) { return func(o *Observed) { o.Cluster = cluster } }

var (
	gr           = schema.GroupResource{Resource: "configmaps"}
	quota        = apierrors.NewForbidden(gr, "x", errors.New("exceeded quota: q, requested: count/configmaps=1, used: 1, limited: 1"))
	conflict     = apierrors.NewConflict(gr, "x", errors.New("changed"))
	noAnswer     = &url.Error{Op: "Patch", URL: "https://member", Err: io.EOF}
	terminating  = terminatingErr()
	invalid      = apierrors.NewBadRequest("the object is invalid")
	stateRaced   = errors.New("state score-state-x is not as it was read")
	moved        = object("old", "eu")
	live         = object("db", "")
	outputsPlain = map[string]any{"host": "db.team"}
)

func terminatingErr() error {
	err := apierrors.NewForbidden(gr, "x", errors.New("unable to create new content in namespace team because it is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return err
}

// want is what a decision must say; a zero field is not checked, but Next, retry and the
// requeue always are.
type want struct {
	phase   scorev1b1.ClaimPhase
	reason  scorev1b1.Reason
	message string
	next    Next
	retry   bool
	requeue time.Duration
	// resources are the names of the inventory entries, "-" for none.
	resources string
	check     func(t *testing.T, d Decision)
}

// Every path a pass of the provisioner can take, from what it observed.
func TestFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Observed
		want want
	}{
		// Before a definition serves the claim.
		{"the revision the claim names is not kept", observed(func(o *Observed) { o.RevisionNotKept = true; o.Claim.Spec.ConfigRevision = "r1" }),
			want{phase: scorev1b1.ClaimPhasePending, message: "Waiting for config revision r1."}},
		{"no config yet", observed(func(o *Observed) { o.NoConfig = true }),
			want{phase: scorev1b1.ClaimPhasePending, message: "Waiting for the platform configuration."}},
		{"no definition serves the claim", observed(func(o *Observed) { o.Definition, o.Unserved = nil, "No provisioner serves type postgres." }),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "No provisioner serves type postgres."}},

		// The platform's refusals, terminal until what they name changes.
		{"a strategy not run here", observed(definition("ftp://x")),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner ftp://x uses a strategy this controller does not run."}},
		{"command provisioners disabled", observed(definition("cmd:///bin/dns"), func(o *Observed) { o.CmdEnabled = false }),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: CmdDisabledMessage("cmd:///bin/dns")}},
		{"sharing denied", observed(func(o *Observed) { o.SharingDenied = "Namespace team may not share postgres main." }),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "Namespace team may not share postgres main."}},
		{"a host name refused", observed(func(o *Observed) { o.HostnameDenied = "Namespace team may not use host name a.example." }),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPolicyViolation, message: "Namespace team may not use host name a.example."}},
		{"a param its definition refuses", observed(func(o *Observed) { o.ParamsRefused = "The claim's params.size must be a quantity, not \"x\"." }),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonSpecInvalid, message: "The claim's params.size must be a quantity, not \"x\"."}},

		// Where the instance goes.
		{"the member is registered and not probed yet", observed(on("eu"), func(o *Observed) { o.MemberPending = true }),
			want{check: func(t *testing.T, d Decision) {
				if d.Status.Phase != "" || d.Status.InstanceCluster != "" || d.Status.Provisioner != uri {
					t.Errorf("a pending member changed the phase or the instance: %+v", d.Status)
				}
			}}},
		{"the member does not answer", observed(on("eu"), func(o *Observed) { o.Unreachable = errors.New("cluster eu does not answer: probe failed") }),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "The instance cannot be provisioned: cluster eu does not answer: probe failed. Nothing was changed or deleted."}},
		{"a Bound claim whose member does not answer stays Bound", observed(on("eu"), bound(moved), func(o *Observed) { o.Unreachable = errors.New("cluster eu is not registered") }),
			want{phase: scorev1b1.ClaimPhaseBound, reason: scorev1b1.ReasonSucceeded, message: "The instance cannot be provisioned: cluster eu is not registered. Nothing was changed or deleted.", resources: "old"}},
		{"ready to run", observed(func(o *Observed) { o.InstanceNamespace = "shared-home" }),
			want{next: Provision, check: func(t *testing.T, d Decision) {
				if d.Status.InstanceNamespace != "shared-home" || d.Status.Instance != "0123456789abcdef" {
					t.Errorf("the instance is not recorded: %+v", d.Status)
				}
			}}},

		// The run stopped.
		{"a template waits for another Workload", observed(failedAt(provisioning.StepProvision, &tplfuncs.Waiting{For: "workload backend"})),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Waiting for workload backend.", check: observedGeneration(3)}},
		{"the provisioner failed", observed(failedAt(provisioning.StepProvision, errors.New("no capacity left"))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + " failed: no capacity left.", retry: true}},
		{"the provisioner cannot run here", observed(failedAt(provisioning.StepProvision, fmt.Errorf("%w: no such binary", provisioning.ErrNotRunnable))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + " failed: the provisioner cannot run: no such binary."}},
		{"another claim of the instance wrote the state first", observed(bound(live), failedAt(provisioning.StepState, stateRaced)),
			want{phase: scorev1b1.ClaimPhaseBound, message: "Provisioned by " + uri + ".", retry: true, resources: "db"}},
		{"the instance's namespace is being deleted", observed(failedAt(provisioning.StepApply, terminating)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Provisioning."}},
		{"a transient error", observed(failedAt(provisioning.StepApply, conflict)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Provisioner " + uri + ": retrying after a transient error: " + conflict.Error() + ".", retry: true}},
		{"a transient error keeps a Bound claim as it was", observed(bound(live), failedAt(provisioning.StepApply, apierrors.NewServiceUnavailable("restarting"))),
			want{phase: scorev1b1.ClaimPhaseBound, reason: scorev1b1.ReasonSucceeded, message: "Provisioned by " + uri + ".", retry: true, resources: "db"}},
		{"a transient error keeps a Binding claim as it was (no write for no transition)", observed(func(o *Observed) {
			SetPhase(&o.Claim.Status, o.Claim.Generation, now, scorev1b1.ClaimPhaseBinding, "", "Waiting for StatefulSet db (inprogress).")
		}, failedAt(provisioning.StepApply, conflict)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Waiting for StatefulSet db (inprogress).", retry: true, check: func(t *testing.T, d Decision) {
				if c := d.Status.Conditions; len(c) != 1 || c[0].Message != "Waiting for StatefulSet db (inprogress)." {
					t.Errorf("conditions %+v", c)
				}
			}}},
		{"the member stops answering while applying", observed(on("eu"), bound(moved), failedAt(provisioning.StepApply, noAnswer)),
			want{phase: scorev1b1.ClaimPhaseBound, message: "The instance cannot be provisioned: cluster eu does not answer: " + noAnswer.Error() + ". Nothing was changed or deleted."}},
		{"a quota", observed(failedAt(provisioning.StepApply, quota)),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonQuotaExceeded, message: "Provisioner " + uri + ": " + quota.Error() + ".", retry: true}},
		{"an invalid object", observed(failedAt(provisioning.StepApply, invalid)),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + ": the object is invalid.", retry: true}},
		{"a kind the platform does not allow", observed(failedAt(provisioning.StepApply, fmt.Errorf("ClusterRole x: %w", prepare.ErrNotAllowed))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "Provisioner " + uri + ": ClusterRole x: not allowed.", retry: true}},
		{"refused by rules the claim was not bound under (a newer version's, same revision, same spec): Bound, nothing applied, not retried",
			observed(boundFrom("r1"), failedAt(provisioning.StepApply, fmt.Errorf("Job build: %w", prepare.ErrNotAllowed))),
			want{phase: scorev1b1.ClaimPhaseBound, reason: scorev1b1.ReasonSucceeded, resources: "db",
				message: "Bound from revision r1; provisioning from it again is refused: Job build: not allowed. What was applied stays as it is, and nothing is applied until the claim moves to another revision or changes."}},
		{"refused after the rollout moved the claim to another revision: Failed",
			observed(boundFrom("r1"), func(o *Observed) { o.Claim.Spec.ConfigRevision, o.Revision = "r2", "r2"; o.Claim.Generation++ },
				failedAt(provisioning.StepApply, fmt.Errorf("Job build: %w", prepare.ErrNotAllowed))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, retry: true}},
		{"refused after the claim's spec changed: Failed",
			observed(boundFrom("r1"), func(o *Observed) { o.Claim.Generation++ }, failedAt(provisioning.StepApply, fmt.Errorf("Job build: %w", prepare.ErrNotAllowed))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, retry: true}},
		{"refused with no revision the claim is kept on (no rollout policy): Failed",
			observed(boundFrom(""), failedAt(provisioning.StepApply, fmt.Errorf("Job build: %w", prepare.ErrNotAllowed))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, retry: true}},
		{"a member namespace the hub may not place into", observed(on("eu"), failedAt(provisioning.StepApply, fmt.Errorf("the namespace team on cluster eu: %w", clusters.ErrNotPlaceable))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, retry: true}},
		{"a set refused after some of its objects were created lists them", observed(bound(object("old", "")), failedAt(provisioning.StepApply,
			errors.New("Service db exists and was not created by the runtime"), object("db-secret", ""))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + ": Service db exists and was not created by the runtime.", retry: true, resources: "old,db-secret"}},
		{"an object no instance made, under an instance's name: a conflict, woken by its deletion", observed(bound(object("old", "")), failedAt(provisioning.StepApply,
			fmt.Errorf("Service db exists and was not created by the provisioner: %w", prepare.ErrOwnedElsewhere), object("db-secret", ""))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, resources: "old,db-secret",
				message: "Provisioner " + uri + ": Service db exists and was not created by the provisioner: the object exists and is another owner's; it is neither written over nor taken over, and the claim proceeds once it is deleted."}},
		{"the same on a member, whose objects are not watched so: retried", observed(on("eu"), failedAt(provisioning.StepApply,
			fmt.Errorf("Service db: %w", prepare.ErrOwnedElsewhere))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, retry: true}},
		{"the run failed", observed(bound(moved), on(""), failedAt(provisioning.StepApply, fmt.Errorf("%w: Job migrate: BackoffLimitExceeded", provisioning.ErrRunFailed), object("migrate", "", scorev1b1.HealthFailed))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + ": the run failed: Job migrate: BackoffLimitExceeded.", resources: "migrate,old"}},
		{"a CRD not established yet", observed(bound(object("stale", "")), func(o *Observed) {
			o.Run = &Run{Outcome: provisioning.Outcome{Applied: provisioning.Applied{Objects: []scorev1b1.AppliedObject{object("crd", "")}, Waiting: []string{"CustomResourceDefinition dbs.example.com"}}}}
		}), want{phase: scorev1b1.ClaimPhaseBinding, message: "Waiting for CustomResourceDefinition dbs.example.com to be established.", resources: "stale,crd"}},
		{"an output refers to a Secret that is not there", observed(failedAt(provisioning.StepOutputs, errors.New(`output "password": secret pw referenced by an output: not found`))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + `: output "password": secret pw referenced by an output: not found.`, retry: true}},

		// A reference the run does not resolve (resolved, it would read another Secret of the
		// namespace) is the tenant's doing or the definition's reach, not a failure to retry;
		// what the run placed stays listed.
		{"a secret reference in the tenant's params", observed(failedAt(provisioning.StepProvision, fmt.Errorf("%w: params.path holds 🔐 or 💬", provisioning.ErrReferenceRefused))),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "Provisioner " + uri + ": secret reference refused: params.path holds 🔐 or 💬.", resources: "-"}},
		{"an output refers to a Secret that is not the instance's", observed(failedAt(provisioning.StepOutputs, fmt.Errorf("%w: secret pg-other is not the instance's", provisioning.ErrReferenceRefused), live)),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "Provisioner " + uri + ": secret reference refused: secret pg-other is not the instance's.", resources: "db"}},

		// An http+api:// instance not ready.
		{"the API says it is being created", observed(definition("http+api://acme/db"), progressed(provisioning.ProgressPending, `status.phase is "creating"`, 4*time.Second)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: `Waiting for http+api://acme/db: status.phase is "creating".`, requeue: 4 * time.Second, check: observedGeneration(3)}},
		{"a create request failed", observed(definition("http+api://acme/db"), progressed(provisioning.ProgressRetrying, "POST https://api.example/dbs answered 500 Internal Server Error", 8*time.Second)),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner http+api://acme/db: POST https://api.example/dbs answered 500 Internal Server Error.", requeue: 8 * time.Second}},
		{"the API says it failed", observed(definition("http+api://acme/db"), progressed(provisioning.ProgressFailed, "the API reports status.phase error", 0)),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner http+api://acme/db failed: the API reports status.phase error."}},

		// A complete run, then what it publishes.
		{"a complete run prunes what the claim listed on its cluster", observed(on("eu"), bound(object("gone", "eu"), object("hub", "")), ran(outputsPlain, nil, object("db", "eu"))),
			want{next: Publish, check: func(t *testing.T, d Decision) {
				if names(d.Prune) != "gone" {
					t.Errorf("prune %s, want the entries on the instance's cluster", names(d.Prune))
				}
			}}},
		{"the member stops answering while pruning", observed(on("eu"), bound(moved), ran(outputsPlain, nil, object("db", "eu")), published(noAnswer, nil)),
			want{phase: scorev1b1.ClaimPhaseBound, message: "The instance cannot be provisioned: cluster eu does not answer: " + noAnswer.Error() + ". Nothing was changed or deleted.", resources: "old,db"}},
		{"pruning failed", observed(ran(outputsPlain, nil, live), published(conflict, nil)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Provisioning.", retry: true, resources: "db"}},
		{"the outputs Secret is not the claim's", observed(bound(moved), ran(outputsPlain, map[string]string{"password": "pw"}, live), published(nil, &ForeignSecret{Name: "web-db-outputs"})),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, retry: true, resources: "db,old",
				message: "Secret web-db-outputs exists and was not created for this claim (it has no controller); it is left as it is and the claim's secret outputs are not written into it: remove or rename it.",
				check: func(t *testing.T, d Decision) {
					if d.Status.Outputs != nil || d.Status.SecretRef != nil {
						t.Errorf("outputs published: %+v", d.Status)
					}
				}}},
		{"writing the outputs Secret failed", observed(ran(outputsPlain, map[string]string{"password": "pw"}, live), published(nil, conflict)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Provisioning.", retry: true, resources: "db"}},
		{"an expected output is missing", observed(ran(map[string]any{"port": 5432}, nil, live), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonClaimFailed, message: "Provisioner " + uri + " did not produce the expected outputs host.", resources: "db",
				check: outputsAvailable(false)}},
		{"objects not healthy yet", observed(ran(outputsPlain, nil, live, object("pg", "", scorev1b1.HealthInProgress)), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseBinding, message: "Waiting for ConfigMap pg (inprogress).", resources: "db,pg", check: outputsAvailable(true)}},
		{"Bound", observed(ran(outputsPlain, map[string]string{"password": "pw"}, live), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseBound, reason: scorev1b1.ReasonSucceeded, message: "Provisioned by " + uri + ".", resources: "db", check: func(t *testing.T, d Decision) {
				s := d.Status
				if string(s.Outputs.Raw) != `{"host":"db.team"}` || s.SecretRef == nil || s.SecretRef.Name != "web-db-outputs" || fmt.Sprint(s.SecretRef.Keys) != "[password]" ||
					!s.OutputsAvailable || s.ObservedGeneration != 3 || s.Provisioner != uri || s.ConfigRevision != "" || s.Instance != "0123456789abcdef" {
					t.Errorf("status %+v", s)
				}
				if c := meta.FindStatusCondition(s.Conditions, scorev1b1.ClaimConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Succeeded" || c.ObservedGeneration != 3 {
					t.Errorf("Ready %+v", c)
				}
			}}},
		{"Bound from the revision the claim names", observed(func(o *Observed) { o.Claim.Spec.ConfigRevision = "r1"; o.Revision = "r1" }, ran(outputsPlain, nil, live), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseBound, reason: scorev1b1.ReasonSucceeded, resources: "db", check: func(t *testing.T, d Decision) {
				if d.Status.ConfigRevision != "r1" {
					t.Errorf("config revision %q", d.Status.ConfigRevision)
				}
			}}},
		{"an http+api:// instance ready has no objects", observed(definition("http+api://acme/db"), ran(outputsPlain, nil), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseBound, reason: scorev1b1.ReasonSucceeded, resources: "-"}},

		// A moved instance.
		{"Bound on the new cluster retires the old cluster's objects", observed(on("us"), bound(moved), ran(outputsPlain, nil, object("db", "us")), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseBound, next: Retire, check: func(t *testing.T, d Decision) {
				if names(d.Elsewhere) != "old" {
					t.Errorf("retire %s", names(d.Elsewhere))
				}
			}}},
		{"what stays of the moved instance stays listed", observed(on("us"), bound(moved), ran(outputsPlain, nil, object("db", "us")), published(nil, nil), func(o *Observed) { o.Retired = &Retired{Held: []scorev1b1.AppliedObject{moved}} }),
			want{phase: scorev1b1.ClaimPhaseBound, resources: "db,old"}},
		{"the moved instance released", observed(on("us"), bound(moved), ran(outputsPlain, nil, object("db", "us")), published(nil, nil), func(o *Observed) { o.Retired = &Retired{} }),
			want{phase: scorev1b1.ClaimPhaseBound, resources: "db"}},
		{"releasing the moved instance failed", observed(on("us"), bound(moved), ran(outputsPlain, nil, object("db", "us")), published(nil, nil), func(o *Observed) { o.Retired = &Retired{Err: conflict} }),
			want{phase: scorev1b1.ClaimPhaseBound, retry: true, resources: "db,old"}},
		{"not Bound yet, the moved instance waits", observed(on("us"), bound(moved), ran(outputsPlain, nil, object("db", "us", scorev1b1.HealthInProgress)), published(nil, nil)),
			want{phase: scorev1b1.ClaimPhaseBinding, resources: "db,old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := tc.in.Claim.DeepCopy()
			d := From(tc.in)
			w := tc.want
			if w.phase != "" && d.Status.Phase != w.phase {
				t.Errorf("phase %s, want %s (%s)", d.Status.Phase, w.phase, d.Status.Message)
			}
			if w.reason != "" && d.Status.Reason != w.reason {
				t.Errorf("reason %s, want %s", d.Status.Reason, w.reason)
			}
			if w.message != "" && d.Status.Message != w.message {
				t.Errorf("message\n  %s\nwant\n  %s", d.Status.Message, w.message)
			}
			if d.Next != w.next || (d.Retry != nil) != w.retry || d.RequeueAfter != w.requeue {
				t.Errorf("next %d, retry %v, requeue %s; want %d, %v, %s", d.Next, d.Retry, d.RequeueAfter, w.next, w.retry, w.requeue)
			}
			if w.resources != "" && names(d.Status.Resources) != strings.TrimPrefix(w.resources, "-") {
				t.Errorf("resources %s, want %s", names(d.Status.Resources), w.resources)
			}
			if c := meta.FindStatusCondition(d.Status.Conditions, scorev1b1.ClaimConditionReady); d.Status.Phase != "" && (c == nil || c.Message != d.Status.Message) {
				t.Errorf("the Ready condition does not follow the phase: %+v", c)
			}
			if w.check != nil {
				w.check(t, d)
			}
			if fmt.Sprint(tc.in.Claim) != fmt.Sprint(read) {
				t.Error("From changed the claim it observed")
			}
		})
	}
}

// A claim at rest decides the status it has: the pass writes nothing.
func TestFromAtRestDecidesTheStatusAsRead(t *testing.T) {
	first := From(observed(ran(outputsPlain, nil, live), published(nil, nil)))
	o := observed(ran(outputsPlain, nil, live), published(nil, nil))
	o.Claim.Status = first.Status
	o.Now = metav1.NewTime(now.Add(time.Hour))
	if again := From(o); fmt.Sprint(again.Status) != fmt.Sprint(first.Status) {
		t.Fatalf("a second pass over the same observations changed the status:\n  %+v\n  %+v", first.Status, again.Status)
	}
}

func observedGeneration(g int64) func(*testing.T, Decision) {
	return func(t *testing.T, d Decision) {
		if d.Status.ObservedGeneration != g || d.Status.OutputsAvailable {
			t.Errorf("observed generation %d, outputs available %v", d.Status.ObservedGeneration, d.Status.OutputsAvailable)
		}
	}
}

func outputsAvailable(want bool) func(*testing.T, Decision) {
	return func(t *testing.T, d Decision) {
		if d.Status.OutputsAvailable != want {
			t.Errorf("outputs available %v, want %v", d.Status.OutputsAvailable, want)
		}
	}
}

func names(objs []scorev1b1.AppliedObject) string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Name
	}
	return strings.Join(out, ",")
}

func TestInstanceNamespace(t *testing.T) {
	sharing := &orchconfig.Sharing{Namespace: "shared-home", Otherwise: orchconfig.SharingDeny}
	sharing.NamespaceSelector.MatchLabels = map[string]string{"share": "yes"}
	own := *sharing
	own.Otherwise = ""
	ids := *sharing
	ids.IDs = []string{"main", "orders"}
	idsOwn := ids
	idsOwn.Otherwise = ""
	claim := func(namespace, id string) *scorev1b1.ResourceClaim {
		return &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: scorev1b1.ResourceClaimSpec{Type: "kv", ID: id}}
	}
	for _, tc := range []struct {
		name              string
		claim             *scorev1b1.ResourceClaim
		sharing           *orchconfig.Sharing
		labels            map[string]string
		namespace, denied string
	}{
		{"no id", claim("team", ""), sharing, map[string]string{"share": "yes"}, "", ""},
		{"no sharing", claim("team", "main"), nil, map[string]string{"share": "yes"}, "", ""},
		{"the sharing namespace's own claim", claim("shared-home", "main"), sharing, nil, "", ""},
		{"a namespace the selector admits", claim("team", "main"), sharing, map[string]string{"share": "yes"}, "shared-home", ""},
		{"any other, denied", claim("team", "main"), sharing, map[string]string{"share": "no"}, "", "Namespace team may not share kv main: the platform shares it only with namespaces it selects by label."},
		{"any other, its own instance", claim("team", "main"), &own, nil, "", ""},
		{"an id the platform does not share, denied", claim("team", "other"), &ids, map[string]string{"share": "yes"}, "", "Namespace team may not share kv other: the platform shares only the ids main, orders."},
		{"an id the platform shares", claim("team", "orders"), &ids, map[string]string{"share": "yes"}, "shared-home", ""},
		{"an id the platform does not share, its own instance", claim("team", "other"), &idsOwn, map[string]string{"share": "yes"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, denied := InstanceNamespace(tc.claim, tc.sharing, tc.labels)
			if ns != tc.namespace || denied != tc.denied {
				t.Fatalf("%q %q, want %q %q", ns, denied, tc.namespace, tc.denied)
			}
		})
	}
}

func TestHostnameDenied(t *testing.T) {
	cfg, err := orchconfig.Parse([]byte(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
allowMutableRefs: true
profiles:
  - name: web-service
    backends:
      - {backendId: k8s, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "configmap://score-system/t/web.yaml"}}
hostnames:
  - namespaceSelector: {matchLabels: {team: shop}}
    domains: ["*.shop.example.com"]
`))
	if err != nil {
		t.Fatal(err)
	}
	def := orchconfig.Provisioner{URI: "template://dev/route", HostnameParams: []string{"host", "hosts"}}
	c := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}}
	shop := map[string]string{"team": "shop"}
	for _, tc := range []struct {
		name   string
		params map[string]any
		labels map[string]string
		denied string
	}{
		{"no host name param", map[string]any{"port": 80}, nil, ""},
		{"a host name the namespace may use", map[string]any{"host": "www.shop.example.com"}, shop, ""},
		{"one of a list it may not", map[string]any{"hosts": []any{"www.shop.example.com", "evil.example.com"}}, shop, "Namespace team may not use host name evil.example.com: the platform admits *.shop.example.com there."},
		{"a namespace no rule admits", map[string]any{"host": "www.shop.example.com"}, nil, "Namespace team may not use host name www.shop.example.com: the platform admits no host name there."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostnameDenied(c, def, tc.params, cfg, tc.labels); got != tc.denied {
				t.Fatalf("%q, want %q", got, tc.denied)
			}
		})
	}
	if got := HostnameDenied(c, def, map[string]any{"host": "anything.example"}, &orchconfig.Config{}, nil); got != "" {
		t.Fatalf("without hostnames rules: %q", got)
	}
}

// TestMessagesAreStoredEscaped: a provisioner's message quoting a param full of terminal
// escapes is stored, on the claim and its Ready condition, escaped.
func TestMessagesAreStoredEscaped(t *testing.T) {
	var s scorev1b1.ResourceClaimStatus
	SetPhase(&s, 1, metav1.Now(), scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, "Provisioner x: bad host "+termtest.Hostile+".")
	for what, msg := range map[string]string{"message": s.Message, "Ready": s.Conditions[0].Message} {
		termtest.Safe(t, what, msg)
		if !strings.Contains(msg, termtest.Marker) {
			t.Errorf("%s: %q lost the escaped text", what, msg)
		}
	}
}
