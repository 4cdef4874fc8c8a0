package rollout

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rolloutHalts counts halts. Its name keeps the orchestrator's prefix it was born with: the
// dashboards and alerts query it (config/grafana, config/prometheus).
var rolloutHalts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "score_orchestrator_rollout_halts_total",
	Help: "Config rollouts halted by their health gate, their Workloads pinned back to the previous revision.",
})

func init() { metrics.Registry.MustRegister(rolloutHalts) }
