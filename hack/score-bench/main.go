// Command score-bench is the scale benchmark (make bench): on a simulated cluster of its own
// it runs the three controllers as production does (separate processes, leader election on),
// creates N Workloads at once or at an arrival rate, and reports the time until all are Ready,
// create→Ready percentiles, the lifecycle document's four status timings under that load, the
// writes sent to the API server (from its audit log: ours by user agent, the cluster's own)
// against the write floor measured in the same run, the writes after a restart and in steady
// state, CPU seconds and peak RSS per controller, and the time to delete all N. It prints a
// table and writes the result as JSON. docs/performance.md describes the method.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/blackhole"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
)

// Namespaces of the run.
const (
	benchNS = "bench"
	probeNS = "bench-probe"
	floorNS = "bench-floor"
	// unrelatedNS holds --unrelated's objects, which are not ours.
	unrelatedNS = "bench-unrelated"
)

type options struct {
	n              int
	mix            string
	rate           float64
	out            string
	root           string
	keep           bool
	noDelete       bool
	window         time.Duration
	timeout        time.Duration
	floorObjects   int
	unrelated      int
	shards         int
	baseline       bool
	controllerArgs string
	profileDir     string
	profileSeconds int
	profileAfter   time.Duration
	apiProfile     bool
	members        int
	rollout        time.Duration
	rolloutChange  string
	failover       time.Duration
	clusters       int
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 200, "Workloads to create")
	flag.StringVar(&o.mix, "mix", kindPostgres, "the kinds of Workload, optionally weighted: postgres (1 container, 1 port, 1 postgres dependency), none (no dependency), three (postgres, redis, dns), batch (a batch job); e.g. postgres=3,batch=1")
	flag.Float64Var(&o.rate, "rate", 0, "Workloads created per second (0: all at once, 16 at a time)")
	flag.StringVar(&o.out, "out", "bench-result.json", "where to write the JSON result")
	flag.StringVar(&o.root, "root", ".", "the repository (hack/, config/, bin/score-controllers)")
	flag.BoolVar(&o.keep, "keep", false, "keep the cluster and its directory afterwards")
	flag.BoolVar(&o.noDelete, "no-delete", false, "leave out the deletion of all N (it is the longest step at large N)")
	flag.DurationVar(&o.window, "window", time.Minute, "how long the restart and steady-state windows count writes")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "longest wait for all Workloads to be Ready")
	flag.IntVar(&o.floorObjects, "floor-objects", 5000, "small objects the write floor measurement creates")
	flag.IntVar(&o.unrelated, "unrelated", 0, "objects that are not ours (Secrets, ConfigMaps and Deployments of 0 replicas, a third each) created before the controllers start, as on a shared cluster: the controllers' memory should not grow with them")
	flag.IntVar(&o.shards, "shards", 1, "run the three controllers this many times, each set owning a shard of the Workloads (the first the unlabelled ones, the others score.dev/shard=s1, s2 ...); the Workloads are spread over them in turn")
	flag.BoolVar(&o.baseline, "baseline", true, "before the controllers start, create the objects they would apply for the same N (rendered offline) with a plain client, and time them to healthy: the same work without the control plane")
	flag.StringVar(&o.controllerArgs, "controller-args", "", "extra score-controllers flags for every controller, space-separated")
	flag.StringVar(&o.profileDir, "profile-dir", "", "write CPU profiles of each controller and of the API server (the first seconds of the load, or from --profile-after) and heap profiles (at all Ready) here")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 30, "length of the CPU profiles")
	flag.DurationVar(&o.profileAfter, "profile-after", 0, "how long into the load the CPU profiles start")
	flag.BoolVar(&o.apiProfile, "apiserver-profile", false, "write CPU profiles of the hub's kube-apiserver over the baseline (first create to all healthy) and over the load (first create to all Ready) beside --out, each as back-to-back 2 s profiles in a directory (OUT.kube-apiserver-baseline/, OUT.kube-apiserver-load/; go tool pprof DIR/*.pprof merges them); --profile-dir then leaves out the API server's CPU profile")
	flag.IntVar(&o.members, "members", 0, "run the Workloads on this many member clusters of their own (every backend placing on them, Spread), the hub keeping claims, plans and dependencies; counts each member's writes (implies --baseline=false)")
	flag.DurationVar(&o.rollout, "rollout", 0, "after the steady state, give the config a rollout policy (waves 1, 10%, 50%, 100%) with this bake time, change every backend's values, and time the change through every wave, counting writes (0: no rollout)")
	flag.StringVar(&o.rolloutChange, "rollout-change", "values", "what --rollout changes: values (every backend's replicas) or provisioners (a label on the first object of every provisioner definition's manifests: the instances change)")
	flag.DurationVar(&o.failover, "failover", 0, "with --members 2 or more: every backend places Ordered (all N on member m1) with placement.failover.after this long (at least 30s); after the steady state m1 goes dark, and the run times the loss to all N Ready on another member, then m1's clean-up once it answers again, counting writes (0: no failover)")
	flag.IntVar(&o.clusters, "clusters", 1, "with --members K or more: every backend places each Workload on K members (placement.clusters: K, Spread), a copy with its own dependencies on each; a Workload counts as Ready when every copy is, and the members' writes are per Workload of the run (all its copies)")
	flag.Parse()
	if o.failover > 0 && o.members < 2 {
		fmt.Fprintln(os.Stderr, "score-bench: --failover needs --members 2 or more")
		os.Exit(2)
	}
	if o.clusters > 1 && (o.members < o.clusters || o.failover > 0) {
		fmt.Fprintln(os.Stderr, "score-bench: --clusters K needs --members K or more, and no --failover")
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o, os.Stderr)
	if res != nil {
		res.print(os.Stdout)
		if raw, jerr := json.MarshalIndent(res, "", "  "); jerr == nil {
			if werr := os.WriteFile(o.out, append(raw, '\n'), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, werr)
			} else {
				fmt.Fprintf(os.Stderr, "[bench] result written to %s\n", o.out)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "score-bench:", err)
		os.Exit(1)
	}
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "[bench %s] "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// webWorkload is one Workload of the mix.
func webWorkload(ns, name, kind string) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27"}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}},
		},
	}
	switch kind {
	case kindPostgres:
		w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.27", Variables: map[string]string{"DB_HOST": "${resources.db.host}", "DB_URI": "${resources.db.uri}"}}
		w.Spec.Resources = map[string]scorev1b1.Resource{"db": {Type: "postgres"}}
	case kindThree:
		w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.27", Variables: map[string]string{"DB_HOST": "${resources.db.host}", "CACHE_HOST": "${resources.cache.host}", "HOST": "${resources.dns.host}"}}
		w.Spec.Resources = map[string]scorev1b1.Resource{"db": {Type: "postgres"}, "cache": {Type: "redis"}, "dns": {Type: "dns"}}
	case kindBatch:
		w.Annotations = map[string]string{scorev1b1.AnnotationProfile: "batch-job"}
		w.Spec.Containers["main"] = scorev1b1.Container{Image: "busybox:1.37", Command: []string{"/bin/sh", "-c"}, Args: []string{"echo done"}}
		w.Spec.Service = nil
	}
	return w
}

