package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// moveCoexistence is how long a moved Workload ran on two clusters: from every object on its
// new cluster healthy to its objects on the earlier one deleted. A move by relabelling takes
// one pass; a failover lasts until the lost cluster answers again.
var moveCoexistence = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "score_runtime_move_coexistence_seconds",
	Help:    "Time a moved Workload's objects existed on both clusters: from every object healthy on the new cluster to those on the earlier one deleted (a failover: until the lost cluster answered again).",
	Buckets: prometheus.ExponentialBuckets(0.5, 2, 16),
})

func init() {
	metrics.Registry.MustRegister(moveCoexistence)
}

// coexisted is how long the plan as read has been healthy on its cluster, at now: the
// time both copies existed when its earlier cluster's objects are deleted now. Zero when it
// becomes healthy in this very pass.
func coexisted(p *scorev1b1.WorkloadPlan, now time.Time) time.Duration {
	c := meta.FindStatusCondition(p.Status.Conditions, scorev1b1.PlanConditionHealthy)
	if c == nil || c.Status != metav1.ConditionTrue || p.Status.ObservedGeneration != p.Generation {
		return 0
	}
	return max(now.Sub(c.LastTransitionTime.Time), 0)
}
