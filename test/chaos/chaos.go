// Package chaos rolls out Workloads with dependencies on a simulated cluster of its own while
// it breaks things: it kills each controller process with SIGKILL at random moments, restarts
// the API server and etcd, and deletes Workloads mid-flight. Then it waits until every
// Workload is Ready and audits what the controllers left: nothing twice, nothing without an
// owner, no generated credential changed, and the data of Retain claims still there.
//
// The controllers run as separate score-controllers processes (one per controller, built by
// Run), so a kill is a real kill -9. `make chaos N=300` runs it (test/chaos/score-chaos);
// TestChaos runs a small one inside `make test`. With Members (`make chaos MEMBERS=2`) part of
// the Workloads run on member clusters of their own, whose API servers are killed, one of
// which is black-holed and one relabelled out of the placement for a while (its Workloads
// move), and the audit covers every cluster (members.go).
package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
)

// Options shape one run.
type Options struct {
	// Root is the repository: its hack/ scripts, bin/ tools, config/ and cmd/.
	Root string
	// Workloads are rolled out over Namespaces.
	Workloads, Namespaces int
	// Kills is how many times each controller is killed.
	Kills int
	// Deletions is how many Workloads (Retain ones and shared consumers) are deleted mid-run.
	Deletions int
	// Members is how many member clusters part of the Workloads are placed on (0: the hub
	// runs every Workload).
	Members int
	// Window is how long the faults go on; the Workloads are created over its first half.
	Window time.Duration
	// Timeout bounds the wait for every Workload to be Ready after the window.
	Timeout time.Duration
	// Seed makes the schedule repeatable (0: random).
	Seed uint64
	// Keep leaves the cluster running and its directory in place.
	Keep bool
	// SelfCheck plants an orphan and a duplicate after the audit and audits again, to show
	// the audit finds them (the planted findings are not problems of the run).
	SelfCheck bool
	// Progress receives progress lines.
	Progress io.Writer
}

// Report is what a run found.
type Report struct {
	Dir                string
	Workloads, Deleted int
	Kills, Exits       map[string]int
	APIServerRestarts  int
	EtcdRestarts       int
	// Members is the number of member clusters; on them, MemberAPIServerRestarts their API
	// servers killed and started again, BlackHoles the times one was black-holed, Relabels the
	// times one was relabelled out of the placement, Moved the Workloads that moved (with
	// their dependencies, to new instances) and CopiesChecked the copies of outputs Secrets
	// compared with the hub's.
	Members                 int
	MemberAPIServerRestarts int
	BlackHoles, Relabels    int
	Moved, CopiesChecked    int
	RolloutStart            time.Time
	TimeToAllReady          time.Duration // from the first Workload created to the end of the wait
	// LastFirstReady is from the first Workload created to the last one Ready for the first
	// time (a poll every second sees it): the rollout's length under the faults.
	LastFirstReady     time.Duration
	ReadyAfterFaults   time.Duration  // from the end of the faults
	PlantedFound       []string       // what the self-check's audit found
	Recreated          int            // deleted Retain Workloads created again after the audit
	Audited            map[string]int // objects audited, by kind
	CredentialsChecked int
	RetainedChecked    int
	SharedInstances    int
	Duplicates         []string
	Orphans            []string
	CredentialsChanged []string
	RetainedMissing    []string
	NotReady           []string
	RecreatedWrong     []string // re-created Retain Workloads not Ready with their old credentials
	Seed               uint64
}

// Problems lists every finding that fails the run.
func (r *Report) Problems() []string {
	var out []string
	add := func(what string, items []string) {
		for _, i := range items {
			out = append(out, what+": "+i)
		}
	}
	add("not Ready", r.NotReady)
	add("duplicate", r.Duplicates)
	add("orphan", r.Orphans)
	add("credentials changed", r.CredentialsChanged)
	add("retained data missing", r.RetainedMissing)
	add("re-created", r.RecreatedWrong)
	return out
}