// footprint is what a kind needs of the cluster: pods, Services, volumes.
func footprint(kind string) (pods, services, volumes int) {
	switch kind {
	case kindPostgres:
		return 2, 2, 1
	case kindThree:
		return 3, 3, 2
	case kindBatch:
		return 1, 0, 0
	}
	return 1, 1, 0
}

func isConflict(err error) bool { return apierrors.IsConflict(err) }

// restConfig is an unthrottled client configuration with the benchmark's user agent.
func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = benchAgent
	return cfg, nil
}

// runState is what the phases share.
type runState struct {
	o     options
	log   io.Writer
	root  string // the repository, absolute
	k     *simcluster.Cluster
	cfg   *rest.Config
	c     client.Client
	cache cache.Cache
	audit *auditLog
	ctrls []*controller
	// members are the member clusters (--members); dark is the proxy m1 is reached through
	// (--failover).
	members []*benchMember
	dark    *blackhole.Proxy

	mu      sync.Mutex
	created map[string]time.Time
	readyAt map[string]time.Time
	// claimsAt is when each Workload was first seen with ClaimsReady true.
	claimsAt map[string]time.Time
	exists   atomic.Int64
	// steps records when the steps of the work happened, during the phase that keeps a
	// timeline (the baseline, the load); nil otherwise.
	steps *stepTimes
}

// auditSince counts the writes the hub logged since the last call, recording the steps of the
// work in s.steps while a phase keeps a timeline.
func (s *runState) auditSince() (writeCounts, error) { return countSince(s.audit, s.steps) }

// countSince counts the writes an audit log gained since the last call.
func countSince(a *auditLog, steps *stepTimes) (writeCounts, error) {
	segs, err := a.segments()
	if err != nil {
		return nil, err
	}
	out := writeCounts{}
	for i, seg := range segs {
		counts, used, err := parseAudit(seg, map[string]bool{probeNS: true}, steps)
		if i == len(segs)-1 {
			a.consumed(used)
		}
		if err != nil {
			return nil, err
		}
		for k, n := range counts {
			out[k] += n
		}
	}
	return out, nil
}

