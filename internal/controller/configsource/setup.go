package configsource

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/caches"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
)

// Options say where the Orchestrator Config comes from.
type Options struct {
	// ConfigMap holds the document under Key.
	ConfigMap types.NamespacedName
	Key       string
	// OCIRef, when set, loads the document from this OCI artifact pinned by digest instead.
	OCIRef string
	// OCICacheDir caches verified OCI content; OCIPlainHTTP reaches registries over HTTP.
	OCICacheDir  string
	OCIPlainHTTP bool
	// OCIPullSecret names a kubernetes.io/dockerconfigjson Secret in the ConfigMap's
	// namespace holding the registries' credentials, for the config and the templates.
	OCIPullSecret string
	// FetchRetry is how often an ociRef that cannot be fetched is tried again (default
	// DefaultFetchRetry).
	FetchRetry time.Duration
	// Silent: the source records no event and counts no reload, because another source of
	// the same process reports the same loads (score-controllers' rollout manager, beside its
	// shard's).
	Silent bool
}

// Fetcher is the OCI fetcher these options describe, reading the pull secret through reader
// (an uncached reader: the Secret is read at each fetch that needs it, so a rotated Secret is
// used at once, and no Secret is cached).
func (o Options) Fetcher(reader client.Reader) *ocifetch.Fetcher {
	f := &ocifetch.Fetcher{CacheDir: o.OCICacheDir, PlainHTTP: o.OCIPlainHTTP}
	if o.OCIPullSecret != "" {
		f.PullSecret = &ocifetch.PullSecret{Reader: reader, Key: types.NamespacedName{Namespace: o.ConfigMap.Namespace, Name: o.OCIPullSecret}}
	}
	return f
}

// DefaultOptions are the documented defaults: score-system/orchestrator-config, config.yaml.
func DefaultOptions() Options {
	return Options{ConfigMap: types.NamespacedName{Namespace: "score-system", Name: "orchestrator-config"}, Key: "config.yaml"}
}

// Setup adds the configured source to mgr and returns the store it fills. Every controller
// process that needs the config runs its own source (every manager: its controllers may lead
// while another manager's stand by); component names its events and, with "-config", its
// controller.
func Setup(mgr ctrl.Manager, opts Options, component string) (*Store, error) {
	store := NewStore()
	if opts.OCIRef != "" {
		src := &OCISource{Ref: opts.OCIRef, Store: store, Fetcher: opts.Fetcher(mgr.GetAPIReader())}
		if err := mgr.Add(src); err != nil {
			return nil, fmt.Errorf("setting up the OCI config source: %w", err)
		}
		return store, nil
	}
	// The one ConfigMap is watched through a cache of its own: restricting the manager's
	// cache to it would restrict every ConfigMap informer of the process, and the provisioner
	// and the runtime watch the ConfigMaps they apply.
	cmOpts := CacheOptions()
	cmOpts.HTTPClient, cmOpts.Scheme, cmOpts.Mapper = mgr.GetHTTPClient(), mgr.GetScheme(), mgr.GetRESTMapper()
	cmOpts.ByObject = map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
		Namespaces: map[string]cache.Config{opts.ConfigMap.Namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", opts.ConfigMap.Name),
	}}
	configMaps, err := cache.New(mgr.GetConfig(), cmOpts)
	if err != nil {
		return nil, fmt.Errorf("setting up the config source's cache: %w", err)
	}
	// Started and synced with the manager's caches, before any controller.
	if err := caches.AddCache(mgr, configMaps); err != nil {
		return nil, err
	}
	cm := &ConfigMapReconciler{
		Cache: configMaps, Store: store, Recorder: mgr.GetEventRecorder(component),
		Key: opts.ConfigMap, DataKey: opts.Key, OCI: opts.Fetcher(mgr.GetAPIReader()), FetchRetry: opts.FetchRetry, Name: component + "-config", Silent: opts.Silent,
	}
	if err := cm.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the config source: %w", err)
	}
	// The reconciler hears of a ConfigMap that exists; this settles the store when none does.
	settle := manager.RunnableFunc(func(ctx context.Context) error {
		if !configMaps.WaitForCacheSync(ctx) {
			return nil
		}
		var obj corev1.ConfigMap
		if err := configMaps.Get(ctx, opts.ConfigMap, &obj); apierrors.IsNotFound(err) {
			store.Settle()
		}
		return nil
	})
	if err := mgr.Add(settle); err != nil {
		return nil, err
	}
	return store, nil
}

// CacheOptions are the manager's cache's.
//
// They drop managedFields from every cached object: no controller reads them (server-side
// apply sends only what it manages, and an update without managedFields keeps the server's),
// and they are often the larger part of an object, so a cache of thousands of Workloads,
// claims and applied objects holds half as much.
//
// They hold only our own Secrets and EndpointSlices, those labelled with a Workload (a claim's
// outputs Secret; the slices of a Service the runtime applied, which copy its labels): a
// shared cluster's other Secrets are neither in our processes' memory nor a cost that grows
// with the cluster. The applied objects are cached apart, each controller's by its own mark
// (caches.NewScopedCache); anything else is read from the API server.
func CacheOptions() cache.Options {
	ours := cache.ByObject{Label: caches.OwnLabelSelector(scorev1b1.LabelWorkload)}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&corev1.Secret{}: ours, &discoveryv1.EndpointSlice{}: ours},
	}
}
