package runtime

// The member clusters: a plan whose spec.cluster names a registered cluster is applied there.
// Per cluster the runtime keeps a client, a cache of its own objects there (the Workload
// label, as on the hub), an applier whose watches bring the plans back, and the result of the
// last probe. A registration (clusters package) is reconciled like any object: a new
// connection digest reconnects (credentials rotated without a restart), a deleted one lets
// the cluster go. Whether a cluster answers is probed every ProbeInterval — nothing on the hub
// changes when a remote API server stops answering, so no watch can tell — and a change
// brings back the plans placed there. The clusters' status is published in the ConfigMap
// score-clusters for placement and `scorectl cluster list`.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/clusters"
)

// ProbeInterval is how often each member cluster's API server is asked whether it answers;
// ProbeTimeout how long an answer may take.
var (
	ProbeInterval = 15 * time.Second
	ProbeTimeout  = 5 * time.Second
)

// requestTimeout bounds a request of the runtime to a member (not its watches): a member that
// stops answering holds a pass at most that long.
const requestTimeout = 30 * time.Second

// indexCluster indexes plans by the member clusters they are placed on or still hold objects
// on.
const indexCluster = "score.dev/cluster"

// errNotRegistered is a plan's cluster that no registration names.
var errNotRegistered = errors.New("not registered")

// members are the registered clusters.
type members struct {
	namespace string
	hub       client.Client
	// userAgent is the process's, which the runtime's requests to members carry too.
	userAgent string
	// status reads the published status (clusters.StatusConfigMap) from its own cache;
	// registry the registrations.
	status, registry client.Reader
	// newApplier makes a cluster's applier, its watches in the plan controller.
	newApplier func(client.Client, cache.Cache) *apply.Applier
	// changed brings plans back (the cluster's reachability changed).
	changed chan event.GenericEvent

	ready chan struct{}
	ctx   context.Context

	mu     sync.Mutex
	byName map[string]*member
}

// member is one registered cluster.
type member struct {
	name, digest string
	labels       map[string]string
	cfg          *rest.Config
	client       client.Client
	applier      *apply.Applier
	stop         context.CancelFunc
	// status is the last probe's result; probed is set once there was one.
	status clusters.Status
	probed bool
	// namespaces holds the namespaces known to exist there.
	namespaces sync.Map
}

// setup adds the registration controller and the members' lifetime to mgr.
func (m *members) setup(mgr ctrl.Manager) error {
	m.ready = make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		m.ctx = ctx
		close(m.ready)
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	registry, err := clusters.NewCache(mgr, m.namespace)
	if err != nil {
		return err
	}
	m.registry = registry
	if m.status, err = clusters.NewStatusCache(mgr, m.namespace); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		WatchesRawSource(source.Kind[client.Object](registry, &corev1.Secret{}, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return m.reconcile(ctx, req.Name)
		}))
}

// reconcile connects to, probes or lets go of one registered cluster, publishes the status
// and brings back the plans placed there when whether it answers changed.
func (m *members) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	select {
	case <-m.ready:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	s := &corev1.Secret{}
	err := m.registry.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: name}, s)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	if err != nil || !s.DeletionTimestamp.IsZero() {
		if m.forget(name) {
			ctrl.LoggerFrom(ctx).Info("Cluster unregistered", "cluster", name)
			m.bringBack(ctx, name)
		}
		return reconcile.Result{}, m.publish(ctx)
	}
	mem := m.connect(ctx, s)
	status := probe(ctx, mem)
	status.Labels = clusters.Labels(s)
	m.mu.Lock()
	before, first := mem.status, !mem.probed
	mem.status, mem.probed = status, true
	m.mu.Unlock()
	if first || before.Reachable != status.Reachable {
		ctrl.LoggerFrom(ctx).Info("Cluster probed", "cluster", name, "reachable", status.Reachable, "message", status.Message)
		m.bringBack(ctx, name)
	}
	return reconcile.Result{RequeueAfter: ProbeInterval}, m.publish(ctx)
}

