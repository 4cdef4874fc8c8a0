package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// result is what a run measured; it is written as JSON.
type result struct {
	N       int     `json:"n"`
	Mix     string  `json:"mix"`
	Rate    float64 `json:"rate"`
	Machine string  `json:"machine"`
	Started string  `json:"started"`

	// Unrelated is the number of objects that are not ours the cluster held (--unrelated).
	Unrelated int `json:"unrelated,omitempty"`
	// Shards is the number of controller sets, each owning a shard of the Workloads (--shards).
	Shards int `json:"shards,omitempty"`
	// Members is the number of member clusters the Workloads ran on (--members); MembersLoad
	// what each member's API server took during the load.
	Members     int           `json:"members,omitempty"`
	MembersLoad []memberPhase `json:"membersLoad,omitempty"`
	// Clusters is how many members each Workload ran on (--clusters, placement.clusters);
	// Copies the plans of the run at all Ready (N × Clusters).
	Clusters int `json:"clusters,omitempty"`
	Copies   int `json:"copies,omitempty"`
	// FloorPerSecond is the write floor: small objects a plain client (16 workers) creates per second.
	FloorPerSecond float64 `json:"floorPerSecond"`
	// CreateSeconds is how long creating the N took; AllReadySeconds until all were Ready.
	CreateSeconds   float64 `json:"createSeconds"`
	AllReadySeconds float64 `json:"allReadySeconds"`
	// Unfinished says why the load ended before all were Ready (the run's timeout), with
	// Ready of the N Ready then: the percentiles are the Ready ones', the multiples those
	// of the time the load ran (lower bounds), and the run stops after the load.
	Unfinished string `json:"unfinished,omitempty"`
	Ready      int    `json:"ready"`
	// Timeline is when the steps of the work happened during the load, from its start.
	Timeline []milestone `json:"timeline"`
	// Hop is the hop from a claim Bound to its Workload Ready, leg by leg (medians over the
	// Workloads, from the audit log).
	Hop []hop `json:"hop,omitempty"`
	// FloorSeconds is every write of the load at the floor's rate; FloorMultiple is
	// AllReadySeconds over it.
	FloorSeconds  float64 `json:"floorSeconds"`
	FloorMultiple float64 `json:"floorMultiple"`
	// Baseline is the same objects created by a plain client, without the control plane;
	// BaselineMultiple is AllReadySeconds over its all-healthy time.
	Baseline         *baselineResult `json:"baseline,omitempty"`
	BaselineMultiple float64         `json:"baselineMultiple,omitempty"`
	// P50, P95, P99 are create→Ready percentiles, in seconds.
	P50 float64 `json:"p50Seconds"`
	P95 float64 `json:"p95Seconds"`
	P99 float64 `json:"p99Seconds"`
	// ClaimsP50 and ClaimsP99 are create→ClaimsReady (the dependency provisioned and
	// healthy); RuntimeP50 and RuntimeP99 ClaimsReady→Ready (the plan applied and serving).
	ClaimsP50  float64 `json:"claimsP50Seconds"`
	ClaimsP99  float64 `json:"claimsP99Seconds"`
	RuntimeP50 float64 `json:"runtimeP50Seconds"`
	RuntimeP99 float64 `json:"runtimeP99Seconds"`

	// WritesPerWorkload are our writes (no events, no leases) per Workload during the load;
	// EventsPerWorkload our event writes; AllWritesPerWorkload everyone's writes.
	WritesPerWorkload    float64 `json:"writesPerWorkload"`
	EventsPerWorkload    float64 `json:"eventsPerWorkload"`
	AllWritesPerWorkload float64 `json:"allWritesPerWorkload"`

	// TimingsEmpty, TimingsLoaded, TimingsFull are the status timings on an empty cluster,
	// while the N are being created, and with the N Ready.
	TimingsEmpty  timings `json:"timingsEmpty"`
	TimingsLoaded timings `json:"timingsLoaded"`
	TimingsFull   timings `json:"timingsFull"`

	Idle    phase `json:"idle"`
	Load    phase `json:"load"`
	Restart phase `json:"restart"`
	Steady  phase `json:"steady"`
	// Rollout is a values change taken through a rollout's waves (--rollout).
	Rollout *rolloutPhase `json:"rollout,omitempty"`
	// Failover is the loss of the member every Workload runs on (--failover).
	Failover *failoverPhase `json:"failover,omitempty"`
	Delete   phase          `json:"delete"`
	// LoadAPI is apiserver_request_total's movement over the load, by verb, resource and code.
	LoadAPI []apiRow `json:"loadApi"`

	// UsageLoad is each controller's CPU over the load and peak RSS by its end; UsageRestart
	// the same for the restarted processes (restart and steady-state windows).
	UsageLoad    map[string]procUsage `json:"usageLoad"`
	UsageRestart map[string]procUsage `json:"usageRestart"`
	// ClusterUsageLoad is the same over the load for the cluster's processes (kube-apiserver,
	// etcd, kube-controller-manager, kube-scheduler, kwok), by program.
	ClusterUsageLoad map[string]procUsage `json:"clusterUsageLoad"`
	// CPUToReady is the CPU seconds of the cluster's processes and ours together from the
	// load's first create to all Ready (or to where an unfinished load stopped).
	CPUToReady float64 `json:"cpuToReady"`

	DeleteSeconds float64 `json:"deleteSeconds"`
}