// apiMetrics reads apiserver_request_total.
func (s *runState) apiMetrics(ctx context.Context) (requestCounts, error) {
	hc, err := rest.HTTPClientFor(s.cfg)
	if err != nil {
		return nil, err
	}
	body, err := fetch(ctx, hc, strings.TrimSuffix(s.cfg.Host, "/")+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	return parseRequestTotals(bytes.NewReader(body))
}

// run is the benchmark, its steps in the order of docs/performance.md's method: a cluster of its
// own, the write floor, the objects that are not ours and the baseline when asked, the
// controllers idle, one Workload unloaded, the load, one more with N present, the restart and
// the steady state, the failover and the rollout when asked, and the deletion of all N. A step
// that fails ends the run with the result as far as it went.
func run(ctx context.Context, o options, log io.Writer) (*result, error) {
	w, err := workOf(o)
	if err != nil {
		return nil, err
	}
	s, err := newRunState(o, log, w)
	if err != nil {
		return nil, err
	}
	res := &result{N: o.n, Mix: o.mix, Rate: o.rate, Machine: machine(), Started: time.Now().UTC().Format(time.RFC3339)}
	if err := s.startCluster(); err != nil {
		return nil, err
	}
	defer s.tearDown()
	cfg, err := s.prepareHub(ctx, w.pods)
	if err != nil {
		return res, err
	}
	if err := s.addMembers(ctx, res, w); err != nil {
		return res, err
	}
	if err := s.createNamespaces(ctx); err != nil {
		return res, err
	}
	if err := s.watch(ctx); err != nil {
		return res, err
	}
	if err := s.measureFloor(ctx, res); err != nil {
		return res, err
	}
	res.Shards = o.shards
	if err := s.createUnrelated(ctx, res); err != nil {
		return res, err
	}
	if err := s.measureBaseline(ctx, res, cfg, w.kinds); err != nil {
		return res, err
	}
	if err := s.measureIdle(ctx, res); err != nil {
		return res, err
	}
	// One Workload on an empty cluster, with the timings unloaded.
	p := &prober{c: s.c, cache: s.cache, ns: probeNS, limit: 10 * time.Minute}
	res.TimingsEmpty = p.run(ctx, "empty")
	logf(log, "unloaded timings: %+v", res.TimingsEmpty)
	if _, err := s.auditSince(); err != nil {
		return res, err
	}
	if err := s.measureLoad(ctx, res, p, w.kinds); err != nil {
		return res, err
	}
	if o.clusters > 1 {
		if res.Copies, err = s.copiesPlaced(ctx, o.clusters); err != nil {
			return res, err
		}
		logf(log, "%d plans: every Workload on %d members", res.Copies, o.clusters)
	}
	// One more Workload, with N present.
	oneMore := &prober{c: s.c, cache: s.cache, ns: probeNS, limit: 10 * time.Minute}
	res.TimingsFull = oneMore.run(ctx, "full")
	logf(log, "timings with %d present: %+v", o.n, res.TimingsFull)
	if err := s.measureRestart(ctx, res); err != nil {
		return res, err
	}
	if o.failover > 0 {
		if res.Failover, err = s.failover(ctx, o.window); err != nil {
			return res, err
		}
	}
	if o.rollout > 0 {
		if res.Rollout, err = s.rolloutChange(ctx, o.rollout, o.rolloutChange); err != nil {
			return res, err
		}
	}
	if o.noDelete {
		return res, nil
	}
	return res, s.measureDelete(ctx, res)
}

// work is what the run creates: the kind of each Workload, and the pods and volumes they need
// of the cluster.
type work struct {
	kinds         []string
	pods, volumes int
}

// workOf draws the kinds of the N Workloads from the mix.
func workOf(o options) (work, error) {
	mix, err := parseMix(o.mix)
	if err != nil {
		return work{}, err
	}
	w := work{kinds: assign(mix, o.n)}
	for _, k := range w.kinds {
		p, _, v := footprint(k)
		w.pods, w.volumes = w.pods+p, w.volumes+v
	}
	return w, nil
}

// newRunState makes the run's directory and describes its cluster, with volumes for the work
// (twice with the baseline: a released volume is not bound again).
func newRunState(o options, log io.Writer, w work) (*runState, error) {
	root, err := filepath.Abs(o.root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "score-bench-")
	if err != nil {
		return nil, err
	}
	s := &runState{o: o, log: log, root: root, created: map[string]time.Time{}, readyAt: map[string]time.Time{}, claimsAt: map[string]time.Time{},
		k: &simcluster.Cluster{Root: root, Dir: dir, Name: fmt.Sprintf("score-bench-%d", os.Getpid()), Volumes: w.volumes + 8, AuditWrites: true}}
	if o.baseline {
		s.k.Volumes += w.volumes // a released volume is not bound again
	}
	return s, nil
}

// startCluster starts the hub, its output kept to explain a failure to start.
func (s *runState) startCluster() error {
	logf(s.log, "starting cluster %s in %s (%d volumes)", s.k.Name, s.k.Dir, s.k.Volumes)
	var clusterOut bytes.Buffer
	s.k.Output = &clusterOut
	if err := s.k.Up(); err != nil {
		return fmt.Errorf("%w\n%s", err, clusterOut.String())
	}
	return nil
}

// tearDown stops the members and the controllers, then the hub and removes its directory,
// unless --keep.
func (s *runState) tearDown() {
	s.stopMembers()
	for _, p := range s.ctrls {
		p.stop()
	}
	if s.o.keep {
		logf(s.log, "kept the cluster: SCORE_CLUSTER_NAME=%s SCORE_DEV_DIR=%s hack/cluster.sh down", s.k.Name, s.k.Dir)
		return
	}
	_ = s.k.Down()
	_ = os.RemoveAll(s.k.Dir)
}

// prepareHub connects to the hub and follows its audit log, grows its nodes to hold the pods,
// and installs the kinds and the development config, which it returns.
func (s *runState) prepareHub(ctx context.Context, pods int) (*orchconfig.Config, error) {
	path, err := s.k.AuditLog()
	if err != nil {
		return nil, err
	}
	s.audit = &auditLog{path: path}
	if s.cfg, err = restConfig(s.k.Kubeconfig()); err != nil {
		return nil, err
	}
	if s.c, err = client.New(s.cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return nil, err
	}
	nodes, err := grow(ctx, s.c, pods+16)
	if err != nil {
		return nil, err
	}
	logf(s.log, "%d bench nodes for %d pods", nodes, pods)
	return devenv.Install(ctx, s.c, os.DirFS(s.root))
}

// addMembers, with --members, starts the member clusters the Workloads run on.
func (s *runState) addMembers(ctx context.Context, res *result, w work) error {
	if s.o.members == 0 {
		return nil
	}
	if err := s.startMembers(ctx, s.root, s.k.Dir, w.pods, w.volumes+8); err != nil {
		return err
	}
	res.Members = s.o.members
	if s.o.clusters > 1 {
		res.Clusters = s.o.clusters
	}
	return nil
}

// createNamespaces creates the run's namespaces.
func (s *runState) createNamespaces(ctx context.Context) error {
	for _, ns := range []string{benchNS, probeNS, floorNS, unrelatedNS} {
		if err := s.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	return nil
}

// measureFloor measures the write floor: a plain client creating small objects as fast as the
// API server takes them.
func (s *runState) measureFloor(ctx context.Context, res *result) error {
	var err error
	if res.FloorPerSecond, err = floor(ctx, s.c, s.o.floorObjects); err != nil {
		return err
	}
	logf(s.log, "write floor: %.0f objects/s", res.FloorPerSecond)
	return nil
}

// createUnrelated creates --unrelated's objects, which are not ours, and waits for the cluster
// to settle them.
func (s *runState) createUnrelated(ctx context.Context, res *result) error {
	if s.o.unrelated == 0 {
		return nil
	}
	if err := createAll(ctx, s.c, s.o.unrelated, unrelated); err != nil {
		return fmt.Errorf("the unrelated objects: %w", err)
	}
	res.Unrelated = s.o.unrelated
	logf(s.log, "%d objects that are not ours created; waiting for the cluster to settle them", s.o.unrelated)
	return settleUnrelated(ctx, s.c, s.o.timeout)
}

// measureBaseline, with --baseline and no members, times the objects the controllers would
// apply for the same Workloads, rendered offline and created with a plain client, to healthy.
func (s *runState) measureBaseline(ctx context.Context, res *result, cfg *orchconfig.Config, kinds []string) error {
	if !s.o.baseline || s.o.members > 0 {
		return nil
	}
	judge, err := health.New(cfg.Health)
	if err != nil {
		return err
	}
	stages, err := baselineObjects(ctx, s.root, cfg, kinds)
	if err != nil {
		return err
	}
	logf(s.log, "baseline: creating %d + %d objects with a plain client", len(stages[0]), len(stages[1]))
	if res.Baseline, err = s.runBaseline(ctx, stages, judge); err != nil {
		return err
	}
	logf(s.log, "baseline: namespace deleted")
	return nil
}

// measureIdle starts the controllers and counts the idle baseline: the cluster's own writes
// (and our lease renewals) with nothing to do.
func (s *runState) measureIdle(ctx context.Context, res *result) error {
	start := time.Now()
	if err := s.startControllers(); err != nil {
		return err
	}
	if err := waitLeaders(ctx, s.c, start, s.ctrls); err != nil {
		return err
	}
	if _, err := s.auditSince(); err != nil {
		return err
	}
	logf(s.log, "idle baseline for %s", s.o.window)
	if err := sleep(ctx, s.o.window); err != nil {
		return err
	}
	idle, err := s.auditSince()
	if err != nil {
		return err
	}
	res.Idle = phaseOf(idle.summary(), s.o.window)
	return nil
}

// loadMarks are what the load is measured against, taken before its first create.
type loadMarks struct {
	requests requestCounts
	usage    map[string]procUsage
	cluster  map[string]procUsage
	start    time.Time
}

// measureLoad creates the N Workloads, the probe's Workload beside them, and waits for all to
// be Ready. A load that reaches its timeout, loses a process, or is interrupted (SIGINT,
// SIGTERM) still reports as far as it went (the Ready ones' percentiles, the writes, the CPU,
// the probe's timings under the load), and its error ends the run.
func (s *runState) measureLoad(ctx context.Context, res *result, p *prober, kinds []string) error {
	s.steps = newStepTimes()
	m, err := s.markLoad(ctx)
	if err != nil {
		return err
	}
	loadProfile := s.profileAPIServer(ctx, "load")
	var loadTimings timings
	probeDone := make(chan struct{})
	go func() { defer close(probeDone); loadTimings = p.run(ctx, "load") }()
	s.profileControllersDuringLoad(ctx)
	logf(s.log, "creating %d Workloads (mix %s, rate %v/s)", s.o.n, s.o.mix, s.o.rate)
	if err := s.create(ctx, kinds); err != nil {
		return err
	}
	res.CreateSeconds = time.Since(m.start).Seconds()
	unfinished := s.waitAllReady(ctx, m.start, m.cluster)
	if unfinished != nil && ctx.Err() != nil {
		unfinished = s.interrupted(m.start)
		ctx = context.WithoutCancel(ctx)
	}
	elapsed := time.Since(m.start)
	// The CPU to all Ready, apart from the load's 10 s of late news: whether the cores were busy
	// while the Workloads became Ready, which the whole window's average hides.
	res.CPUToReady = cpuSeconds(cpuSince(clusterUsage(s.k.Dir), m.cluster)) + cpuSeconds(s.usageSince(m.usage))
	loadProfile.end(s)
	if unfinished != nil {
		res.Unfinished = unfinished.Error()
		logf(s.log, "the load did not finish: %v", unfinished)
	} else {
		res.AllReadySeconds = elapsed.Seconds()
		logf(s.log, "all %d Ready after %s", s.o.n, elapsed.Round(time.Millisecond))
	}
	s.readyLatencies(res)
	<-probeDone
	res.TimingsLoaded = loadTimings
	if s.o.profileDir != "" {
		s.profile(ctx, "heap", "/debug/pprof/heap")
	}
	// Late news (endpoints, rollouts settling) belongs to the load.
	if err := sleep(ctx, 10*time.Second); unfinished == nil && err != nil {
		return err
	}
	if err := s.countLoad(ctx, res, m, elapsed); err != nil {
		return err
	}
	return unfinished
}

// markLoad takes the load's marks: the members' writes so far consumed, the API server's
// request counts, the processes' CPU, and the time.
func (s *runState) markLoad(ctx context.Context) (loadMarks, error) {
	if _, err := s.membersSince(0); err != nil {
		return loadMarks{}, err
	}
	before, err := s.apiMetrics(ctx)
	if err != nil {
		return loadMarks{}, err
	}
	m := loadMarks{requests: before, usage: s.usage(), cluster: clusterUsage(s.k.Dir)}
	m.start = time.Now()
	return m, nil
}

// profileControllersDuringLoad, with --profile-dir, profiles the controllers' CPU from
// --profile-after into the load.
func (s *runState) profileControllersDuringLoad(ctx context.Context) {
	if s.o.profileDir == "" {
		return
	}
	go func() {
		if sleep(ctx, s.o.profileAfter) == nil {
			s.profile(ctx, "cpu", fmt.Sprintf("/debug/pprof/profile?seconds=%d", s.o.profileSeconds))
		}
	}()
}

// interrupted is the error of a load interrupted after start.
func (s *runState) interrupted(start time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Errorf("interrupted with %d of %d Ready after %s", len(s.readyAt), s.o.n, time.Since(start).Round(time.Second))
}

// readyLatencies records the Ready Workloads' count and percentiles: create to Ready, create to
// ClaimsReady, and ClaimsReady to Ready.
func (s *runState) readyLatencies(res *result) {
	var lat, toClaims, claimsToReady []time.Duration
	s.mu.Lock()
	res.Ready = len(s.readyAt)
	for name, c := range s.created {
		if _, ok := s.readyAt[name]; !ok {
			continue
		}
		lat = append(lat, s.readyAt[name].Sub(c))
		if at, ok := s.claimsAt[name]; ok {
			toClaims = append(toClaims, at.Sub(c))
			claimsToReady = append(claimsToReady, s.readyAt[name].Sub(at))
		}
	}
	s.mu.Unlock()
	res.P50, res.P95, res.P99 = percentile(lat, 50).Seconds(), percentile(lat, 95).Seconds(), percentile(lat, 99).Seconds()
	res.ClaimsP50, res.ClaimsP99 = percentile(toClaims, 50).Seconds(), percentile(toClaims, 99).Seconds()
	res.RuntimeP50, res.RuntimeP99 = percentile(claimsToReady, 50).Seconds(), percentile(claimsToReady, 99).Seconds()
}

// countLoad records the load's writes (the hub's, the members', by request), its timeline, the
// writes per Workload, the multiples of the floor and of the baseline, and the CPU.
func (s *runState) countLoad(ctx context.Context, res *result, m loadMarks, elapsed time.Duration) error {
	load, err := s.auditSince()
	if err != nil {
		return err
	}
	res.Timeline, res.Hop, s.steps = s.steps.timeline(m.start), s.steps.hopLegs(), nil
	after, err := s.apiMetrics(ctx)
	if err != nil {
		return err
	}
	res.Load = phaseOf(load.summary(), time.Since(m.start))
	if res.MembersLoad, err = s.membersSince(time.Since(m.start).Seconds()); err != nil {
		return err
	}
	res.LoadAPI = apiRows(after.sub(m.requests))
	res.WritesPerWorkload = float64(res.Load.Writes.Ours) / float64(s.o.n)
	res.EventsPerWorkload = float64(res.Load.Writes.OursEvents) / float64(s.o.n)
	res.AllWritesPerWorkload = float64(res.Load.Writes.total()) / float64(s.o.n)
	res.FloorSeconds = float64(res.Load.Writes.total()) / res.FloorPerSecond
	// Unfinished, the multiples are of the time the load ran: lower bounds.
	res.FloorMultiple = elapsed.Seconds() / res.FloorSeconds
	if res.Baseline != nil {
		res.BaselineMultiple = elapsed.Seconds() / res.Baseline.AllReadySeconds
	}
	res.UsageLoad = s.usageSince(m.usage)
	res.ClusterUsageLoad = cpuSince(clusterUsage(s.k.Dir), m.cluster)
	return nil
}

// measureRestart restarts every controller with N Ready Workloads present and counts the writes
// over a window, then over a window of steady state.
func (s *runState) measureRestart(ctx context.Context, res *result) error {
	for _, c := range s.ctrls {
		c.stop()
	}
	if _, err := s.auditSince(); err != nil {
		return err
	}
	restartAt := time.Now()
	if err := s.startControllers(); err != nil {
		return err
	}
	logf(s.log, "restarted the controllers; counting writes for %s", s.o.window)
	if err := sleep(ctx, s.o.window); err != nil {
		return err
	}
	restart, err := s.auditSince()
	if err != nil {
		return err
	}
	res.Restart = phaseOf(restart.summary(), time.Since(restartAt))
	logf(s.log, "steady state for %s", s.o.window)
	steadyAt := time.Now()
	if err := sleep(ctx, s.o.window); err != nil {
		return err
	}
	steady, err := s.auditSince()
	if err != nil {
		return err
	}
	res.Steady = phaseOf(steady.summary(), time.Since(steadyAt))
	res.UsageRestart = s.usageSince(nil)
	return nil
}

// measureDelete deletes all N and times them until the last is gone, counting the writes.
func (s *runState) measureDelete(ctx context.Context, res *result) error {
	delStart := time.Now()
	if err := s.deleteAll(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(s.o.timeout)
	for s.exists.Load() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Workloads left after %s", s.exists.Load(), s.o.timeout)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	res.DeleteSeconds = time.Since(delStart).Seconds()
	del, err := s.auditSince()
	if err != nil {
		return err
	}
	res.Delete = phaseOf(del.summary(), time.Since(delStart))
	logf(s.log, "all deleted after %.1fs", res.DeleteSeconds)
	return nil
}

// watch starts the benchmark's cache: Workloads (for create→Ready), and the probes' claims
// and exposures.
func (s *runState) watch(ctx context.Context) error {
	var err error
	s.cache, err = cache.New(s.cfg, cache.Options{Scheme: scheme.New(),
		DefaultNamespaces: map[string]cache.Config{benchNS: {}, probeNS: {}},
		ByObject: map[client.Object]cache.ByObject{
			&scorev1b1.ResourceClaim{}:    {Namespaces: map[string]cache.Config{probeNS: {}}},
			&scorev1b1.WorkloadExposure{}: {Namespaces: map[string]cache.Config{probeNS: {}}},
		}})
	if err != nil {
		return err
	}
	inf, err := s.cache.GetInformer(ctx, &scorev1b1.Workload{})
	if err != nil {
		return err
	}
	seen := func(obj any) {
		w, ok := obj.(*scorev1b1.Workload)
		if !ok || w.Namespace != benchNS {
			return
		}
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionClaimsReady); c != nil && c.Status == metav1.ConditionTrue {
			if _, done := s.claimsAt[w.Name]; !done {
				s.claimsAt[w.Name] = now
			}
		}
		if _, done := s.readyAt[w.Name]; !done && s.allReady(w) {
			s.readyAt[w.Name] = now
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if w, ok := obj.(*scorev1b1.Workload); ok && w.Namespace == benchNS {
				s.exists.Add(1)
			}
			seen(obj)
		},
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if w, ok := obj.(*scorev1b1.Workload); ok && w.Namespace == benchNS {
				s.exists.Add(-1)
			}
		},
	}); err != nil {
		return err
	}
	for _, o := range []client.Object{&scorev1b1.ResourceClaim{}, &scorev1b1.WorkloadExposure{}} {
		if _, err := s.cache.GetInformer(ctx, o); err != nil {
			return err
		}
	}
	go func() { _ = s.cache.Start(ctx) }()
	if !s.cache.WaitForCacheSync(ctx) {
		return errors.New("the benchmark's cache did not sync")
	}
	return nil
}

