// Package workloaddecision is the orchestrator's policy: from what one pass over a Workload
// read (Observed: the Workload, its claims, plan and exposure as cached, the config and the
// revision the Workload is rendered from, the clusters placement chooses from, the kept
// revisions its claims name) and what the pass's writes did so far, From decides the next
// write — hand the Workload's objects to its shard, add its finalizer, create, update, adopt or
// release its claims, write its exposure's spec, its plan's spec, pass a reconcile request on,
// remove its finalizer — and, once nothing is left to write, its status, the events its
// transitions record and whether to try again.
//
// The orchestrator reads everything first (its gather), asks From, makes the write it names,
// adds what the write did to Observed and asks again, until the decision is Done; then it
// writes the status decided, once, only when it changed (the provisioner's claimdecision loop,
// cert-manager's sync/policy split). A write's outcome (a claim refused by a quota, a plan too
// large, a namespace being deleted) is judged here, by the one classification of API errors
// (internal/apierror). This package imports no client: its table test covers every way a pass
// ends.
package workloaddecision

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// Observed is what a pass read, and what its writes did so far. The reads are filled before
// the first decision; each write's outcome is nil until the pass made it.
type Observed struct {
	// Workload is the Workload as read, with the status this controller last wrote when the
	// cache does not show that write yet. A write of the pass (the finalizer) changes its
	// metadata, never its status.
	Workload *scorev1b1.Workload
	// Now stamps a condition that changes, and ends a status held back (ProgressHold).
	Now metav1.Time
	// ProgressHold is how long a status that only reports progress is held back, from the
	// moment its sources changed, for the next step to be written with it (hold); 0 holds
	// nothing.
	ProgressHold time.Duration
	// Region is where the orchestrator runs, for backends restricted to regions.
	Region string

	// Claims are the claims labelled for the Workload: its own, and those retained by it or an
	// earlier Workload of its name. Plan is the plan the Workload controls; Exposure the
	// exposure of its name, whichever Workload's. Objects a write of the pass changed in place
	// (handed to the shard) are these.
	Claims   []scorev1b1.ResourceClaim
	Plan     *scorev1b1.WorkloadPlan
	Exposure *scorev1b1.WorkloadExposure
	// Created are objects the orchestrator created that the cache does not show yet and that
	// exist (taken on trust for a while, then asked of the API server): not created again.
	Created map[Ref]bool

	// Config is the current config; nil before any valid one is loaded.
	Config *Config
	// Render is the config the Workload is rendered from: Config, or the revision the
	// governing rollout gives it; RenderErr says why it could not be read. Reached: the
	// rollout has reached the Workload's wave, so its plan records the revision even when its
	// content is the same.
	Render    *Config
	RenderErr error
	Reached   bool
	// Clusters are the registered member clusters placement chooses from; ClustersErr says
	// why they could not be read.
	Clusters    []placement.Cluster
	ClustersErr error
	// Preview is the Workload's namespace as a preview environment, with the platform's
	// verdict on it; nil when the namespace is not a preview.
	Preview *preview.Preview
	// ProbeHosts says whether the current config admits probes that name a host in the
	// Workload's namespace (its probeHosts over the namespace's labels); false before any
	// config. Security policy, it follows the current config, not a rollout's revision.
	ProbeHosts bool
	// NamespaceLabels and InstanceVolumes are the labels of the Workload's namespace, which
	// the platform's named-volume rules select on, and the volumes of the instances there:
	// read only when the Workload mounts a volume by name.
	NamespaceLabels map[string]string
	InstanceVolumes InstanceVolumes
	// Kept are the kept revisions the Workload's claims name, other than the one it is
	// rendered from, by revision: one that is no longer kept is absent.
	Kept map[string]Kept

	// What the writes did, each once made (nil until then; a nil Err when it went through).
	HandedOver, Finalizer, ExposureWritten, PlanWritten, PassedOn, FinalizerRemoved *Written
	// ClaimsWritten are the claim writes made, by claim name, with their errors.
	ClaimsWritten map[string]error

	// Copies are the objects of the Workload's copies on several clusters beyond slot 0, and
	// what the pass's writes to them did (copies.go).
	Copies CopyObserved
}

// Config is an admitted config revision, as the decision uses it.
type Config struct {
	Config   *orchconfig.Config
	Selector *selection.Selector
	Revision string
}

// Kept is a kept revision as read: its config, or the error reading it.
type Kept struct {
	Config *orchconfig.Config
	Err    error
}

// Ref names an object the orchestrator creates for a Workload.
type Ref struct {
	Kind, Name string
}