// String is the report's summary.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workloads %d (deleted during the run %d), seed %d\n", r.Workloads, r.Deleted, r.Seed)
	for _, name := range controlplane.All {
		fmt.Fprintf(&b, "%s: killed %d times, exited on its own %d times\n", name, r.Kills[name], r.Exits[name])
	}
	fmt.Fprintf(&b, "API server restarts %d, etcd restarts %d\n", r.APIServerRestarts, r.EtcdRestarts)
	if r.Members > 0 {
		fmt.Fprintf(&b, "members %d: API servers killed %d, black-holed %d, relabelled out of the placement %d; Workloads moved %d; copies of outputs Secrets checked %d\n",
			r.Members, r.MemberAPIServerRestarts, r.BlackHoles, r.Relabels, r.Moved, r.CopiesChecked)
	}
	fmt.Fprintf(&b, "the last Workload first Ready %s after the first was created; all Ready (the wait's end) %s after it, %s after the faults ended\n",
		r.LastFirstReady.Round(time.Second), r.TimeToAllReady.Round(100*time.Millisecond), r.ReadyAfterFaults.Round(100*time.Millisecond))
	var kinds []string
	for k, n := range r.Audited {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "audited: %s\n", strings.Join(kinds, ", "))
	fmt.Fprintf(&b, "deleted Retain Workloads created again: %d, not Ready with the same credentials: %d\n", r.Recreated, len(r.RecreatedWrong))
	fmt.Fprintf(&b, "duplicates %d, orphans %d, credentials changed %d of %d outputs Secrets, shared instances %d, retained claims checked %d (data missing %d), not Ready %d\n",
		len(r.Duplicates), len(r.Orphans), len(r.CredentialsChanged), r.CredentialsChecked, r.SharedInstances, r.RetainedChecked, len(r.RetainedMissing), len(r.NotReady))
	for _, p := range r.Problems() {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	if len(r.PlantedFound) > 0 {
		fmt.Fprintf(&b, "self-check: the audit found the %d planted problems:\n", len(r.PlantedFound))
		for _, p := range r.PlantedFound {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	return b.String()
}

// run is the state of one run.
type run struct {
	o        Options
	dir      string
	cluster  string
	c        client.Client
	kube     kubernetes.Interface
	rnd      *rand.Rand
	rndMu    sync.Mutex
	rec      *recorder
	ctrls    map[string]*controller
	report   *Report
	restarts sync.Mutex // one cluster component down at a time
	created  sync.Map   // the Workloads created so far, by namespace/name
	// members are the member clusters (Options.Members); faultsMu guards the report's
	// counts of their faults.
	members  []*member
	faultsMu sync.Mutex
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.o.Progress, "[chaos] %s "+format+"\n", append([]any{time.Now().Format("15:04:05.0")}, args...)...)
}

func (r *run) intn(n int) int {
	r.rndMu.Lock()
	defer r.rndMu.Unlock()
	return r.rnd.IntN(n)
}

// between is a random duration in [lo, hi) of the window.
func (r *run) between(lo, hi float64) time.Duration {
	r.rndMu.Lock()
	defer r.rndMu.Unlock()
	return time.Duration((lo + r.rnd.Float64()*(hi-lo)) * float64(r.o.Window))
}

// Run does one chaos run and reports what it found. The error is for a run that could not
// be carried out; what the audit finds is in Report.Problems.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	dir, err := os.MkdirTemp("", "score-chaos-")
	if err != nil {
		return nil, err
	}
	r := &run{o: o, dir: dir, cluster: fmt.Sprintf("score-chaos-%d", os.Getpid()), rnd: rand.New(rand.NewPCG(o.Seed, 0)),
		ctrls:  map[string]*controller{},
		report: &Report{Dir: dir, Workloads: o.Workloads, Members: o.Members, Kills: map[string]int{}, Exits: map[string]int{}, Audited: map[string]int{}, Seed: o.Seed}}
	r.logf("seed %d, state in %s", o.Seed, dir)
	defer func() {
		if !o.Keep {
			r.stopMembers()
			_ = r.simCluster().Down()
			_ = os.RemoveAll(dir)
		}
	}()
	if err := r.setUp(ctx); err != nil {
		return r.report, err
	}
	defer r.stopControllers()
	if err := r.rollOut(ctx); err != nil {
		return r.report, err
	}
	r.settledAudit(ctx)
	r.recreateRetained(ctx)
	if o.SelfCheck {
		if err := r.selfCheck(ctx); err != nil {
			return r.report, err
		}
	}
	return r.report, nil
}

