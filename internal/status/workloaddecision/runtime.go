package workloaddecision

import (
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/status/mirror"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// ExposureOp is a write to the Workload's exposure.
type ExposureOp int

const (
	// CreateExposure creates the Workload's exposure.
	CreateExposure ExposureOp = iota
	// UpdateExposure writes its new spec.
	UpdateExposure
	// ReplaceExposure deletes an earlier Workload's exposure of the same name (its UID is
	// immutable); the next pass creates the Workload's.
	ReplaceExposure
)

func (op ExposureOp) String() string {
	return [...]string{"creating", "updating", "replacing"}[op]
}

// ExposureWrite is the write the exposure needs: the registrar stage, one WorkloadExposure per
// Workload, spec only.
type ExposureWrite struct {
	Op   ExposureOp
	Spec scorev1b1.WorkloadExposureSpec
	// Name and Observed are a copy's exposure on several clusters ("" and nil: the
	// Workload's own, Observed.Exposure).
	Name     string
	Observed *scorev1b1.WorkloadExposure
}

// PlanWrite is the plan's spec to write: created, or the observed plan's updated.
type PlanWrite struct {
	Create bool
	Spec   *scorev1b1.WorkloadPlanSpec
	// Events are recorded on the plan with the write: the Workload moved to another cluster
	// (Placed), and why when its cluster did not answer (FailedOver).
	Events []Event
	// Name and Observed are a copy's plan on several clusters ("" and nil: the Workload's
	// own, Observed.Plan).
	Name     string
	Observed *scorev1b1.WorkloadPlan
}

// exposure decides the exposure's write, and what it did. It reports false when the pass
// stops here (a write to make, an error), with the reason when the API server refused it.
func (d *decision) exposure(runtimeClass string) (bool, scorev1b1.Reason) {
	write := d.exposureWrite(runtimeClass)
	if write == nil {
		return true, ""
	}
	written := d.o.ExposureWritten
	if written == nil {
		d.Next, d.Exposure = WriteExposure, write
		return false, ""
	}
	err, op := written.Err, write.Op
	switch reason, denied := apierror.Reason(err); {
	case err == nil, op == CreateExposure && apierrors.IsAlreadyExists(err):
		return true, ""
	case denied && op != ReplaceExposure:
		return false, reason
	}
	return d.stop(fmt.Errorf("%s the exposure: %w", op, err)), ""
}

// exposureWrite is the write the exposure needs for a backend of runtimeClass, nil when it
// needs none: the Workload's, with its spec, or one an earlier pass created that the cache
// does not show yet.
func (d *decision) exposureWrite(runtimeClass string) *ExposureWrite {
	w := d.o.Workload
	spec := scorev1b1.WorkloadExposureSpec{
		WorkloadRef:                scorev1b1.WorkloadRef{Name: w.Name, Namespace: w.Namespace, UID: string(w.UID)},
		RuntimeClass:               runtimeClass,
		ObservedWorkloadGeneration: w.Generation,
	}
	switch e := d.o.Exposure; {
	case e != nil && e.Spec.WorkloadRef.UID != string(w.UID):
		return d.copyExposure(&ExposureWrite{Op: ReplaceExposure, Spec: spec})
	case e != nil && reflect.DeepEqual(e.Spec, spec):
		return nil
	case e != nil:
		return d.copyExposure(&ExposureWrite{Op: UpdateExposure, Spec: spec})
	case d.o.Created[Ref{KindExposure, d.name()}]:
		return nil // created by an earlier pass; the cache does not show it yet
	}
	return d.copyExposure(&ExposureWrite{Op: CreateExposure, Spec: spec})
}

// copyExposure names a copy's exposure in its write (the Workload's own needs no name).
func (d *decision) copyExposure(write *ExposureWrite) *ExposureWrite {
	if d.slot != 0 {
		write.Name, write.Observed = d.name(), d.o.Exposure
	}
	return write
}

// alongside names the exposure's write with the claims' writes, when the Workload has a
// backend and its exposure needs one: the two do not depend on each other, so the pass makes
// them together (a first pass one request shallower). What the exposure's write did is judged
// by the exposure's stage, once the claims are written; a pass the claims stop leaves it to
// the next (a creation is remembered, not repeated).
func (d *decision) alongside(sel selection.Result) {
	if d.Next != WriteClaims || !sel.OK || d.o.ExposureWritten != nil {
		return
	}
	d.Exposure = d.exposureWrite(sel.Backend.RuntimeClass)
}

// plan decides the plan's write: only when its content changed, or, once the rollout reached
// the Workload and no dependency is still being updated (claimsUpdating), when only the config
// revision it records did: the rollout's gate reads that revision as the Workload rendered, and
// its dependencies provisioned, from it. A move is said on the plan. written is a plan the pass
// wrote; ok is false when the pass stops here (a write to make, an error), with the reason when
// the API server refused it.
func (d *decision) plan(spec *scorev1b1.WorkloadPlanSpec, placed placement.Result, claimsUpdating bool) (written bool, refused scorev1b1.Reason, ok bool) {
	p := d.o.Plan
	write := &PlanWrite{Spec: spec}
	switch {
	case p != nil && sameContent(p.Spec, *spec) && (!d.o.Reached || p.Spec.ConfigRevision == spec.ConfigRevision || claimsUpdating):
		return false, "", true
	case p != nil && p.Spec.Cluster != spec.Cluster:
		write.Events = moveEvents(&p.Spec, spec, placed)
	case p != nil:
	case d.o.Created[Ref{KindPlan, d.name()}]:
		return false, "", true // created by an earlier pass; the cache does not show it yet
	default:
		write.Create = true
	}
	if d.slot != 0 {
		write.Name, write.Observed = d.name(), p
	}
	if d.o.PlanWritten == nil {
		d.Next, d.Plan = WritePlan, write
		return false, "", false
	}
	err := d.o.PlanWritten.Err
	if err == nil {
		d.planCreated = write.Create
		d.revisionRecorded = p != nil && sameContent(p.Spec, *spec)
		return true, "", true
	}
	if write.Create && apierrors.IsAlreadyExists(err) {
		return false, "", d.stop(fmt.Errorf("the plan exists but was not visible: %w", err))
	}
	if reason, denied := apierror.Reason(err); denied {
		return false, reason, false
	}
	verb := "updating"
	if write.Create {
		verb = "creating"
	}
	return false, "", d.stop(fmt.Errorf("%s the plan: %w", verb, err))
}

// sameContent reports whether two plan specs render the same, whatever config revision each
// was written from: a config change that does not change a plan costs no write.
func sameContent(a, b scorev1b1.WorkloadPlanSpec) bool {
	a.ConfigRevision, b.ConfigRevision = "", ""
	return values.SameJSON(a, b)
}

// runtimeCondition is the runtime's progress on the current plan (one the pass wrote is not
// observed yet, unless what serves still stands for the Workload), with the normalised signal
// from the exposure.
func (d *decision) runtimeCondition(written bool, mirrored mirror.Result) workloadstatus.Condition {
	p := d.o.Plan
	switch {
	case p == nil:
		return workloadstatus.Provisioning()
	case (written || p.Status.ObservedGeneration != p.Generation) && !d.lastReportStands(written):
		return workloadstatus.Provisioning()
	}
	switch p.Status.Phase {
	case scorev1b1.PlanPhaseFailed:
		switch c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied); {
		case c != nil && c.Reason == scorev1b1.PlanReasonObjectConflict:
			return workloadstatus.ObjectConflict()
		case c != nil && c.Reason == scorev1b1.PlanReasonClusterUnreachable:
			return workloadstatus.RuntimeUnreachable()
		}
		return workloadstatus.Runtime(metav1.ConditionFalse, p.Status.Reason)
	case scorev1b1.PlanPhaseProjected:
		if mirrored.Signal != nil {
			return workloadstatus.Runtime(mirrored.Signal.Status, mirrored.Signal.Reason)
		}
		return workloadstatus.Runtime(metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	}
	if rollingOut(p) && d.readyAsItIs() {
		return workloadstatus.RollingOut()
	}
	return workloadstatus.Provisioning()
}

// lastReportStands reports whether the runtime's last report on the plan still stands for a
// plan generation it has not reported on yet: it said the plan Projected, or rolling out behind
// what serves, and the new generation either only records the config revision the Workload is
// rendered from (a rollout reached it, and the plan renders the same: nothing deployed
// changes), or comes from a change that is not the Workload's own (the platform's config or
// templates, a dependency's outputs) to a Workload whose runtime is ready for its generation.
// In the pass that writes a plan, the Workload's own change shows as a generation its runtime
// was not ready for; in the passes after, as the Workload's status that pass left (a write
// for the Workload's change said it is being deployed).
func (d *decision) lastReportStands(written bool) bool {
	p := d.o.Plan
	if p.Status.Phase != scorev1b1.PlanPhaseProjected && !rollingOut(p) {
		return false
	}
	return written && d.revisionRecorded || d.readyAsItIs()
}

// readyAsItIs reports whether the Workload's status says its runtime ready for the Workload's
// generation: nothing of its own changed since.
func (d *decision) readyAsItIs() bool {
	w := d.o.Workload
	c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionRuntimeReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

// rollingOut reports whether the runtime's last report says the plan generation it observed
// rolls out behind the objects an earlier one made healthy, which still serve.
func rollingOut(p *scorev1b1.WorkloadPlan) bool {
	c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionHealthy)
	return p.Status.Phase == scorev1b1.PlanPhasePlanning && c != nil && c.Reason == scorev1b1.PlanReasonUpdating && c.ObservedGeneration == p.Status.ObservedGeneration
}
