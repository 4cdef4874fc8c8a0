package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A tenant's route must not claim any host and path on the shared Gateway. The config's
// hostnames rules say which host names each namespace may claim through
// a param a definition marks as a host name; the decision is the claim's namespace's.
func TestHostnamesArePerNamespace(t *testing.T) {
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-front", Labels: map[string]string{"team": "shop"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}},
	} {
		testenv.Create(t, env.Client, ns)
	}
	route := func(ns, name, host string) *scorev1b1.ResourceClaim {
		c := newClaim(ns, name, name, "route", "host-route", "", scorev1b1.DeprovisionDelete)
		c.Spec.Params = &apiextensionsv1.JSON{Raw: []byte(`{"host":"` + host + `"}`)}
		testenv.Create(t, env.Client, c)
		return c
	}
	for _, tc := range []struct {
		name, ns, host string
		allowed        bool
	}{
		{"its own subdomain", "intruder", "web.intruder.apps.test", true},
		{"the team's domain from the team's namespace", "shop-front", "shop.test", true},
		{"the team's domain from another namespace", "intruder", "shop.test", false},
		{"another namespace's subdomain", "intruder", "web.shop-front.apps.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := route(tc.ns, "r-"+strings.ReplaceAll(tc.host, ".", "-"), tc.host)
			if tc.allowed {
				c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
				if !strings.Contains(string(c.Status.Outputs.Raw), tc.host) {
					t.Fatalf("outputs %s", c.Status.Outputs.Raw)
				}
				return
			}
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			want := "Namespace " + tc.ns + " may not use host name " + tc.host + ": the platform admits *." + tc.ns + ".apps.test there."
			if c.Status.Reason != scorev1b1.ReasonPolicyViolation || c.Status.Message != want || c.Status.Outputs != nil || len(c.Status.Resources) != 0 {
				t.Fatalf("status %+v, want %q", c.Status, want)
			}
		})
	}
}