// The kinds of Ref.
const (
	KindClaim    = "claim"
	KindPlan     = "plan"
	KindExposure = "exposure"
)

// Written is what one write did: Err is nil when it went through.
type Written struct {
	Err error
}

// Next is the write a pass makes after a decision.
type Next int

const (
	// Done: nothing left to write; the pass writes Decision.Status, if any, and returns.
	Done Next = iota
	// HandOver relabels Decision.HandOver (in order) with the Workload's shard, then
	// decides again with Observed.HandedOver.
	HandOver
	// AddFinalizer adds the Workload's finalizer, then decides again with Observed.Finalizer.
	AddFinalizer
	// WriteClaims makes Decision.Claims, and Decision.Exposure when the decision names it too,
	// all at once (none depends on another), then decides again with Observed.ClaimsWritten
	// (and Observed.ExposureWritten).
	WriteClaims
	// WriteExposure writes Decision.Exposure, then decides again with Observed.ExposureWritten.
	WriteExposure
	// WritePlan writes Decision.Plan, then decides again with Observed.PlanWritten.
	WritePlan
	// PassOn annotates Decision.PassOn's objects with the Workload's reconcile request, then
	// decides again with Observed.PassedOn.
	PassOn
	// RemoveFinalizer lets the deleted Workload go, then decides again with
	// Observed.FinalizerRemoved.
	RemoveFinalizer
)

func (n Next) String() string {
	return [...]string{"done", "hand over", "add finalizer", "write claims", "write exposure", "write plan", "pass on", "remove finalizer", "delete copies"}[n]
}

// Decision is the next write of a pass, or, when Next is Done, how the pass ends.
type Decision struct {
	Next Next
	// The write Next names.
	HandOver []Relabel
	Claims   []ClaimWrite
	Exposure *ExposureWrite
	Plan     *PlanWrite
	PassOn   *PassOnWrite
	// Deletes are the plans and exposures of copies no longer placed (DeleteCopies).
	Deletes []Object

	// Status is the Workload's next status; nil when the pass decided none (nothing is
	// written).
	Status *scorev1b1.WorkloadStatus
	// Transitions are the conditions whose status or reason the status changes, and Events
	// the events they record: both once the status is written.
	Transitions []workloadstatus.Transition
	Events      []Event
	// Retry is the error the pass ends with, retried with backoff; nil when a watch brings
	// the Workload back, or nothing needs to.
	Retry error
	// RequeueAfter brings the Workload back when a status held back (Status nil) is due, or
	// when a failover comes due (the earlier).
	RequeueAfter time.Duration

	// What the pass found worth a log line: an exposure URL the mirror rejected, the
	// placeholders that withhold the plan, a derived object refused for its size, a namespace
	// being deleted.
	Rejected          string
	Unresolved        []string
	TooLarge          error
	NamespaceDeleting bool
}

// Object is one of the Workload's objects, as observed.
type Object interface {
	metav1.Object
	runtime.Object
}

// Relabel gives an observed object the labels that hand it to the Workload's shard.
type Relabel struct {
	Object Object
	Labels map[string]string
}

// Event is an event to record: on the Workload once its status is written, or on the plan
// with the plan's write.
type Event struct {
	Type, Reason, Action, Message string
}

// Event types, as Kubernetes names them.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// ErrDenied marks a write the API server refused (a policy, a quota, a permission): the pass
// is retried with backoff, since what lifts it is not something the orchestrator watches.
var ErrDenied = errors.New("the API server refused a write")

// From decides the next write of a pass, or its status, from what it observed and did.
func From(o Observed) Decision {
	w := o.Workload
	d := &decision{o: o, endpoint: w.Status.Endpoint}
	if !w.DeletionTimestamp.IsZero() {
		d.deletion()
	} else {
		d.lifecycle()
		// A pass that ended on a status with nothing to retry passes a reconcile request on.
		if d.Next == Done && d.decided && d.Retry == nil && !d.NamespaceDeleting && d.TooLarge == nil {
			d.passOn()
		}
	}
	if d.Next == Done && d.decided {
		d.status()
		d.hold()
	}
	if d.Next == Done {
		d.recheck()
	}
	return d.Decision
}

