package upgrade

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

// controllersUser is the chart's one Deployment's ServiceAccount, as the audit log names it:
// both releases' controllers write as it.
const controllersUser = "system:serviceaccount:" + namespace + ":" + deployment

// samplePeriod is how often the Ready condition of every Workload is read.
const samplePeriod = 300 * time.Millisecond

// maxWritesPerWorkload bounds the new controllers' writes in their first minute, per Workload
// of the fleet, the upgrade's config rollout included (measured: 18.7, events included).
const maxWritesPerWorkload = 40

// TestUpgradeFromThePreviousRelease is an upgrade: the previous release installed
// with its chart, a fleet Ready under it (the examples, a Workload with postgres and redis, a
// Retain volume, a database shared across two namespaces, a config rollout completed), then
// this commit's CRDs, chart and controllers, in that order. What the previous release stored
// reads back unchanged through this commit's CRDs and Go types; nothing the fleet owns is
// created again and no credential changes; the only pods that restart are the runtime's, once,
// for the one change the changelog gives (automountServiceAccountToken: false), and a batch
// Workload's Job runs once more for it; the new controllers' writes in their first minute are
// bounded, and then stop. Every Workload stays Ready through the CRDs, the chart and the
// handover; while the upgrade's config rollout goes through the fleet, a Workload is found
// not Ready only for the cause knownNotReady names (a StatefulSet of one replica whose pod is
// replaced: nothing serves it for that moment).
func TestUpgradeFromThePreviousRelease(t *testing.T) {
	// The previous release, as a platform team runs it today.
	helmInstall(t, previous, previous.values(t, false))
	handOver(t, startControllers(t, previous))
	names := createFleet(t, previous)
	start := time.Now()
	waitFleetReady(t, 5*time.Minute)
	t.Logf("under the previous release: %d Workloads Ready in %.1fs", len(names), time.Since(start).Seconds())

	// A config rollout through the fleet, completed: the platform's change, by helm upgrade of
	// the same chart.
	rollouts := rolloutNames(t)
	previousRevision := helmUpgrade(t, previous, previous.values(t, true))
	done := waitRolloutCompleted(t, rollouts, 3*time.Minute)
	waitFleetReady(t, 2*time.Minute)
	t.Logf("under the previous release: rollout %s completed (%d Workloads affected)", done.Name, done.Status.Affected)
	settle(t)

	before := snapshot(t)
	stored := readStored(t)
	sampler := sampleReady(names, samplePeriod)
	stopped := false
	defer func() {
		if !stopped {
			sampler.Stop()
		}
	}()

	// CRDs first: what the previous release stored reads back unchanged through them.
	sampler.mark("applying CRDs")
	applyCRDs(t, current)
	sampler.mark("CRDs applied")
	checkReadsBackUnchanged(t, stored)

	// The chart: its Deployment, roles, config and templates.
	rollouts = rolloutNames(t)
	sampler.mark("helm upgrade")
	helmUpgrade(t, current, current.values(t, true))
	sampler.mark("helm upgraded")

	// The controllers, as a rolling update replaces the pod: the new one ready (a standby),
	// then the old one ended, handing its lease over.
	launched := time.Now()
	next := startControllers(t, current)
	readyIn := time.Since(launched)
	handover := time.Now()
	windowOpens := sampler.mark("new controllers ready, old told to stop")
	leadsIn := handOver(t, next)
	sampler.mark("new controllers lead")
	t.Logf("this commit's controllers: Ready (/readyz, a standby) %.1fs after start, leading %.1fs after the previous ones were told to stop", readyIn.Seconds(), leadsIn.Seconds())

	// The upgrade's config change goes through the fleet as a rollout.
	done = waitRolloutCompleted(t, rollouts, 5*time.Minute)
	waitFleetReady(t, 2*time.Minute)
	windowCloses := sampler.mark("rollout completed, the fleet Ready")
	t.Logf("this commit's rollout %s completed %.1fs after the handover (%d Workloads affected, waves %+v)", done.Name, time.Since(handover).Seconds(), done.Status.Affected, done.Status.Waves)

	// The first minute's writes.
	if wait := time.Until(handover.Add(time.Minute)); wait > 0 {
		time.Sleep(wait)
	}
	firstMinute := writesBetween(t, handover, handover.Add(time.Minute))
	perWorkload := float64(len(firstMinute)) / float64(len(names))
	t.Logf("this commit's controllers, first minute: %d writes, %.1f per Workload: %s", len(firstMinute), perWorkload, summarise(firstMinute))
	if perWorkload > maxWritesPerWorkload {
		t.Errorf("this commit's controllers wrote %.1f times per Workload in their first minute, more than %d", perWorkload, maxWritesPerWorkload)
	}
	settled := settle(t)
	t.Logf("the fleet settled %.1fs after the handover", settled.Sub(handover).Seconds())
	checkQuiet(t, "this commit's controllers")

	samples, bad, steps := sampler.Stop()
	stopped = true
	after := snapshot(t)
	ch := compare(before, after)
	batch := batchWorkloads(before, names)
	sole := soleReplicas(before, names)
	rolled := map[string]bool{}
	for _, w := range done.Status.Waves {
		for _, key := range w.Workloads {
			rolled[key] = true
		}
	}
	causes := map[string]map[string]int{}
	for _, n := range bad {
		cause := ""
		if n.at >= windowOpens && n.at <= windowCloses {
			cause = knownNotReady(n, sole, rolled)
		}
		if cause == "" {
			t.Errorf("not Ready during the upgrade: %s", n)
			continue
		}
		if causes[cause] == nil {
			causes[cause] = map[string]int{}
		}
		causes[cause][n.workload]++
	}
	t.Logf("Ready sampled %d times every %s across the upgrade (%s): %d Workload samples not Ready", samples, samplePeriod, timeline(steps), len(bad))
	for _, cause := range slices.Sorted(maps.Keys(causes)) {
		t.Logf("not Ready while the rollout went through (known: %s): samples by Workload %v", cause, causes[cause])
	}
	checkChanges(t, ch, restartedPods(t, before, after), batch)
	if !t.Failed() {
		upgraded = &upgradedFleet{names: names, previousRevision: previousRevision}
	}
}