// connect returns the cluster's member, reconnecting when its connection changed.
func (m *members) connect(ctx context.Context, s *corev1.Secret) *member {
	digest := clusters.Digest(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.byName[s.Name]; old != nil && old.digest == digest {
		return old
	} else if old != nil {
		ctrl.LoggerFrom(ctx).Info("Cluster connection changed: reconnecting", "cluster", s.Name)
		old.stop()
	}
	mem := &member{name: s.Name, digest: digest, stop: func() {}}
	if m.byName == nil {
		m.byName = map[string]*member{}
	}
	m.byName[s.Name] = mem
	cfg, err := clusters.Config(s)
	if err == nil {
		cfg.UserAgent = m.userAgent
		err = mem.start(m.ctx, cfg, m.hub.Scheme(), m.newApplier)
	}
	if err != nil {
		mem.status.Message = "The registration cannot be used: " + err.Error()
	}
	return mem
}

// start makes the member's client, cache and applier; the cache runs until ctx ends or the
// member is let go.
func (mem *member) start(ctx context.Context, cfg *rest.Config, scheme *kruntime.Scheme, newApplier func(client.Client, cache.Cache) *apply.Applier) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return err
	}
	bounded := rest.CopyConfig(cfg)
	bounded.Timeout = requestTimeout
	boundedHTTP, err := rest.HTTPClientFor(bounded)
	if err != nil {
		return err
	}
	c, err := client.New(bounded, client.Options{HTTPClient: boundedHTTP, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return err
	}
	ca, err := cache.New(cfg, cache.Options{HTTPClient: httpClient, Scheme: scheme, Mapper: mapper,
		DefaultLabelSelector: apply.OwnLabelSelector(scorev1b1.LabelWorkload), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { _ = ca.Start(cctx) }()
	mem.cfg, mem.client, mem.stop = cfg, c, cancel
	mem.applier = newApplier(c, ca)
	return nil
}

// probe asks the cluster's API server for its version.
func probe(ctx context.Context, mem *member) clusters.Status {
	if mem.client == nil {
		return clusters.Status{Message: mem.status.Message}
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
	return clusters.Status{Message: "The API server does not answer: " + err.Error()}
}

// forget lets go of a cluster no longer registered; it reports whether it was known.
func (m *members) forget(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.byName[name]
	if mem == nil {
		return false
	}
	mem.stop()
	delete(m.byName, name)
	return true
}

// get returns a registered cluster that answers: errNotRegistered, or an error saying why it
// does not answer.
func (m *members) get(name string) (*member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.byName[name]
	switch {
	case mem == nil:
		return nil, fmt.Errorf("cluster %s is %w", name, errNotRegistered)
	case !mem.status.Reachable || mem.applier == nil:
		return nil, fmt.Errorf("cluster %s does not answer: %s", name, mem.status.Message)
	}
	return mem, nil
}

// pending reports whether a cluster is registered and not probed yet (the process has just
// started): its plans wait for the first probe, which brings them back, rather than report it
// unreachable for a moment (a restart writes nothing).
func (m *members) pending(ctx context.Context, name string) bool {
	if m == nil || m.registry == nil {
		return false
	}
	m.mu.Lock()
	mem := m.byName[name]
	probed := mem != nil && mem.probed
	m.mu.Unlock()
	if probed {
		return false
	}
	return m.registry.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: name}, &corev1.Secret{}) == nil
}

// markUnreachable records that a request to the cluster failed for want of an answer; the
// next probe says whether it answers again.
func (m *members) markUnreachable(name string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mem := m.byName[name]; mem != nil && mem.status.Reachable {
		mem.status.Reachable, mem.status.Message = false, "A request failed: "+err.Error()
	}
}

// bringBack enqueues the plans placed on, or holding objects on, a cluster.
func (m *members) bringBack(ctx context.Context, name string) {
	var plans scorev1b1.WorkloadPlanList
	if err := m.hub.List(ctx, &plans, client.MatchingFields{indexCluster: name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the plans of a cluster", "cluster", name)
		return
	}
	for i := range plans.Items {
		select {
		case m.changed <- event.GenericEvent{Object: &plans.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}

// publish writes the clusters' status into the ConfigMap score-clusters, when it changed. Every
// registration is listed: one this process has not probed yet (it has just started) keeps what
// was published for it, with its current labels, so that placement never sees a registered
// cluster vanish and move Workloads off it.
func (m *members) publish(ctx context.Context) error {
	cm := &corev1.ConfigMap{}
	err := m.status.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: clusters.StatusConfigMap}, cm)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	published := clusters.Decode(cm)
	var registrations corev1.SecretList
	if err := m.registry.List(ctx, &registrations, client.InNamespace(m.namespace)); err != nil {
		return err
	}
	statuses := make(map[string]clusters.Status, len(registrations.Items))
	m.mu.Lock()
	for _, s := range registrations.Items {
		if !s.DeletionTimestamp.IsZero() {
			continue
		}
		st, ok := published[s.Name]
		if !ok {
			st = clusters.Status{Message: "Not probed yet."}
		}
		if mem := m.byName[s.Name]; mem != nil && mem.probed {
			st = mem.status
		}
		st.Labels = clusters.Labels(&s)
		statuses[s.Name] = st
	}
	m.mu.Unlock()
	data := clusters.Encode(statuses)
	if err == nil && maps.Equal(cm.Data, data) {
		return nil
	}
	want := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: m.namespace, Name: clusters.StatusConfigMap}, Data: data}
	return m.hub.Patch(ctx, want, client.Apply, client.FieldOwner(scorev1b1.FieldManagerRuntime), client.ForceOwnership)
}

// ensureNamespace creates the namespace on the member when it does not exist; it is never
// deleted there (other objects may live in it).
func (mem *member) ensureNamespace(ctx context.Context, name string) error {
	if _, ok := mem.namespaces.Load(name); ok {
		return nil
	}
	ns := &corev1.Namespace{}
	err := mem.client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err = mem.client.Create(ctx, ns); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("the namespace %s on cluster %s: %w", name, mem.name, err)
	}
	mem.namespaces.Store(name, true)
	return nil
}

