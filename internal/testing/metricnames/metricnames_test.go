package metricnames

import (
	"slices"
	"testing"
)

func TestReferenced(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`score_orchestrator_workloads`, []string{"score_orchestrator_workloads"}},
		{`sum by (reason) (score_orchestrator_workloads{ready!="True", namespace=~"$namespace"}) > 0`, []string{"score_orchestrator_workloads"}},
		{`histogram_quantile(0.9, sum by (le) (rate(score_orchestrator_generation_to_ready_seconds_bucket[$__rate_interval]))) > 300`, []string{"score_orchestrator_generation_to_ready_seconds_bucket"}},
		{`increase(score_orchestrator_config_reloads_total{result="failure"}[15m]) > 0`, []string{"score_orchestrator_config_reloads_total"}},
		{`sum(rate(a_total[5m])) / sum without (instance) (rate(b_total[5m]))`, []string{"a_total", "b_total"}},
		{`x_bytes * on (pod) group_left (node) kube_pod_info`, []string{"kube_pod_info", "x_bytes"}},
		{`max by (name) (leader_election_master_status{job="a b (c)"}) == bool 1`, []string{"leader_election_master_status"}},
		{`rate(process_cpu_seconds_total[1m] offset 5m) > 1e3`, []string{"process_cpu_seconds_total"}},
		{`sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket{controller=~"$controller"}[$__rate_interval]))`, []string{"controller_runtime_reconcile_time_seconds_bucket"}},
		{`vector(1) and on() absent(up)`, []string{"up"}},
	} {
		if got := Referenced(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.expr, got, tc.want)
		}
	}
}