// upgraded is the fleet TestUpgradeFromThePreviousRelease left on this commit, nil until it
// passed.
var upgraded *upgradedFleet

type upgradedFleet struct {
	names []string
	// previousRevision is the release's helm revision under the previous release.
	previousRevision int
}

// TestRollbackToThePreviousRelease moves the upgraded release back to the previous one, as a
// platform team would: helm rollback to the previous release's revision, then helm upgrade
// with the previous chart. The previous controllers cannot read what this commit stores (the
// config revisions it rolled out have fields they do not know), so each is refused before
// anything changes: the chart's downgrade guard refuses every object's move to the earlier
// version, and helm deletes nothing when an update was refused. Nothing of the release or of
// the fleet changes, the fleet stays Ready throughout, and a helm upgrade afterwards goes on
// from the release as it runs.
func TestRollbackToThePreviousRelease(t *testing.T) {
	if upgraded == nil {
		t.Fatal("it rolls back the release TestUpgradeFromThePreviousRelease upgraded, and that did not pass (run both)")
	}
	release, fleet := releaseObjects(t), snapshot(t)
	sampler := sampleReady(upgraded.names, samplePeriod)
	for _, move := range []struct {
		name string
		run  func() error
	}{
		{fmt.Sprintf("helm rollback to revision %d", upgraded.previousRevision), func() error { return helmRollback(t, upgraded.previousRevision) }},
		{"helm upgrade with the previous chart", func() error { return tryHelmUpgrade(t, previous, previous.values(t, true)) }},
	} {
		err := move.run()
		if err == nil || !strings.Contains(err.Error(), "is not moved back to") {
			t.Fatalf("%s: %v; want it refused by the downgrade guard", move.name, err)
		}
		t.Logf("%s: refused (%d objects): %s", move.name, strings.Count(err.Error(), "is not moved back to"), firstRefusal(err))
		if changed := changedObjects(release, releaseObjects(t)); len(changed) > 0 {
			t.Errorf("%s changed the release's objects: %v", move.name, changed)
		}
	}
	// Helm recorded the attempts as failed revisions; the next upgrade goes on from the release
	// as it runs.
	revision := helmUpgrade(t, current, current.values(t, true))
	t.Logf("helm upgrade to this commit again, after the refused rollbacks: revision %d deployed", revision)
	checkQuiet(t, "this commit's controllers after the refused rollbacks")
	samples, bad, _ := sampler.Stop()
	for _, n := range bad {
		t.Errorf("not Ready during the rollback: %s", n)
	}
	t.Logf("Ready sampled %d times across the rollbacks: %d not Ready", samples, len(bad))
	after := snapshot(t)
	ch := compare(fleet, after)
	for what, keys := range map[string][]string{"created again": ch.recreated, "gone": ch.gone, "made": ch.added, "its data changed": ch.secrets,
		"its pod template changed": slices.Sorted(maps.Keys(ch.templates)), "restarted": restartedPods(t, fleet, after)} {
		for _, key := range keys {
			t.Errorf("the refused rollbacks changed the fleet: %s %s", key, what)
		}
	}
}

