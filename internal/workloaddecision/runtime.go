package workloaddecision

import (
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/mirror"
	"github.com/score-orchestrator/score-orchestrator/internal/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
	"github.com/score-orchestrator/score-orchestrator/internal/workloadstatus"
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
	// Event is recorded on the plan with the write: the Workload moved to another cluster.
	Event *Event
	// Name and Observed are a copy's plan on several clusters ("" and nil: the Workload's
	// own, Observed.Plan).
	Name     string
	Observed *scorev1b1.WorkloadPlan
}

// exposure decides the exposure's write, and what it did. It reports false when the pass
// stops here (a write to make, an error), with the reason when the API server refused it.
func (d *decision) exposure(runtimeClass string) (bool, scorev1b1.Reason) {
	w := d.o.Workload
	spec := scorev1b1.WorkloadExposureSpec{
		WorkloadRef:                scorev1b1.WorkloadRef{Name: w.Name, Namespace: w.Namespace, UID: string(w.UID)},
		RuntimeClass:               runtimeClass,
		ObservedWorkloadGeneration: w.Generation,
	}
	var op ExposureOp
	switch e := d.o.Exposure; {
	case e != nil && e.Spec.WorkloadRef.UID != string(w.UID):
		op = ReplaceExposure
	case e != nil && reflect.DeepEqual(e.Spec, spec):
		return true, ""
	case e != nil:
		op = UpdateExposure
	case d.o.Created[Ref{KindExposure, d.name()}]:
		return true, "" // created by an earlier pass; the cache does not show it yet
	default:
		op = CreateExposure
	}
	written := d.o.ExposureWritten
	if written == nil {
		d.Next, d.Exposure = WriteExposure, &ExposureWrite{Op: op, Spec: spec}
		if d.slot != 0 {
			d.Exposure.Name, d.Exposure.Observed = d.name(), d.o.Exposure
		}
		return false, ""
	}
	err := written.Err
	switch reason, denied := apierror.Reason(err); {
	case err == nil, op == CreateExposure && apierrors.IsAlreadyExists(err):
		return true, ""
	case denied && op != ReplaceExposure:
		return false, reason
	}
	return d.stop(fmt.Errorf("%s the exposure: %w", op, err)), ""
}

// plan decides the plan's write: only when its content changed, or, once the rollout reached
// the Workload, when only the config revision it records did. A move is said on the plan.
// written is a plan the pass wrote; ok is false when the pass stops here (a write to make, an
// error), with the reason when the API server refused it.
func (d *decision) plan(spec *scorev1b1.WorkloadPlanSpec, placed placement.Result) (written bool, refused scorev1b1.Reason, ok bool) {
	p := d.o.Plan
	write := &PlanWrite{Spec: spec}
	switch {
	case p != nil && sameContent(p.Spec, *spec) && (!d.o.Reached || p.Spec.ConfigRevision == spec.ConfigRevision):
		return false, "", true
	case p != nil && placed.Moved:
		write.Event = &Event{Type: Normal, Reason: "Placed", Action: "Place",
			Message: fmt.Sprintf("Placed on cluster %s: cluster %s no longer fits (%s).", placed.Cluster, p.Spec.Cluster, placed.Selector)}
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
// observed yet), with the normalised signal from the exposure.
func (d *decision) runtimeCondition(written bool, mirrored mirror.Result) workloadstatus.Condition {
	p := d.o.Plan
	if written || p == nil || p.Status.ObservedGeneration != p.Generation {
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
	default:
		return workloadstatus.Provisioning()
	}
}
