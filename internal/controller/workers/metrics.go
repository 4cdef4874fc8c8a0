package workers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The gates' metrics, labelled by controller name (workload, resourceclaim, workloadplan):
// fixed names, never a tenant's.
var (
	limitGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "score_workers_limit",
		Help: "Workers a controller lets reconcile at once: its adaptive limit, or its cap when pinned.",
	}, []string{"controller"})
	adjustments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "score_workers_adjustments_total",
		Help: "Moves of a controller's worker limit, by reason: grew (work waited, latency near its floor), throttled (the API server answered 429), latency (well above its floor).",
	}, []string{"controller", "reason"})
)

func init() {
	metrics.Registry.MustRegister(limitGauge, adjustments)
}
