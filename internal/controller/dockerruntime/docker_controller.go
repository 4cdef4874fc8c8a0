// Package dockerruntime is the Docker runtime: an agent on a Docker host that runs the plans
// of class docker placed on it. Per plan it runs one set of containers (internal/rendering/
// compose), the first of which holds the network namespace the others join and publishes the
// Workload's ports on the host's address, as score-compose does; it judges their health
// itself and reports through the same plan and exposure status as the Kubernetes runtime
// (plandecision, unchanged). An update starts the new set beside the old, and removes the old
// once the new is healthy.
package dockerruntime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/statuspatch"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/exposure"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/compose"
	"github.com/score-orchestrator/score-orchestrator/internal/status/plandecision"
)

// Reconciler runs the docker plans placed on one host.
type Reconciler struct {
	// Client reads plans and exposures from the hub and writes their status; Secrets reads the
	// outputs Secrets (uncached: the agent lists no Secrets).
	Client  client.Client
	Secrets client.Reader
	// Docker is the host's Docker Engine.
	Docker Engine
	// Host names the host: the plans it serves are those placed on it (spec.cluster), and,
	// when Unplaced, those placed on no host.
	Host     string
	Unplaced bool
	// Address is the host address the Workloads' ports are published on, and their endpoints
	// name (the platform's: an address of the host its users reach).
	Address string
	// Scope is the scope of the endpoints published (VPC unless the platform says).
	Scope scorev1b1.ExposureScope
	// Probe makes the readiness probes' requests.
	Probe *http.Client
	// ProbeEvery is how soon a container that is not ready yet is probed again.
	ProbeEvery time.Duration
	// Concurrency is how many plans are reconciled at once.
	Concurrency int
	// Images are the platform's aliases of images: a Workload's image named here runs as the
	// image it maps to (a host's local copy of an image it cannot pull).
	Images map[string]string

	// networks serialises the making of the namespaces' networks.
	networks sync.Mutex
}

// The agent's defaults: a container not ready yet is probed again after a second (as a
// Compose healthcheck of interval 1s), and four plans are reconciled at once.
const (
	DefaultProbeEvery  = time.Second
	DefaultConcurrency = 4
)

// Serves reports whether a plan is this agent's: of class docker, placed on its host.
func (r *Reconciler) Serves(p *scorev1b1.WorkloadPlan) bool {
	return p.Spec.RuntimeClass == scorev1b1.RuntimeClassDocker &&
		(p.Spec.Cluster == r.Host || p.Spec.Cluster == "" && r.Unplaced)
}

// Finalizer is the finalizer the agent of a host holds on the plans it runs containers for.
func (r *Reconciler) Finalizer() string { return hosts.Finalizer(r.Host) }

// Holds reports whether the agent holds the plan: it ran containers for it.
func (r *Reconciler) Holds(p *scorev1b1.WorkloadPlan) bool {
	return controllerutil.ContainsFinalizer(p, r.Finalizer())
}

// Reconcile runs one plan's containers and reports how they are. A plan the agent holds and
// no longer serves (its Workload moved to another runtime) has its containers removed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &scorev1b1.WorkloadPlan{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() || !r.Serves(p) {
		return ctrl.Result{}, r.release(ctx, p)
	}
	patch := statuspatch.Begin(p)
	ps := r.observe(ctx, p)
	d := plandecision.From(ps.Observed)
	requeue := d.RequeueAfter
	if ps.probing && (requeue == 0 || requeue > r.ProbeEvery) {
		requeue = r.ProbeEvery
	}
	return ctrl.Result{RequeueAfter: requeue}, r.write(ctx, patch, ps, d)
}

// pass is one reconcile of a plan: what it read and did.
type pass struct {
	plandecision.Observed
	exposure *scorev1b1.WorkloadExposure
	// probing is a container of the plan's version waiting for its readiness probe: probed
	// again in ProbeEvery (a probe has no event to wait for).
	probing bool
}

func (ps *pass) stop(step plandecision.Step, err error) *pass {
	ps.Stopped, ps.Err = step, err
	return ps
}

