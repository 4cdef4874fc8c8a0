package claimdecision

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The platform's limits on shared instances (a definition's sharing block): a consumer keeps the
// platform's deprovision policy for an instance it shares, unless the definition allows an
// override (policyOverridden); and a consumer namespace holds at most
// sharing.maxInstancesPerNamespace instances of the sharing namespace (overBound).
//
// The bound is kept in a ledger: a ConfigMap of the sharing namespace per definition
// (LedgerName), whose key per consumer namespace lists the instances that namespace's claims
// made or joined there. A claim provisions a shared instance only once its namespace's entry
// lists it; a claim of an instance the entry does not list records it there first (Record),
// with an update of the ledger as it was read, and only when the entry lists fewer than the
// bound. Two claims that record the last free place at once both write the ledger as they read
// it: the API server takes one, refuses the other's as a conflict, and the other, read again,
// finds the namespace at its bound. So the bound holds across a provisioner's workers, its
// shards and restarts.
//
// An instance keeps its place while it exists, not while a claim holds it: only the release
// that deprovisions it (its last claim's, under Delete, its objects and state gone) takes it
// out of the ledger. An instance the platform retains stays in the sharing namespace when its
// claims go; counted by its claims, a Workload deleted (its claim retained) and made again
// with another id (the retained claim deleted) added one instance each time.

// A ledger an earlier version wrote counted an instance while a claim held it: it dropped the
// instances no claim of a namespace held when it next recorded one there, and left an instance
// it deprovisioned listed until then. Its entries are carried over once, by the first record
// this version makes in it (CarriedOver), and the ledger is marked as counting the instances
// that exist (LedgerCountsExisting): an entry of an instance deprovisioned since does not keep a
// namespace at its bound for ever.

// LedgerCountsExisting marks a ledger (annotation score.dev/shares-counted) whose entries count
// the instances that exist, as this version keeps them.
const LedgerCountsExisting = "existing"

// CarriedOver are the instances of an entry an earlier version wrote that keep their place:
// those a claim of the namespace still stands for, and those whose state is kept (a retained
// instance). The others were deprovisioned, or never provisioned (a claim deleted between its
// record and its run).
func CarriedOver(entry []string, standsFor, stateKept func(instance string) bool) []string {
	return slices.DeleteFunc(slices.Clone(entry), func(h string) bool { return !standsFor(h) && !stateKept(h) })
}

// Shares is what the ledger says of the claim's namespace.
type Shares struct {
	// Held are the instances the namespace holds: its entry in the ledger.
	Held []string
	// Holds: the claim's instance is among them.
	Holds bool
}

// Recorded is what recording the claim's instance in the ledger did: Err is nil when the
// ledger was written; a conflict (another claim recorded meanwhile) is retried with the
// ledger read again.
type Recorded struct {
	Err error
}

// errAtBound is a claim refused because its namespace holds the most shared instances the
// platform allows: retried with backoff.
var errAtBound = errors.New("the namespace holds the most instances of the sharing namespace the platform allows; retrying with backoff")

// LedgerName names the ledger of the shared instances of the definition of uri in its sharing
// namespace.
func LedgerName(uri string) string {
	sum := sha256.Sum256([]byte(uri))
	return "score-shares-" + hex.EncodeToString(sum[:])[:10]
}

// LedgerEntry is a namespace's entry in the ledger: the instances it holds, in order.
func LedgerEntry(instances []string) string {
	out := slices.Clone(instances)
	slices.Sort(out)
	return strings.Join(slices.Compact(out), " ")
}

// LedgerInstances are the instances of a namespace's entry.
func LedgerInstances(entry string) []string { return strings.Fields(entry) }

