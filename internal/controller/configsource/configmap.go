package configsource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// ReloadsTotal counts config documents offered, by result (success, failure, unchanged).
var ReloadsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "score_orchestrator_config_reloads_total",
	Help: "Orchestrator Config documents offered, by result: success (became current), failure (invalid, ignored) or unchanged.",
}, []string{"source", "result"})

func init() {
	metrics.Registry.MustRegister(ReloadsTotal)
}

// ConfigMapReconciler offers the Orchestrator Config ConfigMap's document to the store.
type ConfigMapReconciler struct {
	// Cache watches the ConfigMap, and the reconciler reads it from there.
	Cache    cache.Cache
	Store    *Store
	Recorder recorder.EventRecorder
	// Key locates the ConfigMap; DataKey is the key holding the document.
	Key     types.NamespacedName
	DataKey string
	// OCI fetches the document when the ConfigMap names an artifact (OCIRefKey) instead.
	OCI *ocifetch.Fetcher
	// Name names the controller, uniquely in the process: a process may run two config
	// sources, one per manager (score-controllers runs the rollout in a manager of its own).
	Name string
	// Silent records no event and counts no reload: another source of the same process
	// reports the same loads.
	Silent bool

	// FetchRetry is how often an artifact that cannot be fetched is tried again: a fixed
	// period, not a backoff growing to minutes, so a registry back or a pull secret fixed is
	// noticed soon. Zero is DefaultFetchRetry.
	FetchRetry time.Duration

	// fetchFailure is the last fetch's error ("" after a success): an event is written for
	// each change of it, not for each retry (one reconciler worker reads and writes it).
	fetchFailure string
}

// DefaultFetchRetry is how often an ociRef that cannot be fetched is tried again.
const DefaultFetchRetry = 30 * time.Second

// OCIRefKey is the ConfigMap key that names the config's OCI artifact, pinned by digest, in
// place of the document: changing it loads the artifact it names, without a restart.
const OCIRefKey = "ociRef"

// Reconcile reads the ConfigMap and offers its document. An invalid document is reported as
// a Warning event on the ConfigMap, a log line and a metric; the last valid config stays.
func (r *ConfigMapReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var cm corev1.ConfigMap
	if err := r.Cache.Get(ctx, r.Key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			log.Info("Orchestrator config ConfigMap is absent; keeping the last valid config", "configMap", r.Key)
			r.Store.Settle()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	source, origin := "configmap", "configmap"
	data, ok := cm.Data[r.DataKey]
	ref, byRef := cm.Data[OCIRefKey]
	switch {
	case ok && byRef:
		r.reject(ctx, &cm, source, fmt.Errorf("the ConfigMap has both %q and %q: keep the document or the reference to it, not both", r.DataKey, OCIRefKey))
		r.Store.Settle()
		return ctrl.Result{}, nil
	case byRef:
		source = "oci"
		res, err := r.OCI.Fetch(ctx, strings.TrimSpace(ref), ConfigLayerMediaType)
		if err != nil {
			// The registry may come back, or the pull secret be fixed: tried again after a
			// fixed period, the last valid config in force meanwhile. Said once per error.
			r.count(source, "failure")
			if msg := err.Error(); msg != r.fetchFailure {
				r.fetchFailure = msg
				log.Error(err, "Fetching the orchestrator config failed; keeping the last valid one", "configMap", r.Key, "ref", ref)
				r.event(&cm, corev1.EventTypeWarning, "ConfigFetchFailed", "The orchestrator config %s could not be fetched; the last valid config stays in use: %s", strings.TrimSpace(ref), err)
			} else {
				log.V(1).Info("Fetching the orchestrator config failed again", "ref", ref)
			}
			r.Store.Settle()
			return ctrl.Result{RequeueAfter: r.fetchRetry()}, nil
		}
		r.fetchFailure = ""
		if res.FromCache {
			log.Info("Registry unreachable; using the verified cached config", "ref", ref, "error", res.FetchErr.Error())
		}
		data, origin = string(res.Data), "oci/"+res.Digest
	case !ok:
		r.reject(ctx, &cm, source, fmt.Errorf("the ConfigMap has no key %q (the document) or %q (an OCI reference to it)", r.DataKey, OCIRefKey))
		r.Store.Settle()
		return ctrl.Result{}, nil
	}
	_, hadConfig := r.Store.Get()
	changed, err := r.Store.Offer(origin, []byte(data))
	if err != nil {
		r.reject(ctx, &cm, source, err)
		return ctrl.Result{}, nil
	}
	if changed {
		r.count(source, "success")
		loaded, _ := r.Store.Get()
		log.Info("Loaded orchestrator config", "configMap", r.Key, "source", origin, "revision", loaded.Revision)
		if hadConfig {
			// Only a change is news; a controller starting up loads the config it had.
			r.event(&cm, corev1.EventTypeNormal, "ConfigLoaded", "A new orchestrator config is valid and in use.")
		}
	} else {
		r.count(source, "unchanged")
	}
	return ctrl.Result{}, nil
}

func (r *ConfigMapReconciler) fetchRetry() time.Duration {
	if r.FetchRetry > 0 {
		return r.FetchRetry
	}
	return DefaultFetchRetry
}

func (r *ConfigMapReconciler) reject(ctx context.Context, cm *corev1.ConfigMap, source string, err error) {
	r.count(source, "failure")
	msg := err.Error()
	var inv *orchconfig.InvalidError
	if errors.As(err, &inv) {
		lines := make([]string, 0, len(inv.Errors))
		for _, e := range inv.Errors {
			lines = append(lines, e.String())
		}
		msg = strings.Join(lines, "; ")
	}
	if len(msg) > 900 {
		msg = msg[:900] + "..."
	}
	ctrl.LoggerFrom(ctx).Error(err, "Rejected the orchestrator config; keeping the last valid one", "configMap", r.Key)
	r.event(cm, corev1.EventTypeWarning, "ConfigInvalid", "The orchestrator config is invalid and was not loaded; the last valid config stays in use: %s", msg)
}

func (r *ConfigMapReconciler) count(source, result string) {
	if !r.Silent {
		ReloadsTotal.WithLabelValues(source, result).Inc()
	}
}

func (r *ConfigMapReconciler) event(cm *corev1.ConfigMap, typ, reason, format string, args ...any) {
	if !r.Silent {
		r.Recorder.Eventf(cm, nil, typ, reason, "Load", "%s", termtext.Escape(fmt.Sprintf(format, args...)))
	}
}

// SetupWithManager watches the one ConfigMap.
func (r *ConfigMapReconciler) SetupWithManager(mgr ctrl.Manager) error {
	isTheConfigMap := predicate.NewTypedPredicateFuncs(func(o *corev1.ConfigMap) bool {
		return o.Namespace == r.Key.Namespace && o.Name == r.Key.Name
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Name).
		WatchesRawSource(source.Kind(r.Cache, &corev1.ConfigMap{}, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{},
			isTheConfigMap, predicate.TypedResourceVersionChangedPredicate[*corev1.ConfigMap]{})).
		Complete(r)
}
