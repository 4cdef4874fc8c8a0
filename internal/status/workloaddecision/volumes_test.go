package workloaddecision

import (
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// withVolume mounts source at target in the main container.
func withVolume(target, source string) wopt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Volumes == nil {
			c.Volumes = map[string]scorev1b1.ContainerVolume{}
		}
		c.Volumes[target] = scorev1b1.ContainerVolume{Source: source}
		w.Spec.Containers["main"] = c
	}
}

// scratchVolumes admits each namespace's <namespace>-scratch, and archive-* to the namespaces
// labelled archive=yes.
func scratchVolumes(c *orchconfig.Config) {
	c.NamedVolumes = []orchconfig.NamedVolumeRule{{Names: []string{"{namespace}-scratch"}},
		{NamespaceSelector: &orchconfig.Selector{MatchLabels: map[string]string{"archive": "yes"}}, Names: []string{"archive-*", "data-*"}}}
}

// A volume source that is a plain name must not mount any volume claim of the namespace (a
// colleague's database's, say). A Workload mounts by name only what a rule of the platform
// admits for its namespace, and never an instance's volume; nothing is provisioned or deployed
// for it otherwise, and it says which volume and why.
func TestNamedVolumes(t *testing.T) {
	pg := InstanceVolumes{Sets: []string{"pg-1a2b3c4d5e6f"}, Claims: map[string]bool{"vol-0f9e8d7c6b5a": true}}
	for _, tc := range []struct {
		name     string
		source   string
		labels   map[string]string
		rules    bool
		volumes  InstanceVolumes
		want     want
		refusing string
	}{
		{name: "a dependency's volume, by reference: not judged", source: "${resources.data}", rules: false,
			want: want{writes: []string{"add finalizer", "creating claim data", "creating exposure"}, inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending}},
		{name: "no rules: no volume by name", source: "shared-cache",
			refusing: "spec.containers.main.volumes./data.source: The platform does not let namespace team mount volume shared-cache by name; it admits no volume by name there."},
		{name: "the namespace's own, admitted", source: "team-scratch", rules: true,
			want: want{writes: []string{"add finalizer", "creating claim data", "creating exposure"}, inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending}},
		{name: "another namespace's", source: "other-scratch", rules: true,
			refusing: "The platform does not let namespace team mount volume other-scratch by name; it admits team-scratch there."},
		{name: "a pattern the namespace's labels admit", source: "archive-2026", rules: true, labels: map[string]string{"archive": "yes"},
			want: want{writes: []string{"add finalizer", "creating claim data", "creating exposure"}, inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending}},
		{name: "a colleague's database volume, though a rule admits the name", source: "data-pg-1a2b3c4d5e6f-0", rules: true, labels: map[string]string{"archive": "yes"}, volumes: pg,
			refusing: "spec.containers.main.volumes./data.source: Volume data-pg-1a2b3c4d5e6f-0 belongs to a provisioned dependency; a workload mounts a dependency's volume with ${resources.<name>}."},
		{name: "another instance's volume claim, though a rule admits the name", source: "data-x", rules: true, labels: map[string]string{"archive": "yes"},
			volumes: InstanceVolumes{Claims: map[string]bool{"data-x": true}}, refusing: "Volume data-x belongs to a provisioned dependency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fresh(t, withResource("data", "volume"), withVolume("/data", tc.source))
			if tc.rules {
				o.Config = loaded(t, revOne, scratchVolumes)
			}
			o.NamespaceLabels, o.InstanceVolumes = tc.labels, tc.volumes
			if tc.refusing != "" {
				tc.want = want{inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonPolicyViolation, runtime: scorev1b1.ReasonPolicyViolation,
					ready: "False/PolicyViolation", message: tc.refusing, events: []string{"Warning/PolicyViolation"}}
			}
			d, writes := drive(t, o, answers{})
			check(t, d, writes, tc.want)
		})
	}
}

// The volumes of a namespace's instances: what their claims' inventories list there, the
// claims shared into it from another namespace included.
func TestInstanceVolumesOf(t *testing.T) {
	claim := func(ns, instanceNS string, objs ...scorev1b1.AppliedObject) scorev1b1.ResourceClaim {
		c := scorev1b1.ResourceClaim{}
		c.Namespace, c.Status.InstanceNamespace, c.Status.Resources = ns, instanceNS, objs
		return c
	}
	sts := func(ns, name string) scorev1b1.AppliedObject {
		return scorev1b1.AppliedObject{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: name}
	}
	pvc := func(ns, name string) scorev1b1.AppliedObject {
		return scorev1b1.AppliedObject{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: name}
	}
	v := InstanceVolumesOf([]scorev1b1.ResourceClaim{
		claim("team", "", sts("team", "pg-1a2b"), pvc("team", "vol-9f8e"), scorev1b1.AppliedObject{APIVersion: "v1", Kind: "Secret", Namespace: "team", Name: "pg-1a2b"}),
		claim("other", "team", sts("team", "redis-77")),
		claim("other", "", sts("other", "mongo-1"), pvc("other", "vol-other")),
	}, "team")
	for name, want := range map[string]bool{
		"data-pg-1a2b-0": true, "data-pg-1a2b-12": true, "vol-9f8e": true, "data-redis-77-0": true,
		"pg-1a2b": false, "data-pg-1a2b-01": false, "data-pg-1a2b-x": false, "-pg-1a2b-0": false, "data-mongo-1-0": false, "vol-other": false, "team-scratch": false,
	} {
		if got := v.Has(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
