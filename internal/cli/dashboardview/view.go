// Package dashboardview turns what the cluster holds about Workloads into what the dashboard
// shows: the fleet's rows and one Workload's graph, each object coloured by its health. It is
// pure: the dashboard server reads the objects (with the reader's own rights) and renders what
// this package returns.
package dashboardview

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// Health is the colour of an object: api/v1b1's health states, and Hidden for what the reader's
// rights do not show.
type Health = string

// Hidden marks a node the reader may not read.
const Hidden Health = "Hidden"

// FleetRow is one Workload in the fleet table.
type FleetRow struct {
	Namespace, Name string
	// Ready is the Ready condition's status (True, False or Unknown when not reported yet).
	Ready           string
	Reason, Message string
	Health          Health
	Endpoint        string
	// Profile, Backend, ConfigRevision (short) and Cluster (the member cluster it is placed
	// on, "hub" when none; on several clusters every copy's, "alpha, beta") come from the
	// Workload's plans; empty when it has none or the reader may not read plans.
	Profile, Backend, ConfigRevision, Cluster string
	// Bound of Dependencies are bound.
	Bound, Dependencies int
}

// Fleet is the fleet table: one row per Workload, by namespace then name, with the profile and
// backend of its plan when plans holds it.
func Fleet(workloads []scorev1b1.Workload, plans []scorev1b1.WorkloadPlan) []FleetRow {
	type key struct{ ns, name string }
	byWorkload := make(map[key]*scorev1b1.WorkloadPlan, len(plans))
	for i := range plans {
		p := &plans[i]
		if k := (key{p.Namespace, p.Spec.WorkloadRef.Name}); p.Name == k.name || byWorkload[k] == nil {
			byWorkload[k] = p // its own plan, else one of its copies'
		}
	}
	clusters := copyClusters(plans)
	rows := make([]FleetRow, 0, len(workloads))
	for i := range workloads {
		w := &workloads[i]
		row := FleetRow{Namespace: w.Namespace, Name: w.Name, Ready: string(metav1.ConditionUnknown), Health: WorkloadHealth(w), Dependencies: len(w.Spec.Resources)}
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c != nil {
			row.Ready, row.Reason, row.Message = string(c.Status), termtext.Escape(c.Reason), termtext.Escape(c.Message)
		}
		if w.Status.Endpoint != nil {
			row.Endpoint = termtext.Escape(*w.Status.Endpoint)
		}
		for _, c := range w.Status.Claims {
			if c.Phase == scorev1b1.ClaimPhaseBound {
				row.Bound++
			}
		}
		if p := byWorkload[key{w.Namespace, w.Name}]; p != nil {
			row.Profile, row.Backend, row.ConfigRevision = p.Spec.Profile, p.Spec.BackendID, orchconfig.ShortRevision(p.Spec.ConfigRevision)
			row.Cluster = cmp.Or(p.Spec.Cluster, "hub")
			if c := clusters[w.Namespace+"/"+w.Name]; len(c) > 1 {
				row.Cluster = strings.Join(c, ", ")
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b FleetRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return rows
}

// WorkloadHealth colours a Workload by its Ready condition: Current when Ready, InProgress
// while it converges by itself, Failed when something needs a person, Unknown before the
// orchestrator reported.
func WorkloadHealth(w *scorev1b1.Workload) Health {
	c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	switch {
	case c == nil || c.Status == metav1.ConditionUnknown:
		return scorev1b1.HealthUnknown
	case c.Status == metav1.ConditionTrue:
		return scorev1b1.HealthCurrent
	case scorev1b1.Reason(c.Reason).Waits():
		return scorev1b1.HealthInProgress
	default:
		return scorev1b1.HealthFailed
	}
}

// ClaimHealth colours a claim phase.
func ClaimHealth(phase scorev1b1.ClaimPhase) Health {
	switch phase {
	case scorev1b1.ClaimPhaseBound:
		return scorev1b1.HealthCurrent
	case scorev1b1.ClaimPhaseFailed:
		return scorev1b1.HealthFailed
	case "":
		return scorev1b1.HealthUnknown
	default:
		return scorev1b1.HealthInProgress
	}
}

// PlanHealth colours a plan: Failed when it failed, could not apply or its objects degraded,
// Current when they are healthy, InProgress otherwise.
func PlanHealth(p *scorev1b1.WorkloadPlan) Health {
	applied := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionApplied)
	healthy := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionHealthy)
	switch {
	case p.Status.Phase == scorev1b1.PlanPhaseFailed,
		applied != nil && applied.Status == metav1.ConditionFalse && applied.Reason == scorev1b1.PlanReasonObjectConflict,
		healthy != nil && healthy.Reason == scorev1b1.PlanReasonDegraded:
		return scorev1b1.HealthFailed
	case healthy != nil && healthy.Status == metav1.ConditionTrue:
		return scorev1b1.HealthCurrent
	default:
		return scorev1b1.HealthInProgress
	}
}

// objectHealth is an applied object's health, Unknown when none was judged yet.
func objectHealth(o scorev1b1.AppliedObject) Health {
	if o.Health == "" {
		return scorev1b1.HealthUnknown
	}
	return o.Health
}
