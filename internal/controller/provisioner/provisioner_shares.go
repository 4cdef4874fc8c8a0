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
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/status/claimdecision"
)

// The sharing ledger (claimdecision/shares.go): which instances of a definition each consumer
// namespace holds in the sharing namespace, kept in a ConfigMap there, read and written through
// the API server only.

// observeShares reads the ledger, when the claim's definition bounds the instances a consumer
// namespace holds and the claim's instance is shared from another namespace: the instances its
// namespace holds.
func (r *Reconciler) observeShares(ctx context.Context, c *scorev1b1.ResourceClaim, p *pass) error {
	def := *p.Definition
	sh := def.Sharing
	if sh == nil || sh.MaxInstancesPerNamespace == 0 || p.InstanceNamespace == "" {
		return nil
	}
	ledger := &corev1.ConfigMap{}
	switch err := r.secrets.APIServer.Get(ctx, client.ObjectKey{Namespace: sh.Namespace, Name: claimdecision.LedgerName(def.URI)}, ledger); {
	case apierrors.IsNotFound(err):
		ledger = nil
	case err != nil:
		return fmt.Errorf("reading the sharing ledger: %w", err)
	}
	var held []string
	if ledger != nil {
		held = claimdecision.LedgerInstances(ledger.Data[c.Namespace])
	}
	p.ledger = ledger
	if ledger != nil && ledger.Annotations[annotationLedgerCounts] != claimdecision.LedgerCountsExisting && !slices.Contains(held, p.Instance) {
		// An earlier version's: the record that follows writes its entries carried over.
		carried, err := r.carryOver(ctx, ledger, def)
		if err != nil {
			return err
		}
		p.ledger, held = carried, claimdecision.LedgerInstances(carried.Data[c.Namespace])
	}
	p.Shares = &claimdecision.Shares{Held: held, Holds: slices.Contains(held, p.Instance)}
	return nil
}

// carryOver is a ledger an earlier version wrote with each namespace's entry carried over
// (claimdecision.CarriedOver), marked as counting the instances that exist. The claims standing
// for an instance are as the API server lists them, never a cache: one another worker admitted
// a moment ago is among them.
func (r *Reconciler) carryOver(ctx context.Context, ledger *corev1.ConfigMap, def orchconfig.Provisioner) (*corev1.ConfigMap, error) {
	out := ledger.DeepCopy()
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, annotationLedgerCounts, claimdecision.LedgerCountsExisting)
	for ns, entry := range ledger.Data {
		var list scorev1b1.ResourceClaimList
		if err := r.secrets.APIServer.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing the claims of namespace %s: %w", ns, err)
		}
		live := map[string]bool{}
		for i := range list.Items {
			if o := &list.Items[i]; o.DeletionTimestamp.IsZero() && o.Spec.ID != "" {
				live[identityIn(o, def.Sharing.Namespace, instanceCluster(o, def)).Hash()] = true
			}
		}
		kept := map[string]bool{}
		for _, h := range claimdecision.LedgerInstances(entry) {
			switch err := r.secrets.APIServer.Get(ctx, client.ObjectKey{Namespace: def.Sharing.Namespace, Name: provisioning.StateSecretNameOf(h)}, &corev1.Secret{}); {
			case err == nil:
				kept[h] = true
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading the state of a shared instance: %w", err)
			}
		}
		carried := claimdecision.CarriedOver(claimdecision.LedgerInstances(entry), func(h string) bool { return live[h] }, func(h string) bool { return kept[h] })
		if len(carried) == 0 {
			delete(out.Data, ns)
			continue
		}
		out.Data[ns] = claimdecision.LedgerEntry(carried)
	}
	return out, nil
}

// record writes the claim's instance into its namespace's entry of the ledger, over the ledger
// as it was read: a conflict means another claim recorded one meanwhile, and the next pass
// decides from the ledger as it is then.
func (r *Reconciler) record(ctx context.Context, c *scorev1b1.ResourceClaim, p *pass) error {
	def := *p.Definition
	entry := claimdecision.LedgerEntry(append(slices.Clone(p.Shares.Held), p.Instance))
	if p.ledger == nil {
		ledger := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: def.Sharing.Namespace, Name: claimdecision.LedgerName(def.URI),
				Annotations: map[string]string{annotationLedgerOf: def.URI, annotationLedgerCounts: claimdecision.LedgerCountsExisting}},
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

// unrecord takes an instance a release deprovisioned out of the sharing ledger of its
// namespace, when its definition keeps one there: out of the entry of every consumer namespace
// of which no live claim stands for the instance (one made meanwhile keeps it, as it provisions
// the instance again), over the ledger as it was read; a conflict is retried. Until then the
// instance keeps its place, whatever became of its claims (claimdecision/shares.go).
func (r *Reconciler) unrecord(ctx context.Context, c *scorev1b1.ResourceClaim, id provisioning.Identity) error {
	uri := c.Status.Provisioner
	if c.Spec.ID == "" || uri == "" {
		return nil
	}
	ledger := &corev1.ConfigMap{}
	switch err := r.secrets.APIServer.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: claimdecision.LedgerName(uri)}, ledger); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the sharing ledger: %w", err)
	}
	if ledger.Annotations[annotationLedgerOf] != uri {
		return nil // not a ledger the provisioner made
	}
	instance, changed := id.Hash(), false
	for ns, entry := range ledger.Data {
		held := claimdecision.LedgerInstances(entry)
		if !slices.Contains(held, instance) {
			continue
		}
		stands, err := r.standsFor(ctx, ns, id, c)
		if err != nil {
			return err
		}
		if stands {
			continue
		}
		if rest := slices.DeleteFunc(held, func(h string) bool { return h == instance }); len(rest) > 0 {
			ledger.Data[ns] = claimdecision.LedgerEntry(rest)
		} else {
			delete(ledger.Data, ns)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.Client.Update(ctx, ledger); err != nil { // at the resourceVersion read
		return fmt.Errorf("taking the deprovisioned instance out of the sharing ledger: %w", err)
	}
	return nil
}

// standsFor reports whether a live claim of namespace other than c stands for the instance id
// (its spec names it, on the instance's cluster), as the API server has the claims: one
// another worker admitted a moment ago, before its status says so, is among them.
func (r *Reconciler) standsFor(ctx context.Context, namespace string, id provisioning.Identity, c *scorev1b1.ResourceClaim) (bool, error) {
	var list scorev1b1.ResourceClaimList
	if err := r.secrets.APIServer.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return false, fmt.Errorf("listing the claims of namespace %s: %w", namespace, err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID != c.UID && o.DeletionTimestamp.IsZero() && o.Spec.ID != "" && identityIn(o, id.Namespace, id.Cluster).Hash() == id.Hash() {
			return true, nil
		}
	}
	return false, nil
}

// annotationLedgerOf names, on a sharing ledger, the definition whose instances it counts.
const annotationLedgerOf = "score.dev/shares-of"

// annotationLedgerCounts says, on a sharing ledger, what its entries count: the instances that
// exist (claimdecision.LedgerCountsExisting), else an earlier version's, carried over by the next
// record.
const annotationLedgerCounts = "score.dev/shares-counted"
