// Package plandecision is the runtime's policy: from what one pass read and did for a
// WorkloadPlan (Observed), From decides the plan's status (phase, reason, message, conditions,
// inventory), the status of the Workload's exposure, the events to record and whether to try
// again. The runtime's controller reads and applies, calls From, then writes what it decided
// (the sync/policy split of cert-manager's certificate controllers); this package imports no
// client, and its table test covers every way a pass ends.
//
// Errors are answered through the one classification of API errors (internal/apierror), as
// the provisioner answers them: an error that clears by itself keeps what the plan has.
package plandecision

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/exposure"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// Step is a step of a pass, in order; an error stops the pass at its step.
type Step int

const (
	// Done is a pass no error stopped.
	Done Step = iota
	// Template is fetching and verifying the plan's template.
	Template
	// Outputs is reading the claims' outputs Secrets: their versions, or the copies that go
	// to a member cluster.
	Outputs
	// Render is rendering the template.
	Render
	// Target is finding the connection to the plan's member cluster.
	Target
	// Hold is adding the plan's finalizer.
	Hold
	// Place is making the Workload's namespace ready on the member cluster.
	Place
	// Apply is applying the rendered objects.
	Apply
	// Settle follows a complete apply: the runs' history kept, what the render dropped
	// pruned, and after a move the earlier cluster's objects deleted.
	Settle
)

func (s Step) String() string {
	return [...]string{"done", "template", "outputs", "render", "target", "hold", "place", "apply", "settle"}[s]
}

// Observed is what one pass read and did for a plan: everything its status is derived from.
// The fields after Err are filled as far as the pass got.
type Observed struct {
	// Plan is the plan as read: its spec and generation, and the status the next one starts
	// from.
	Plan *scorev1b1.WorkloadPlan
	// Now is when the pass decides, and ProgressHold how long a plan that only reports its
	// objects' progress keeps what was written, and an exposure's first status waits for
	// their health, from the moment it began waiting for them (hold, holdExposure); 0 writes
	// every step.
	Now          time.Time
	ProgressHold time.Duration
	// MemberPending is a plan placed on a member cluster that is registered and not probed
	// yet (the process has just started): nothing else was read or done.
	MemberPending bool
	// Stopped is the step an error stopped the pass at, with the error; Done when none did.
	Stopped Step
	Err     error
	// DigestMismatch is a template whose content does not match the digest the plan pins.
	DigestMismatch bool
	// NotPlaceable is a member cluster that refuses the Workload's namespace: it exists there
	// and the platform did not open it to the hub.
	NotPlaceable bool
	// Owned is the object of another owner that refused the apply.
	Owned *Owned

	// Cluster is the member cluster the plan is applied to, "" the hub.
	Cluster string
	// Applied is the inventory of what the apply applied, tagged with Cluster (on an error,
	// what it applied before it); Live the same objects as the API server has them.
	Applied []scorev1b1.AppliedObject
	Live    []*unstructured.Unstructured
	// Serves, from a runtime whose objects are not Kubernetes objects (Docker), says whether
	// what serves the Workload (its version before this one, or this one) runs; nil: judged
	// from Live.
	Serves *bool
	// Waiting names the definitions the apply's later stages wait for (CustomResourceDefinitions
	// not Established yet).
	Waiting []string
	// Runs are the earlier runs of the applied Jobs that their history limit keeps.
	Runs []scorev1b1.AppliedObject
	// Left is what a move released on the cluster the plan left; nil when none was released.
	Left *Left
	// Exposure is the Workload's exposure, nil when there is none to publish to (not
	// registered yet, or another Workload's), or when it could not be read (ExposureErr).
	Exposure    *Exposure
	ExposureErr error
}

// Owned is an object the plan renders that exists and belongs to another owner.
type Owned struct {
	GroupKind       schema.GroupKind
	Namespace, Name string
	// OwnerValue is the owning Workload's UID, "" for an object the runtime did not create;
	// OwnerName its name when known.
	OwnerValue, OwnerName string
	// Message says so, for the plan.
	Message string
}

// Left is what releasing a plan's objects on other clusters did.
type Left struct {
	// Waiting are the objects on clusters that do not answer: kept in the inventory.
	Waiting []scorev1b1.AppliedObject
	// Deleted and Abandoned count, by cluster, the objects deleted and those let go of with
	// their cluster's registration.
	Deleted, Abandoned map[string]int
}

// Exposure is the Workload's exposure as read, and the endpoints the exposure rules derive
// from what the pass applied.
type Exposure struct {
	Status    scorev1b1.WorkloadExposureStatus
	Endpoints exposure.Result
}

