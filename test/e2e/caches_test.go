package e2e

import (
	"path"
	"slices"
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
)

// assertCachesHoldOurs checks, by the watches the controllers opened, that no controller's
// cache holds an object that is not ours. A cache holds what its watches send, and every watch
// on anything but our own kinds, the namespaces, the config and cluster-status ConfigMaps and
// the admission policy that binds previews to their makers selects the objects that carry our marks (a Workload's label, an instance's label, a member
// cluster's registration): the cluster's other Secrets, Deployments and Services are never sent
// to our processes.
func assertCachesHoldOurs(t *testing.T) {
	t.Helper()
	var seen []string
	watches.Range(func(k, _ any) bool {
		w := k.(watched)
		resource := path.Base(w.path)
		seen = append(seen, resource)
		switch {
		case strings.HasPrefix(w.path, "/apis/"+scorev1b1.GroupVersion.Group+"/"):
		case resource == "namespaces":
		case resource == "configmaps" && strings.HasPrefix(w.fields, "metadata.name="):
		case (resource == "validatingadmissionpolicies" || resource == "validatingadmissionpolicybindings") && w.fields == "metadata.name="+preview.PolicyName:
		case w.labels == scorev1b1.LabelWorkload || w.labels == scorev1b1.LabelInstance:
		case resource == "secrets" && w.labels == scorev1b1.LabelSecretType+"="+scorev1b1.SecretTypeCluster:
		default:
			t.Errorf("score-%s watches %s (labels %q, fields %q): it would cache objects that are not ours", w.controller, w.path, w.labels, w.fields)
		}
		return true
	})
	// The check above passes on no watches at all: the kinds the examples apply must be among them.
	for _, r := range []string{"secrets", "endpointslices", "deployments", "services", "statefulsets", "jobs"} {
		if !slices.Contains(seen, r) {
			t.Errorf("no watch of %s among %v", r, seen)
		}
	}
}
