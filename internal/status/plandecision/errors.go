package plandecision

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// templateFailed reports a template that cannot be used, and retries: its source may answer
// or be fixed. A digest mismatch (a supply-chain failure) is said once, on the transition:
// nothing of it was applied, and the verified cached copy, if any, stays. A plan that was
// Projected stays as it was, for the generation it reported on: what runs was applied from a
// template verified then, and stays as it is; the plan's message says why nothing is applied
// (a template ConfigMap whose content the platform replaced while a rollout keeps plans on the
// previous revision, read by a runtime that restarted and no longer holds the verified copy).
func (d *decision) templateFailed(o Observed) {
	if apierror.Classify(o.Err) == apierror.Transient {
		// The API server asked to try again. A source that does not answer is reported: a
		// template may come from a registry, and one that is misnamed never answers.
		d.keep(o.Err)
		return
	}
	message := fmt.Sprintf("The template %s cannot be used: %v", d.plan.Spec.Template.Ref, o.Err)
	applied := o.Plan.Status.Phase == scorev1b1.PlanPhaseProjected
	if applied {
		message += ". What was applied before stays as it is."
	}
	if o.DigestMismatch && o.Plan.Status.Message != termtext.Escape(message) {
		d.Events = append(d.Events, Event{Type: Warning, Reason: "TemplateDigestMismatch", Action: "Fetch", Message: message})
	}
	d.Retry = fmt.Errorf("template: %w", o.Err)
	if applied {
		d.plan.Status.Message = termtext.Escape(message)
		return
	}
	d.fail(scorev1b1.ReasonRuntimeProvisioning, message)
}

// renderFailed reports a template that does not render over this plan: the plan or the
// template must change, and their watches bring the plan back.
func (d *decision) renderFailed(o Observed) {
	if apierror.Passing(o.Err) {
		d.keep(o.Err) // an outputs Secret's value could not be read this time
		return
	}
	d.fail(scorev1b1.ReasonRuntimeProvisioning, fmt.Sprintf("Rendering failed: %v", o.Err))
}

// requestFailed decides a placement or an apply that failed, by what the error is (the one
// classification of API errors, after the refusals of our own making).
func (d *decision) requestFailed(o Observed) {
	err, cluster := o.Err, o.Cluster
	if cluster != "" && len(o.Applied) > 0 {
		// What reached the member before the failure is listed, for a later prune or release.
		previous, elsewhere := clusters.Split(d.plan.Status.Objects, cluster)
		d.plan.Status.Objects = append(inventory.Union(previous, o.Applied), elsewhere...)
	}
	switch class := apierror.Classify(err); {
	case o.Owned != nil:
		d.conflict(o)
	case o.NotPlaceable:
		// Retried with backoff: the platform's label on the member's namespace lifts it, and
		// nothing on the hub watches that.
		d.fail(scorev1b1.ReasonPermissionDenied, err.Error())
		d.Retry = fmt.Errorf("placing on cluster %s refused, retrying with backoff: %w", cluster, err)
	case errors.Is(err, prepare.ErrNotAllowed):
		// Terminal until the template or the config changes; both are watched.
		d.fail(scorev1b1.ReasonPermissionDenied, err.Error())
	case class == apierror.Gone && cluster == "":
		// The namespace is being deleted, and the plan with it: nothing to report or retry.
	case class == apierror.Unreachable && cluster != "":
		// The member's pool marked it unreachable: its probe brings the plan back.
		d.unreachable(fmt.Errorf("cluster %s does not answer: %w", cluster, err))
	case class == apierror.Transient, class == apierror.Unreachable, class == apierror.Gone:
		// It clears by itself: the API server asked to try again or did not answer, or, on a
		// member, the namespace was deleted there and the next pass places it again.
		d.keep(err)
	case class == apierror.Denied:
		// Reported, and retried with backoff: what lifts it (a policy changed, a quota
		// raised, a right granted) is not something the runtime watches.
		reason, _ := apierror.Reason(err)
		message, what := fmt.Sprintf("The API server refused an object: %v", err), "apply"
		if o.Stopped == Place {
			message, what = fmt.Sprintf("The API server refused placing on cluster %s: %v", cluster, err), "placing on cluster "+cluster
		}
		d.fail(reason, message)
		d.Retry = fmt.Errorf("%s refused, retrying with backoff: %w", what, err)
	default:
		// Reported, and retried with backoff: a kind not served yet may be installed. An
		// object too large is refused until what it is rendered from changes, which is
		// watched.
		message, what := fmt.Sprintf("Applying failed: %v", err), "apply"
		if cluster != "" {
			message, what = fmt.Sprintf("Applying on cluster %s failed: %v", cluster, err), "apply on cluster "+cluster
		}
		d.fail(scorev1b1.ReasonRuntimeProvisioning, message)
		if class != apierror.TooLarge {
			d.Retry = fmt.Errorf("%s failed, retrying with backoff: %w", what, err)
		}
	}
}

// conflict fails the plan for an object that is not its Workload's, remembers the object
// (its deletion brings the plan back) and, once per refusal, warns on the plan and on the
// Workload that owns the object.
func (d *decision) conflict(o Observed) {
	owned := o.Owned
	d.fail(scorev1b1.ReasonPermissionDenied, owned.Message)
	if owned.OwnerValue != "" {
		// Another Workload's: the orchestrator says so on this plan's Workload. An object the
		// runtime did not create stays a plain PermissionDenied.
		d.condition(scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonObjectConflict, owned.Message)
	}
	d.Blocked = owned
	if o.Plan.Status.Message == owned.Message {
		return // said when the refusal began
	}
	d.Events = append(d.Events, Event{Type: Warning, Reason: scorev1b1.PlanReasonObjectConflict, Action: "Apply", Message: owned.Message})
	if owned.OwnerValue != "" && owned.OwnerName != "" {
		d.Events = append(d.Events, Event{Workload: &WorkloadRef{Name: owned.OwnerName, UID: owned.OwnerValue},
			Type: Warning, Reason: scorev1b1.PlanReasonObjectConflict, Action: "Apply",
			Message: fmt.Sprintf("Workload %q would create an object this workload owns; it was refused, and this workload is unaffected.", d.plan.Spec.WorkloadRef.Name)})
	}
}

// unreachable reports a plan whose cluster does not answer or is not registered: nothing was
// changed or deleted on either side. Its next answer, or its registration, brings the plan
// back.
func (d *decision) unreachable(err error) {
	message := fmt.Sprintf("The plan cannot be applied: %v. Nothing was changed or deleted.", err)
	d.fail(scorev1b1.ReasonNetworkUnavailable, message)
	d.condition(scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonClusterUnreachable, message)
}
