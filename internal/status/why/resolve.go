package why

import (
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Resolve fills in the lines of a trace that carry a probe from what obs holds: an object in its
// own words, followed to what holds it in turn (its pods, their volume claims, a route's
// Gateway), a Secret that does not exist, an endpoint still waiting for a controller, the
// namespace's quotas. A probe not read yet leaves an Object's line as the control plane said it
// and drops the others. The result carries no probe.
func Resolve(tr scorev1b1.Trace, obs Observed) scorev1b1.Trace {
	tr.InTheWay = newReading(obs).lines(tr.InTheWay)
	return tr
}

// Reads names the reads that Resolve would still use for tr, given what obs holds, in the
// order it would use them.
func Reads(tr scorev1b1.Trace, obs Observed) []Read {
	t := newReading(obs)
	t.lines(tr.InTheWay)
	return t.wanted
}

// reading describes the objects a trace's probes name from what a reader read. Every read it
// would use it looks up in observed; one not there is noted in wanted, the reads Reads returns,
// and the line said without it. So Reads and Resolve are one walk: what is read is exactly what
// is shown.
type reading struct {
	observed Observed
	wanted   []Read
	asked    map[Read]bool
}

func newReading(obs Observed) *reading {
	return &reading{observed: obs, asked: map[Read]bool{}}
}

// get is what r found, when it was read; otherwise r is wanted and ok is false.
func (t *reading) get(r Read) (res Result, ok bool) {
	if res, ok := t.observed[r]; ok {
		return res, true
	}
	if !t.asked[r] {
		t.asked[r] = true
		t.wanted = append(t.wanted, r)
	}
	return Result{}, false
}

// lines resolves every line with a probe, in order.
func (t *reading) lines(in []scorev1b1.TraceBlocker) []scorev1b1.TraceBlocker {
	var out []scorev1b1.TraceBlocker
	for _, b := range in {
		if b.Probe == nil {
			out = append(out, b)
			continue
		}
		out = append(out, flatten(t.probe(b), b.Depth)...)
	}
	return out
}

// probe is what b's probe finds: the blockers in its place, none when nothing is in the way.
func (t *reading) probe(b scorev1b1.TraceBlocker) []Blocker {
	p := b.Probe
	r := Ref{APIVersion: p.APIVersion, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}
	switch p.Look {
	case scorev1b1.TraceLookObject:
		return []Blocker{t.object(r, b.Says)}
	case scorev1b1.TraceLookSecret:
		return t.secret(r, b.What)
	case scorev1b1.TraceLookEndpoint:
		return t.endpoint(r)
	case scorev1b1.TraceLookQuotas:
		return t.quotas(r.Namespace)
	}
	return nil
}

// object describes the object r from the cluster; said is what its inventory entry says, for
// when it could not be read.
func (t *reading) object(r Ref, said string) Blocker {
	res, ok := t.get(getRead(r))
	b := Blocker{What: r.String(), Says: said}
	switch {
	case !ok:
	case res.Missing:
		b.Says = "does not exist"
	case res.Denied:
		b.Says = strings.TrimSpace(said + " (not read: your rights do not let you read it)")
	case res.Err != "":
		b.Says = strings.TrimSpace(said + " (not read: " + res.Err + ")")
	case len(res.Objects) == 1:
		b.Says, b.Because, _ = t.describe(res.Objects[0])
	}
	return b
}

// secret says of an outputs Secret the render needs only that it does not exist, or could not
// be asked about; what names it.
func (t *reading) secret(r Ref, what string) []Blocker {
	res, ok := t.get(getRead(r))
	switch {
	case !ok:
	case res.Missing:
		return []Blocker{{What: what, Says: "does not exist; the runtime waits for it"}}
	case res.Denied:
		return []Blocker{{What: what, Says: "not read: your rights do not let you ask whether it exists"}}
	case res.Err != "":
		return []Blocker{{What: what, Says: "not read: " + res.Err}}
	}
	return nil
}

// endpoint names a route, Ingress or Service that still waits for a controller, with what
// holds it.
func (t *reading) endpoint(r Ref) []Blocker {
	res, ok := t.get(getRead(r))
	if !ok || len(res.Objects) != 1 {
		if ok && res.Denied {
			return []Blocker{{What: r.String(), Says: "not read: your rights do not let you read it"}}
		}
		return nil
	}
	if says, because, waiting := t.describe(res.Objects[0]); waiting {
		return []Blocker{{What: r.String(), Says: says, Because: because}}
	}
	return nil
}
