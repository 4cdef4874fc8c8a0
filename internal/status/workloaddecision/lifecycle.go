package workloaddecision

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/shard"
	"github.com/score-orchestrator/score-orchestrator/internal/status/mirror"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// lifecycle walks the stages of a Workload that is not deleted, in order; each either
// completes, and the next one follows, or names the write it needs, or decides the status, and
// the pass stops there: the shard's labels → inputs → config → volumes by name → the pipeline
// (Desired: selection → placement of its copies) → for each copy in placement order, claims →
// exposure → plan → runtime → the removal of copies no longer placed (copies).
func (d *decision) lifecycle() {
	w := d.o.Workload
	if !d.handOver() {
		return
	}
	d.endpoint = d.mirror(mirror.Policy{}).Endpoint
	// Inputs the API server could not check.
	if problems := planner.CheckInputs(w, planner.Allowed{ProbeHosts: d.o.ProbeHosts}); len(problems) > 0 {
		d.specInvalid(problems[0].String(), len(problems)-1)
		return
	}
	// Before any valid config, nothing can be selected or provisioned.
	current := d.o.Config
	if current == nil {
		awaiting := workloadstatus.AwaitingConfig()
		d.decide(workloadstatus.InputsValid(), workloadstatus.Condition{Status: metav1.ConditionFalse, Reason: scorev1b1.ReasonClaimPending, Message: awaiting.Message}, awaiting)
		return
	}
	// A preview the platform refuses provisions and deploys nothing; what it has keeps
	// running until it is admitted or deleted.
	if p := d.o.Preview; p != nil && p.Refused != "" {
		refused := workloadstatus.PreviewRefused(p.Refused)
		d.decide(workloadstatus.InputsValid(), refused, refused)
		d.summaries = w.Status.Claims
		return
	}
	// A volume mounted by name that the platform does not admit, or an instance's: nothing is
	// provisioned or deployed until the Workload mounts another.
	if refused := NamedVolumeRefused(w, current.Config, d.o.NamespaceLabels, d.o.InstanceVolumes); refused != "" {
		c := workloadstatus.PolicyRefused(refused)
		d.decide(workloadstatus.InputsValid(), c, c)
		d.summaries = w.Status.Claims
		return
	}
	mirrored := d.mirror(mirror.Policy{PublicOnly: current.Config.Endpoint.PublicOnly, EndpointTemplate: current.Config.Endpoint.Template})
	d.endpoint, d.Rejected = mirrored.Endpoint, mirrored.Rejected

	// Selection, the plan and the claims' provisioning follow the revision a rollout gives
	// the Workload; the mirror follows the current one.
	if d.o.RenderErr != nil {
		d.stop(d.o.RenderErr)
		return
	}
	pipe := Desired(d.desiredInput())
	sel := pipe.Selection
	if !sel.OK && sel.Reason == scorev1b1.ReasonSpecInvalid {
		d.specInvalid(sel.Message, 0)
		return
	}
	// Where its copies run, before their claims: their instances are provisioned on the same
	// clusters.
	if sel.OK && sel.Backend.Placement != nil && d.o.ClustersErr != nil {
		d.stop(d.o.ClustersErr)
		return
	}
	d.recheckAt = pipe.Placement.RecheckAt
	d.copies(pipe, mirrored)
}

// desiredInput is what the pipeline decides the Workload's copies from: the config it is
// rendered from, and where its copies are: their plans' clusters (a plan being deleted holds
// its slot and clusters), and, before its first plan, the cluster the Workload's own claims
// were placed on.
func (d *decision) desiredInput() DesiredInput {
	w := d.o.Workload
	in := DesiredInput{Workload: w, Config: d.render(), Region: d.o.Region, ProbeHosts: d.o.ProbeHosts,
		Clusters: d.o.Clusters, Held: map[string][]int{}, Now: d.o.Now.Time}
	if d.o.Preview != nil {
		in.Policy = d.o.Preview.Policy
	}
	current := map[int]string{}
	for slot, p := range d.plans() {
		for _, c := range clusters.OfPlan(p) {
			in.Held[c] = append(in.Held[c], slot)
		}
		if p.DeletionTimestamp.IsZero() {
			current[slot] = p.Spec.Cluster
		}
	}
	if d.o.Plan == nil {
		// Before its first plan, the Workload's own copy is where its claims were placed. The
		// other copies without a plan are placed again as they were placed (the same free slot
		// and cluster), or are being removed: their claims wait for their release.
		for _, c := range d.owned() {
			if d.claimSlot(c) == 0 && c.Spec.Cluster != "" {
				current[0] = c.Spec.Cluster
				break
			}
		}
	}
	for s, c := range current {
		in.Current = append(in.Current, placement.Copy{Slot: s, Cluster: c})
	}
	slices.SortFunc(in.Current, func(a, b placement.Copy) int { return a.Slot - b.Slot })
	return in
}

// meanwhile is the runtime's condition while the plan waits for the claims: what the runtime
// says of the plan it runs, while every dependency is ready or being updated (a new spec not
// taken yet) and that plan was built from the Workload's spec as it is, on its cluster — what
// runs still serves; otherwise waiting for the claims.
func (d *decision) meanwhile(claimsReady workloadstatus.Condition, placed placement.Result, mirrored mirror.Result) workloadstatus.Condition {
	p := d.o.Plan
	if claimsReady.Status != metav1.ConditionTrue || p == nil || p.Spec.ObservedWorkloadGeneration != d.o.Workload.Generation || p.Spec.Cluster != placed.Cluster {
		return workloadstatus.WaitingForClaims()
	}
	return d.runtimeCondition(false, mirrored)
}

