package claimdecision

import scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"

// The release of a deleted claim: the policy it follows, and what of its instance it may
// deprovision. A claim's spec says the tenant's policy (the orchestrator writes the Workload's
// score.dev/deprovision-policy into it); where the platform fixes the policy of a shared
// instance (FixedPolicy), a refusing pass judges a spec that names another, but a release may
// come first — a spec turned to Delete and the claim deleted before the provisioner's next pass
// (a backlog, a restart, both events merged into one) — so a release follows what the
// provisioner recorded when it bound the claim (status.platformPolicy), never the spec.

// ReleasePolicy is the deprovision policy a deleted claim is released by: the platform's the
// provisioner recorded when it bound the claim; else configured, the policy the config fixes now
// for the claim's instance, for a claim bound before the provisioner recorded one (read only
// when UnrecordedPolicy; "" when it fixes none); else the spec's, Delete when it names none.
func ReleasePolicy(c *scorev1b1.ResourceClaim, configured scorev1b1.DeprovisionPolicy) scorev1b1.DeprovisionPolicy {
	for _, p := range []scorev1b1.DeprovisionPolicy{c.Status.PlatformPolicy, configured, c.Spec.DeprovisionPolicy} {
		if p != "" {
			return p
		}
	}
	return scorev1b1.DeprovisionDelete
}

// UnrecordedPolicy reports whether a claim's release needs the policy the config fixes for its
// instance: no platform's policy is recorded, the claim is bound to an instance it may share
// (it has an id), and its spec would delete the instance. That is a claim an earlier version
// bound, which recorded none, or one bound while the platform fixed none (the config's, unless
// it changed since, fixes none still).
func UnrecordedPolicy(c *scorev1b1.ResourceClaim) bool {
	deletes := c.Spec.DeprovisionPolicy == "" || c.Spec.DeprovisionPolicy == scorev1b1.DeprovisionDelete
	return c.Status.PlatformPolicy == "" && c.Status.Instance != "" && c.Spec.ID != "" && deletes
}

// DeprovisionsInstance reports whether a claim's release may deprovision its instance beyond the
// objects its status lists — send its external API's delete request, delete its state, free its
// place in the sharing ledger: only while its status names the instance. A claim the provisioner
// never bound, or one that let go of its instance (a policy the platform does not allow), has
// none of it, though its status still says which definition served it and where its instance
// lives.
func DeprovisionsInstance(c *scorev1b1.ResourceClaim) bool {
	return c.Status.Instance != ""
}
