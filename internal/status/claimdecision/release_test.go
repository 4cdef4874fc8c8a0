package claimdecision

import (
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// released is a deleted claim: its spec's policy, the platform's policy the provisioner
// recorded, its instance (id main) as its status names it ("": none) and whether it has an id.
func released(spec, recorded scorev1b1.DeprovisionPolicy, instance string, id bool) *scorev1b1.ResourceClaim {
	c := &scorev1b1.ResourceClaim{Spec: scorev1b1.ResourceClaimSpec{Type: "postgres", DeprovisionPolicy: spec}}
	c.Status.PlatformPolicy, c.Status.Instance = recorded, instance
	if id {
		c.Spec.ID = "main"
	}
	return c
}

// A tenant's Delete must not deprovision a shared instance the platform retains. The claim's
// spec is the tenant's to write (the Workload's score.dev/deprovision-policy): a release that
// followed it would, for a spec turned to Delete and deleted before the provisioner's refusing
// pass, delete the retained objects and the state, and send an http+api instance's delete
// request for a refused claim. So a release follows the platform's policy the provisioner
// recorded when it bound the claim; a claim bound without that record is released by the policy
// the config fixes; only a claim whose status names its instance deprovisions it.
func TestReleasePolicy(t *testing.T) {
	const instance = "0123456789abcdef"
	for _, tc := range []struct {
		name       string
		claim      *scorev1b1.ResourceClaim
		configured scorev1b1.DeprovisionPolicy // what the config fixes, read only when unrecorded
		unrecorded bool
		want       scorev1b1.DeprovisionPolicy
		instance   bool // DeprovisionsInstance
	}{
		{name: "spec turned to Delete before the refusing pass: the platform's recorded Retain",
			claim: released(scorev1b1.DeprovisionDelete, scorev1b1.DeprovisionRetain, instance, true), want: scorev1b1.DeprovisionRetain, instance: true},
		{name: "no policy in the spec, the platform's recorded Retain",
			claim: released("", scorev1b1.DeprovisionRetain, instance, true), want: scorev1b1.DeprovisionRetain, instance: true},
		{name: "refused (the instance let go of), the platform's Retain kept",
			claim: released(scorev1b1.DeprovisionDelete, scorev1b1.DeprovisionRetain, "", true), want: scorev1b1.DeprovisionRetain},
		{name: "the platform's recorded Delete over a spec's Orphan",
			claim: released(scorev1b1.DeprovisionOrphan, scorev1b1.DeprovisionDelete, instance, true), want: scorev1b1.DeprovisionDelete, instance: true},
		{name: "refused Retain on an instance the platform deletes: Delete, but none of the instance",
			claim: released(scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete, "", true), want: scorev1b1.DeprovisionDelete},
		{name: "nothing recorded, an isolated claim's own policy",
			claim: released(scorev1b1.DeprovisionRetain, "", instance, false), want: scorev1b1.DeprovisionRetain, instance: true},
		{name: "nothing recorded, no policy at all: Delete",
			claim: released("", "", instance, false), want: scorev1b1.DeprovisionDelete, instance: true},
		{name: "bound by an earlier version (nothing recorded), Delete in the spec: the config's Retain",
			claim: released(scorev1b1.DeprovisionDelete, "", instance, true), configured: scorev1b1.DeprovisionRetain, unrecorded: true, want: scorev1b1.DeprovisionRetain, instance: true},
		{name: "bound by an earlier version, the config fixes none: the spec's Delete",
			claim: released("", "", instance, true), unrecorded: true, want: scorev1b1.DeprovisionDelete, instance: true},
		{name: "bound by an earlier version, Retain in the spec: the config is not read",
			claim: released(scorev1b1.DeprovisionRetain, "", instance, true), want: scorev1b1.DeprovisionRetain, instance: true},
		{name: "never bound: the config is not read, nothing of the instance deprovisioned",
			claim: released(scorev1b1.DeprovisionDelete, "", "", true), want: scorev1b1.DeprovisionDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnrecordedPolicy(tc.claim); got != tc.unrecorded {
				t.Errorf("unrecorded %v, want %v", got, tc.unrecorded)
			}
			configured := scorev1b1.DeprovisionPolicy("")
			if tc.unrecorded {
				configured = tc.configured
			}
			if got := ReleasePolicy(tc.claim, configured); got != tc.want {
				t.Errorf("released by %s, want %s", got, tc.want)
			}
			if got := DeprovisionsInstance(tc.claim); got != tc.instance {
				t.Errorf("deprovisions the instance %v, want %v", got, tc.instance)
			}
		})
	}
}

// The platform's policy is recorded when the claim is bound to its instance, and a refusal
// keeps it: the release that comes before the refusing pass is written, or after it, follows it.
func TestPlatformPolicyIsRecordedWhenBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Observed
		want scorev1b1.DeprovisionPolicy
	}{
		{name: "bound to an instance the platform retains", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionRetain)), want: scorev1b1.DeprovisionRetain},
		{name: "bound to one it deletes, no policy in the spec", in: observed(shared(0, "", "")), want: scorev1b1.DeprovisionDelete},
		{name: "the sharing allows an override: none recorded", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete), func(o *Observed) { o.Definition.Sharing.AllowPolicyOverride = true })},
		{name: "an isolated claim's own instance: none recorded", in: observed(shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete), func(o *Observed) { o.InstanceNamespace = "" })},
		{name: "a recorded policy the platform no longer fixes is cleared when bound again", in: observed(bound(live), func(o *Observed) { o.Claim.Status.PlatformPolicy = scorev1b1.DeprovisionRetain })},
		{name: "refused Delete: the recorded Retain is kept", in: observed(bound(live), shared(0, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionDelete), func(o *Observed) {
			o.Claim.Status.PlatformPolicy, o.Claim.Status.Instance = scorev1b1.DeprovisionRetain, o.Instance
		}), want: scorev1b1.DeprovisionRetain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := From(tc.in).Status.PlatformPolicy; got != tc.want {
				t.Errorf("recorded %q, want %q", got, tc.want)
			}
		})
	}
}