// create creates the Workloads: all at once (16 at a time) or at the arrival rate.
func (s *runState) create(ctx context.Context, kinds []string) error {
	names := make(chan int)
	errs := make(chan error, len(kinds))
	var wg sync.WaitGroup
	workers := 16
	if s.o.rate > 0 {
		workers = 64
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				name := fmt.Sprintf("w%05d", i)
				w := webWorkload(benchNS, name, kinds[i])
				if k := i % max(s.o.shards, 1); k > 0 {
					w.Labels = map[string]string{scorev1b1.LabelShard: shardName(k)}
				}
				t := time.Now()
				if err := s.c.Create(ctx, w); err != nil {
					errs <- fmt.Errorf("creating %s: %w", name, err)
					continue
				}
				s.mu.Lock()
				s.created[name] = t
				s.mu.Unlock()
			}
		}()
	}
	var tick <-chan time.Time
	if s.o.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / s.o.rate))
		defer t.Stop()
		tick = t.C
	}
	for i := range kinds {
		if tick != nil {
			<-tick
		}
		names <- i
	}
	close(names)
	wg.Wait()
	close(errs)
	return <-errs
}

// deleteAll deletes every created Workload, 16 at a time (a deletecollection of thousands
// outlives the API server's request timeout).
func (s *runState) deleteAll(ctx context.Context) error {
	names := make(chan string)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name}}
				if err := s.c.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	s.mu.Lock()
	all := make([]string, 0, len(s.created))
	for name := range s.created {
		all = append(all, name)
	}
	s.mu.Unlock()
	for _, name := range all {
		names <- name
	}
	close(names)
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return fmt.Errorf("deleting: %w", err)
	}
	return nil
}