// firstRefusal is the guard's first message in a helm error that joins one per object.
func firstRefusal(err error) string {
	msg := err.Error()
	i := strings.Index(msg, "score-orchestrator ")
	if i < 0 {
		return msg
	}
	msg = msg[i:]
	if j := strings.Index(msg, " && "); j > 0 {
		msg = msg[:j]
	}
	return msg
}

// knownNotReady is the cause of a Workload found not Ready while this commit's controllers
// take over and roll the upgrade's config through the fleet (between the handover and the
// rollout's end), or "" when the cause is none of the known ones. There is one, and it is
// what Ready means: a StatefulSet of one replica (the shop's ledger) serves nothing while the
// changelog's pod change replaces its one pod, and its Workload says it is being deployed.
// Every other rolled Workload stays Ready: a change that is not the Workload's own rolls out
// behind what serves (docs/lifecycle.md "An update that is not the Workload's own").
func knownNotReady(n notReady, sole, rolled map[string]bool) string {
	if n.reason == string(scorev1b1.ReasonRuntimeProvisioning) && rolled[n.workload] && sole[n.workload] {
		return "a StatefulSet of one replica serves nothing while its pod is replaced"
	}
	return ""
}

// soleReplicas are the fleet's Workloads that run a StatefulSet of one replica (before holds
// it, named after the Workload).
func soleReplicas(before map[string]kept, fleet []string) map[string]bool {
	out := map[string]bool{}
	for key, k := range before {
		set, ok := strings.CutPrefix(key, "StatefulSet ")
		if !ok || !k.runtime || k.replicas != 1 {
			continue
		}
		for _, w := range fleet {
			if set == w || strings.HasPrefix(set, w+"-") {
				out[w] = true
			}
		}
	}
	return out
}

// batchWorkloads are the fleet's Workloads that run a Job (before holds it, named after the
// Workload).
func batchWorkloads(before map[string]kept, fleet []string) map[string]bool {
	out := map[string]bool{}
	for key := range before {
		job, ok := strings.CutPrefix(key, "Job ")
		if !ok {
			continue
		}
		for _, w := range fleet {
			if strings.HasPrefix(job, w+"-") {
				out[w] = true
			}
		}
	}
	return out
}

// timeline is the steps, as "name at 1.2s, ...".
func timeline(steps []step) string {
	var parts []string
	for _, s := range steps {
		parts = append(parts, fmt.Sprintf("%s at %.1fs", s.name, s.at.Seconds()))
	}
	return strings.Join(parts, ", ")
}

// automountChange is the one change the changelog gives to the runtime's pod templates.
const automountChange = "spec.automountServiceAccountToken: null -> false"

