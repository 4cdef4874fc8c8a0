package dockerruntime

import (
	"context"
	"encoding/json"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
)

// renew renews the host's Lease (hosts.Register made it) every hosts.RenewEvery while the
// Docker Engine answers, with the Engine's version as its holder: `scorectl host list` tells
// from it whether the host answers. A Lease the agent cannot renew (a host not registered, an
// identity that may not) is said once in the log; the plans are served all the same.
func (r *Reconciler) renew(ctx context.Context) {
	key := client.ObjectKey{Namespace: hosts.Namespace, Name: hosts.ServiceAccountName(r.Host)}
	said := false
	for {
		if err := r.renewOnce(ctx, key); err != nil && !said {
			ctrl.LoggerFrom(ctx).Info("Not renewing the host's Lease", "lease", key.String(), "error", err.Error())
			said = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(hosts.RenewEvery):
		}
	}
}

func (r *Reconciler) renewOnce(ctx context.Context, key client.ObjectKey) error {
	v, err := r.Docker.ServerVersion(ctx)
	if err != nil {
		return err
	}
	// A patch of the two fields, unread: the agent's caches watch only its namespaces.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"holderIdentity": "Docker " + v.Version, "renewTime": metav1.NewMicroTime(time.Now())}})
	if err != nil {
		return err
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	return r.Client.Patch(ctx, lease, client.RawPatch(types.MergePatchType, patch))
}