// waitAllReady waits until every created Workload has been seen Ready. It gives up at once
// when a process the load needs has exited (clusterAtStart: the cluster's processes when the
// load started): a controller that lost its lease, or kube-controller-manager, exits as made
// to, and here nothing restarts it (in a cluster the kubelet would), so the load could only
// wait out its timeout.
func (s *runState) waitAllReady(ctx context.Context, since time.Time, clusterAtStart map[string]procUsage) error {
	deadline := since.Add(s.o.timeout)
	last := time.Now()
	for {
		s.mu.Lock()
		ready, total := len(s.readyAt), len(s.created)
		s.mu.Unlock()
		if ready >= s.o.n && total == s.o.n {
			return nil
		}
		if time.Since(last) > 10*time.Second {
			logf(s.log, "%d/%d Ready after %s", ready, s.o.n, time.Since(since).Round(time.Second))
			last = time.Now()
			if gone := exited(s.ctrls, clusterAtStart, clusterUsage(s.k.Dir)); len(gone) > 0 {
				return fmt.Errorf("%d of %d Ready after %s, when %s had exited; nothing restarts a process here (a controller exits when it loses its lease, as on a machine busy with other work)",
					ready, s.o.n, time.Since(since).Round(time.Second), strings.Join(gone, "; "))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Ready after %s", ready, s.o.n, s.o.timeout)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

func (s *runState) startControllers() error {
	bin := filepath.Join(s.k.Root, "bin", "score-controllers")
	var extra []string
	if s.o.controllerArgs != "" {
		extra = strings.Fields(s.o.controllerArgs)
	}
	s.ctrls = nil
	for k := range max(s.o.shards, 1) {
		// The fleet's rollout runs once, beside the unlabelled rest's set.
		controllers := controlplane.All
		if k > 0 {
			controllers = controlplane.Sharded
		}
		for _, name := range controllers {
			p := &controller{name: name, controllers: name, bin: bin, dir: s.k.Dir, args: extra}
			switch {
			case k > 0:
				p.name += "-" + shardName(k)
				p.selector = scorev1b1.LabelShard + "=" + shardName(k)
			case s.o.shards > 1:
				p.selector = "!" + scorev1b1.LabelShard
			}
			if err := p.start(s.k.Kubeconfig()); err != nil {
				return err
			}
			s.ctrls = append(s.ctrls, p)
		}
	}
	return nil
}

// shardName is the k-th shard's label value (the 0th is the unlabelled rest).
func shardName(k int) string { return fmt.Sprintf("s%d", k) }

// usage reads each controller's CPU and peak RSS.
func (s *runState) usage() map[string]procUsage {
	out := map[string]procUsage{}
	for _, p := range s.ctrls {
		if u, err := p.usage(); err == nil {
			out[p.name] = u
		}
	}
	return out
}

// usageSince is each controller's CPU since base (CPU seconds subtracted) and its peak RSS.
func (s *runState) usageSince(base map[string]procUsage) map[string]procUsage {
	return cpuSince(s.usage(), base)
}

// profile saves a pprof profile of every controller and of the hub's API server.
func (s *runState) profile(ctx context.Context, kind, path string) {
	if err := os.MkdirAll(s.o.profileDir, 0o755); err != nil {
		logf(s.log, "profile: %v", err)
		return
	}
	type target struct {
		name, url string
		client    *http.Client
	}
	var targets []target
	for _, p := range s.ctrls {
		targets = append(targets, target{p.name, "http://" + p.pprofAddr + path, http.DefaultClient})
	}
	if kind == "cpu" && s.o.apiProfile {
		// --apiserver-profile profiles it over the load; it takes one CPU profile at a time.
	} else if hc, err := rest.HTTPClientFor(s.cfg); err == nil {
		targets = append(targets, target{"kube-apiserver", strings.TrimSuffix(s.cfg.Host, "/") + path, hc})
	} else {
		logf(s.log, "profile kube-apiserver: %v", err)
	}
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
			resp, err := t.client.Do(req)
			if err != nil {
				logf(s.log, "profile %s: %v", t.name, err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(s.o.profileDir, fmt.Sprintf("%s-%s-n%d.pprof", t.name, kind, s.o.n)))
			if err != nil {
				logf(s.log, "profile %s: %v", t.name, err)
				return
			}
			defer f.Close()
			_, _ = io.Copy(f, resp.Body)
		})
	}
	wg.Wait()
}

// floor creates count small ConfigMaps with 16 workers and returns the rate; it deletes
// them afterwards.
func floor(ctx context.Context, c client.Client, count int) (float64, error) {
	start := time.Now()
	err := createAll(ctx, c, count, func(i int) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: floorNS, Name: fmt.Sprintf("floor-%d", i)}, Data: map[string]string{"k": "v"}}
	})
	rate := float64(count) / time.Since(start).Seconds()
	if err != nil {
		return 0, fmt.Errorf("the write floor: %w", err)
	}
	if err := c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(floorNS)); err != nil {
		return 0, err
	}
	return rate, nil
}

