// Package members is the member clusters as a controller that applies there sees them: per registered cluster a
// client, per namespace placed into there a cache of the controller's own objects (scoped to
// that namespace, where the identity has rights, and to the controller's identity label, as on
// the hub) with an applier whose watches bring the controller's objects back, and the result
// of the last probe. A registration is reconciled like any object: a new connection digest
// reconnects (credentials rotated without a restart), a deleted one lets the cluster go.
// Whether a cluster answers is probed every ProbeInterval — nothing on the hub changes when a
// remote API server stops answering, so no watch can tell — and a change calls Changed, which
// brings back the controller's objects placed there. The runtime and the provisioner each
// keep a pool; the runtime's publishes the clusters' status (clusters.StatusConfigMap).
//
// One member that does not answer costs the others nothing: a request to a member (not a
// watch) gets RequestTimeout; the first that gets no answer makes the member suspect, which
// ends every request in flight to it and refuses the next ones without sending them (Get
// says it does not answer, so the workers record that and return); only the probe contacts
// it then, and its answer (as many in a row as the member's strikes ask, guard.go) brings
// back what is placed there. A new namespace's watches sync off the workers
// (apply.Watcher.Synced).
package members

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apierror"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
)

// ProbeInterval is how often each member cluster's API server is asked whether it answers;
// ProbeTimeout how long an answer may take. RequestTimeout bounds any other request to a
// member (not its watches): the Kubernetes default of an admission webhook's timeout, so that
// a member whose webhook takes its time is not taken for one that does not answer. A request
// that gets no answer in that time makes the member suspect (Member.suspect): whatever is in
// flight to it ends at once, so a member that goes silent holds the workers that were talking
// to it at most RequestTimeout (or until the probe's verdict, if that comes first), once.
var (
	ProbeInterval  = 15 * time.Second
	ProbeTimeout   = 5 * time.Second
	RequestTimeout = 10 * time.Second
)

// ErrNotRegistered is a cluster that no registration names.
var ErrNotRegistered = errors.New("not registered")

// Pool is a controller's connections to the registered member clusters.
type Pool struct {
	// Name names the pool's registration controller ("cluster-runtime", ...).
	Name string
	// Namespace is the control plane's, where the registrations are.
	Namespace string
	// Hub is the hub's client: the status is written through it.
	Hub client.Client
	// HubReader reads the hub's namespaces, whose Pod Security labels a namespace created on
	// a member copies (the API server: read once per namespace placed); nil: Hub.
	HubReader client.Reader
	// HubConfig is the hub client's configuration: the member clients take its user agent
	// (the process's, which its requests to members carry too) and its client-side rate
	// limit. A member client left at client-go's default would wait for a token at 5
	// requests a second per kind — a lost member's clean-up at N=200 (2,200 deletions) took
	// 94.7 s that way; the member's API server's own fairness applies instead, as on the hub.
	HubConfig *rest.Config
	// Scope is the label the controller marks its objects with: each member's cache holds
	// those only.
	Scope string
	// NewApplier makes the applier of a namespace of a cluster, its watches in the
	// controller (ca is scoped to the namespace). Its watcher should have Synced set: bring
	// back what is placed in that namespace there.
	NewApplier func(cluster, namespace string, c client.Client, ca cache.Cache) *apply.Applier
	// Routes, when set, makes the watcher of the routes a dependency provisioned in a
	// namespace of a cluster (ca is scoped to the namespace and to RoutesScope, the
	// provisioner's mark): the runtime reads them into the Workload's endpoint, as on the hub.
	// Its watcher should have Synced set, as NewApplier's.
	Routes func(cluster, namespace string, ca cache.Cache) *apply.Watcher
	// RoutesScope is the label the objects Routes watches carry.
	RoutesScope string
	// Changed is called when a cluster starts or stops answering, or is let go of.
	Changed func(ctx context.Context, cluster string)
	// Publish writes the clusters' status into clusters.StatusConfigMap (the runtime's pool).
	Publish bool

	// status reads the published status from its own cache; registry the registrations.
	status, registry client.Reader

	ready chan struct{}
	ctx   context.Context

	mu     sync.Mutex
	byName map[string]*Member
	// publishing serialises publish: the members are probed concurrently.
	publishing sync.Mutex
}

