package clusters

// The clusters' status as the runtime sees them, published in the ConfigMap score-clusters
// of the control plane's namespace, one key per cluster: placement reads the names and labels
// from it, so the orchestrator needs no access to the registration Secrets (only the runtime,
// which connects to the clusters, reads their credentials), and `scorectl cluster list`
// shows what the controllers see rather than what the user's machine can reach.

import (
	"encoding/json"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

// StatusConfigMap is the name of the ConfigMap the runtime publishes the clusters' status in.
const StatusConfigMap = "score-clusters"

// Status is one registered cluster as the runtime sees it.
type Status struct {
	Labels map[string]string `json:"labels,omitempty"`
	// Reachable is whether its API server answered the last probe.
	Reachable bool `json:"reachable"`
	// Version is its Kubernetes version, when it answered.
	Version string `json:"version,omitempty"`
	// Message says why it is not reachable, or that its registration is unusable.
	Message string `json:"message,omitempty"`
	// Since is when Reachable last changed, as the runtime saw it: since when the cluster
	// has answered without a break, or has not answered. Written on a change only, so the
	// ConfigMap stays quiet while nothing changes; absent when not known yet.
	Since *metav1.Time `json:"since,omitempty"`
}

// Encode writes statuses, by cluster name, as the ConfigMap's data.
func Encode(statuses map[string]Status) map[string]string {
	out := make(map[string]string, len(statuses))
	for name, s := range statuses {
		b, _ := json.Marshal(s) // plain strings, bools, a time and a string map: cannot fail
		out[name] = string(b)
	}
	return out
}

// Decode reads the ConfigMap's data; an entry that does not parse is skipped.
func Decode(cm *corev1.ConfigMap) map[string]Status {
	out := map[string]Status{}
	if cm == nil {
		return out
	}
	for name, v := range cm.Data {
		var s Status
		if json.Unmarshal([]byte(v), &s) == nil {
			out[name] = s
		}
	}
	return out
}

// Placeable are the clusters of statuses as placement's candidates, by name, with since when
// each has answered or not. A cluster that does not answer stays a candidate: placement moves
// a Workload for an outage only when its backend fails over (placement.failover), otherwise
// only for labels that no longer match or a registration removed.
func Placeable(statuses map[string]Status) []placement.Cluster {
	out := make([]placement.Cluster, 0, len(statuses))
	for name, s := range statuses {
		c := placement.Cluster{Name: name, Labels: s.Labels}
		switch {
		case s.Since == nil:
		case s.Reachable:
			c.UpSince = s.Since.Time
		default:
			c.DownSince = s.Since.Time
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// OfPlan are the clusters a plan is placed on or still holds objects on, its placement first;
// "" is the hub.
func OfPlan(p *scorev1b1.WorkloadPlan) []string {
	out := []string{p.Spec.Cluster}
	for _, c := range Of(p.Status.Objects) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Of lists the clusters of an inventory's entries ("" the hub), in order of appearance.
func Of(objs []scorev1b1.AppliedObject) []string {
	var out []string
	for _, o := range objs {
		if !slices.Contains(out, o.Cluster) {
			out = append(out, o.Cluster)
		}
	}
	return out
}

// Name says a cluster for a message: "the hub", or "cluster NAME".
func Name(cluster string) string {
	if cluster == "" {
		return "the hub"
	}
	return "cluster " + cluster
}