// phase is a window's writes.
type phase struct {
	Seconds float64      `json:"seconds"`
	Writes  writeSummary `json:"writes"`
}

func phaseOf(w writeSummary, d time.Duration) phase {
	return phase{Seconds: d.Seconds(), Writes: w}
}

// apiRow is one row of apiserver_request_total's movement.
type apiRow struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Code     string `json:"code"`
	Count    int    `json:"count"`
}

func apiRows(c requestCounts) []apiRow {
	var out []apiRow
	for k, v := range c {
		out = append(out, apiRow{Verb: k.Verb, Resource: k.Resource, Code: k.Code, Count: int(v)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return fmt.Sprint(out[i]) < fmt.Sprint(out[j])
	})
	return out
}

// idleClusterPerMinute is the idle baseline of the cluster's own writes.
func (r *result) idleClusterPerMinute() float64 {
	if r.Idle.Seconds == 0 {
		return 0
	}
	return float64(r.Idle.Writes.Cluster) / r.Idle.Seconds * 60
}

// print writes the table.
func (r *result) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	t := table{tw}
	fmt.Fprintf(tw, "score-bench N=%d mix=%s rate=%v\t%s\n", r.N, r.Mix, r.Rate, r.Machine)
	allReady := r.printOutcome(t)
	r.printBaseline(t, allReady)
	r.printTimeline(t)
	r.printLoad(t)
	r.printProbesAndPhases(t)
	r.printRollout(t)
	r.printFailover(t)
	r.printUsage(t)
	if r.DeleteSeconds > 0 {
		t.row("delete all N", "%.1f s", r.DeleteSeconds)
	} else {
		t.row("delete all N", "not run")
	}
	r.printTopWrites(t)
	_ = tw.Flush()
}

// table is the printed result: a row is a name and its figures, in two columns.
type table struct{ tw *tabwriter.Writer }

// row prints the row named k.
func (t table) row(k string, format string, args ...any) {
	fmt.Fprintf(t.tw, "%s\t"+format+"\n", append([]any{k}, args...)...)
}

// printOutcome prints the write floor, the run's setting and how the load ended; it returns
// how the multiples of the load's time are introduced: of all Ready, or of as long as the
// unfinished load ran.
func (r *result) printOutcome(t table) (allReady string) {
	t.row("write floor", "%.0f objects/s", r.FloorPerSecond)
	if r.Shards > 1 {
		t.row("shards", "%d sets of the three controllers", r.Shards)
	}
	if r.Unrelated > 0 {
		t.row("objects not ours present", "%d", r.Unrelated)
	}
	allReady = "all Ready = "
	if r.Unfinished != "" {
		t.row("NOT FINISHED", "%s (created in %.1f s); the figures below are the load's so far", r.Unfinished, r.CreateSeconds)
		allReady = "the load ran at least "
	} else {
		t.row("all Ready", "%.1f s (created in %.1f s)", r.AllReadySeconds, r.CreateSeconds)
	}
	t.row("writes at the floor", "%.1f s (%d writes); %s%.2f× that", r.FloorSeconds, r.Load.Writes.total(), allReady, r.FloorMultiple)
	return allReady
}