// simCluster is the run's simulated cluster. Every Workload's dependency has a volume: one
// persistent volume each, and some to spare.
func (r *run) simCluster() *simcluster.Cluster {
	return &simcluster.Cluster{Root: r.o.Root, Name: r.cluster, Dir: r.dir, Volumes: r.o.Workloads + 2*r.o.Namespaces + 8, Output: r.o.Progress}
}

// setUp builds the controllers, starts the cluster, installs what make dev installs and
// starts one process per controller.
func (r *run) setUp(ctx context.Context) error {
	bin := filepath.Join(r.dir, "score-controllers")
	r.logf("building %s", bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/score-controllers")
	build.Dir, build.Stdout, build.Stderr = r.o.Root, r.o.Progress, r.o.Progress
	if err := build.Run(); err != nil {
		return fmt.Errorf("building score-controllers: %w", err)
	}
	if err := r.simCluster().Up(); err != nil {
		return fmt.Errorf("starting the simulated cluster: %w", err)
	}
	kubeconfig := r.simCluster().Kubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.Timeout = 15 * time.Second // calls while the API server is down fail instead of hanging
	cfg.QPS, cfg.Burst = 200, 400
	if r.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if r.c, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	if _, err := devenv.Install(ctx, r.c, os.DirFS(r.o.Root)); err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	for i := 0; i < r.o.Namespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("chaos-%d", i)}}
		if err := r.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if r.o.Members > 0 {
		if err := r.startMembers(ctx); err != nil {
			return err
		}
	}
	for _, name := range controlplane.All {
		argv := []string{bin, "--controllers=" + name, "--kubeconfig=" + kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0"}
		ctl := newController(name, argv, filepath.Join(r.dir, "score-"+name+".log"))
		r.ctrls[name] = ctl
		go ctl.supervise(r.logf)
	}
	r.logf("controllers started as separate processes; logs in %s/score-*.log", r.dir)
	return nil
}

func (r *run) stopControllers() {
	for name, ctl := range r.ctrls {
		ctl.stop()
		r.report.Kills[name], r.report.Exits[name] = ctl.counts()
	}
}

