package workloaddecision

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/status/mirror"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// A Workload's copies: one per cluster (Desired, placement.PlaceSeveral; placement.clusters N
// or All, one without it, one on the hub without placement), each with its own plan, exposure
// and claims (slot 0 the Workload's own names, slot N "NAME.N": planner.CopyName). Each copy
// is decided by a decision over its objects — its claims on its cluster, its exposure, its plan
// with the overrides of its cluster; the first write one needs is the pass's next.
// Copies no longer placed are removed in order: the plan first (the runtime deletes its
// objects), then, once it is gone, its claims by their policy and its exposure. The status is
// workloadstatus.Several over the copies in placement order, and the endpoint the first
// copy's.

// DeleteCopies deletes Decision.Deletes (a removed copy's plan, or its exposure), then decides
// again with Observed.CopiesDeleted.
const DeleteCopies Next = RemoveFinalizer + 1

// CopyObserved are the objects of a Workload's copies on several clusters other than those of
// slot 0 (Observed.Plan, Observed.Exposure), and what the pass's writes to them did.
type CopyObserved struct {
	// Plans are the plans of slots 1.. the Workload controls, a plan being deleted included.
	Plans []*scorev1b1.WorkloadPlan
	// Exposures are the exposures of the names of slots 1.., whichever Workload's.
	Exposures []*scorev1b1.WorkloadExposure
	// Written are the writes to them by object (plans and exposures), Deleted the deletes of
	// removed copies' plans and exposures (slot 0's included).
	Written map[Ref]*Written
	Deleted map[Ref]error
}

// name is the name of the decided copy's plan and exposure.
func (d *decision) name() string {
	return planner.CopyName(d.o.Workload.Name, d.slot)
}

// slotOf is the slot of one of the Workload's objects by its name (base: the Workload's name,
// or the claim's name in slot 0); ok is false when it is not a copy of base.
func slotOf(base, name string) (int, bool) {
	return planner.CopySlot(base, name)
}

// claimSlot is the slot of a claim the Workload controls, by its name (ClaimName has no
// dot: a dot is a copy's); -1 when its name is no copy's.
func (d *decision) claimSlot(c *scorev1b1.ResourceClaim) int {
	i := strings.LastIndexByte(c.Name, '.')
	if i < 0 {
		return 0
	}
	if s, ok := slotOf(c.Name[:i], c.Name); ok {
		return s
	}
	return -1
}

// slotOwned are the claims the Workload controls of the decided copy, by name.
func (d *decision) slotOwned() []*scorev1b1.ResourceClaim {
	var out []*scorev1b1.ResourceClaim
	for _, c := range d.owned() {
		if d.claimSlot(c) == d.slot {
			out = append(out, c)
		}
	}
	return out
}

// copyObjects are the copies' plans and exposures of slots 1.. (the Workload's own), for the
// hand-over to its shard.
func (d *decision) copyObjects() []Object {
	var out []Object
	for _, e := range d.o.Copies.Exposures {
		if e.Spec.WorkloadRef.UID == string(d.o.Workload.UID) {
			out = append(out, e)
		}
	}
	for _, p := range d.o.Copies.Plans {
		out = append(out, p)
	}
	return out
}

// plans are the Workload's plans by slot, slot 0's included.
func (d *decision) plans() map[int]*scorev1b1.WorkloadPlan {
	w := d.o.Workload
	out := map[int]*scorev1b1.WorkloadPlan{}
	if d.o.Plan != nil {
		out[0] = d.o.Plan
	}
	for _, p := range d.o.Copies.Plans {
		if s, ok := slotOf(w.Name, p.Name); ok && s > 0 {
			out[s] = p
		}
	}
	return out
}

