package main

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
)

// The baseline creates what the controllers would apply for the same Workloads: the
// provisioned objects and an outputs Secret per claim first, the runtime's objects second, all
// in the baseline's namespace and owned by nothing that would not exist there.
func TestBaselineObjects(t *testing.T) {
	raw, err := orchconfig.DevelopmentConfig(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := orchconfig.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := baselineObjects(context.Background(), "../..", cfg, []string{kindPostgres, kindNone})
	if err != nil {
		t.Fatal(err)
	}
	kinds := func(i int) []string {
		var out []string
		for _, o := range stages[i] {
			if o.GetNamespace() != baselineNS {
				t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
			}
			if len(o.GetOwnerReferences()) > 0 {
				t.Errorf("%s %s has owners %v", o.GetKind(), o.GetName(), o.GetOwnerReferences())
			}
			out = append(out, o.GetKind())
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	provisioned, applied := kinds(0), kinds(1)
	for _, k := range []string{"StatefulSet", "Service", "Secret"} {
		if !slices.Contains(provisioned, k) {
			t.Errorf("the provisioned stage has %v, no %s", provisioned, k)
		}
	}
	for _, k := range []string{"Deployment", "Service"} {
		if !slices.Contains(applied, k) {
			t.Errorf("the runtime's stage has %v, no %s", applied, k)
		}
	}
	deployments := 0
	for _, o := range stages[1] {
		if o.GetKind() == "Deployment" {
			deployments++
		}
	}
	if deployments != 2 {
		t.Errorf("%d Deployments for two web Workloads", deployments)
	}
}
