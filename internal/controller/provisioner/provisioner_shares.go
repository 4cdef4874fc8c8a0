package provisioner

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/claimstatus"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

// The sharing ledger (claimstatus/shares.go): which instances of a definition each consumer
// namespace holds in the sharing namespace, kept in a ConfigMap there, read and written through
// the API server only.

// observeShares reads the ledger, when the claim's definition bounds the instances a consumer
// namespace holds and the claim's instance is shared from another namespace: the instances its
// namespace holds, and, when its own is not among them, which of them a claim of the
// namespace still holds.
func (r *Reconciler) observeShares(ctx context.Context, c *scorev1b1.ResourceClaim, p *pass) error {
	def := *p.Definition
	sh := def.Sharing
	if sh == nil || sh.MaxInstancesPerNamespace == 0 || p.InstanceNamespace == "" {
		return nil
	}
	ledger := &corev1.ConfigMap{}
	switch err := r.secrets.APIServer.Get(ctx, client.ObjectKey{Namespace: sh.Namespace, Name: claimstatus.LedgerName(def)}, ledger); {
	case apierrors.IsNotFound(err):
		ledger = nil
	case err != nil:
		return fmt.Errorf("reading the sharing ledger: %w", err)
	}
	var held []string
	if ledger != nil {
		held = claimstatus.LedgerInstances(ledger.Data[c.Namespace])
	}
	p.ledger = ledger
	p.Shares = &claimstatus.Shares{Held: held, Holds: slices.Contains(held, p.Instance)}
	if p.Shares.Holds || len(held) == 0 {
		return nil
	}
	live, err := r.heldBy(ctx, c.Namespace, def)
	if err != nil {
		return err
	}
	p.Shares.Held = slices.DeleteFunc(held, func(h string) bool { return !live[h] })
	return nil
}

// heldBy are the instances of def in its sharing namespace that the claims of namespace hold
// (being deleted or not), as the API server has them: a claim another worker or shard admitted
// a moment ago is among them.
func (r *Reconciler) heldBy(ctx context.Context, namespace string, def orchconfig.Provisioner) (map[string]bool, error) {
	var list scorev1b1.ResourceClaimList
	if err := r.secrets.APIServer.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the claims of namespace %s: %w", namespace, err)
	}
	out := map[string]bool{}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Spec.ID == "" {
			continue
		}
		out[identityIn(o, def.Sharing.Namespace, instanceCluster(o, def)).Hash()] = true
	}
	return out, nil
}

// record writes the claim's instance into its namespace's entry of the ledger, over the ledger
// as it was read: a conflict means another claim recorded one meanwhile, and the next pass
// decides from the ledger as it is then.
func (r *Reconciler) record(ctx context.Context, c *scorev1b1.ResourceClaim, p *pass) error {
	def := *p.Definition
	entry := claimstatus.LedgerEntry(append(slices.Clone(p.Shares.Held), p.Instance))
	if p.ledger == nil {
		ledger := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: def.Sharing.Namespace, Name: claimstatus.LedgerName(def),
				Annotations: map[string]string{annotationLedgerOf: def.URI}},
			Data: map[string]string{c.Namespace: entry},
		}
		return r.Client.Create(ctx, ledger)
	}
	ledger := p.ledger.DeepCopy()
	if ledger.Data == nil {
		ledger.Data = map[string]string{}
	}
	ledger.Data[c.Namespace] = entry
	return r.Client.Update(ctx, ledger) // at the resourceVersion read: a conflict if it changed since
}

// annotationLedgerOf names, on a sharing ledger, the definition whose instances it counts.
const annotationLedgerOf = "score.dev/shares-of"
