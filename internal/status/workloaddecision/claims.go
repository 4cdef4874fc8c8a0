package workloaddecision

import (
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// ClaimOp is a write to one claim.
type ClaimOp int

const (
	// CreateClaim creates a declared resource's claim, with the provisioner's finalizer.
	CreateClaim ClaimOp = iota
	// UpdateClaim writes the Workload's claim's new spec.
	UpdateClaim
	// AdoptClaim makes the Workload the controller of a claim it retained when its key was
	// removed, now declared again.
	AdoptClaim
	// ReleaseRetained deletes a claim an earlier Workload of the same name retained, so that
	// the provisioner binds its data to the new claim.
	ReleaseRetained
	// RetainClaim removes the Workload's ownership of a claim under the Retain policy.
	RetainClaim
	// DeleteClaim deletes a claim under the Delete policy.
	DeleteClaim
)

func (op ClaimOp) String() string {
	return [...]string{"creating", "updating", "adopting", "releasing", "retaining", "deleting"}[op]
}

// ClaimWrite is one write to a claim.
type ClaimWrite struct {
	Op   ClaimOp
	Name string
	// Key and Spec are the declared resource's key and the claim's spec (create, update).
	Key  string
	Spec scorev1b1.ResourceClaimSpec
	// Claim is the claim as observed (all but create).
	Claim *scorev1b1.ResourceClaim
}

// accepts reports whether an error of the write leaves the pass going: a refusal the claim's
// summary reports, or a claim that exists though the cache does not show it yet.
func (cw ClaimWrite) accepts(err error) bool {
	switch cw.Op {
	case CreateClaim:
		_, denied := apierror.Reason(err)
		return denied || apierrors.IsAlreadyExists(err)
	case UpdateClaim:
		_, denied := apierror.Reason(err)
		return denied
	}
	return false
}

// claims decides the decided copy's claims, one per resource in dependency order, on its
// cluster (Pipeline.Claims) and from the revision that provisions each; the finalizer first
// when it has any; then their writes, and each declared claim's state. It reports false when the pass
// stops here: a write to make, an error, or claims that cannot be derived (SpecInvalid).
func (d *decision) claims() ([]workloadstatus.ClaimState, bool) {
	w := d.o.Workload
	desired, err := d.pipe.Claims(d.at, d.claimViews())
	var problem planner.Problem
	switch {
	case errors.As(err, &problem):
		d.specInvalid(problem.String(), 0)
		return nil, false
	case err != nil:
		d.specInvalid(planner.Sentence(err.Error()), 0)
		return nil, false
	}
	if !d.claimRevisions(desired) {
		return nil, false
	}
	switch f := d.o.Finalizer; {
	case f != nil && f.Err != nil:
		return nil, d.stop(fmt.Errorf("adding the finalizer: %w", f.Err))
	case len(desired) > 0 && f == nil && !hasFinalizer(w):
		d.Next = AddFinalizer
		return nil, false
	}
	writes, states := d.claimWrites(desired)
	return states, d.written(writes)
}

// claimWrites are the writes that bring the observed claims to the desired ones, the declared
// claims' states (with what those writes did), and the releases of the claims of keys no
// longer declared, by their deprovision policy.
func (d *decision) claimWrites(desired []planner.DesiredClaim) ([]ClaimWrite, []workloadstatus.ClaimState) {
	w := d.o.Workload
	byName := map[string]*scorev1b1.ResourceClaim{}
	for i := range d.o.Claims {
		byName[d.o.Claims[i].Name] = &d.o.Claims[i]
	}
	wanted := map[string]bool{}
	var writes []ClaimWrite
	var states []workloadstatus.ClaimState
	for _, dc := range desired {
		wanted[dc.Name] = true
		state := workloadstatus.ClaimState{Key: dc.Key, Phase: scorev1b1.ClaimPhasePending, WaitingFor: dc.WaitingFor}
		existing := byName[dc.Name]
		switch {
		case len(dc.WaitingFor) > 0 && existing == nil:
			// Created once the outputs its params need are published.
		case existing == nil && d.o.Created[Ref{KindClaim, dc.Name}]:
			// Created by an earlier pass; the cache does not show it yet.
		case existing == nil:
			writes = append(writes, ClaimWrite{Op: CreateClaim, Name: dc.Name, Key: dc.Key, Spec: dc.Spec})
			state.Denied = d.refusal(dc.Name)
		case !existing.DeletionTimestamp.IsZero():
			// A previous incarnation is being released; the claim is recreated after it goes.
		case metav1.IsControlledBy(existing, w):
			d.ownClaim(&state, existing, dc, &writes)
		case existing.Spec.WorkloadRef.UID == string(w.UID):
			// Ours, retained when its key was removed, and declared again: adopt it back.
			writes = append(writes, ClaimWrite{Op: AdoptClaim, Name: existing.Name, Claim: existing})
		case metav1.GetControllerOf(existing) == nil:
			// Retained by an earlier Workload of the same name.
			writes = append(writes, ClaimWrite{Op: ReleaseRetained, Name: existing.Name, Claim: existing})
		default:
			state.Denied = scorev1b1.ReasonClaimFailed
		}
		states = append(states, state)
	}
	// Keys no longer declared: deprovision per policy.
	for _, c := range d.slotOwned() {
		if cw, ok := release(c); ok && !wanted[c.Name] {
			writes = append(writes, cw)
		}
	}
	return writes, states
}

// ownClaim is the state of a claim the Workload controls, and its update when its spec
// changed (not while the outputs its params need are awaited).
func (d *decision) ownClaim(state *workloadstatus.ClaimState, existing *scorev1b1.ResourceClaim, dc planner.DesiredClaim, writes *[]ClaimWrite) {
	if !d.pipe.Selection.OK {
		// No backend is selected now: the claim stays on the runtime it was provisioned for
		// (its instance's data is there), not moved to the default one.
		dc.Spec.RuntimeClass = existing.Spec.RuntimeClass
	}
	v := planner.ViewClaim(existing)
	state.Phase, state.Reason, state.OutputsAvailable, state.WaitingFor = v.Phase, v.Reason, v.OutputsAvailable, nil
	// What the Workload's status last said of it: a dependency that was ready and is being
	// updated, its outputs still published, keeps counting as ready.
	for _, sum := range d.o.Workload.Status.Claims {
		if sum.Key == dc.Key {
			state.WasReady = sum.Reason == scorev1b1.ReasonSucceeded
		}
	}
	stale := existing.Status.ObservedGeneration != existing.Generation && existing.Status.Phase != scorev1b1.ClaimPhaseFailed
	if len(dc.WaitingFor) > 0 || values.SameJSON(existing.Spec, dc.Spec) {
		if stale {
			d.respecified(state, existing)
		}
		return
	}
	*writes = append(*writes, ClaimWrite{Op: UpdateClaim, Name: dc.Name, Key: dc.Key, Spec: dc.Spec, Claim: existing})
	switch err, done := d.o.ClaimsWritten[dc.Name]; {
	case done && err != nil:
		state.Denied = d.refusal(dc.Name)
	case done && (existing.Spec.Cluster != dc.Spec.Cluster || existing.Spec.RuntimeClass != dc.Spec.RuntimeClass):
		// The Workload moved (to another cluster or runtime): the claim's outputs are the old
		// place's instance's, and nothing is planned with them.
		state.Phase, state.Reason, state.OutputsAvailable, state.Respecified = scorev1b1.ClaimPhasePending, "", false, true
	case done:
		// A new spec, written now (a rollout provisions the claim from another revision, its
		// class changed): provisioned again.
		d.respecified(state, existing)
	}
}

// respecified is the state of a claim whose new spec the provisioner has not taken yet: what it
// last reported, of the previous spec. Until the provisioner acts on the new spec nothing it
// provisioned has changed, so a dependency that was ready and still publishes its outputs is
// being updated (workloadstatus.ClaimState.Respecified), unless the Workload's own spec changed
// since its status was written: its status then follows that change, step by step.
func (d *decision) respecified(state *workloadstatus.ClaimState, existing *scorev1b1.ResourceClaim) {
	w := d.o.Workload
	last := planner.ViewReported(existing)
	state.Respecified = true
	state.Phase, state.Reason, state.OutputsAvailable = last.Phase, last.Reason, last.OutputsAvailable
	state.WasReady = state.WasReady && w.Status.ObservedGeneration == w.Generation
}

// refusal is the reason the API server refused the pass's write to a claim, "" when it did
// not.
func (d *decision) refusal(name string) scorev1b1.Reason {
	reason, _ := apierror.Reason(d.o.ClaimsWritten[name])
	return reason
}

// release is the write that deprovisions a claim per its policy: Delete deletes it (once),
// Retain removes the Workload's ownership and keeps it, Orphan leaves it as it is (no write).
func release(c *scorev1b1.ResourceClaim) (ClaimWrite, bool) {
	switch c.Spec.DeprovisionPolicy {
	case scorev1b1.DeprovisionRetain:
		return ClaimWrite{Op: RetainClaim, Name: c.Name, Claim: c}, true
	case scorev1b1.DeprovisionOrphan:
		return ClaimWrite{}, false
	}
	if !c.DeletionTimestamp.IsZero() {
		return ClaimWrite{}, false
	}
	return ClaimWrite{Op: DeleteClaim, Name: c.Name, Claim: c}, true
}

// written reports whether every claim write was made and none stopped the pass. Writes not
// made yet are the next ones (a refusal stops the writer, not the pass); the first error that
// stops the pass ends it.
func (d *decision) written(writes []ClaimWrite) bool {
	var rest []ClaimWrite
	for _, cw := range writes {
		err, done := d.o.ClaimsWritten[cw.Name]
		switch {
		case !done:
			rest = append(rest, cw)
		case err != nil && !cw.accepts(err):
			return d.stop(fmt.Errorf("%s claim %s: %w", cw.Op, cw.Name, err))
		}
	}
	if len(rest) > 0 {
		d.Next, d.Claims = WriteClaims, rest
		return false
	}
	return true
}

// claimViews summarises the Workload's own claims of its declared keys, by key; a claim being
// deleted is none.
func (d *decision) claimViews() map[string]planner.ClaimView {
	w := d.o.Workload
	owned := map[string]*scorev1b1.ResourceClaim{}
	for _, c := range d.owned() {
		owned[c.Name] = c
	}
	out := map[string]planner.ClaimView{}
	for key, res := range w.Spec.Resources {
		if c, ok := owned[planner.CopyName(planner.ClaimName(w.Name, key, res.Type), d.slot)]; ok && c.DeletionTimestamp.IsZero() {
			out[key] = planner.ViewClaim(c)
		}
	}
	return out
}

// claimRevisions records in each desired claim the revision whose provisioner definitions
// provision it: none without a rollout policy (the provisioner takes the current one), else
// the revision the Workload is rendered from — or the one the claim already names when the
// two provision it the same, so that a change that does not touch a claim writes nothing to
// it. A claim always names one under a policy: a new revision then reaches it only through
// the rollout. It reports false when a kept revision could not be read.
func (d *decision) claimRevisions(desired []planner.DesiredClaim) bool {
	if d.o.Config.Config.Rollout == nil {
		return true
	}
	render := d.render()
	owned := map[string]*scorev1b1.ResourceClaim{}
	for _, c := range d.owned() {
		owned[c.Name] = c
	}
	for i := range desired {
		dc := &desired[i]
		dc.Spec.ConfigRevision = render.Revision
		existing := owned[dc.Name]
		if existing == nil || existing.Spec.ConfigRevision == "" || existing.Spec.ConfigRevision == render.Revision {
			continue
		}
		have, kept := d.o.Kept[existing.Spec.ConfigRevision]
		switch {
		case !kept:
			continue // no longer kept: the claim takes the Workload's revision
		case have.Err != nil:
			return d.stop(have.Err)
		}
		params, _ := values.Object(dc.Spec.Params)
		if provisionermatch.Same(have.Config, render.Config, provisionermatch.Claim{Type: dc.Spec.Type, Class: dc.Spec.Class, ID: dc.Spec.ID, Params: params, RuntimeClass: dc.Spec.RuntimeClass}) {
			dc.Spec.ConfigRevision = existing.Spec.ConfigRevision
		}
	}
	return true
}

// deletion releases every claim per its policy and lets the Workload go only when every
// Delete-policy claim is gone. Until then the status says what deletion waits for; the
// claims' deletion events bring the Workload back.
func (d *decision) deletion() {
	w := d.o.Workload
	if !hasFinalizer(w) {
		return
	}
	var writes []ClaimWrite
	var waiting []string
	for _, c := range d.owned() {
		if cw, ok := release(c); ok {
			writes = append(writes, cw)
		}
		if c.Spec.DeprovisionPolicy == scorev1b1.DeprovisionDelete || c.Spec.DeprovisionPolicy == "" {
			waiting = append(waiting, c.Spec.Key)
		}
	}
	if !d.written(writes) {
		return
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		cond := workloadstatus.Deleting(waiting)
		d.decide(workloadstatus.InputsValid(), cond, cond)
		d.summaries = w.Status.Claims
		return
	}
	switch f := d.o.FinalizerRemoved; {
	case f == nil:
		d.Next = RemoveFinalizer
	case f.Err != nil:
		d.Retry = fmt.Errorf("removing the finalizer: %w", f.Err)
	}
}
