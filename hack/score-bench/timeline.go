package main

import (
	"slices"
	"strings"
	"time"
)

// The timeline of a phase: when the writes of each step of the work happened, from the
// audit log, so that the baseline and our run can be laid side by side — where our run
// falls behind the same work done by a plain client, and what the cluster was doing then.

// step is one step of the work, as the writes that mark it.
type step struct {
	name  string
	marks func(w auditWrite) bool
}

// auditWrite is what a step is recognised by.
type auditWrite struct {
	agent, verb, resource, namespace, name string
	code                                   int
}

func created(resource string) func(auditWrite) bool {
	return func(w auditWrite) bool {
		return w.resource == resource && w.code == 201 && (w.verb == "create" || w.verb == "patch")
	}
}

// A StatefulSet's pod is named <statefulset>-<ordinal>; a Deployment's pod ends in a random
// suffix of five characters.
func statefulSetPod(name string) bool { return strings.HasSuffix(name, "-0") }

var steps = []step{
	{"claims created", created("resourceclaims.score.dev")},
	{"StatefulSets created", created("statefulsets.apps")},
	{"volume claims bound", func(w auditWrite) bool {
		return w.agent == "kube-controller-manager" && w.verb == "update" && w.resource == "persistentvolumeclaims/status" && w.code == 200
	}},
	{"database pods scheduled", func(w auditWrite) bool {
		return w.resource == "pods/binding" && w.code == 201 && statefulSetPod(w.name)
	}},
	{"plans created", created("workloadplans.score.dev")},
	{"Deployments created", created("deployments.apps")},
	{"application pods scheduled", func(w auditWrite) bool {
		return w.resource == "pods/binding" && w.code == 201 && !statefulSetPod(w.name)
	}},
}

// stepTimes holds when each step's writes happened, and each Workload's writes of the hop
// from its claim Bound to Ready.
type stepTimes struct {
	at   map[string][]time.Time
	hops map[string]*hopWrites
}

func newStepTimes() *stepTimes {
	return &stepTimes{at: map[string][]time.Time{}, hops: map[string]*hopWrites{}}
}

func (t *stepTimes) record(w auditWrite, at time.Time) {
	if t == nil {
		return
	}
	for _, s := range steps {
		if s.marks(w) {
			t.at[s.name] = append(t.at[s.name], at)
		}
	}
	t.recordHop(w, at)
}

// milestone is a step in a phase: how many of its writes there were, and when half of them
// and all of them had happened, in seconds from the phase's start.
type milestone struct {
	Step        string  `json:"step"`
	Count       int     `json:"count"`
	HalfSeconds float64 `json:"halfSeconds"`
	AllSeconds  float64 `json:"allSeconds"`
}

// timeline returns the milestones of the steps seen, in the order of the work.
func (t *stepTimes) timeline(start time.Time) []milestone {
	var out []milestone
	for _, s := range steps {
		at := t.at[s.name]
		if len(at) == 0 {
			continue
		}
		var d []time.Duration
		for _, a := range at {
			d = append(d, a.Sub(start))
		}
		out = append(out, milestone{Step: s.name, Count: len(d),
			HalfSeconds: percentile(d, 50).Seconds(), AllSeconds: percentile(d, 100).Seconds()})
	}
	return out
}

// The hop from a Workload's claim Bound to the Workload Ready, write by write: which
// controller's turn (or the cluster's) the time goes to. A benchmark Workload is named
// w<5 digits>; its claims, plan, exposure and Deployment carry the name first.

// hopWrites are the writes of one Workload's hop.
type hopWrites struct {
	claimStatus      []time.Time // the provisioner's claim status writes
	plan, deployment time.Time   // created
	deploymentStatus []time.Time // the cluster's
	exposureStatus   time.Time   // the runtime's last
	workloadStatus   time.Time   // the orchestrator's last
}

func hopWorkload(w auditWrite) (string, bool) {
	if w.namespace != benchNS || len(w.name) < 6 || w.name[0] != 'w' || w.code >= 300 {
		return "", false
	}
	return w.name[:6], true
}

func (t *stepTimes) recordHop(w auditWrite, at time.Time) {
	name, ok := hopWorkload(w)
	if !ok {
		return
	}
	h := t.hops[name]
	if h == nil {
		h = &hopWrites{}
		t.hops[name] = h
	}
	switch {
	case w.agent == "provisioner" && w.resource == "resourceclaims.score.dev/status":
		h.claimStatus = append(h.claimStatus, at)
	case w.agent == "orchestrator" && w.resource == "workloadplans.score.dev" && w.code == 201:
		h.plan = at
	case w.agent == "runtime" && w.resource == "deployments.apps" && w.code == 201:
		h.deployment = at
	case w.agent == "kube-controller-manager" && w.resource == "deployments.apps/status":
		h.deploymentStatus = append(h.deploymentStatus, at)
	case w.agent == "runtime" && w.resource == "workloadexposures.score.dev/status":
		h.exposureStatus = at
	case w.agent == "orchestrator" && w.resource == "workloads.score.dev/status":
		h.workloadStatus = at
	}
}

// hopNames are the legs of the hop, in order.
var hopNames = []string{
	"claim Bound → plan created (orchestrator)",
	"plan → Deployment created (runtime)",
	"Deployment → its last status (cluster)",
	"→ exposure's last status (runtime)",
	"→ Workload's last status (orchestrator)",
}

// hop is one leg's median and 90th percentile over the Workloads that went the whole way.
type hop struct {
	Leg        string  `json:"leg"`
	P50Seconds float64 `json:"p50Seconds"`
	P90Seconds float64 `json:"p90Seconds"`
}

// hopLegs returns the legs of the hop over the Workloads that went the whole way: the claim
// Bound is its last status write before the plan, the Deployment's last status the cluster's
// last write before the exposure's last status.
func (t *stepTimes) hopLegs() []hop {
	legs := make([][]time.Duration, len(hopNames))
	for _, h := range t.hops {
		bound := lastBefore(h.claimStatus, h.plan)
		available := lastBefore(h.deploymentStatus, h.exposureStatus)
		marks := []time.Time{bound, h.plan, h.deployment, available, h.exposureStatus, h.workloadStatus}
		if slices.ContainsFunc(marks, time.Time.IsZero) {
			continue
		}
		for i := range legs {
			legs[i] = append(legs[i], marks[i+1].Sub(marks[i]))
		}
	}
	if len(legs[0]) == 0 {
		return nil
	}
	out := make([]hop, len(legs))
	for i, d := range legs {
		out[i] = hop{Leg: hopNames[i], P50Seconds: percentile(d, 50).Seconds(), P90Seconds: percentile(d, 90).Seconds()}
	}
	return out
}

// lastBefore is the last of at not after limit (zero when there is none, or no limit).
func lastBefore(at []time.Time, limit time.Time) time.Time {
	var last time.Time
	for _, a := range at {
		if !limit.IsZero() && !a.After(limit) && a.After(last) {
			last = a
		}
	}
	return last
}