// unanswered reports whether err is a request that got no answer from the API server (as
// against the API server's refusal).
// A failure of our own making (a render refused, a kind not allowed) is not one: marking the
// member unreachable for it would hold every plan placed there until the next probe.
func unanswered(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED)
}

// byWorkloadUID maps an object the runtime applied on a member (no owner reference crosses
// clusters) to the plan of the Workload whose UID it carries.
func (r *Reconciler) byWorkloadUID(ctx context.Context, o client.Object) []reconcile.Request {
	uid := o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID]
	if uid == "" {
		// An EndpointSlice: its Service's labels, not its annotations.
		return planOfService(ctx, o)
	}
	var plans scorev1b1.WorkloadPlanList
	if err := r.Client.List(ctx, &plans, client.MatchingFields{indexWorkloadUID: uid}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(plans.Items))
	for i := range plans.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&plans.Items[i])})
	}
	return out
}

// planClusters are the member clusters a plan is placed on or still holds objects on.
func planClusters(p *scorev1b1.WorkloadPlan) []string {
	return slices.DeleteFunc(clusters.OfPlan(p), func(c string) bool { return c == "" })
}

// outputsCopies are the plan's outputs Secrets as they go to a member cluster: the same name,
// type and data in the Workload's namespace there, applied (and pruned, and released) with
// the plan's other objects, so a rotation reaches the member on the next pass.
func (r *Reconciler) outputsCopies(ctx context.Context, p *scorev1b1.WorkloadPlan) ([]*unstructured.Unstructured, error) {
	reader := r.Secrets
	if reader == nil {
		reader = r.Client
	}
	var out []*unstructured.Unstructured
	for _, c := range p.Spec.Claims {
		if c.SecretName == "" {
			continue
		}
		s := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: c.SecretName}, s); err != nil {
			return nil, fmt.Errorf("reading the outputs of %s: %w", c.Key, err)
		}
		data := map[string]any{}
		for k, v := range s.Data {
			data[k] = base64.StdEncoding.EncodeToString(v)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": s.Name, "namespace": p.Namespace}, "type": string(corev1.SecretTypeOpaque), "data": data}}
		out = append(out, u)
	}
	return out, nil
}

// clusterOf tags an inventory with the cluster its objects are in.
func clusterOf(objs []scorev1b1.AppliedObject, cluster string) []scorev1b1.AppliedObject {
	for i := range objs {
		objs[i].Cluster = cluster
	}
	return objs
}

// split divides an inventory into the entries on cluster and the others.
func split(objs []scorev1b1.AppliedObject, cluster string) (on, others []scorev1b1.AppliedObject) {
	for _, o := range objs {
		if o.Cluster == cluster {
			on = append(on, o)
		} else {
			others = append(others, o)
		}
	}
	return on, others
}

// target is where a plan's objects go: the hub, or a member cluster.
type target struct {
	cluster string // "" is the hub
	applier *apply.Applier
	member  *member
}

// where says where objects were applied, for a message.
func (t target) where() string {
	if t.cluster == "" {
		return ""
	}
	return " on cluster " + t.cluster
}