// Member is one registered cluster.
type Member struct {
	Name   string
	Client client.Client

	digest string
	cfg    *rest.Config
	stop   context.CancelFunc
	// cacheCfg, cacheHTTP and cacheCtx make the member's caches: unbounded (a watch lasts),
	// running until the member is let go of.
	cacheCfg  *rest.Config
	cacheHTTP *http.Client
	cacheCtx  context.Context

	state sync.Mutex
	// status is the last probe's result, or that a request got no answer since; probed is set
	// once there was a probe.
	status clusters.Status
	probed bool
	// answering is the context of the requests to the member while it is not suspect: ended
	// (end) when it is, which ends them all.
	answering context.Context
	end       context.CancelFunc
	// suspected is called when a request makes the member suspect.
	suspected func()
	// strikes counts the suspicions since a request to the member last got an answer,
	// failure describes the last, answered counts the probes answered in a row since
	// (readmitProbes).
	strikes, answered int
	failure           string

	// hub reads the hub's namespaces.
	hub client.Reader
	// newApplier makes the applier of one namespace there; newRoutes the watcher of the
	// routes provisioned there (nil: none).
	newApplier func(namespace string) (*apply.Applier, error)
	newRoutes  func(namespace string) (*apply.Watcher, error)

	mu sync.Mutex
	// appliers are the namespaces' appliers, made on first use and kept while connected;
	// routes their watchers of provisioned routes, the same way.
	appliers map[string]*apply.Applier
	routes   map[string]*apply.Watcher
}

// Setup adds the registration controller and the members' lifetime to mgr.
func (p *Pool) Setup(mgr manager.Manager) error {
	p.ready = make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		p.ctx = ctx
		close(p.ready)
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	registry, err := NewCache(mgr, p.Namespace)
	if err != nil {
		return err
	}
	p.registry = registry
	if p.Publish {
		if p.status, err = NewStatusCache(mgr, p.Namespace); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(p.Name).
		WatchesRawSource(source.Kind[client.Object](registry, &corev1.Secret{}, &handler.EnqueueRequestForObject{})).
		// Each member is probed on its own: one that does not answer holds up no other's probe.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return p.reconcile(ctx, req.Name)
		}))
}

// reconcile connects to, probes or lets go of one registered cluster, publishes the status
// and calls Changed when whether it answers changed.
func (p *Pool) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	select {
	case <-p.ready:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	s := &corev1.Secret{}
	err := p.registry.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, s)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	if err != nil || !s.DeletionTimestamp.IsZero() {
		if p.forget(name) {
			ctrl.LoggerFrom(ctx).Info("Cluster unregistered", "cluster", name)
			p.Changed(ctx, name)
		}
		return reconcile.Result{}, p.publish(ctx)
	}
	mem := p.connect(ctx, s)
	status := probe(mem)
	status.Labels = clusters.Labels(s)
	before, now, first := mem.probedAs(status)
	if first || before.Reachable != now.Reachable {
		ctrl.LoggerFrom(ctx).Info("Cluster probed", "cluster", name, "reachable", now.Reachable, "message", now.Message)
		p.Changed(ctx, name)
	}
	return reconcile.Result{RequeueAfter: ProbeInterval}, p.publish(ctx)
}

