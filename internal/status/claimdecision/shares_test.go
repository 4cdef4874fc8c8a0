package claimdecision

import (
	"errors"
	"slices"
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// shared serves the claim (id main, in namespace team) with a definition that shares from
// shared-home, at most max instances per consumer namespace, its instance shared from there
// under the platform's policy platform.
func shared(max int, platform scorev1b1.DeprovisionPolicy, policy scorev1b1.DeprovisionPolicy) func(*Observed) {
	return func(o *Observed) {
		o.Definition.Sharing = &orchconfig.Sharing{Namespace: "shared-home", MaxInstancesPerNamespace: max}
		o.InstanceNamespace, o.PlatformPolicy = "shared-home", platform
		o.Claim.Spec.ID, o.Claim.Spec.DeprovisionPolicy = "main", policy
	}
}

// holding is the ledger's entry of the claim's namespace: the instances it holds.
func holding(instances ...string) func(*Observed) {
	return func(o *Observed) {
		o.Shares = &Shares{Held: instances}
		for _, h := range instances {
			o.Shares.Holds = o.Shares.Holds || h == o.Instance
		}
	}
}

// A tenant's Delete on a shared instance the platform retains must not delete it, and every
// consumer's data, once it is the last; and a consumer namespace must not create instances in
// the sharing namespace without bound. A consumer keeps the platform's policy unless the sharing
// allows an override, and a namespace holds at most the platform's bound of instances, recorded
// in the sharing ledger before anything is provisioned.
func TestSharedInstanceLimits(t *testing.T) {
	const other, another = "1111111111111111", "2222222222222222"
	for _, tc := range []struct {
		name string
		in   Observed
		// phase, reason and a text of the message, or next and whether retried.
		phase     scorev1b1.ClaimPhase
		reason    scorev1b1.Reason
		message   string
		next      Next
		retry     bool
		resources string
	}{
		{name: "a consumer's Delete on an instance the platform retains", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete)),
			phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, resources: "-",
			message: "The claim's deprovision policy Delete is not Retain, the platform's for the shared postgres main; a consumer of a shared instance keeps the platform's policy unless the provisioner's sharing allows an override (allowPolicyOverride)."},
		{name: "the same, from the sharing namespace itself", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete), func(o *Observed) { o.InstanceNamespace, o.Claim.Namespace = "", "shared-home" }),
			phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "keeps the platform's policy"},
		{name: "a claim that was bound lets go of the instance: its release deletes none of it", in: observed(bound(live), shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete)),
			phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, resources: "-"},
		{name: "a consumer's Retain on an instance the platform deletes", in: observed(shared(0, "", scorev1b1.DeprovisionRetain)),
			phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPermissionDenied, message: "policy Retain is not Delete"},
		{name: "the platform's policy, said again", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionRetain)), next: Provision},
		{name: "an override the sharing allows", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete), func(o *Observed) { o.Definition.Sharing.AllowPolicyOverride = true }),
			next: Provision},
		{name: "an isolated claim's own instance: its policy is its own", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete), func(o *Observed) { o.InstanceNamespace = "" }),
			next: Provision},

		{name: "room in the namespace's bound: recorded first", in: observed(shared(2, "", ""), holding(other)), next: Record},
		{name: "recorded: provisioned", in: observed(shared(2, "", ""), holding(other), func(o *Observed) { o.Recorded = &Recorded{} }), next: Provision},
		{name: "another claim recorded meanwhile: retried, read again, the instance not yet the claim's", in: observed(shared(2, "", ""), holding(other), func(o *Observed) { o.Recorded = &Recorded{Err: errors.New("the object has been modified")} }),
			retry: true, resources: "-"},
		{name: "the namespace already holds the instance", in: observed(shared(2, "", ""), func(o *Observed) { holding(other, o.Instance)(o) }), next: Provision},
		{name: "the namespace at its bound", in: observed(shared(2, "", ""), holding(other, another)),
			phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPolicyViolation,
			message: "Namespace team holds 2 instances of " + uri + " shared from namespace shared-home, the most the platform allows (sharing.maxInstancesPerNamespace: 2); postgres main would be one more.", retry: true},
		{name: "at its bound, a claim moved to another cluster whose old instance its move deletes", in: observed(shared(2, "", ""), holding(other, another), func(o *Observed) { o.Claim.Status.Instance = another }),
			next: Record},
		{name: "at its bound, a claim moved whose old instance the platform retains there", in: observed(shared(2, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionRetain), holding(other, another), func(o *Observed) { o.Claim.Status.Instance = another }),
			phase: scorev1b1.ClaimPhaseFailed, reason: scorev1b1.ReasonPolicyViolation, message: "holds 2 instances", retry: true},
		{name: "at its bound, a claim already provisioned on the instance keeps it", in: observed(shared(2, "", ""), holding(other, another), func(o *Observed) { o.Claim.Status.Instance = o.Instance }),
			next: Record},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := From(tc.in)
			if tc.phase != "" && (d.Status.Phase != tc.phase || d.Status.Reason != tc.reason || !strings.Contains(d.Status.Message, tc.message)) {
				t.Errorf("%s %s %q, want %s %s %q", d.Status.Phase, d.Status.Reason, d.Status.Message, tc.phase, tc.reason, tc.message)
			}
			if d.Next != tc.next || (d.Retry != nil) != tc.retry {
				t.Errorf("next %d, retry %v; want %d, %v", d.Next, d.Retry, tc.next, tc.retry)
			}
			if tc.resources != "" && (names(d.Status.Resources) != strings.TrimPrefix(tc.resources, "-") || d.Status.Instance != "") {
				t.Errorf("resources %q, instance %q: the refused claim keeps the shared instance", names(d.Status.Resources), d.Status.Instance)
			}
		})
	}
}

// The ledger's entry of a namespace: its instances, in order, once each.
func TestLedgerEntry(t *testing.T) {
	if got := LedgerEntry([]string{"b", "a", "b"}); got != "a b" || strings.Join(LedgerInstances(got), ",") != "a,b" {
		t.Fatalf("entry %q", got)
	}
	if LedgerName("template://a") == LedgerName("template://b") {
		t.Fatal("two definitions, one ledger")
	}
}

// The ledger counts instances while they exist; a ledger an earlier version wrote still lists
// the instances it deprovisioned (until the namespace's next record) and dropped retained
// ones. Carried over once, an entry keeps the instances a claim stands for and those
// whose state is kept, so that a namespace is not held at its bound by instances that are gone.
func TestCarriedOver(t *testing.T) {
	in := func(set ...string) func(string) bool { return func(h string) bool { return slices.Contains(set, h) } }
	for _, tc := range []struct {
		name         string
		entry        []string
		stands, kept []string
		want         string
	}{
		{name: "an instance a claim stands for", entry: []string{"a"}, stands: []string{"a"}, want: "a"},
		{name: "a retained instance: its state kept", entry: []string{"a"}, kept: []string{"a"}, want: "a"},
		{name: "one deprovisioned: no claim, no state", entry: []string{"a", "b", "c"}, stands: []string{"a"}, kept: []string{"c"}, want: "a c"},
		{name: "none left", entry: []string{"a"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LedgerEntry(CarriedOver(tc.entry, in(tc.stands...), in(tc.kept...))); got != tc.want {
				t.Errorf("carried over %q, want %q", got, tc.want)
			}
		})
	}
}