// exposures are the Workload's exposures by slot (its UID's), slot 0's included.
func (d *decision) exposures() map[int]*scorev1b1.WorkloadExposure {
	w := d.o.Workload
	out := map[int]*scorev1b1.WorkloadExposure{}
	for _, e := range append([]*scorev1b1.WorkloadExposure{d.o.Exposure}, d.o.Copies.Exposures...) {
		if e == nil || e.Spec.WorkloadRef.UID != string(w.UID) {
			continue
		}
		if s, ok := slotOf(w.Name, e.Name); ok {
			out[s] = e
		}
	}
	return out
}

// copyObserved is what the pass observed and did, as the decided copy sees it: its plan and
// exposure, and its writes to them.
func (d *decision) copyObserved(slot int) Observed {
	o := d.o
	if slot == 0 {
		return o
	}
	name := planner.CopyName(o.Workload.Name, slot)
	o.Plan, o.Exposure = d.plans()[slot], nil
	for _, e := range d.o.Copies.Exposures {
		if e.Name == name {
			o.Exposure = e
		}
	}
	o.PlanWritten, o.ExposureWritten = o.Copies.Written[Ref{KindPlan, name}], o.Copies.Written[Ref{KindExposure, name}]
	return o
}

// copies decides the Workload's copies: each placed copy in placement order, then the removal
// of the copies no longer placed, then the status from the copies.
func (d *decision) copies(pipe Pipeline, mirrored mirror.Result) {
	w := d.o.Workload
	sel, placed := pipe.Selection, pipe.Placement
	if !placed.OK {
		// No cluster matches: nothing that runs is touched.
		d.decide(workloadstatus.InputsValid(), d.previousClaims(), workloadstatus.NoCluster())
		d.summaries = w.Status.Claims
		return
	}
	policy := mirror.Policy{PublicOnly: d.o.Config.Config.Endpoint.PublicOnly, EndpointTemplate: d.o.Config.Config.Endpoint.Template}
	var reports []workloadstatus.Copy
	for i, c := range placed.Copies {
		sub := &decision{o: d.copyObserved(c.Slot), slot: c.Slot, pipe: &pipe, at: c}
		copyMirrored := mirrored
		if c.Slot != 0 {
			copyMirrored = sub.mirror(policy)
		}
		if i == 0 {
			// The endpoint is the first copy's in placement order.
			d.endpoint, d.Rejected = copyMirrored.Endpoint, copyMirrored.Rejected
		}
		where := placement.Result{OK: true, Cluster: c.Cluster, Labels: c.Labels, Moved: c.From != "", FailedOver: c.FailedOver, Silence: c.Silence, Selector: placed.Selector}
		states, ok := sub.claims()
		if ok {
			claimsReady := sub.claimsReady(states)
			if !sub.decided {
				sub.runtime(sel, where, states, claimsReady, copyMirrored)
			}
		} else if c.Slot == 0 {
			sub.alongside(sel)
		}
		if sub.Next != Done || !sub.decided || sub.Retry != nil || sub.NamespaceDeleting || sub.TooLarge != nil ||
			sub.conds.InputsValid.Status != metav1.ConditionTrue {
			// A write to make, or an ending that is the Workload's (an invalid input, an error).
			endpoint, rejected := d.endpoint, d.Rejected
			d.Decision, d.decided, d.conds, d.summaries = sub.Decision, sub.decided, sub.conds, sub.summaries
			d.endpoint, d.Rejected = endpoint, rejected
			return
		}
		if c.Slot == 0 {
			d.planCreated = sub.planCreated
		}
		reports = append(reports, workloadstatus.Copy{States: states, Claims: sub.conds.ClaimsReady, Runtime: sub.conds.RuntimeReady})
	}
	// Without a backend nothing is decided of the other copies: they stay as they are.
	if sel.OK && !d.removeCopies(placed) {
		return
	}
	summaries, claims, runtime := workloadstatus.Several(reports)
	d.decide(workloadstatus.InputsValid(), claims, runtime)
	d.summaries = summaries
}