// connect returns the cluster's member, reconnecting when its connection changed.
func (p *Pool) connect(ctx context.Context, s *corev1.Secret) *Member {
	digest := clusters.Digest(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.byName[s.Name]; old != nil && old.digest == digest {
		return old
	} else if old != nil {
		ctrl.LoggerFrom(ctx).Info("Cluster connection changed: reconnecting", "cluster", s.Name)
		old.stop()
	}
	hub := p.HubReader
	if hub == nil {
		hub = p.Hub
	}
	mem := &Member{Name: s.Name, digest: digest, stop: func() {}, hub: hub}
	mem.answering, mem.end = context.WithCancel(context.Background())
	// A suspicion brings back what is placed there, to say so, as the probe's verdict would.
	mem.suspected = func() { go p.Changed(p.ctx, s.Name) }
	if p.byName == nil {
		p.byName = map[string]*Member{}
	}
	p.byName[s.Name] = mem
	cfg, err := p.memberConfig(s)
	if err == nil {
		err = mem.start(p.ctx, cfg, p.Hub.Scheme(), p.Scope, p.NewApplier)
	}
	if err == nil && p.Routes != nil {
		mem.startRoutes(p.RoutesScope, p.Routes)
	}
	if err != nil {
		// registration.Config's errors carry no value of the registration; client-go's say which setting
		// failed (a certificate that does not parse).
		mem.state.Lock()
		mem.status.Message = "The registration cannot be used: " + err.Error()
		mem.state.Unlock()
	}
	return mem
}

// memberConfig is the connection to the cluster a registration names, with the hub client's
// user agent and client-side rate limit.
func (p *Pool) memberConfig(s *corev1.Secret) (*rest.Config, error) {
	cfg, err := registration.Config(s)
	if err != nil || p.HubConfig == nil {
		return cfg, err
	}
	cfg.UserAgent, cfg.QPS, cfg.Burst = p.HubConfig.UserAgent, p.HubConfig.QPS, p.HubConfig.Burst
	return cfg, nil
}

// start makes the member's client and the way to make a namespace's applier; their caches
// run until ctx ends or the member is let go. The client's requests, the discovery of its
// kinds included, are bounded by RequestTimeout and go through the member's guard; the
// caches' lists and watches are not bounded (a watch lasts).
func (mem *Member) start(ctx context.Context, cfg *rest.Config, scheme *kruntime.Scheme, scope string, newApplier func(string, string, client.Client, cache.Cache) *apply.Applier) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	bounded := rest.CopyConfig(cfg)
	bounded.Timeout = RequestTimeout
	boundedHTTP, err := rest.HTTPClientFor(bounded)
	if err != nil {
		return err
	}
	boundedHTTP.Transport = &guard{next: boundedHTTP.Transport, mem: mem}
	mapper, err := apiutil.NewDynamicRESTMapper(bounded, boundedHTTP)
	if err != nil {
		return err
	}
	c, err := client.New(bounded, client.Options{HTTPClient: boundedHTTP, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	mem.newApplier = func(namespace string) (*apply.Applier, error) {
		// One namespace's cache: a list or watch across the cluster, whatever its label
		// selector, reads every object of the kind (every Secret), and the identity has no
		// right to it.
		ca, err := cache.New(cfg, cache.Options{HTTPClient: httpClient, Scheme: scheme, Mapper: mapper,
			DefaultNamespaces:    map[string]cache.Config{namespace: {}},
			DefaultLabelSelector: caches.OwnLabelSelector(scope), DefaultTransform: cache.TransformStripManagedFields()})
		if err != nil {
			return nil, fmt.Errorf("the cache of namespace %s on cluster %s: %w", namespace, mem.Name, err)
		}
		go func() { _ = ca.Start(cctx) }()
		return newApplier(mem.Name, namespace, c, ca), nil
	}
	mem.cfg, mem.Client, mem.stop = cfg, c, cancel
	mem.cacheCfg, mem.cacheHTTP, mem.cacheCtx = cfg, httpClient, cctx
	return nil
}

// startRoutes sets up the way to make a namespace's watcher of provisioned routes: a cache of
// its own per namespace, scoped to scope (the provisioner's mark, not the runtime's), started
// with the member's other caches.
func (mem *Member) startRoutes(scope string, newRoutes func(string, string, cache.Cache) *apply.Watcher) {
	cfg, scheme, mapper, cctx := mem.cacheCfg, mem.Client.Scheme(), mem.Client.RESTMapper(), mem.cacheCtx
	mem.newRoutes = func(namespace string) (*apply.Watcher, error) {
		ca, err := cache.New(cfg, cache.Options{HTTPClient: mem.cacheHTTP, Scheme: scheme, Mapper: mapper,
			DefaultNamespaces:    map[string]cache.Config{namespace: {}},
			DefaultLabelSelector: caches.OwnLabelSelector(scope), DefaultTransform: cache.TransformStripManagedFields()})
		if err != nil {
			return nil, fmt.Errorf("the cache of routes in namespace %s on cluster %s: %w", namespace, mem.Name, err)
		}
		go func() { _ = ca.Start(cctx) }()
		return newRoutes(mem.Name, namespace, ca), nil
	}
}

// routesIn returns the watcher of the routes provisioned in a namespace of the member, nil
// when the pool watches none.
func (mem *Member) routesIn(namespace string) (*apply.Watcher, error) {
	if mem.newRoutes == nil {
		return nil, nil
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return madeOnce(&mem.routes, namespace, mem.newRoutes)
}

// applierIn returns the applier of a namespace of the member.
func (mem *Member) applierIn(namespace string) (*apply.Applier, error) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return madeOnce(&mem.appliers, namespace, mem.newApplier)
}

// madeOnce returns the namespace's entry of *made, making it with newOne and keeping it there
// the first time it is asked for (a failed newOne keeps nothing, so the next ask tries again).
// The caller holds the lock that guards *made.
func madeOnce[T comparable](made *map[string]T, namespace string, newOne func(string) (T, error)) (T, error) {
	var none T
	if v := (*made)[namespace]; v != none {
		return v, nil
	}
	v, err := newOne(namespace)
	if err != nil {
		return none, err
	}
	if *made == nil {
		*made = map[string]T{}
	}
	(*made)[namespace] = v
	return v, nil
}

// probe asks the cluster's API server for its version.
func probe(mem *Member) clusters.Status {
	if mem.Client == nil {
		st, _ := mem.Status()
		return clusters.Status{Message: st.Message}
	}
	cfg := rest.CopyConfig(mem.cfg)
	cfg.Timeout = ProbeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err == nil {
		v, verr := dc.ServerVersion()
		if verr == nil {
			return clusters.Status{Reachable: true, Version: v.GitVersion}
		}
		err = verr
	}
	var status apierrors.APIStatus
	switch {
	case apierrors.IsUnauthorized(err):
		return clusters.Status{Message: "The API server refuses the registration's credentials (expired or revoked): rotate them with scorectl cluster add."}
	case errors.As(err, &status):
		return clusters.Status{Message: "The API server answers " + describe(err) + "."}
	}
	return clusters.Status{Message: "The API server does not answer: " + describe(err) + "."}
}

// describe says why a request to a member failed, for score-clusters and the plans: the kind
// of failure, never the server's answer (which may echo what was sent, a credential
// included) nor the request's URL.
func describe(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		return fmt.Sprintf("%d %s", code, http.StatusText(code))
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

// forget lets go of a cluster no longer registered; it reports whether it was known.
func (p *Pool) forget(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	mem := p.byName[name]
	if mem == nil {
		return false
	}
	mem.stop()
	delete(p.byName, name)
	return true
}

// Get returns a registered cluster that answers: ErrNotRegistered, or an error saying why it
// does not answer.
func (p *Pool) Get(name string) (*Member, error) {
	if p == nil || p.NewApplier == nil {
		return nil, fmt.Errorf("cluster %s is %w: this controller applies on the hub only (no control-plane namespace)", name, ErrNotRegistered)
	}
	p.mu.Lock()
	mem := p.byName[name]
	connected := mem != nil && mem.Client != nil
	p.mu.Unlock()
	if mem == nil {
		return nil, fmt.Errorf("cluster %s is %w", name, ErrNotRegistered)
	}
	if st, _ := mem.Status(); !st.Reachable || !connected {
		return nil, fmt.Errorf("cluster %s does not answer: %s", name, st.Message)
	}
	return mem, nil
}

// Pending reports whether a cluster is registered and not probed yet (the process has just
// started): what is placed there waits for the first probe, which brings it back, rather than
// report it unreachable for a moment (a restart writes nothing).
func (p *Pool) Pending(ctx context.Context, name string) bool {
	if p == nil || p.registry == nil {
		return false
	}
	p.mu.Lock()
	mem := p.byName[name]
	p.mu.Unlock()
	if mem != nil {
		if _, probed := mem.Status(); probed {
			return false
		}
	}
	return p.registry.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, &corev1.Secret{}) == nil
}

// Failed records a failed request to the cluster: one that got no answer (Unanswered: a 503
// or 504 too, which the guard does not see) makes it suspect until the next probe says
// whether it answers again, and is reported true.
func (p *Pool) Failed(mem *Member, namespace string, err error) bool {
	mem.forget(namespace) // it, or the identity's rights there, may be what is missing
	if !apierror.Unanswered(err) {
		return false
	}
	mem.suspect(err)
	return true
}

// publish writes the clusters' status into the ConfigMap score-clusters, when it changed: since
// when each has (not) answered only when that changes (placement's failover counts from it).
// Every registration is listed: one this process has not probed yet (it has just started) keeps what
// was published for it, with its current labels, so that placement never sees a registered
// cluster vanish and move Workloads off it.
func (p *Pool) publish(ctx context.Context) error {
	if !p.Publish {
		return nil
	}
	p.publishing.Lock()
	defer p.publishing.Unlock()
	cm := &corev1.ConfigMap{}
	err := p.status.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: clusters.StatusConfigMap}, cm)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	published := clusters.Decode(cm)
	var registrations corev1.SecretList
	if err := p.registry.List(ctx, &registrations, client.InNamespace(p.Namespace)); err != nil {
		return err
	}
	statuses := make(map[string]clusters.Status, len(registrations.Items))
	p.mu.Lock()
	for _, s := range registrations.Items {
		if !s.DeletionTimestamp.IsZero() {
			continue
		}
		st, ok := published[s.Name]
		if !ok {
			st = clusters.Status{Message: "Not probed yet."}
		}
		if mem := p.byName[s.Name]; mem != nil {
			if status, probed := mem.Status(); probed {
				st = status
			}
		}
		// Since when it has (not) answered is what was published while that holds: a restart,
		// or a suspicion the probe did not confirm, starts no new period.
		if old, ok := published[s.Name]; ok && old.Since != nil && old.Reachable == st.Reachable {
			st.Since = old.Since
		}
		st.Labels = clusters.Labels(&s)
		statuses[s.Name] = st
	}
	p.mu.Unlock()
	data := clusters.Encode(statuses)
	if err == nil && maps.Equal(cm.Data, data) {
		return nil
	}
	want := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: clusters.StatusConfigMap}, Data: data}
	return p.Hub.Patch(ctx, want, client.Apply, client.FieldOwner(scorev1b1.FieldManagerRuntime), client.ForceOwnership)
}

// PodSecurityLabels are the Pod Security admission labels (pod-security.kubernetes.io/*) of
// labels.
func PodSecurityLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if strings.HasPrefix(k, "pod-security.kubernetes.io/") {
			out[k] = v
		}
	}
	return out
}

// NewCache is a cache of the registration Secrets of namespace, added to mgr (synced before
// its controllers start): the runtime's, which connects to the clusters.
func NewCache(mgr manager.Manager, namespace string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultLabelSelector: clusters.Selector,
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("the cache of cluster registrations: %w", err)
	}
	return c, caches.AddCache(mgr, c)
}

// NewStatusCache is a cache, added to mgr, of the one ConfigMap clusters.StatusConfigMap in namespace:
// reading it through the manager's cache would have that cache hold every ConfigMap of the
// cluster.
func NewStatusCache(mgr manager.Manager, namespace string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", clusters.StatusConfigMap),
		}},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("the cache of the clusters' status: %w", err)
	}
	return c, caches.AddCache(mgr, c)
}