// Decision is what a pass writes and does next.
type Decision struct {
	// Status is the plan's next status; the one read when nothing changes.
	Status scorev1b1.WorkloadPlanStatus
	// Exposure is the exposure's next status; nil leaves it as it is.
	Exposure *scorev1b1.WorkloadExposureStatus
	// Events are recorded, each once: on the transition that caused it.
	Events []Event
	// Blocked is the other owner's object that refused the plan: its deletion brings the plan
	// back. Unblocked is a plan that applied, which no object blocks any longer.
	Blocked   *Owned
	Unblocked bool
	// Retry is the error the pass ends with, retried with backoff; nil when a watch brings
	// the plan back, or nothing needs to.
	Retry error
	// RequeueAfter brings the plan back when a status held (hold) is due.
	RequeueAfter time.Duration
}

// Event is an event to record, on the plan unless Workload names the Workload it regards.
type Event struct {
	Workload                      *WorkloadRef
	Type, Reason, Action, Message string
}

// WorkloadRef names a Workload in the plan's namespace.
type WorkloadRef struct{ Name, UID string }

// Event types, as Kubernetes names them.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// Health is what the applied objects' health amounts to, as the exposure carries it.
type Health int

const (
	// Provisioning is applied objects becoming healthy.
	Provisioning Health = iota
	// Healthy is every applied object healthy.
	Healthy
	// Degraded is a workload that was healthy for this plan and still serves, with objects
	// that are not (a lost replica, a node gone).
	Degraded
)

// From decides the plan's status and what the pass does next from what it observed.
func From(o Observed) Decision {
	if o.MemberPending {
		// Nothing is reported for a moment: the cluster's first probe brings the plan back,
		// and a restart writes nothing.
		return Decision{Status: *o.Plan.Status.DeepCopy()}
	}
	d := &decision{plan: o.Plan.DeepCopy(), now: o.Now}
	if d.plan.Status.Phase == "" {
		d.plan.Status.Phase = scorev1b1.PlanPhasePending
	}
	switch o.Stopped {
	case Done:
		d.done(o)
	case Template:
		d.templateFailed(o)
	case Outputs, Hold, Settle:
		// An outputs Secret that does not exist (yet, or any more: its claim was released while
		// the Workload is deleted): nothing to report and nothing to retry, its watch brings the
		// plan back when it is written. An outputs Secret not readable, a finalizer or a prune
		// that did not go through: nothing to report, retried with backoff.
		if o.Stopped == Outputs && apierror.Classify(o.Err) == apierror.Gone {
			break
		}
		d.Retry = fmt.Errorf("%s: %w", o.Stopped, o.Err)
	case Render:
		d.renderFailed(o)
	case Target:
		// The cluster's registration or its next answer brings the plan back.
		d.unreachable(o.Err)
	case Place, Apply:
		d.requestFailed(o)
	}
	d.Status = d.plan.Status
	d.hold(o)
	d.holdExposure(o)
	return d.Decision
}

// decision is a Decision being made for a copy of the plan.
type decision struct {
	Decision
	plan *scorev1b1.WorkloadPlan
	// now stamps a condition that changes (the API server's clock when zero).
	now time.Time
}

// done decides a pass that applied everything it could.
func (d *decision) done(o Observed) {
	st := &d.plan.Status
	d.Unblocked = true
	// What the plan applied on another cluster (it moved) stays listed until it is deleted.
	previous, elsewhere := clusters.Split(st.Objects, o.Cluster)
	if len(o.Waiting) > 0 {
		// Definitions applied, the rest waits for them to be served; their watch brings the
		// plan back. Nothing was pruned: the render is not applied completely.
		message := "Waiting for " + strings.Join(o.Waiting, ", ") + " to be established."
		st.Objects = append(inventory.Union(previous, o.Applied), elsewhere...)
		st.Phase, st.Reason, st.Message = scorev1b1.PlanPhasePlanning, "", message
		d.condition(scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonInProgress, message)
		return
	}
	applied := append(slices.Clone(o.Applied), o.Runs...)
	if o.Left != nil {
		elsewhere = o.Left.Waiting
		d.Events = append(d.Events, ReleaseEvents(d.plan, *o.Left)...)
	}
	st.Objects = append(applied, elsewhere...)
	st.ObservedGeneration = d.plan.Generation
	st.Reason, st.Message = "", ""
	d.condition(scorev1b1.PlanConditionApplied, metav1.ConditionTrue, scorev1b1.PlanReasonApplied, fmt.Sprintf("%d objects applied%s.", len(applied), where(o.Cluster)))
	state := d.judge(o, inventory.NotCurrent(applied))
	if o.Exposure != nil {
		d.Exposure = exposureStatus(*o.Exposure, state, d.plan.Spec.ObservedWorkloadGeneration)
		firstPublished(d.Exposure, o.Exposure.Status, &d.plan.Status)
	}
	d.Retry = o.ExposureErr
}