// createAll creates object(1) … object(count) with 16 workers, as fast as the API server
// takes them; it stops at the first error.
func createAll(ctx context.Context, c client.Client, count int, object func(i int) client.Object) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return firstErr != nil }
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(count) || failed() {
					return
				}
				if err := c.Create(ctx, object(int(i))); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// settleUnrelated waits until the cluster's deployment controller has seen every unrelated
// Deployment (and made its ReplicaSet), so that the run after it does not queue behind that.
func settleUnrelated(ctx context.Context, c client.Client, timeout time.Duration) error {
	return poll(ctx, timeout, 2*time.Second, func() (string, error) {
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.InNamespace(unrelatedNS)); err != nil {
			return "", err
		}
		pending := 0
		for _, d := range list.Items {
			if d.Status.ObservedGeneration < d.Generation {
				pending++
			}
		}
		if pending > 0 {
			return fmt.Sprintf("%d unrelated Deployments not observed", pending), nil
		}
		return "", nil
	})
}

// poll calls check every interval until it reports nothing left to wait for ("") or fails,
// for timeout at the most; then the error names what was still waited for.
func poll(ctx context.Context, timeout, interval time.Duration, check func() (waiting string, err error)) error {
	deadline := time.Now().Add(timeout)
	for {
		waiting, err := check()
		if err != nil || waiting == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", timeout, waiting)
		}
		if err := sleep(ctx, interval); err != nil {
			return err
		}
	}
}

// unrelated is the i-th object that is not ours: a Secret, a ConfigMap (1 KiB of data each) or a
// Deployment of no replicas, none with our labels.
func unrelated(i int) client.Object {
	meta := metav1.ObjectMeta{Namespace: unrelatedNS, Name: fmt.Sprintf("other-%d", i), Labels: map[string]string{"app": fmt.Sprintf("other-%d", i)}}
	data := strings.Repeat("x", 1024)
	switch i % 3 {
	case 0:
		return &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"token": data}}
	case 1:
		return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"settings": data}}
	default:
		return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: meta.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}},
		}}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func machine() string {
	model := ""
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s, %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