// printBaseline prints the baseline against the load: time, writes and CPU.
func (r *result) printBaseline(t table, allReady string) {
	b := r.Baseline
	if b == nil {
		return
	}
	t.row("baseline: same objects, plain client", "%d objects (%v by stage) healthy in %.1f s (created in %.1f s); %s%.2f× that",
		b.Objects, b.Stages, b.AllReadySeconds, b.CreateSeconds, allReady, r.BaselineMultiple)
	t.row("  its writes", "bench %d, cluster %d (%.1f per Workload); ours did %d with the cluster's %d (%.1f per Workload)",
		b.Phase.Writes.Bench, b.Phase.Writes.Cluster, float64(b.Phase.Writes.total())/float64(r.N), r.Load.Writes.Ours+r.Load.Writes.OursEvents, r.Load.Writes.Cluster, r.AllWritesPerWorkload)
	if b.ClusterUsage != nil {
		baseCPU, loadCPU := cpuSeconds(b.ClusterUsage)+b.ClientCPUSeconds, cpuSeconds(r.ClusterUsageLoad)+cpuSeconds(r.UsageLoad)
		t.row("  its CPU", "cluster %.0f s + the plain client %.1f s = %.0f CPU s in %.1f s (%.2f cores busy); the load: cluster %.0f s + ours %.0f s = %.0f CPU s in %.1f s (%.2f cores): %.2f× the CPU",
			cpuSeconds(b.ClusterUsage), b.ClientCPUSeconds, baseCPU, b.Phase.Seconds, baseCPU/b.Phase.Seconds,
			cpuSeconds(r.ClusterUsageLoad), cpuSeconds(r.UsageLoad), loadCPU, r.Load.Seconds, loadCPU/r.Load.Seconds, loadCPU/baseCPU)
		if r.AllReadySeconds > 0 {
			t.row("  to all Ready", "%.0f CPU s in %.1f s (%.2f cores busy): %.2f× the baseline's CPU",
				r.CPUToReady, r.AllReadySeconds, r.CPUToReady/r.AllReadySeconds, r.CPUToReady/baseCPU)
		}
	}
}

// printTimeline prints when the steps of the work were half and all done, beside the
// baseline's.
func (r *result) printTimeline(t table) {
	var base []milestone
	if r.Baseline != nil {
		base = r.Baseline.Timeline
	}
	if len(r.Timeline) > 0 {
		t.row("steps of the work", "count: half done by, all done by (from the first create; the baseline's beside)")
	}
	for _, m := range r.Timeline {
		line := fmt.Sprintf("%d: half by %.1f s, all by %.1f s", m.Count, m.HalfSeconds, m.AllSeconds)
		for _, b := range base {
			if b.Step == m.Step {
				line += fmt.Sprintf(" (baseline %d: %.1f s, %.1f s)", b.Count, b.HalfSeconds, b.AllSeconds)
			}
		}
		t.row("  "+m.Step, "%s", line)
	}
}

// printLoad prints the load's latencies, by hop too, and its writes, on the hub and on each
// member.
func (r *result) printLoad(t table) {
	t.row("create→Ready p50/p95/p99", "%.1f / %.1f / %.1f s (p99/p50 %.2f)", r.P50, r.P95, r.P99, ratio(r.P99, r.P50))
	t.row("  of which", "create→ClaimsReady p50/p99 %.1f / %.1f s; ClaimsReady→Ready p50/p99 %.1f / %.1f s", r.ClaimsP50, r.ClaimsP99, r.RuntimeP50, r.RuntimeP99)
	for _, h := range r.Hop {
		t.row("  hop: "+h.Leg, "p50 %.2f s, p90 %.2f s", h.P50Seconds, h.P90Seconds)
	}
	t.row("our writes per Workload", "%.1f (%d; events %.2f per Workload; leases %d)", r.WritesPerWorkload, r.Load.Writes.Ours, r.EventsPerWorkload, r.Load.Writes.OursLeases)
	t.row("all writes per Workload", "%.1f (cluster %d, bench %d)", r.AllWritesPerWorkload, r.Load.Writes.Cluster, r.Load.Writes.Bench)
	t.row("our rejected writes (4xx)", "%d", r.Load.Writes.OursRejected)
	if r.Clusters > 1 {
		var members float64
		for _, m := range r.MembersLoad {
			members += m.OursPerWorkload
		}
		t.row("copies (placement.clusters)", "%d per Workload, %d plans; our writes per Workload %.1f on the hub, %.1f on the members together",
			r.Clusters, r.Copies, r.WritesPerWorkload, members)
	}
	for _, m := range r.MembersLoad {
		t.row("  member "+m.Name, "our writes %d (%.1f per Workload of the run; events %d, rejected %d), the member's own %d",
			m.Writes.Ours, m.OursPerWorkload, m.Writes.OursEvents, m.Writes.OursRejected, m.Writes.Cluster)
	}
}

