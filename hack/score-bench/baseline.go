package main

// The baseline of the same work: the very objects our controllers end up applying for the
// same N Workloads — rendered offline by the pipeline scorectl render runs, the provisioned
// objects and the outputs Secrets included — created by a plain client with 16 workers in
// dependency order (what the provisioner applies, then what the runtime applies), and waited
// for until every one is healthy by the same judgement (kstatus and the config's health
// rules). It runs on the same cluster before our controllers start, in a namespace of its own
// that is deleted afterwards. Our all-Ready time divided by its is what the control plane in
// between costs.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/offline"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
)

// baselineNS holds the baseline's objects while it runs.
const baselineNS = "bench-baseline"

// baselineResult is the same work done without the control plane.
type baselineResult struct {
	// Objects is how many objects it created: Stages[0] the provisioned ones and the outputs
	// Secrets, Stages[1] the runtime's.
	Objects int   `json:"objects"`
	Stages  []int `json:"stages"`
	// CreateSeconds is how long creating them took, AllReadySeconds until every one was
	// healthy (both from the first create).
	CreateSeconds   float64 `json:"createSeconds"`
	AllReadySeconds float64 `json:"allReadySeconds"`
	// Phase has the writes from the first create until all were healthy: Bench the plain
	// client's, Cluster the cluster's own (pods, bindings, volumes, endpoints, events).
	Phase phase `json:"phase"`
	// Timeline is when the steps of the work happened, from the first create.
	Timeline []milestone `json:"timeline"`
	// ClusterUsage is the cluster's processes' CPU from the first create until all were
	// healthy, and ClientCPUSeconds the plain client's (this process's): on a machine the
	// cluster saturates, the time to healthy follows the CPU the work costs.
	ClusterUsage     map[string]procUsage `json:"clusterUsage"`
	ClientCPUSeconds float64              `json:"clientCpuSeconds"`
	// API is apiserver_request_total's movement from the first create until all were
	// healthy, by verb, resource and code (reads included), as the load's LoadAPI.
	API []apiRow `json:"api"`
}

// baselineObjects renders the Workloads of kinds offline, in baselineNS, and returns what the
// provisioner would apply (with each claim's outputs Secret and, for a dependency with secret
// outputs, its instance's state Secret), then what the runtime would.
// Owner references are dropped: the plans and claims they name do not exist here.
func baselineObjects(ctx context.Context, root string, cfg *orchconfig.Config, kinds []string) ([2][]*unstructured.Unstructured, error) {
	workloads := make([]*scorev1b1.Workload, len(kinds))
	for i, k := range kinds {
		workloads[i] = webWorkload(baselineNS, fmt.Sprintf("w%05d", i), k)
		workloads[i].Generation = 1
	}
	dir := filepath.Join(root, "config", "templates")
	results, err := offline.Run(ctx, offline.Input{Workloads: workloads, Config: cfg, Template: func(ref scorev1b1.TemplateRef) (render.Template, error) {
		return templates.FromDir(ctx, ref, dir, nil)
	}})
	var stages [2][]*unstructured.Unstructured
	if err != nil {
		return stages, fmt.Errorf("rendering the baseline offline: %w", err)
	}
	for _, res := range results {
		for _, cp := range res.Copies {
			secrets := map[string]string{}
			for _, c := range cp.Plan.Spec.Claims {
				secrets[c.Key] = c.SecretName
			}
			for _, c := range cp.Claims {
				stages[0] = append(stages[0], c.Objects...)
				if name := secrets[c.Key]; name != "" && len(c.SecretKeys) > 0 {
					stages[0] = append(stages[0], secret(name, c.SecretKeys))
				}
				if c.Instance != "" && len(c.SecretKeys) > 0 { // generated credentials are kept as state
					stages[0] = append(stages[0], secret("score-state-"+c.Instance, []string{"state.json"}))
				}
			}
			stages[1] = append(stages[1], cp.Objects...)
		}
	}
	for _, stage := range stages {
		for _, o := range stage {
			o.SetOwnerReferences(nil)
		}
	}
	return stages, nil
}

// secret is a Secret the provisioner writes (a claim's outputs, an instance's state), with
// stand-in values.
func secret(name string, keys []string) *unstructured.Unstructured {
	data := map[string]any{}
	for _, k := range keys {
		data[k] = "baseline-" + k
	}
	u := &unstructured.Unstructured{Object: map[string]any{"stringData": data, "type": string(corev1.SecretTypeOpaque)}}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	u.SetNamespace(baselineNS)
	u.SetName(name)
	return u
}