// judge sets the phase and the Healthy condition from the objects not healthy yet.
func (d *decision) judge(o Observed, pending []string) Health {
	before := o.Plan.Status
	switch {
	case len(pending) == 0:
		d.plan.Status.Phase = scorev1b1.PlanPhaseProjected
		d.condition(scorev1b1.PlanConditionHealthy, metav1.ConditionTrue, scorev1b1.PlanReasonCurrent, "Every object is healthy.")
		return Healthy
	case before.Phase == scorev1b1.PlanPhaseProjected && before.ObservedGeneration == d.plan.Generation && o.serving():
		// It was healthy for this very plan and still serves: degraded, not provisioning, so
		// the Workload stays Ready and says so.
		d.plan.Status.Phase = scorev1b1.PlanPhaseProjected
		d.condition(scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonDegraded, "Serving, but waiting for "+strings.Join(pending, ", ")+".")
		return Degraded
	case servedBefore(before) && o.servingOrRunsToCompletion() && !inventory.AnyFailed(d.plan.Status.Objects):
		// A new generation rolls out behind what an earlier one made healthy, which still
		// serves (or, for runs to completion, stands): the plan is provisioning, and the
		// Workload's orchestrator keeps it Ready when the Workload itself did not change. The
		// endpoint is served all along, by the previous version then the new: the exposure
		// says Healthy throughout (saying Provisioning, then Healthy again, would cost two
		// writes, and an orchestrator that read the plan Projected before the exposure's
		// second write would take the Workload out of Ready for a pass).
		d.plan.Status.Phase = scorev1b1.PlanPhasePlanning
		d.condition(scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonUpdating, "Rolling out behind the previous version; waiting for "+strings.Join(pending, ", ")+".")
		return Healthy
	default:
		d.plan.Status.Phase = scorev1b1.PlanPhasePlanning
		d.condition(scorev1b1.PlanConditionHealthy, metav1.ConditionFalse, scorev1b1.PlanReasonInProgress, "Waiting for "+strings.Join(pending, ", ")+".")
		return Provisioning
	}
}

// serving reports whether what serves the Workload runs: a runtime's word, or a workload
// controller's serving replicas.
func (o Observed) serving() bool {
	if o.Serves != nil {
		return *o.Serves
	}
	return health.Serving(o.Live)
}

// servingOrRunsToCompletion is serving, or objects that serve nothing (Jobs) standing.
func (o Observed) servingOrRunsToCompletion() bool {
	if o.Serves != nil {
		return *o.Serves
	}
	return health.Serving(o.Live) || health.ServesNothing(o.Live)
}

// servedBefore reports whether a plan's status as read says its objects served: Projected (for
// an earlier generation, when it reaches here), or a new generation rolling out behind them.
func servedBefore(s scorev1b1.WorkloadPlanStatus) bool {
	healthy := meta.FindStatusCondition(s.Conditions, scorev1b1.PlanConditionHealthy)
	return s.Phase == scorev1b1.PlanPhaseProjected ||
		s.Phase == scorev1b1.PlanPhasePlanning && healthy != nil && healthy.Reason == scorev1b1.PlanReasonUpdating
}

// keep keeps what the plan has through an error that clears by itself, and retries: a
// Projected plan stays Projected (its Workload Ready), and nothing is rewritten.
func (d *decision) keep(err error) {
	d.Retry = fmt.Errorf("retrying after a transient error: %w", err)
}

// fail sets the Failed phase with its reason for the plan's generation. The message (a
// render's or the API server's, with the Workload's values in it) is stored escaped.
func (d *decision) fail(reason scorev1b1.Reason, message string) {
	message = termtext.Escape(message)
	st := &d.plan.Status
	st.Phase, st.Reason, st.Message = scorev1b1.PlanPhaseFailed, reason, message
	st.ObservedGeneration = d.plan.Generation
	d.condition(scorev1b1.PlanConditionApplied, metav1.ConditionFalse, string(reason), message)
}

func (d *decision) condition(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&d.plan.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: termtext.Escape(message), ObservedGeneration: d.plan.Generation, LastTransitionTime: metav1.NewTime(d.now)})
}

func setCondition(p *scorev1b1.WorkloadPlan, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: termtext.Escape(message), ObservedGeneration: p.Generation})
}

// where says where objects were applied, for a message: "" on the hub.
func where(cluster string) string {
	if cluster == "" {
		return ""
	}
	return " on cluster " + cluster
}