// printProbesAndPhases prints the probe's timings, the idle baseline, and the writes after the
// restart and in the steady state (none when the load did not finish).
func (r *result) printProbesAndPhases(t table) {
	type named struct {
		name string
		t    timings
	}
	probes := []named{{"timings, empty cluster", r.TimingsEmpty}, {"timings, under load", r.TimingsLoaded}}
	phases := []struct {
		name string
		p    phase
	}{{"restart with N Ready", r.Restart}, {"steady state", r.Steady}}
	if r.Unfinished != "" {
		phases = nil // the run stopped after the load
	} else {
		probes = append(probes, named{fmt.Sprintf("timings, %d present", r.N), r.TimingsFull})
	}
	for _, probe := range probes {
		t.row(probe.name, "create→Ready %.2f s; status %.2f s (30), endpoint %.2f s (60), error %.2f s (15), recovery %.2f s (30) %s",
			probe.t.CreateToReady, probe.t.Status, probe.t.Endpoint, probe.t.Error, probe.t.Recovery, probe.t.Failed)
	}
	idle := r.idleClusterPerMinute()
	t.row("idle baseline", "cluster %.0f writes/min; our leases %d in %.0f s", idle, r.Idle.Writes.OursLeases, r.Idle.Seconds)
	for _, p := range phases {
		t.row(p.name, "ours %d writes, %d events, %d rejected (+%d lease writes); cluster %d (%+.0f over idle) in %.0f s",
			p.p.Writes.Ours, p.p.Writes.OursEvents, p.p.Writes.OursRejected, p.p.Writes.OursLeases, p.p.Writes.Cluster,
			float64(p.p.Writes.Cluster)-idle*p.p.Seconds/60, p.p.Seconds)
	}
}

// printRollout prints the rollout's time and writes, with --rollout.
func (r *result) printRollout(t table) {
	if ro := r.Rollout; ro != nil {
		t.row("rollout of a "+ro.Change+" change", "%d Workloads in %d waves (bake %.0f s) in %.1f s; ours %d writes (%.1f per Workload), %d events, %d rejected",
			ro.Affected, ro.Waves, ro.BakeSeconds, ro.Seconds, ro.Writes.Ours, float64(ro.Writes.Ours)/float64(max(ro.Affected, 1)), ro.Writes.OursEvents, ro.Writes.OursRejected)
	}
}

// printFailover prints the failover's times and writes, with --failover.
func (r *result) printFailover(t table) {
	if f := r.Failover; f != nil {
		t.row("failover: loss → all Ready elsewhere", "%d Workloads in %.1f s (failover after %.0f s); ours %d writes (%.1f per moved Workload), %d events",
			f.Moved, f.Loss.Seconds, f.AfterSeconds, f.Loss.Writes.Ours, float64(f.Loss.Writes.Ours)/float64(max(f.Moved, 1)), f.Loss.Writes.OursEvents)
		for _, m := range f.LossMembers {
			t.row("  member "+m.Name, "our writes %d (%.1f per moved Workload)", m.Writes.Ours, float64(m.Writes.Ours)/float64(max(f.Moved, 1)))
		}
		t.row("failover: the lost member back → cleared", "%.1f s (seen answering after %.0f s; both copies existed %.1f s, %.0f s of it held dark); ours %d writes on the hub; our Deployments left there %d",
			f.Return.Seconds, f.NoticedSeconds, f.CoexistenceSeconds, f.HeldSeconds, f.Return.Writes.Ours, f.DeploymentsLeft)
		for _, m := range f.ReturnMembers {
			t.row("  member "+m.Name, "our writes %d", m.Writes.Ours)
		}
	}
}

// printUsage prints each controller's CPU and memory over the load and after the restart, and
// the cluster's processes' over the load.
func (r *result) printUsage(t table) {
	names := make([]string, 0, len(r.UsageLoad))
	for n := range r.UsageLoad {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.row("controller "+n, "load: %.1f CPU s, peak RSS %.0f MiB; restarted: %.1f CPU s, peak RSS %.0f MiB",
			r.UsageLoad[n].CPUSeconds, r.UsageLoad[n].PeakRSSMiB, r.UsageRestart[n].CPUSeconds, r.UsageRestart[n].PeakRSSMiB)
	}
	names = names[:0]
	for n := range r.ClusterUsageLoad {
		names = append(names, n)
	}
	sort.Strings(names)
	var cl []string
	for _, n := range names {
		cl = append(cl, fmt.Sprintf("%s %.1f CPU s (%.0f MiB)", n, r.ClusterUsageLoad[n].CPUSeconds, r.ClusterUsageLoad[n].PeakRSSMiB))
	}
	t.row("cluster processes, load", "%s", strings.Join(cl, "; "))
}

// printTopWrites prints our most frequent writes of the load.
func (r *result) printTopWrites(t table) {
	var top []string
	for _, b := range r.Load.Writes.Breakdown {
		if b.Who == whoOurs && len(top) < 15 {
			top = append(top, fmt.Sprintf("%s %s %s %d: %d", b.Agent, b.Verb, b.Resource, b.Code, b.Count))
		}
	}
	t.row("our writes, most first", "%s", strings.Join(top, "; "))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// cpuSeconds is the CPU time of every process of u together.
func cpuSeconds(u map[string]procUsage) float64 {
	var total float64
	for _, p := range u {
		total += p.CPUSeconds
	}
	return total
}
