// Package orchestrator wires the orchestrator's controllers into a manager: the config
// source and the Workload reconciler. The binary and the integration tests use it alike.
package orchestrator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/workload"
	"github.com/score-orchestrator/score-orchestrator/internal/ocifetch"
)

// Options configure the orchestrator.
type Options struct {
	// ConfigMap holds the Orchestrator Config under ConfigKey.
	ConfigMap types.NamespacedName
	ConfigKey string
	// ConfigOCIRef, when set, loads the config from this OCI artifact pinned by digest
	// instead of the ConfigMap.
	ConfigOCIRef string
	// OCICacheDir caches verified OCI content; OCIPlainHTTP reaches registries over HTTP.
	OCICacheDir  string
	OCIPlainHTTP bool
	// Region is where this orchestrator runs.
	Region string
	// Concurrency is the number of Workloads reconciled at once.
	Concurrency int
}

// DefaultOptions are the documented defaults.
func DefaultOptions() Options {
	return Options{
		ConfigMap:   types.NamespacedName{Namespace: "score-system", Name: "orchestrator-config"},
		ConfigKey:   "config.yaml",
		Concurrency: 4,
	}
}

// Setup registers the orchestrator's controllers with mgr and returns the config store.
func Setup(mgr ctrl.Manager, opts Options) (*configsource.Store, error) {
	store := configsource.NewStore()
	if opts.ConfigOCIRef != "" {
		src := &configsource.OCISource{
			Ref: opts.ConfigOCIRef, Store: store,
			Fetcher: &ocifetch.Fetcher{CacheDir: opts.OCICacheDir, PlainHTTP: opts.OCIPlainHTTP},
		}
		if err := mgr.Add(src); err != nil {
			return nil, fmt.Errorf("setting up the OCI config source: %w", err)
		}
	} else {
		cm := &configsource.ConfigMapReconciler{
			Client: mgr.GetClient(), Store: store, Recorder: mgr.GetEventRecorder("score-orchestrator"),
			Key: opts.ConfigMap, DataKey: opts.ConfigKey,
		}
		if err := cm.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the config source: %w", err)
		}
	}
	wr := &workload.Reconciler{
		Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-orchestrator"),
		Region: opts.Region, Concurrency: opts.Concurrency,
	}
	if err := wr.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the workload controller: %w", err)
	}
	return store, nil
}

// CacheOptions limit the ConfigMap informer to the one config ConfigMap, so the orchestrator
// does not cache every ConfigMap of the cluster.
func CacheOptions(opts Options) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{opts.ConfigMap.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", opts.ConfigMap.Name),
		},
	}}
}
