// Package caches sets up the controllers' caches of the objects they apply. A controller
// watches every kind it applies; a cache of every object of those kinds would hold a shared
// cluster's Deployments, Services and Secrets that are not ours, growing with the cluster
// rather than with our Workloads. Each controller's applied objects carry its mark (the
// runtime's the Workload label, the provisioner's the instance label), and its cache holds
// only those. The applier's Watcher (internal/objects/apply) reads anything else (an object
// of that name that is not ours yet, or not ours at all) from the API server, as it reads
// every absence.
package caches

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// OwnLabelSelector selects the objects that carry label, whatever its value.
func OwnLabelSelector(label string) labels.Selector {
	req, err := labels.NewRequirement(label, selection.Exists, nil)
	if err != nil {
		panic(err) // the labels passed are constants of api/v1b1
	}
	return labels.NewSelector().Add(*req)
}

// ByLabel indexes objects by the value of label (none without it): a field index that lists
// the objects with one value without reading every object of the namespace, as a listing by
// label does.
func ByLabel(label string) client.IndexerFunc {
	return func(o client.Object) []string {
		if v, ok := o.GetLabels()[label]; ok {
			return []string{v}
		}
		return nil
	}
}

// NewScopedCache is a cache, started by mgr with its own caches, of the objects that carry
// label, without their managedFields.
func NewScopedCache(mgr manager.Manager, label string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultLabelSelector: OwnLabelSelector(label),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("the cache of objects labelled %s: %w", label, err)
	}
	if err := AddCache(mgr, c); err != nil {
		return nil, err
	}
	return c, nil
}

// AddCache has mgr start c with its own caches, synced before any controller starts.
func AddCache(mgr manager.Manager, c cache.Cache) error { return mgr.Add(managerCache{c}) }

// managerCache is a cache the manager starts with its own.
type managerCache struct{ cache.Cache }

func (c managerCache) GetCache() cache.Cache { return c.Cache }

// CacheFirst reads from Cache, and from APIServer what Cache does not hold: a cache scoped to
// our own objects (or a moment behind) never answers that an object does not exist.
type CacheFirst struct {
	Cache, APIServer client.Reader
}

// Get reads key into obj.
func (r CacheFirst) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Cache.Get(ctx, key, obj, opts...); !apierrors.IsNotFound(err) {
		return err
	}
	return r.APIServer.Get(ctx, key, obj, opts...)
}
