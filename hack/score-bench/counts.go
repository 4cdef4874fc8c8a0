package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Who sent a request, as the API server's audit log tells by the user agent.
const (
	whoOurs    = "ours"    // score-controllers/<controller>
	whoBench   = "bench"   // this program
	whoCluster = "cluster" // everything else: kube-controller-manager, scheduler, kwok, ...
)

// ourAgentPrefix starts the user agent of every controller process (controlplane.Run).
const ourAgentPrefix = "score-controllers/"

// benchAgent is this program's user agent.
const benchAgent = "score-bench"

// requestKey is one row of apiserver_request_total: verb, resource (with its subresource)
// and response code.
type requestKey struct {
	Verb, Resource, Code string
}

// requestCounts are counter values by row.
type requestCounts map[requestKey]float64

// parseRequestTotals reads apiserver_request_total from the API server's /metrics text
// exposition, summed over the labels it does not key on.
func parseRequestTotals(r io.Reader) (requestCounts, error) {
	out := requestCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		const name = "apiserver_request_total{"
		if !strings.HasPrefix(line, name) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return nil, fmt.Errorf("malformed metric line %q", line)
		}
		labels := parseLabels(line[len(name):end])
		v, err := strconv.ParseFloat(strings.Fields(line[end+1:])[0], 64)
		if err != nil {
			return nil, fmt.Errorf("malformed value in %q: %w", line, err)
		}
		res := labels["resource"]
		if labels["group"] != "" {
			res += "." + labels["group"]
		}
		if sub := labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[requestKey{Verb: labels["verb"], Resource: res, Code: labels["code"]}] += v
	}
	return out, sc.Err()
}

// parseLabels splits `a="x",b="y"` (values may hold escaped quotes and commas).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		key := s[:eq]
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			val.WriteByte(s[i])
		}
		out[key] = val.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
	return out
}

// isWriteVerb reports whether an apiserver_request_total verb changes state.
func isWriteVerb(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// sub returns after minus before, dropping rows that did not move.
func (after requestCounts) sub(before requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writes sums the write rows.
func (c requestCounts) writes() int {
	n := 0.0
	for k, v := range c {
		if isWriteVerb(k.Verb) {
			n += v
		}
	}
	return int(n)
}

// auditEvent is what the benchmark reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage          string    `json:"stage"`
	StageTimestamp time.Time `json:"stageTimestamp"`
	Verb           string    `json:"verb"`
	UserAgent      string    `json:"userAgent"`
	ObjectRef      *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// writeKey is one kind of write in the audit log.
type writeKey struct {
	Who, Agent, Verb, Resource string
	Code                       int
}

// writeCounts are write requests by kind.
type writeCounts map[writeKey]int

// agentWho classifies a user agent.
func agentWho(agent string) (who, name string) {
	switch {
	case strings.HasPrefix(agent, ourAgentPrefix) && strings.HasSuffix(agent, "/leader-election"):
		// client-go's leader election replaces the process's user agent with its own.
		return whoOurs, "leader-election"
	case strings.HasPrefix(agent, ourAgentPrefix):
		name, _, _ = strings.Cut(strings.TrimPrefix(agent, ourAgentPrefix), " ")
		return whoOurs, name
	case strings.HasPrefix(agent, benchAgent):
		return whoBench, benchAgent
	}
	name, _, _ = strings.Cut(agent, "/")
	return whoCluster, name
}

// parseAudit counts the completed write requests of an audit log segment, skipping those in
// the namespaces skip names. It returns the counts and how many bytes it consumed (whole
// lines only, so the next segment starts at a line). It records the writes that mark a step of
// the work in steps, when steps is not nil.
func parseAudit(segment []byte, skip map[string]bool, steps *stepTimes) (writeCounts, int, error) {
	out := writeCounts{}
	used := 0
	for used < len(segment) {
		nl := bytes.IndexByte(segment[used:], '\n')
		if nl < 0 {
			break
		}
		line := segment[used : used+nl]
		used += nl + 1
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, used, fmt.Errorf("audit line %q: %w", line, err)
		}
		if ev.Stage != "ResponseComplete" || !isWriteAuditVerb(ev.Verb) || ev.ObjectRef == nil {
			continue
		}
		if skip[ev.ObjectRef.Namespace] {
			continue
		}
		who, agent := agentWho(ev.UserAgent)
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.APIGroup != "" {
			res += "." + ev.ObjectRef.APIGroup
		}
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		code := 0
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		out[writeKey{Who: who, Agent: agent, Verb: ev.Verb, Resource: res, Code: code}]++
		steps.record(auditWrite{agent: agent, verb: ev.Verb, resource: res, namespace: ev.ObjectRef.Namespace, name: ev.ObjectRef.Name, code: code}, ev.StageTimestamp)
	}
	return out, used, nil
}

// isWriteAuditVerb reports whether an audit (request) verb changes state.
func isWriteAuditVerb(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// isLease reports whether a write renews or takes a lease (leader election, node heartbeats).
func isLease(resource string) bool { return strings.HasPrefix(resource, "leases.coordination.k8s.io") }

// isEvent reports whether a write records an event.
func isEvent(resource string) bool { return resource == "events" || resource == "events.events.k8s.io" }

// writeSummary is what a phase's writes come to.
type writeSummary struct {
	// Ours are the controllers' writes other than their leader-election leases and events.
	Ours int `json:"ours"`
	// OursEvents are the controllers' event writes.
	OursEvents int `json:"oursEvents"`
	// OursLeases are the controllers' leader-election lease writes.
	OursLeases int `json:"oursLeases"`
	// OursRejected are the controllers' writes answered 4xx (leases and events included).
	OursRejected int `json:"oursRejected"`
	// Cluster are the cluster's own writes (leases included), Bench this program's.
	Cluster int `json:"cluster"`
	Bench   int `json:"bench"`
	// Breakdown lists the writes by sender, verb, resource and code, most first.
	Breakdown []breakdownRow `json:"breakdown"`
}

// breakdownRow is one row of a write breakdown.
type breakdownRow struct {
	Who      string `json:"who"`
	Agent    string `json:"agent"`
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Code     int    `json:"code"`
	Count    int    `json:"count"`
}

// summary sums the counts.
func (c writeCounts) summary() writeSummary {
	var s writeSummary
	for k, n := range c {
		switch k.Who {
		case whoOurs:
			switch {
			case isLease(k.Resource):
				s.OursLeases += n
			case isEvent(k.Resource):
				s.OursEvents += n
			default:
				s.Ours += n
			}
			if k.Code >= 400 && k.Code < 500 {
				s.OursRejected += n
			}
		case whoBench:
			s.Bench += n
		default:
			s.Cluster += n
		}
		s.Breakdown = append(s.Breakdown, breakdownRow{Who: k.Who, Agent: k.Agent, Verb: k.Verb, Resource: k.Resource, Code: k.Code, Count: n})
	}
	sort.Slice(s.Breakdown, func(i, j int) bool {
		a, b := s.Breakdown[i], s.Breakdown[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return fmt.Sprint(a) < fmt.Sprint(b)
	})
	return s
}

// total is every write of the summary.
func (s writeSummary) total() int { return s.Ours + s.OursEvents + s.OursLeases + s.Cluster + s.Bench }