// checkChanges fails on what the upgrade must not do to the fleet's objects: create one again,
// lose one, change a Secret's data, change a pod template other than by automountChange (and
// the runtime's each exactly once), restart a pod other than those rolled by it, or make an
// object other than a batch Workload's Job run again.
func checkChanges(t *testing.T, ch changes, restarted []string, batch map[string]bool) {
	t.Helper()
	for _, key := range ch.recreated {
		t.Errorf("%s created again (another UID)", key)
	}
	for _, key := range ch.gone {
		t.Errorf("%s gone", key)
	}
	for _, key := range ch.secrets {
		t.Errorf("%s: its data changed", key)
	}
	for _, key := range ch.added {
		job, ok := strings.CutPrefix(key, "Job ")
		if !ok || !slices.ContainsFunc(slices.Collect(maps.Keys(batch)), func(w string) bool { return strings.HasPrefix(job, w+"-") }) {
			t.Errorf("%s made by the upgrade", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ch.templates)) {
		if c := ch.templates[key]; c.change != automountChange || c.generations != 1 {
			t.Errorf("%s's pod template: %s in %d generations; want only %s, once", key, c.change, c.generations, automountChange)
		}
	}
	for _, key := range ch.runtime {
		if _, ok := ch.templates[key]; !ok {
			t.Errorf("%s, the runtime's, did not roll: its pod template has no automountServiceAccountToken: false", key)
		}
	}
	for _, pod := range restarted {
		ns, name, _ := strings.Cut(strings.TrimPrefix(pod, "Pod "), "/")
		if !slices.ContainsFunc(slices.Collect(maps.Keys(ch.templates)), func(key string) bool {
			_, owner, _ := strings.Cut(key, " ")
			ons, oname, _ := strings.Cut(owner, "/")
			return ons == ns && strings.HasPrefix(name, oname+"-")
		}) {
			t.Errorf("%s restarted, and its owner's pod template did not change", pod)
		}
	}
	t.Logf("the upgrade: %d objects recreated, %d gone, %d Secrets changed; new: %v", len(ch.recreated), len(ch.gone), len(ch.secrets), ch.added)
	for _, key := range slices.Sorted(maps.Keys(ch.templates)) {
		t.Logf("the upgrade: %s's pod template: %s (%d generation)", key, ch.templates[key].change, ch.templates[key].generations)
	}
	t.Logf("the upgrade: %d pods restarted: %v", len(restarted), restarted)
}

// readAudit reads the cluster's audit log.
func readAudit(t *testing.T) controllerproc.Audit {
	t.Helper()
	path, err := cluster.AuditLog()
	if err != nil {
		t.Fatal(err)
	}
	return controllerproc.ReadAudit(t, path)
}

// writesBetween are the controllers' writes from since to until, leases aside, as
// "resource[/subresource] verb namespace/name".
func writesBetween(t *testing.T, since, until time.Time) []string {
	t.Helper()
	var out []string
	for _, e := range readAudit(t) {
		if e.User.Username != controllersUser || e.ObjectRef.Resource == "leases" || e.StageTimestamp.Time.Before(since) || e.StageTimestamp.Time.After(until) {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", res, e.Verb, e.ObjectRef.Namespace, e.ObjectRef.Name))
	}
	return out
}

// summarise counts writes by resource and verb, the most first.
func summarise(writes []string) string {
	counts := map[string]int{}
	for _, w := range writes {
		f := strings.Fields(w)
		counts[f[0]+" "+f[1]]++
	}
	keys := slices.Collect(maps.Keys(counts))
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

// settle waits until the controllers have written nothing but leases for five seconds, and
// returns when they last wrote.
func settle(t *testing.T) time.Time {
	t.Helper()
	var last time.Time
	testenv.Eventually(t, 3*time.Minute, "the controllers settle", func() error {
		last = readAudit(t).LastWrite(namespace)
		if since := time.Since(last); since < 5*time.Second {
			return fmt.Errorf("last write %s ago", since)
		}
		return nil
	})
	return last
}

// quietWindow is how long the controllers are watched at rest.
const quietWindow = 20 * time.Second

// checkQuiet checks that the controllers at rest write nothing but their lease: a window
// without a write, closed by a positive control — a reconcile request on a Workload, as
// scorectl reconcile makes, answered by the controllers, whose answer the audit log shows —
// so that the silence is not that of stopped controllers or a log not yet written.
func checkQuiet(t *testing.T, who string) {
	t.Helper()
	start := time.Now()
	time.Sleep(quietWindow)
	requested := time.Now()
	stamp := requested.UTC().Format(time.RFC3339Nano)
	var w scorev1b1.Workload
	key := client.ObjectKey{Namespace: shop, Name: "orders"}
	if err := c.Get(ctx, key, &w); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(w.DeepCopy())
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[scorev1b1.AnnotationReconcileRequestedAt] = stamp
	if err := c.Patch(ctx, &w, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the answer to the reconcile request", func() error {
		if err := c.Get(ctx, key, &w); err != nil {
			return err
		}
		if w.Status.LastHandledReconcileAt != stamp {
			return fmt.Errorf("lastHandledReconcileAt %q", w.Status.LastHandledReconcileAt)
		}
		return nil
	})
	answered := time.Now()
	idle := writesBetween(t, start, requested)
	for _, w := range idle {
		t.Errorf("%s at rest wrote %s", who, w)
	}
	answer := writesBetween(t, requested, answered.Add(time.Second))
	if len(answer) == 0 {
		t.Errorf("no write of the answer to the reconcile request in the audit log: the quiet window proves nothing")
	}
	t.Logf("%s at rest: %d writes in %s (leases aside), then %d for the reconcile request's answer: %s", who, len(idle), requested.Sub(start).Truncate(time.Second), len(answer), summarise(answer))
}