// runBaseline creates the stages in order (each with 16 workers), waits until every object is
// healthy by judge, and deletes the namespace, waiting until it is gone.
func (s *runState) runBaseline(ctx context.Context, stages [2][]*unstructured.Unstructured, judge *health.Checker) (*baselineResult, error) {
	if err := s.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: baselineNS}}); err != nil {
		return nil, err
	}
	all := append(slices.Clone(stages[0]), stages[1]...)
	tracker := newHealthTracker(all, judge)
	// Watched from before the first create, as our controllers watch what they apply: the
	// wait costs the API server one watch per kind, not a listing of every object each second.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	if err := s.watchBaseline(watchCtx, tracker); err != nil {
		return nil, err
	}
	if _, err := s.auditSince(); err != nil {
		return nil, err
	}
	s.steps = newStepTimes()
	res := &baselineResult{}
	api0, err := s.apiMetrics(ctx)
	if err != nil {
		return nil, err
	}
	cluster0, client0 := clusterUsage(s.k.Dir), selfCPUSeconds()
	start := time.Now()
	prof := s.profileAPIServer(ctx, "baseline")
	for _, stage := range stages {
		err := createAll(ctx, s.c, len(stage), func(i int) client.Object { return stage[i-1].DeepCopy() })
		if err != nil {
			return nil, fmt.Errorf("creating the baseline: %w", err)
		}
		res.Objects += len(stage)
		res.Stages = append(res.Stages, len(stage))
	}
	res.CreateSeconds = time.Since(start).Seconds()
	if err := poll(ctx, s.o.timeout, 100*time.Millisecond, tracker.waiting); err != nil {
		return nil, err
	}
	res.AllReadySeconds = time.Since(start).Seconds()
	res.ClusterUsage, res.ClientCPUSeconds = cpuSince(clusterUsage(s.k.Dir), cluster0), selfCPUSeconds()-client0
	api1, err := s.apiMetrics(ctx)
	if err != nil {
		return nil, err
	}
	res.API = apiRows(api1.sub(api0))
	prof.end(s)
	stopWatching()
	logf(s.log, "baseline: all healthy after %.1fs; deleting its namespace", res.AllReadySeconds)
	writes, err := s.auditSince()
	if err != nil {
		return nil, err
	}
	res.Phase = phaseOf(writes.summary(), time.Since(start))
	res.Timeline, s.steps = s.steps.timeline(start), nil

	if err := s.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: baselineNS}}); err != nil {
		return nil, err
	}
	// The cluster's garbage collector and volume controllers take their time over thousands
	// of StatefulSets and claims: as long as the run's own timeout.
	err = poll(ctx, s.o.timeout, time.Second, func() (string, error) {
		switch err := s.c.Get(ctx, client.ObjectKey{Name: baselineNS}, &corev1.Namespace{}); {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return "", err
		}
		return "the baseline's namespace is still there", nil
	})
	if err != nil {
		return nil, err
	}
	// What deleting it wrote is not the next phase's.
	_, err = s.auditSince()
	return res, err
}

// watchBaseline starts a watch of each of the tracker's kinds in baselineNS, feeding every
// object it sees to the tracker, and returns once each has listed what exists.
func (s *runState) watchBaseline(ctx context.Context, tracker *healthTracker) error {
	c, err := cache.New(s.cfg, cache.Options{Scheme: s.c.Scheme(), DefaultNamespaces: map[string]cache.Config{baselineNS: {}}})
	if err != nil {
		return err
	}
	for _, gvk := range tracker.kinds() {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		inf, err := c.GetInformer(ctx, o)
		if err != nil {
			return err
		}
		see := func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				tracker.observe(u)
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    see,
			UpdateFunc: func(_, obj any) { see(obj) },
		}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the baseline's watches did not sync")
	}
	return nil
}

// healthTracker knows, for the objects it waits for, why each is not healthy by judge (the
// runtime's and provisioner's judgement) as last seen, or that it is.
type healthTracker struct {
	judge *health.Checker

	mu sync.Mutex
	// unhealthy holds, by kind and name, what keeps an object from being healthy: "" once it
	// was last seen healthy.
	unhealthy map[schema.GroupVersionKind]map[string]string
}

func newHealthTracker(objects []*unstructured.Unstructured, judge *health.Checker) *healthTracker {
	t := &healthTracker{judge: judge, unhealthy: map[schema.GroupVersionKind]map[string]string{}}
	for _, o := range objects {
		gvk := o.GroupVersionKind()
		if t.unhealthy[gvk] == nil {
			t.unhealthy[gvk] = map[string]string{}
		}
		t.unhealthy[gvk][o.GetName()] = "not seen yet"
	}
	return t
}

func (t *healthTracker) kinds() []schema.GroupVersionKind {
	return slices.SortedFunc(maps.Keys(t.unhealthy), func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
}

// observe judges o, if it is one of the objects waited for.
func (t *healthTracker) observe(o *unstructured.Unstructured) {
	gvk, name := o.GroupVersionKind(), o.GetName()
	why := ""
	if state, msg := t.judge.Judge(o); state != scorev1b1.HealthCurrent {
		why = fmt.Sprintf("%s %s", state, msg)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if names := t.unhealthy[gvk]; names != nil {
		if _, ok := names[name]; ok {
			names[name] = why
		}
	}
}

// waiting says how many objects are not healthy yet, with one of them, or "" when none is.
func (t *healthTracker) waiting() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	waiting, example := 0, ""
	for _, gvk := range t.kinds() {
		for name, why := range t.unhealthy[gvk] {
			if why == "" {
				continue
			}
			waiting++
			if example == "" {
				example = fmt.Sprintf("%s %s: %s", gvk.Kind, name, why)
			}
		}
	}
	if waiting > 0 {
		return fmt.Sprintf("the baseline: %d objects not healthy (%s)", waiting, example), nil
	}
	return "", nil
}