// rollOut creates the Workloads while the faults happen, then waits for every Workload to be
// Ready and every deleted one to be gone.
func (r *run) rollOut(ctx context.Context) error {
	planned := rollout(r.o.Workloads, r.o.Namespaces, r.o.Members > 0)
	r.rec = newRecorder(r.c)
	recCtx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	go r.rec.loop(recCtx)

	start := time.Now()
	r.report.RolloutStart = start
	var faults sync.WaitGroup
	r.scheduleFaults(ctx, start, &faults)
	r.scheduleMemberFaults(ctx, start, &faults)
	deleted := r.scheduleDeletions(ctx, start, planned, &faults)

	// The Workloads arrive over the first half of the window.
	for i, p := range planned {
		at := start.Add(time.Duration(int64(r.o.Window) / 2 * int64(i) / int64(len(planned))))
		time.Sleep(time.Until(at))
		r.retry(ctx, "creating "+p.namespace+"/"+p.name, func() error {
			err := r.c.Create(ctx, p.workload())
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		r.created.Store(p.namespace+"/"+p.name, true)
	}
	r.logf("%d Workloads created", len(planned))
	time.Sleep(time.Until(start.Add(r.o.Window)))
	faults.Wait()
	faultsOver := time.Now()
	r.logf("faults over: waiting for every Workload to be Ready (at most %s)", r.o.Timeout)

	gone := map[string]bool{}
	for _, d := range deleted.list() {
		gone[d.namespace+"/"+d.name] = true
	}
	r.report.Deleted = len(gone)
	deadline := time.Now().Add(r.o.Timeout)
	var lastLine string
	for {
		waiting, err := r.notReady(ctx, planned, gone)
		if err == nil && len(waiting) == 0 {
			r.report.TimeToAllReady, r.report.ReadyAfterFaults = time.Since(start), time.Since(faultsOver)
			r.logf("every Workload Ready %s after the first was created", r.report.TimeToAllReady.Round(100*time.Millisecond))
			break
		}
		line := fmt.Sprintf("%d not done", len(waiting))
		if err != nil {
			line = err.Error()
		}
		if line != lastLine {
			r.logf("%s", line)
			lastLine = line
		}
		if time.Now().After(deadline) {
			r.report.NotReady = waiting
			if err != nil {
				r.report.NotReady = append(r.report.NotReady, err.Error())
			}
			r.report.TimeToAllReady, r.report.ReadyAfterFaults = time.Since(start), time.Since(faultsOver)
			break
		}
		time.Sleep(time.Second)
	}
	stopRecording()
	r.rec.mu.Lock()
	r.report.LastFirstReady = r.rec.lastFirstReady.Sub(start)
	r.report.Moved = len(r.rec.moves)
	r.rec.mu.Unlock()
	r.rec.deleted = deleted.list()
	return nil
}

// notReady lists what is not done yet: a Workload not Ready for its generation or whose
// outputs were not recorded, a deleted one still there.
func (r *run) notReady(ctx context.Context, all []planned, gone map[string]bool) ([]string, error) {
	var list scorev1b1.WorkloadList
	if err := r.c.List(ctx, &list); err != nil {
		return nil, err
	}
	live := map[string]*scorev1b1.Workload{}
	for i := range list.Items {
		w := &list.Items[i]
		live[w.Namespace+"/"+w.Name] = w
	}
	var out []string
	for _, p := range all {
		key := p.namespace + "/" + p.name
		w := live[key]
		switch {
		case gone[key] && w != nil:
			c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			out = append(out, fmt.Sprintf("%s still deleting (%v)", key, c))
		case gone[key]:
		case w == nil:
			out = append(out, key+" missing")
		case !ready(w):
			c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if c == nil {
				out = append(out, key+": no status")
			} else {
				out = append(out, fmt.Sprintf("%s: %s %s", key, c.Reason, c.Message))
			}
		case !r.rec.recorded(key):
			out = append(out, key+": Ready, outputs not recorded yet")
		case p.placed && !r.rec.current(ctx, w):
			out = append(out, key+": Ready, outputs not recorded since it moved")
		}
	}
	return out, nil
}

func ready(w *scorev1b1.Workload) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

// settledAudit audits until nothing is found or a minute has passed: garbage collection of
// a deleted Workload's objects is eventual, and is not what the audit looks for.
func (r *run) settledAudit(ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for {
		rep := r.report
		rep.Duplicates, rep.Orphans, rep.CredentialsChanged, rep.RetainedMissing = nil, nil, nil, nil
		rep.CredentialsChecked, rep.RetainedChecked, rep.SharedInstances = 0, 0, 0
		rep.Audited = map[string]int{}
		r.audit(ctx)
		if len(rep.Problems()) == len(rep.NotReady) || time.Now().After(deadline) {
			return
		}
		r.logf("the audit found %d problems; auditing again in 5s", len(rep.Problems())-len(rep.NotReady))
		time.Sleep(5 * time.Second)
	}
}

// retry calls f until it succeeds: the API server may be down for a moment.
func (r *run) retry(ctx context.Context, what string, f func() error) {
	for i := 0; ; i++ {
		err := f()
		if err == nil || ctx.Err() != nil {
			return
		}
		if i%20 == 0 {
			r.logf("%s: %v (retrying)", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// scheduleFaults kills each controller Kills times at random moments of the window, and
// restarts the API server once and etcd once.
func (r *run) scheduleFaults(ctx context.Context, start time.Time, wg *sync.WaitGroup) {
	for _, name := range controlplane.All {
		ctl := r.ctrls[name]
		var at []time.Duration
		for i := 0; i < r.o.Kills; i++ {
			at = append(at, r.between(0.05, 0.95))
		}
		sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, d := range at {
				time.Sleep(time.Until(start.Add(d)))
				// The process may be down (being restarted) at that moment: try again shortly.
				for i := 0; i < 40 && !ctl.kill(); i++ {
					time.Sleep(250 * time.Millisecond)
				}
				r.logf("kill -9 %s", ctl.name)
			}
		}()
	}
	for _, f := range []struct {
		name   string
		lo, hi float64
		count  *int
	}{
		{"kube-apiserver", 0.25, 0.45, &r.report.APIServerRestarts},
		{"etcd", 0.55, 0.75, &r.report.EtcdRestarts},
	} {
		d := r.between(f.lo, f.hi)
		comp := r.simCluster().Component(f.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(d)))
			r.restarts.Lock()
			defer r.restarts.Unlock()
			down := time.Duration(500+r.intn(1500)) * time.Millisecond
			r.logf("kill -9 %s, down for %s", f.name, down)
			if _, err := comp.Restart(down); err != nil {
				r.logf("restarting %s: %v", f.name, err)
				return
			}
			*f.count++
			began := time.Now()
			r.waitAPIServer(ctx)
			r.logf("%s restarted; the API server answered again %s later", f.name, time.Since(began).Round(100*time.Millisecond))
		}()
	}
}

// waitAPIServer waits until the API server says it is ready.
func (r *run) waitAPIServer(ctx context.Context) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := r.kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deletions are the Workloads deleted mid-run.
type deletions struct {
	mu    sync.Mutex
	items []deletedWorkload
}

func (d *deletions) add(w deletedWorkload) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.items = append(d.items, w)
}

func (d *deletions) list() []deletedWorkload {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]deletedWorkload(nil), d.items...)
}

