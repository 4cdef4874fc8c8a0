package provisioner

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
)

// usedByOthers reports whether another live claim lists o in its inventory: an object several
// instances produce stays until the last of them lets it go.
func (r *Reconciler) usedByOthers(ctx context.Context, c *scorev1b1.ResourceClaim, o scorev1b1.AppliedObject) (bool, error) {
	var list scorev1b1.ResourceClaimList
	// Cluster-wide: the consumers of an instance shared across namespaces live in several.
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexResource: inventory.Key(o)}); err != nil {
		return false, err
	}
	for _, other := range list.Items {
		if other.UID != c.UID && other.DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
