package dockerruntime

import (
	"context"
	"errors"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	changed, services := make(chan event.GenericEvent, 64), make(chan event.GenericEvent, 64)
	if err := mgr.Add(manager(func(ctx context.Context) error { r.follow(ctx, changed, services); return nil })); err != nil {
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
	// A fragment Secret brings its namespace's services back, and the plans that depend on it.
	fragment := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[scorev1b1.LabelComposeFragment] == "true" })
	err := ctrl.NewControllerManagedBy(mgr).
		Named("docker-runtime").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Concurrency, 1)}).
		For(&scorev1b1.WorkloadPlan{}, builder.WithPredicates(serves)).
		Watches(&scorev1b1.WorkloadExposure{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(docker)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.plansOf), builder.WithPredicates(fragment)).
		WatchesRawSource(source.Channel(changed, &handler.EnqueueRequestForObject{})).
		Complete(r)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("docker-services").
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(namespaceOf), builder.WithPredicates(fragment)).
		WatchesRawSource(source.Channel(services, handler.EnqueueRequestsFromMapFunc(namespaceOf))).
		Complete(Services{r})
}

// namespaceOf is the request of an object's namespace's services.
func namespaceOf(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace()}}}
}

// plansOf are the plans of an object's namespace this agent serves.
func (r *Reconciler) plansOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if r.Serves(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// CacheOptions are the agent's cache: the namespaces it serves (all when none is named),
// and of the Secrets the Compose fragments alone (outputs Secrets are read when a plan needs
// them).
func CacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{scorev1b1.LabelComposeFragment: "true"})},
	}}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// manager runs a function as a manager's runnable.
type manager func(ctx context.Context) error

func (m manager) Start(ctx context.Context) error { return m(ctx) }

// follow passes the host's events about the agent's containers on as their plans, or, for
// a service's, as its namespace (whose services and plans it brings back), and follows again
// (after a second) when the Engine's stream ends.
func (r *Reconciler) follow(ctx context.Context, changed, services chan<- event.GenericEvent) {
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", LabelHost+"="+r.Host))
	for _, action := range []events.Action{events.ActionStart, events.ActionDie, events.ActionDestroy, events.ActionOOM, events.ActionRestart, "health_status"} {
		f.Add("event", string(action))
	}
	r.servicesOnHost(ctx, services)
	for ctx.Err() == nil {
		messages, errs := r.Docker.Events(ctx, events.ListOptions{Filters: f})
	stream:
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-messages:
				ns, name := m.Actor.Attributes[LabelNamespace], m.Actor.Attributes[LabelPlan]
				var events []event.GenericEvent
				var to chan<- event.GenericEvent
				switch {
				case ns != "" && name != "":
					plan := &scorev1b1.WorkloadPlan{}
					plan.Namespace, plan.Name = ns, name
					events, to = []event.GenericEvent{{Object: plan}}, changed
				case ns != "" && m.Actor.Attributes[LabelService] != "":
					secret := &corev1.Secret{}
					secret.Namespace = ns
					events, to = []event.GenericEvent{{Object: secret}}, services
					for _, req := range r.plansOf(ctx, secret) {
						plan := &scorev1b1.WorkloadPlan{}
						plan.Namespace, plan.Name = req.Namespace, req.Name
						events = append(events, event.GenericEvent{Object: plan})
					}
				}
				for i, e := range events {
					ch := to
					if i > 0 {
						ch = changed
					}
					select {
					case ch <- e:
					case <-ctx.Done():
						return
					}
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

// servicesOnHost brings back, once at the start, the namespaces with services or volumes on
// the host: their fragments may have gone while the agent did not run, with no event left to
// tell.
func (r *Reconciler) servicesOnHost(ctx context.Context, services chan<- event.GenericEvent) {
	seen := map[string]bool{}
	mine := filters.NewArgs(filters.Arg("label", LabelHost+"="+r.Host), filters.Arg("label", LabelService))
	containers, err := r.Docker.ContainerList(ctx, container.ListOptions{All: true, Filters: mine})
	if err == nil {
		for _, c := range containers {
			seen[c.Labels[LabelNamespace]] = true
		}
	}
	volumes, verr := r.Docker.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelHost+"="+r.Host), filters.Arg("label", LabelVolume))})
	if verr == nil {
		for _, v := range volumes.Volumes {
			seen[v.Labels[LabelNamespace]] = true
		}
	}
	if err = errors.Join(err, verr); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the host's Compose services at the start")
	}
	for ns := range seen {
		secret := &corev1.Secret{}
		secret.Namespace = ns
		select {
		case services <- event.GenericEvent{Object: secret}:
		case <-ctx.Done():
			return
		}
	}
}

var _ reconcile.Reconciler = &Reconciler{}
