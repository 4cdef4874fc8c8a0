package provisioner

import (
	"slices"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// An instance goes to its Workload's cluster unless its definition keeps it on the hub; an
// http+api:// instance has nothing to place and is the hub's.
func TestInstanceCluster(t *testing.T) {
	placed := &scorev1b1.ResourceClaim{Spec: scorev1b1.ResourceClaimSpec{Cluster: "eu"}}
	onHub := &scorev1b1.ResourceClaim{}
	for _, tc := range []struct {
		name  string
		claim *scorev1b1.ResourceClaim
		def   orchconfig.Provisioner
		want  string
	}{
		{"next to its Workload", placed, orchconfig.Provisioner{URI: "template://pg"}, "eu"},
		{"said so", placed, orchconfig.Provisioner{URI: "template://pg", Location: orchconfig.LocationWorkload}, "eu"},
		{"kept on the hub", placed, orchconfig.Provisioner{URI: "template://pg", Location: orchconfig.LocationHub}, ""},
		{"an external API", placed, orchconfig.Provisioner{URI: "http+api://cloud/db"}, ""},
		{"a Workload on the hub", onHub, orchconfig.Provisioner{URI: "template://pg"}, ""},
	} {
		if got := instanceCluster(tc.claim, tc.def); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A claim is indexed under every member cluster it is placed on or holds objects on (a moved
// claim under both), never under the hub.
func TestClaimClusters(t *testing.T) {
	c := &scorev1b1.ResourceClaim{
		Spec:   scorev1b1.ResourceClaimSpec{Cluster: "us"},
		Status: scorev1b1.ResourceClaimStatus{InstanceCluster: "us", Resources: []scorev1b1.AppliedObject{{Cluster: "eu", Kind: "StatefulSet"}, {Cluster: "us", Kind: "StatefulSet"}, {Kind: "Secret"}}},
	}
	if got := claimClusters(c); !slices.Equal(got, []string{"us", "eu"}) {
		t.Fatalf("indexed under %v, want [us eu]", got)
	}
	if got := claimClusters(&scorev1b1.ResourceClaim{}); len(got) != 0 {
		t.Fatalf("a hub claim indexed under %v", got)
	}
}