// scheduleDeletions deletes Deletions Workloads at random moments of the window: Retain ones
// and shared consumers that were Ready (so their data exists; never the last consumer of a
// namespace's shared instance), and ones with their own database, Ready or not.
func (r *run) scheduleDeletions(ctx context.Context, start time.Time, all []planned, wg *sync.WaitGroup) *deletions {
	out := &deletions{}
	var at []time.Duration
	for i := 0; i < r.o.Deletions; i++ {
		at = append(at, r.between(0.3, 0.9))
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	wg.Add(1)
	go func() {
		defer wg.Done()
		taken := map[string]bool{}
		for i, d := range at {
			time.Sleep(time.Until(start.Add(d)))
			// In turn: a Retain one and a shared consumer that were Ready (so that there is
			// data to keep, and an instance to keep for the namespace's "both" Workloads, which
			// remain its consumers), and one with its own database in whatever state it is.
			want, readyOnly := [...]kind{retainedCache, sharedDatabase, ownDatabase}[i%3], i%3 != 2
			var candidates []planned
			for _, p := range all {
				key := p.namespace + "/" + p.name
				if _, created := r.created.Load(key); p.kind == want && !taken[key] && created && (!readyOnly || r.rec.recorded(key)) {
					candidates = append(candidates, p)
				}
			}
			if len(candidates) == 0 {
				r.logf("no %s Workload to delete yet", want)
				continue
			}
			p := candidates[r.intn(len(candidates))]
			key := p.namespace + "/" + p.name
			taken[key] = true
			r.retry(ctx, "deleting "+key, func() error {
				return client.IgnoreNotFound(r.c.Delete(ctx, &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name}}))
			})
			out.add(deletedWorkload{planned: p})
			r.logf("deleted %s (%s)", key, p.kind)
		}
	}()
	return out
}