// decision is a Decision being made from o.
type decision struct {
	Decision
	o Observed
	// decided: the conditions below are complete and the status is written from them.
	decided   bool
	conds     workloadstatus.Conditions
	summaries []scorev1b1.ClaimSummary
	endpoint  *string
	// handled is the reconcile request the pass passed on.
	handled string
	// recheckAt is when placement may decide otherwise by time alone (a failover due).
	recheckAt time.Time
	// planCreated: the pass created the plan.
	planCreated bool
	// revisionRecorded: the pass wrote the plan only to record the config revision it is
	// rendered from (its content the same).
	revisionRecorded bool
	// slot is the copy decided (0: the Workload's own objects), at where it is placed, and
	// pipe the pipeline its claims and plan follow: set for a copy's decision.
	slot int
	at   placement.Copy
	pipe *Pipeline
}

func (d *decision) decide(inputs, claims, runtime workloadstatus.Condition) {
	d.conds = workloadstatus.Conditions{InputsValid: inputs, ClaimsReady: claims, RuntimeReady: runtime}
	d.decided = true
}

// specInvalid blocks the claims and the runtime on the inputs; the claims' summaries stay as
// they were.
func (d *decision) specInvalid(message string, more int) {
	d.decide(workloadstatus.SpecInvalid(message, more), workloadstatus.BlockedByInputs(), workloadstatus.BlockedByInputs())
	d.summaries = d.o.Workload.Status.Claims
}

// stop ends the pass on an error: a create refused because the namespace is being deleted
// (everything in it goes, the Workload with it: said, not retried), an object refused for its
// size (the Workload's SpecInvalid until it changes: not retried), or anything else, retried
// with backoff and no status. It reports false, for the stage that stops.
func (d *decision) stop(err error) bool {
	switch {
	case apierror.NamespaceTerminating(err):
		deleting := workloadstatus.NamespaceDeleting()
		d.decide(workloadstatus.InputsValid(), deleting, deleting)
		d.summaries = d.o.Workload.Status.Claims
		d.NamespaceDeleting = true
	case apierror.Classify(err) == apierror.TooLarge:
		d.specInvalid(workloadstatus.TooLarge().Message, 0)
		d.TooLarge = err
	default:
		d.Retry = err
	}
	return false
}

// denied ends the pass on a write the API server refused: the status says so, and the pass
// is retried with backoff.
func (d *decision) denied(claims, runtime workloadstatus.Condition, reason scorev1b1.Reason) bool {
	d.decide(workloadstatus.InputsValid(), claims, runtime)
	d.Retry = fmt.Errorf("%w (%s); retrying with backoff", ErrDenied, reason)
	return false
}

// status is the Workload's next status from the decided conditions, and the events of its
// transitions.
func (d *decision) status() {
	w := d.o.Workload
	st := w.Status.DeepCopy()
	st.Conditions = workloadstatus.Apply(w.Status.Conditions, d.conds, w.Generation, d.o.Now)
	st.Claims = d.summaries
	st.Endpoint = d.endpoint
	st.ObservedGeneration = w.Generation
	if d.handled != "" {
		st.LastHandledReconcileAt = d.handled
	}
	d.Status = st
	d.Transitions = workloadstatus.Transitions(w.Status.Conditions, st.Conditions)
	d.Events = readyEvents(w.Status.Conditions, d.Transitions, d.NamespaceDeleting)
}

// readyEvents are the events of a status's transitions: one when Ready changes its status or
// reason. Ready carries the blocking reason, so each step of the lifecycle is one event, and
// nothing else is. The first status of a Workload is no transition: it is recorded only when
// it is a warning (a Workload invalid from the start), so a Workload on the main path costs two
// events (being deployed, Ready), not three. A namespace being deleted refuses events: none.
func readyEvents(before []metav1.Condition, transitions []workloadstatus.Transition, namespaceDeleting bool) []Event {
	if namespaceDeleting {
		return nil
	}
	first := meta.FindStatusCondition(before, scorev1b1.ConditionReady) == nil
	var out []Event
	for _, t := range transitions {
		if t.Type != scorev1b1.ConditionReady {
			continue
		}
		typ := Normal
		if t.Condition.Status == metav1.ConditionFalse && t.Condition.Reason != scorev1b1.ReasonClaimPending && t.Condition.Reason != scorev1b1.ReasonRuntimeProvisioning {
			typ = Warning
		}
		if first && typ == Normal {
			continue
		}
		out = append(out, Event{Type: typ, Reason: string(t.Condition.Reason), Action: t.Type, Message: t.Condition.Message})
	}
	return out
}

// hasFinalizer reports whether the Workload holds the orchestrator's finalizer.
func hasFinalizer(w *scorev1b1.Workload) bool {
	return slices.Contains(w.Finalizers, scorev1b1.WorkloadFinalizer)
}