// render is the config the Workload is rendered from.
func (d *decision) render() *Config {
	if d.o.Render == nil {
		return d.o.Config
	}
	return d.o.Render
}

// runtime is the runtime's stages of the decided copy: a backend, the exposure's registration,
// then the plan, and the runtime's progress on it.
func (d *decision) runtime(sel selection.Result, placed placement.Result, states []workloadstatus.ClaimState, claimsReady workloadstatus.Condition, mirrored mirror.Result) {
	if !sel.OK {
		d.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.Selection(sel.Reason, sel.Message))
		return
	}
	if ok, refused := d.exposure(sel.Backend.RuntimeClass); refused != "" {
		d.denied(claimsReady, workloadstatus.Denied(refused), refused)
		return
	} else if !ok {
		return
	}
	if !workloadstatus.Deployable(states, claimsReady, d.o.Config.Config.Dependencies.WaitsForHealthyDependencies()) {
		d.decide(workloadstatus.InputsValid(), claimsReady, d.meanwhile(claimsReady, placed, mirrored))
		return
	}
	built, err := d.pipe.Plan(d.at, d.claimViews())
	if err != nil {
		d.specInvalid(planner.Sentence(err.Error()), 0)
		return
	}
	if len(built.Unresolved) > 0 {
		d.Unresolved = built.Unresolved
		d.decide(workloadstatus.InputsValid(), claimsReady, workloadstatus.ProjectionError())
		return
	}
	if written, refused, ok := d.plan(built.Spec, placed, claimsReady.Updating); refused != "" {
		d.denied(claimsReady, workloadstatus.Denied(refused), refused)
	} else if ok {
		d.decide(workloadstatus.InputsValid(), claimsReady, d.runtimeCondition(written, mirrored))
	}
}

// handOver hands the Workload's objects to its shard: the exposure, the claims it controls
// and the plan are labelled with its score.dev/shard (or lose the label), in that order, so
// that the runtime of the new shard finds the exposure when it finds the plan. Nothing is
// recreated: the same objects change hands. Unchanged labels write nothing.
func (d *decision) handOver() bool {
	if h := d.o.HandedOver; h != nil {
		if h.Err != nil {
			d.Retry = h.Err
			return false
		}
		return true
	}
	w := d.o.Workload
	var objs []Object
	if e := d.o.Exposure; e != nil && e.Spec.WorkloadRef.UID == string(w.UID) {
		objs = append(objs, e)
	}
	for _, c := range d.owned() {
		objs = append(objs, c)
	}
	if d.o.Plan != nil {
		objs = append(objs, d.o.Plan)
	}
	objs = append(objs, d.copyObjects()...)
	var relabel []Relabel
	for _, o := range objs {
		if l, changed := shard.Follow(maps.Clone(o.GetLabels()), w.Labels); changed {
			relabel = append(relabel, Relabel{Object: o, Labels: l})
		}
	}
	if len(relabel) == 0 {
		return true
	}
	d.Next, d.HandOver = HandOver, relabel
	return false
}

// mirror applies the endpoint mirror rules to the observed exposure.
func (d *decision) mirror(policy mirror.Policy) mirror.Result {
	w := d.o.Workload
	return mirror.Mirror(mirror.Input{
		Exposure: d.o.Exposure, WorkloadName: w.Name, Namespace: w.Namespace, WorkloadUID: string(w.UID),
		WorkloadGeneration: w.Generation, Previous: w.Status.Endpoint, Policy: policy,
	})
}

// passOn copies the Workload's score.dev/reconcile-requested-at to its claims and plan, so
// that the provisioner and the runtime process them again, and records it as handled. Only
// objects whose value differs are written.
func (d *decision) passOn() {
	want := d.o.Workload.Annotations[scorev1b1.AnnotationReconcileRequestedAt]
	if want == "" {
		return
	}
	if p := d.o.PassedOn; p != nil {
		if p.Err != nil {
			d.Retry = fmt.Errorf("passing on the reconcile request: %w", p.Err)
			return
		}
		d.handled = want
		return
	}
	write := &PassOnWrite{Value: want}
	for _, c := range d.owned() {
		if c.Annotations[scorev1b1.AnnotationReconcileRequestedAt] != want {
			write.Claims = append(write.Claims, c)
		}
	}
	// A plan created by the pass has no annotations yet.
	write.Plan = d.planCreated || d.o.Plan != nil && d.o.Plan.Annotations[scorev1b1.AnnotationReconcileRequestedAt] != want
	write.Copies = d.copiesToPassOn(want)
	if len(write.Claims) == 0 && !write.Plan && len(write.Copies) == 0 {
		d.handled = want
		return
	}
	d.Next, d.PassOn = PassOn, write
}

// PassOnWrite annotates the claims it names, and the plan (the one observed, or the one the
// pass wrote), with the Workload's reconcile request.
type PassOnWrite struct {
	Value  string
	Claims []*scorev1b1.ResourceClaim
	Plan   bool
	// Copies are the plans of the Workload's other copies on several clusters, as observed.
	Copies []*scorev1b1.WorkloadPlan
}

// owned returns the observed claims the Workload controls, by name.
func (d *decision) owned() []*scorev1b1.ResourceClaim {
	var out []*scorev1b1.ResourceClaim
	for i := range d.o.Claims {
		if metav1.IsControlledBy(&d.o.Claims[i], d.o.Workload) {
			out = append(out, &d.o.Claims[i])
		}
	}
	slices.SortFunc(out, func(a, b *scorev1b1.ResourceClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}
