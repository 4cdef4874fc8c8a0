package provisioner

import (
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

func withClass(c *scorev1b1.ResourceClaim, class string) *scorev1b1.ResourceClaim {
	c.Spec.Class = class
	return c
}

// Classes: a claim without a class gets the type's default class; a class's params are
// merged under the claim's before matching (matchParams routes on them) and rendering.
func TestClasses(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	cases := []struct {
		name, class, params string
		wantProvisioner     string
		wantOutputs         []string
	}{
		{"no class: the default class and its params", "", "", "template://test/classed",
			[]string{`"served":"plain"`, `"class":"standard"`, `"size":"medium"`, `"uid":"classed.default#w.no-class"`}},
		{"a class's params route to the provisioner matching them", "big", "", "template://test/classed-gold",
			[]string{`"served":"gold"`, `"class":"big"`, `"size":"large"`}},
		{"the claim's params win over the class's", "big", `{"size":"xl"}`, "template://test/classed-gold",
			[]string{`"served":"gold"`, `"size":"xl"`}},
		{"the claim's params win over the default class's", "", `{"size":"tiny"}`, "template://test/classed",
			[]string{`"class":"standard"`, `"size":"tiny"`}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := []string{"no-class", "big", "big-xl", "tiny"}[i]
			c := withClass(newClaim(ns, "w-"+key, "w", key, "classed", "", scorev1b1.DeprovisionDelete), tc.class)
			if tc.params != "" {
				c.Spec.Params = jsonRaw(tc.params)
			}
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
			if c.Status.Provisioner != tc.wantProvisioner {
				t.Fatalf("served by %s", c.Status.Provisioner)
			}
			for _, want := range tc.wantOutputs {
				if !strings.Contains(string(c.Status.Outputs.Raw), want) {
					t.Errorf("outputs %s lack %s", c.Status.Outputs.Raw, want)
				}
			}
		})
	}

	t.Run("an unknown class fails, listing the type's classes", func(t *testing.T) {
		c := withClass(newClaim(ns, "w-gold", "w", "gold", "classed", "", scorev1b1.DeprovisionDelete), "gold")
		testenv.Create(t, env.Client, c)
		c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
		if c.Status.Reason != scorev1b1.ReasonClaimFailed || c.Status.Message != "Class gold is not a class of classed. Available classes: big, standard." {
			t.Fatalf("status %s: %s", c.Status.Reason, c.Status.Message)
		}
	})
}