// claimsReady is the decided copy's ClaimsReady and its claims' summaries from their states;
// a refused claim decides the copy (denied): the refusal is retried with backoff, since what
// lifts it (a quota freed, a policy changed) is not something this controller watches.
func (d *decision) claimsReady(states []workloadstatus.ClaimState) workloadstatus.Condition {
	summaries, claimsReady := workloadstatus.Claims(slices.Clone(states))
	d.summaries = summaries
	for _, st := range states {
		if st.Denied != "" {
			d.denied(claimsReady, workloadstatus.WaitingForClaims(), st.Denied)
		}
	}
	return claimsReady
}

// previousClaims is the ClaimsReady the status last said (no claim changes while nothing is
// placed).
func (d *decision) previousClaims() workloadstatus.Condition {
	if c := meta.FindStatusCondition(d.o.Workload.Status.Conditions, scorev1b1.ConditionClaimsReady); c != nil {
		return workloadstatus.Condition{Status: c.Status, Reason: scorev1b1.Reason(c.Reason), Message: c.Message}
	}
	_, claims := workloadstatus.Claims(nil)
	return claims
}

// removeCopies removes the copies no longer placed, in order: a copy's plan is deleted first
// (the runtime deletes what it applied, on its cluster); once the plan is gone, its claims are
// released by their policy and its exposure deleted. It reports false when the pass stops
// here: a write to make, or an error.
func (d *decision) removeCopies(placed placement.Several) bool {
	w := d.o.Workload
	keep := map[int]bool{}
	for _, c := range placed.Copies {
		keep[c.Slot] = true
	}
	plans, exposures := d.plans(), d.exposures()
	var deletes []Object
	var releases []ClaimWrite
	gone := func(slot int) bool {
		return plans[slot] == nil && !d.o.Created[Ref{KindPlan, planner.CopyName(w.Name, slot)}]
	}
	for slot, p := range plans {
		if !keep[slot] && p.DeletionTimestamp.IsZero() {
			deletes = append(deletes, p)
		}
	}
	for slot, e := range exposures {
		if !keep[slot] && gone(slot) {
			deletes = append(deletes, e)
		}
	}
	for _, c := range d.owned() {
		if s := d.claimSlot(c); s >= 0 && !keep[s] && gone(s) {
			if cw, ok := release(c); ok {
				releases = append(releases, cw)
			}
		}
	}
	if !d.written(releases) {
		return false
	}
	var rest []Object
	for _, o := range deletes {
		err, done := d.o.Copies.Deleted[refOf(o)]
		switch {
		case !done:
			rest = append(rest, o)
		case err != nil:
			return d.stop(fmt.Errorf("removing the copy's %s %s: %w", refOf(o).Kind, o.GetName(), err))
		}
	}
	if len(rest) > 0 {
		slices.SortFunc(rest, func(a, b Object) int { return compare(refOf(a), refOf(b)) })
		d.Next, d.Deletes = DeleteCopies, rest
		return false
	}
	return true
}

// refOf is an object's Ref.
func refOf(o Object) Ref {
	if _, ok := o.(*scorev1b1.WorkloadPlan); ok {
		return Ref{KindPlan, o.GetName()}
	}
	return Ref{KindExposure, o.GetName()}
}

// compare orders deletes: plans first, then by name.
func compare(a, b Ref) int {
	if a.Kind != b.Kind {
		return cmp.Compare(b.Kind, a.Kind) // "plan" before "exposure"
	}
	return cmp.Compare(a.Name, b.Name)
}

// copiesToPassOn are the plans of the other copies whose reconcile request differs from want
// (a plan being deleted excepted).
func (d *decision) copiesToPassOn(want string) []*scorev1b1.WorkloadPlan {
	var out []*scorev1b1.WorkloadPlan
	for _, p := range d.o.Copies.Plans {
		if p.DeletionTimestamp.IsZero() && p.Annotations[scorev1b1.AnnotationReconcileRequestedAt] != want {
			out = append(out, p)
		}
	}
	return out
}