// records reports whether the pass records the claim's instance in the ledger before it
// provisions (Record), or stops to retry a record that did not go through.
func (d *decision) records() bool {
	s := d.o.Shares
	if s == nil || s.Holds {
		return false
	}
	switch r := d.o.Recorded; {
	case r == nil:
		d.Next = Record
	case r.Err != nil:
		// Another claim of the namespace recorded one meanwhile: retried with backoff, the
		// ledger read again decides.
		d.Retry = fmt.Errorf("recording the shared instance: %w", r.Err)
	default:
		return false
	}
	return true
}

// sharesInstance reports whether the claim shares its definition's instance with other
// namespaces: from a namespace the platform admits, or from the sharing namespace itself.
func sharesInstance(o Observed) bool {
	sh := o.Definition.Sharing
	return sh != nil && o.Claim.Spec.ID != "" && (o.InstanceNamespace != "" || o.Claim.Namespace == sh.Namespace)
}

// FixedPolicy is the deprovision policy the platform fixes for the claim's instance, which the
// claim keeps and is released by whatever its spec says: the platform's (its class's, else its
// definition's, else Delete) for an instance the definition shares, across namespaces or in
// its sharing namespace, when its sharing allows consumers no override. "" when the claim's
// own policy decides.
func FixedPolicy(o Observed) scorev1b1.DeprovisionPolicy {
	if !sharesInstance(o) || o.Definition.Sharing.AllowPolicyOverride {
		return ""
	}
	if o.PlatformPolicy == "" {
		return scorev1b1.DeprovisionDelete
	}
	return o.PlatformPolicy
}

// policyOverridden says why a consumer of a shared instance may not have its deprovision
// policy, "" when it may: it names another than the platform fixes for the instance. A
// consumer that could delete what the platform retains could delete every consumer's data once
// it is the last.
func policyOverridden(o Observed) string {
	platform, policy := FixedPolicy(o), o.Claim.Spec.DeprovisionPolicy
	if policy == "" {
		policy = scorev1b1.DeprovisionDelete
	}
	if platform == "" || policy == platform {
		return ""
	}
	return fmt.Sprintf("The claim's deprovision policy %s is not %s, the platform's for the shared %s %s; a consumer of a shared instance keeps the platform's policy unless the provisioner's sharing allows an override (allowPolicyOverride).",
		policy, platform, o.Claim.Spec.Type, o.Claim.Spec.ID)
}

// overBound says why the claim's namespace may not hold its instance too, "" when it may: it
// holds the most instances of the sharing namespace the platform allows, and the claim's is
// not one of them. A claim the provisioner already provisioned on the instance keeps it (a
// bound lowered, or set, after the fact refuses no instance in use).
func overBound(o Observed) string {
	s := o.Shares
	if s == nil || s.Holds || o.Claim.Status.Instance == o.Instance {
		return ""
	}
	sh, held := o.Definition.Sharing, len(s.Held)
	if movesOut(o) {
		held-- // its place goes with the move: counted until then, it would hold the move back
	}
	if held < sh.MaxInstancesPerNamespace {
		return ""
	}
	return fmt.Sprintf("Namespace %s holds %d instances of %s shared from namespace %s, the most the platform allows (sharing.maxInstancesPerNamespace: %d); %s %s would be one more.",
		o.Claim.Namespace, len(s.Held), o.Definition.URI, sh.Namespace, sh.MaxInstancesPerNamespace, o.Claim.Spec.Type, o.Claim.Spec.ID)
}

// movesOut reports whether the claim moves from an instance its namespace holds (on the
// cluster its Workload left) whose retirement deletes it (Retire, under the policy its release
// follows): its place is freed once the claim is provisioned on the new cluster and the old
// instance deleted. One the policy keeps exists still, and keeps its place.
func movesOut(o Observed) bool {
	from := o.Claim.Status.Instance
	if from == "" || from == o.Instance || !slices.Contains(o.Shares.Held, from) {
		return false
	}
	policy := FixedPolicy(o)
	if policy == "" {
		policy = o.Claim.Spec.DeprovisionPolicy
	}
	return policy == "" || policy == scorev1b1.DeprovisionDelete
}
