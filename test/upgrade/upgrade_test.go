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

// fleet is the fleet's Workloads (namespace/name), once TestUpgradeFromThePreviousRelease
// has upgraded them; TestRollbackToThePreviousRelease starts from there.
var fleet []string

// revisionBeforeUpgrade is the chart's revision the fleet ran under before the upgrade (the
// previous release with the platform's change), the one a rollback goes back to.
var revisionBeforeUpgrade int

// TestUpgradeFromThePreviousRelease is issue 50's upgrade: the previous release installed
// with its chart, a fleet Ready under it (the examples, a Workload with postgres and redis, a
// Retain volume, a database shared across two namespaces, a config rollout completed), then
// this commit's CRDs, chart and controllers, in that order. Throughout, every Workload stays
// Ready; nothing the fleet owns is created again and no credential changes; the only pods
// that restart are the runtime's, once, for the one change the changelog gives
// (automountServiceAccountToken: false); the new controllers' writes in their first minute
// are bounded, and they stop.
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
	revisionBeforeUpgrade = helmUpgrade(t, previous, previous.values(t, true))
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
	sampler.mark("new controllers ready, old stopping")
	leadsIn := handOver(t, next)
	sampler.mark("new controllers lead")
	t.Logf("this commit's controllers: ready %.1fs after start (a standby), leading %.1fs after the previous ones were told to stop", readyIn.Seconds(), leadsIn.Seconds())

	// The upgrade's config change goes through the fleet as a rollout.
	done = waitRolloutCompleted(t, rollouts, 5*time.Minute)
	sampler.mark(fmt.Sprintf("rollout completed: %+v", done.Status.Waves))
	waitFleetReady(t, 2*time.Minute)
	t.Logf("this commit's rollout %s completed %.1fs after the handover (%d Workloads affected)", done.Name, time.Since(handover).Seconds(), done.Status.Affected)

	// The first minute's writes.
	if wait := time.Until(handover.Add(time.Minute)); wait > 0 {
		time.Sleep(wait)
	}
	firstMinute := writesBetween(t, handover, handover.Add(time.Minute))
	t.Logf("this commit's controllers, first minute: %d writes, %.1f per Workload: %s", len(firstMinute), float64(len(firstMinute))/float64(len(names)), summarise(firstMinute))
	settled := settle(t)
	t.Logf("the fleet settled %.1fs after the handover", settled.Sub(handover).Seconds())
	checkQuiet(t, "this commit's controllers")

	samples, notReady := sampler.Stop()
	stopped = true
	t.Logf("Ready sampled %d times every %s across the upgrade: %d samples found a Workload not Ready", samples, samplePeriod, len(notReady))
	for _, s := range notReady {
		t.Errorf("not Ready during the upgrade: %s", s)
	}

	after := snapshot(t)
	ch := compare(before, after)
	report(t, "the upgrade", ch, restartedPods(t, before, after))
	fleet = names
}

// TestRollbackToThePreviousRelease rolls the upgraded control plane back: helm rollback to the
// previous release's chart revision, its controllers again; the CRDs stay this commit's
// (helm leaves crds/ alone, and docs/upgrading.md says to keep them).
func TestRollbackToThePreviousRelease(t *testing.T) {
	if fleet == nil {
		t.Fatal("the rollback starts where TestUpgradeFromThePreviousRelease ends, which did not complete: run both (-run 'Upgrade|Rollback')")
	}
	before := snapshot(t)
	sampler := sampleReady(fleet, samplePeriod)
	stopped := false
	defer func() {
		if !stopped {
			sampler.Stop()
		}
	}()
	rollouts := rolloutNames(t)
	t.Cleanup(func() {
		_, bad := sampler.Stop()
		for _, b := range bad {
			t.Log(b)
		}
	})
	sampler.mark("helm rollback")
	helmRollback(t, revisionBeforeUpgrade)
	sampler.mark("helm rolled back")
	handover := time.Now()
	handOver(t, startControllers(t, previous))
	sampler.mark("old controllers lead")
	done := waitRolloutCompleted(t, rollouts, 5*time.Minute)
	waitFleetReady(t, 2*time.Minute)
	t.Logf("the previous release's rollout %s completed %.1fs after the handover (%d Workloads affected)", done.Name, time.Since(handover).Seconds(), done.Status.Affected)
	if wait := time.Until(handover.Add(time.Minute)); wait > 0 {
		time.Sleep(wait)
	}
	firstMinute := writesBetween(t, handover, handover.Add(time.Minute))
	t.Logf("the previous release's controllers, first minute: %d writes, %.1f per Workload: %s", len(firstMinute), float64(len(firstMinute))/float64(len(fleet)), summarise(firstMinute))
	settle(t)
	checkQuiet(t, "the previous release's controllers")
	samples, notReady := sampler.Stop()
	stopped = true
	t.Logf("Ready sampled %d times every %s across the rollback: %d samples found a Workload not Ready", samples, samplePeriod, len(notReady))
	for _, s := range notReady {
		t.Errorf("not Ready during the rollback: %s", s)
	}
	after := snapshot(t)
	report(t, "the rollback", compare(before, after), restartedPods(t, before, after))
}

// report logs what became of the fleet's objects and fails on what must not happen.
func report(t *testing.T, what string, ch changes, restarted []string) {
	t.Helper()
	for _, key := range ch.recreated {
		t.Errorf("%s: %s created again (another UID)", what, key)
	}
	for _, key := range ch.gone {
		t.Errorf("%s: %s gone", what, key)
	}
	for _, key := range ch.secrets {
		t.Errorf("%s: %s: its data changed", what, key)
	}
	t.Logf("%s: %d objects recreated, %d gone, %d Secrets changed; new: %v", what, len(ch.recreated), len(ch.gone), len(ch.secrets), ch.added)
	keys := slices.Sorted(maps.Keys(ch.templates))
	for _, key := range keys {
		t.Logf("%s: %s's pod template: %s", what, key, ch.templates[key])
	}
	t.Logf("%s: %d pods restarted: %v", what, len(restarted), restarted)
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