// observe holds the plan, builds its project, runs its version's containers, judges them and
// derives the endpoints.
func (r *Reconciler) observe(ctx context.Context, p *scorev1b1.WorkloadPlan) *pass {
	ps := &pass{Observed: plandecision.Observed{Plan: p, Now: time.Now(), Cluster: p.Spec.Cluster}}
	project, err := compose.FromPlan(p.Spec.WorkloadRef.Name, &p.Spec, r.secretValue(ctx, p))
	var missing *missingOutputs
	switch {
	case errors.As(err, &missing):
		return ps.stop(plandecision.Outputs, err)
	case err != nil:
		return ps.stop(plandecision.Render, err)
	}
	project.Alias(r.Images)
	if err := r.hold(ctx, p); err != nil {
		return ps.stop(plandecision.Hold, err)
	}
	sets, err := r.sets(ctx, p)
	if err != nil {
		return ps.stop(plandecision.Apply, err)
	}
	current := sets[project.Hash]
	changed, err := r.run(ctx, p, project, current)
	if err != nil {
		return ps.stop(plandecision.Apply, err)
	}
	if changed {
		// What run created or started is read again, with its state and ports; a pass that
		// changed nothing judges what it listed.
		if current, err = r.set(ctx, p, project.Hash); err != nil {
			return ps.stop(plandecision.Apply, err)
		}
	}
	judged := r.judge(ctx, project, current)
	deps, err := r.dependencies(ctx, p)
	if err != nil {
		return ps.stop(plandecision.Apply, err)
	}
	ps.Applied = append(judged.objects(p.Spec.Cluster), deps...)
	ps.probing = judged.probing
	serving := judged.ready
	var older []*set
	for hash, s := range sets {
		if hash != project.Hash {
			older = append(older, s)
		}
	}
	if !judged.ready {
		serving = anyServing(older)
	}
	ps.Serves = &serving
	if judged.ready {
		// The new version serves: the older ones go.
		for _, s := range older {
			if err := r.remove(ctx, s); err != nil {
				return ps.stop(plandecision.Settle, err)
			}
		}
	}
	r.readExposure(ctx, ps, r.endpointsOf(judged, older))
	return ps
}

// write records the pass: the exposure's status and the plan's, each only when it changed.
func (r *Reconciler) write(ctx context.Context, patch *statuspatch.Patch, ps *pass, d plandecision.Decision) error {
	var exposureErr error
	if d.Exposure != nil && ps.exposure != nil {
		ep := statuspatch.Begin(ps.exposure)
		ps.exposure.Status = *d.Exposure
		_, exposureErr = ep.Finish(ctx, r.Client, nil)
	}
	patch.Rebase()
	ps.Plan.Status = d.Status
	_, err := patch.Finish(ctx, r.Client, nil)
	return errors.Join(d.Retry, exposureErr, err)
}

// hold adds the host's finalizer to the plan before any container runs: containers are not
// objects of the API server, and only the agent removes them.
func (r *Reconciler) hold(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if r.Holds(p) {
		return nil
	}
	before := p.DeepCopy()
	controllerutil.AddFinalizer(p, r.Finalizer())
	return r.Client.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// release removes every container of a plan being deleted, or no longer served, then the
// host's finalizer.
func (r *Reconciler) release(ctx context.Context, p *scorev1b1.WorkloadPlan) error {
	if !r.Holds(p) {
		return nil
	}
	sets, err := r.sets(ctx, p)
	if err != nil {
		return err
	}
	for _, s := range sets {
		if err := r.remove(ctx, s); err != nil {
			return err
		}
	}
	before := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, r.Finalizer())
	// At the version read: the list of finalizers is written whole, and another runtime may
	// have added its own since. A conflict is the cache behind the plan: the newer version's
	// event brings the plan back, without the backoff a plan that failed before has piled up.
	err = r.Client.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return nil
	}
	return client.IgnoreNotFound(err)
}

// missingOutputs is an outputs Secret, or a key of it, not there yet.
type missingOutputs struct{ err error }

func (m *missingOutputs) Error() string { return m.err.Error() }
func (m *missingOutputs) Unwrap() error { return m.err }

// secretValue reads a secret output from its claim's outputs Secret.
func (r *Reconciler) secretValue(ctx context.Context, p *scorev1b1.WorkloadPlan) compose.SecretValue {
	return func(ref scorev1b1.OutputRef) (string, error) {
		for _, c := range p.Spec.Claims {
			if c.Key != ref.ClaimKey {
				continue
			}
			s := &corev1.Secret{}
			if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}, s); err != nil {
				return "", &missingOutputs{fmt.Errorf("reading the outputs of %s: %w", ref.ClaimKey, err)}
			}
			v, ok := s.Data[ref.OutputKey]
			if !ok {
				return "", &missingOutputs{fmt.Errorf("the outputs of %s have no %s", ref.ClaimKey, ref.OutputKey)}
			}
			return string(v), nil
		}
		return "", fmt.Errorf("no claim %s in the plan", ref.ClaimKey)
	}
}

// readExposure reads the Workload's exposure (named like the plan) with the endpoints the
// pass derived. An exposure not registered yet, or another Workload's, is left alone.
func (r *Reconciler) readExposure(ctx context.Context, ps *pass, endpoints []scorev1b1.Exposure) {
	p := ps.Plan
	e := &scorev1b1.WorkloadExposure{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, e); err != nil {
		ps.ExposureErr = client.IgnoreNotFound(err)
		return
	}
	if e.Spec.WorkloadRef.UID != p.Spec.WorkloadRef.UID {
		return
	}
	ps.exposure = e
	ps.Exposure = &plandecision.Exposure{Status: e.Status, Endpoints: exposure.Result{Exposures: r.scoped(endpoints)}}
}

func (r *Reconciler) scoped(endpoints []scorev1b1.Exposure) []scorev1b1.Exposure {
	for i := range endpoints {
		endpoints[i].Scope = r.Scope
	}
	return endpoints
}
