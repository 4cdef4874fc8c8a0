package workloaddecision

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// DefaultProgressHold is how long, by default, a status that only reports progress waits for
// the next step (Observed.ProgressHold): long enough that a dependency's last steps or a
// deployment under load usually end within it (at N=200 a claim ready → Ready took 12–17 s),
// short enough that every progress report still reaches the Workload well inside the
// lifecycle's 30 s status promise, the pass's own time included.
const DefaultProgressHold = 20 * time.Second

// hold holds back a status that only reports progress, for the window Observed.ProgressHold
// measured from the moment its sources changed, so that when the next step comes within it
// both are written once: a claim Binding then Bound, the claims ready and the workload being
// deployed then Ready, an endpoint published then Ready. The pass writes nothing and comes
// back when the window ends (RequeueAfter), unless a watch brings it back sooner.
//
// The rule, in full: a status is held only when the one written and the one decided both say
// the Workload is on its way — Ready False with ClaimPending or RuntimeProvisioning, nothing
// failed — for the same generation and reconcile request, and what differs is a claim's
// summary, ClaimsReady, RuntimeReady or the endpoint. It is held until the earliest of those
// sources' transitions (a claim's Ready condition, the plan's conditions or the pass that
// wrote it, the exposure's conditions; each object's creation when it has none) plus the
// window. So no progress is shown later than the window after it happened, and none that was
// superseded within it is shown at all. Never held: the first status, a new generation, a
// failure or an error, a recovery from one, Ready, a change while Ready (its loss included),
// a namespace or a Workload being deleted, a pass that retries.
//
// It is a function of what was read, the time included: no memory, so a restart decides the
// same, and an older source time only ends the hold sooner.
func (d *decision) hold() {
	window, w, next := d.o.ProgressHold, d.o.Workload, d.Status
	if window <= 0 || next == nil || d.Retry != nil || d.NamespaceDeleting || !w.DeletionTimestamp.IsZero() {
		return
	}
	before := &w.Status
	if !progress(before.Conditions, w.Generation) || !progress(next.Conditions, w.Generation) ||
		before.ObservedGeneration != w.Generation || before.LastHandledReconcileAt != next.LastHandledReconcileAt ||
		!sameCondition(before.Conditions, next.Conditions, scorev1b1.ConditionInputsValid) {
		return
	}
	var since []time.Time
	claims := !equality.Semantic.DeepEqual(before.Claims, next.Claims)
	if claims {
		for _, sum := range next.Claims {
			if i := slices.IndexFunc(before.Claims, func(b scorev1b1.ClaimSummary) bool { return b.Key == sum.Key }); i >= 0 && before.Claims[i] == sum {
				continue
			}
			t, ok := d.claimChanged(sum.Key)
			if !ok {
				return
			}
			since = append(since, t)
		}
	}
	if !sameCondition(before.Conditions, next.Conditions, scorev1b1.ConditionClaimsReady) && !claims {
		return // not the claims' doing: nothing to measure it from
	}
	if !sameCondition(before.Conditions, next.Conditions, scorev1b1.ConditionRuntimeReady) {
		t, ok := d.planChanged()
		if !ok {
			return
		}
		since = append(since, t)
	}
	if !equality.Semantic.DeepEqual(before.Endpoint, next.Endpoint) {
		e := d.o.Exposure
		if e == nil {
			return
		}
		since = append(since, changed(e.Status.Conditions, e.CreationTimestamp))
	}
	if len(since) == 0 {
		return
	}
	remaining := slices.MinFunc(since, func(a, b time.Time) int { return a.Compare(b) }).Add(window).Sub(d.o.Now.Time)
	if remaining <= 0 {
		return
	}
	d.Status, d.Transitions, d.Events = nil, nil, nil
	d.RequeueAfter = min(remaining, window)
}

// progress reports whether conditions say the Workload is on its way to Ready for generation:
// Ready False while dependencies are provisioned or the workload is deployed, and nothing
// failed on the way (no failure of the runtime's, no selection waiting for the platform).
func progress(conditions []metav1.Condition, generation int64) bool {
	ready := meta.FindStatusCondition(conditions, scorev1b1.ConditionReady)
	claims := meta.FindStatusCondition(conditions, scorev1b1.ConditionClaimsReady)
	runtime := meta.FindStatusCondition(conditions, scorev1b1.ConditionRuntimeReady)
	if ready == nil || claims == nil || runtime == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != generation {
		return false
	}
	switch scorev1b1.Reason(ready.Reason) {
	case scorev1b1.ReasonClaimPending, scorev1b1.ReasonRuntimeProvisioning:
	default:
		return false
	}
	switch scorev1b1.Reason(claims.Reason) {
	case scorev1b1.ReasonClaimPending, scorev1b1.ReasonSucceeded:
	default:
		return false
	}
	switch reason := scorev1b1.Reason(runtime.Reason); {
	case reason == scorev1b1.ReasonClaimPending && runtime.Status == metav1.ConditionFalse:
	case reason == scorev1b1.ReasonRuntimeProvisioning && runtime.Status == metav1.ConditionUnknown:
	case (reason == scorev1b1.ReasonSucceeded || reason == scorev1b1.ReasonRuntimeDegraded) && runtime.Status == metav1.ConditionTrue:
	default:
		return false
	}
	return true
}

// sameCondition reports whether a condition says the same before and after.
func sameCondition(before, after []metav1.Condition, typ string) bool {
	b, a := meta.FindStatusCondition(before, typ), meta.FindStatusCondition(after, typ)
	if b == nil || a == nil {
		return b == a
	}
	return b.Status == a.Status && b.Reason == a.Reason && b.Message == a.Message
}

// claimChanged is when the claim of key last changed: its Ready condition's transition, or
// its creation. It reports false when the Workload's own claim of key was not observed.
func (d *decision) claimChanged(key string) (time.Time, bool) {
	for _, c := range d.owned() {
		if c.Spec.Key == key && c.DeletionTimestamp.IsZero() {
			if r := meta.FindStatusCondition(c.Status.Conditions, scorev1b1.ClaimConditionReady); r != nil {
				return r.LastTransitionTime.Time, true
			}
			return c.CreationTimestamp.Time, true
		}
	}
	return time.Time{}, false
}

// planChanged is when the runtime's progress last changed: now when the pass wrote the plan,
// else the latest transition of the observed plan's conditions, or its creation. It reports
// false when there is no plan to measure from.
func (d *decision) planChanged() (time.Time, bool) {
	switch p := d.o.Plan; {
	case d.o.PlanWritten != nil:
		return d.o.Now.Time, true
	case p != nil:
		return changed(p.Status.Conditions, p.CreationTimestamp), true
	}
	return time.Time{}, false
}

// changed is the latest transition of conditions, or created when there is none.
func changed(conditions []metav1.Condition, created metav1.Time) time.Time {
	latest := created.Time
	for _, c := range conditions {
		if c.LastTransitionTime.After(latest) {
			latest = c.LastTransitionTime.Time
		}
	}
	return latest
}
