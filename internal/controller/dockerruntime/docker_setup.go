package dockerruntime

import (
	"context"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// SetupWithManager watches the plans this agent serves, their exposures, and the host's
// Docker events for the agent's containers (a container that starts, exits or is removed
// brings its plan back): no polling, except a readiness probe not answered yet.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	changed := make(chan event.GenericEvent, 64)
	if err := mgr.Add(manager(func(ctx context.Context) error { r.follow(ctx, changed); return nil })); err != nil {
		return err
	}
	if err := mgr.Add(manager(func(ctx context.Context) error { r.renew(ctx); return nil })); err != nil {
		return err
	}
	serves := predicate.NewPredicateFuncs(func(o client.Object) bool {
		p, ok := o.(*scorev1b1.WorkloadPlan)
		return ok && (r.Serves(p) || r.Holds(p))
	})
	docker := predicate.NewPredicateFuncs(func(o client.Object) bool {
		e, ok := o.(*scorev1b1.WorkloadExposure)
		return ok && e.Spec.RuntimeClass == scorev1b1.RuntimeClassDocker
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("docker-runtime").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Concurrency, 1)}).
		For(&scorev1b1.WorkloadPlan{}, builder.WithPredicates(serves)).
		Watches(&scorev1b1.WorkloadExposure{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(docker)).
		WatchesRawSource(source.Channel(changed, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// manager runs a function as a manager's runnable.
type manager func(ctx context.Context) error

func (m manager) Start(ctx context.Context) error { return m(ctx) }

// follow passes the host's events about the agent's containers on as their plans, and
// follows again (after a second) when the Engine's stream ends.
func (r *Reconciler) follow(ctx context.Context, changed chan<- event.GenericEvent) {
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", LabelHost+"="+r.Host))
	for _, action := range []events.Action{events.ActionStart, events.ActionDie, events.ActionDestroy, events.ActionOOM, events.ActionRestart} {
		f.Add("event", string(action))
	}
	for ctx.Err() == nil {
		messages, errs := r.Docker.Events(ctx, events.ListOptions{Filters: f})
	stream:
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-messages:
				ns, name := m.Actor.Attributes[LabelNamespace], m.Actor.Attributes[LabelPlan]
				if ns == "" || name == "" {
					continue
				}
				plan := &scorev1b1.WorkloadPlan{}
				plan.Namespace, plan.Name = ns, name
				select {
				case changed <- event.GenericEvent{Object: plan}:
				case <-ctx.Done():
					return
				}
			case err := <-errs:
				ctrl.LoggerFrom(ctx).Info("The Docker events stream ended; following again", "error", err.Error())
				break stream
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

var _ reconcile.Reconciler = &Reconciler{}
