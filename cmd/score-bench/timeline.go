package main

import (
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
	agent, verb, resource, name string
	code                        int
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

// stepTimes holds when each step's writes happened.
type stepTimes map[string][]time.Time

func (t stepTimes) record(w auditWrite, at time.Time) {
	if t == nil {
		return
	}
	for _, s := range steps {
		if s.marks(w) {
			t[s.name] = append(t[s.name], at)
		}
	}
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
func (t stepTimes) timeline(start time.Time) []milestone {
	var out []milestone
	for _, s := range steps {
		at := t[s.name]
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