// target returns where objects of cluster go, or why they cannot go there now.
func (r *Reconciler) target(cluster string) (target, error) {
	if cluster == "" {
		return target{applier: r.applier}, nil
	}
	if r.members == nil || r.members.newApplier == nil {
		return target{}, fmt.Errorf("cluster %s is %w: this runtime applies on the hub only (no control-plane namespace)", cluster, errNotRegistered)
	}
	mem, err := r.members.get(cluster)
	if err != nil {
		return target{}, err
	}
	return target{cluster: cluster, applier: mem.applier, member: mem}, nil
}

// clusterUnreachable reports a plan whose cluster does not answer or is not registered:
// nothing was changed or deleted on either side.
func (r *Reconciler) clusterUnreachable(p *scorev1b1.WorkloadPlan, err error) {
	message := fmt.Sprintf("The plan cannot be applied: %v. Nothing was changed or deleted.", err)
	r.fail(p, scorev1b1.ReasonNetworkUnavailable, message)
	setCondition(p, scorev1b1.PlanConditionApplied, metav1.ConditionFalse, scorev1b1.PlanReasonClusterUnreachable, message)
}

// remoteFailed handles a failed request to a member: one that got no answer marks the cluster
// unreachable (its probe brings the plan back); any other is retried with backoff.
func (r *Reconciler) remoteFailed(p *scorev1b1.WorkloadPlan, t target, err error) (ctrl.Result, error) {
	t.member.namespaces.Delete(p.Namespace) // it may be what is missing
	if unanswered(err) {
		r.members.markUnreachable(t.cluster, err)
		r.clusterUnreachable(p, fmt.Errorf("cluster %s does not answer: %w", t.cluster, err))
		return ctrl.Result{}, nil
	}
	r.fail(p, scorev1b1.ReasonRuntimeProvisioning, fmt.Sprintf("Applying on cluster %s failed: %v", t.cluster, err))
	return ctrl.Result{}, fmt.Errorf("apply on cluster %s failed, retrying with backoff: %w", t.cluster, err)
}

// leave deletes objs, each on its cluster, and returns those that must wait: on a cluster
// that does not answer. On a cluster no longer registered they are abandoned, with an event:
// removing the registration is the explicit way to let go of a cluster that will not return.
func (r *Reconciler) leave(ctx context.Context, p *scorev1b1.WorkloadPlan, objs []scorev1b1.AppliedObject) ([]scorev1b1.AppliedObject, error) {
	var order []string
	byCluster := map[string][]scorev1b1.AppliedObject{}
	for _, o := range objs {
		if _, ok := byCluster[o.Cluster]; !ok {
			order = append(order, o.Cluster)
		}
		byCluster[o.Cluster] = append(byCluster[o.Cluster], o)
	}
	var kept []scorev1b1.AppliedObject
	for _, cluster := range order {
		list := byCluster[cluster]
		t, err := r.target(cluster)
		switch {
		case errors.Is(err, errNotRegistered):
			r.event(p, corev1.EventTypeWarning, "ObjectsAbandoned", "Delete",
				"%d objects on cluster %s were let go of: the cluster is no longer registered.", len(list), cluster)
			continue
		case err != nil:
			kept = append(kept, list...)
			continue
		}
		if _, err := t.applier.Release(ctx, list, nil); err != nil {
			if cluster != "" && unanswered(err) {
				r.members.markUnreachable(cluster, err)
				kept = append(kept, list...)
				continue
			}
			return nil, err
		}
		if p.DeletionTimestamp.IsZero() {
			r.event(p, corev1.EventTypeNormal, "Moved", "Delete", "Deleted %d objects from %s: the workload is healthy on %s.", len(list), clusterName(cluster), clusterName(p.Spec.Cluster))
		}
	}
	return kept, nil
}

func clusterName(c string) string {
	if c == "" {
		return "the hub"
	}
	return "cluster " + c
}

func (r *Reconciler) event(p *scorev1b1.WorkloadPlan, typ, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(p, nil, typ, reason, action, format, args...)
	}
}

// reachableOn reports whether a Service on a member has a ready endpoint, from the member's
// cache of EndpointSlices (the EndpointSlice controller copies the Service's labels, the
// Workload's among them, so the cache scoped to that label holds them).
func (t target) reachableOn(ctx context.Context, namespace, service string) (bool, error) {
	gvk := discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")
	t.applier.Watcher.Ensure(ctx, gvk)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind("EndpointSliceList"))
	if err := t.applier.Watcher.List(ctx, t.member.client, list, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return false, err
	}
	typed := make([]discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &typed[i]); err != nil {
			return false, err
		}
	}
	return anyReady(typed), nil
}
