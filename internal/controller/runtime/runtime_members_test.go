package runtime

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apply"
)

// A plan that moved lists its objects on both clusters until the old ones are deleted; each
// cluster's entries are pruned only by that cluster's applier, and the same object on two
// clusters is two entries.
func TestInventoryAcrossClusters(t *testing.T) {
	deploy := func(cluster string) scorev1b1.AppliedObject {
		return scorev1b1.AppliedObject{Cluster: cluster, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	}
	p := &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{Cluster: "us"}, Status: scorev1b1.WorkloadPlanStatus{Objects: []scorev1b1.AppliedObject{deploy("eu"), deploy("")}}}
	on, others := split(p.Status.Objects, "us")
	if len(on) != 0 || len(others) != 2 {
		t.Fatalf("on us %v, elsewhere %v", on, others)
	}
	if apply.Key(deploy("eu")) == apply.Key(deploy("us")) || apply.Key(deploy("")) != "apps/Deployment/team/web" {
		t.Fatalf("keys %q %q %q", apply.Key(deploy("eu")), apply.Key(deploy("us")), apply.Key(deploy("")))
	}
	if got := planClusters(p); !slices.Equal(got, []string{"us", "eu"}) {
		t.Fatalf("the plan's clusters %v, want [us eu] (the hub is not indexed)", got)
	}
	if got := clusterOf([]scorev1b1.AppliedObject{deploy("")}, "eu"); got[0].Cluster != "eu" {
		t.Fatalf("tagged %v", got)
	}
}

// A request to a member that got no answer marks it unreachable; the API server's refusal
// does not.
func TestUnanswered(t *testing.T) {
	gr := schema.GroupResource{Resource: "deployments"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, true},
		{fmt.Errorf("applying Deployment web: %w", &url.Error{Op: "Patch", URL: "https://m", Err: io.EOF}), true},
		{errors.New("Deployment web targets namespace other; only objects in team may be created"), false},
		{apierrors.NewServiceUnavailable("etcd"), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewForbidden(gr, "web", errors.New("no")), false},
		{apierrors.NewNotFound(gr, "web"), false},
		{apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "get", gr, "web", "", 0, true), true},
		{nil, false},
	} {
		if got := unanswered(tc.err); got != tc.want {
			t.Errorf("unanswered(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
