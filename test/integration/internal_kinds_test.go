package integration

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

func wantRejected(t *testing.T, err error, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a rejection saying %q, the API server accepted it", message)
	}
	if !strings.Contains(err.Error(), message) {
		t.Fatalf("want a rejection saying %q, got %v", message, err)
	}
}

func claim(name string) *scorev1b1.ResourceClaim {
	return &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{scorev1b1.LabelWorkload: "web"}},
		Spec: scorev1b1.ResourceClaimSpec{
			WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "0b7c4d1e-0000-4000-8000-000000000001"},
			Key:         "db",
			Type:        "postgres",
		},
	}
}

func TestResourceClaimIdentityIsImmutable(t *testing.T) {
	ctx := context.Background()
	c := claim("web-db-immutable")
	testenv.Create(t, env.Client, c)
	if c.Spec.DeprovisionPolicy != scorev1b1.DeprovisionDelete {
		t.Fatalf("deprovisionPolicy defaults to Delete, got %q", c.Spec.DeprovisionPolicy)
	}
	cases := []struct {
		name    string
		mutate  func(*scorev1b1.ResourceClaim)
		message string
	}{
		{"type", func(c *scorev1b1.ResourceClaim) { c.Spec.Type = "mysql" }, "type is immutable"},
		{"key", func(c *scorev1b1.ResourceClaim) { c.Spec.Key = "cache" }, "key is immutable"},
		{"workloadRef", func(c *scorev1b1.ResourceClaim) { c.Spec.WorkloadRef.UID = "another" }, "workloadRef is immutable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cur scorev1b1.ResourceClaim
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), &cur); err != nil {
				t.Fatal(err)
			}
			tc.mutate(&cur)
			wantRejected(t, env.Client.Update(ctx, &cur), tc.message)
		})
	}
	t.Run("the policy may change", func(t *testing.T) {
		var cur scorev1b1.ResourceClaim
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.DeprovisionPolicy = scorev1b1.DeprovisionRetain
		if err := env.Client.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
	})
}

func TestResourceClaimOutputsAvailable(t *testing.T) {
	ctx := context.Background()
	c := claim("web-db-outputs")
	testenv.Create(t, env.Client, c)
	c.Status = scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true}
	wantRejected(t, env.Client.Status().Update(ctx, c), "outputsAvailable requires at least one output")

	c.Status.Outputs = &apiextensionsv1.JSON{Raw: []byte(`{}`)}
	wantRejected(t, env.Client.Status().Update(ctx, c), "should have at least 1 properties")

	c.Status.Outputs = nil
	c.Status.SecretRef = &scorev1b1.OutputsSecretRef{Name: "web-db-outputs"}
	wantRejected(t, env.Client.Status().Update(ctx, c), "outputsAvailable requires at least one output")

	c.Status.SecretRef.Keys = []string{"password"}
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatalf("secret outputs alone are outputs: %v", err)
	}
	c.Status.SecretRef = nil
	c.Status.Outputs = &apiextensionsv1.JSON{Raw: []byte(`{"host":"db","nested":{"port":5432}}`)}
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatalf("non-secret outputs: %v", err)
	}
	c.Status.Phase = "Ready"
	wantRejected(t, env.Client.Status().Update(ctx, c), `supported values: "Pending", "Binding", "Bound", "Failed"`)
}

func TestWorkloadPlanIdentityIsImmutable(t *testing.T) {
	ctx := context.Background()
	p := &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: scorev1b1.WorkloadPlanSpec{
			WorkloadRef:  scorev1b1.LocalWorkloadRef{Name: "web", UID: "u1"},
			RuntimeClass: "kubernetes",
			BackendID:    "k8s-web",
			Template:     scorev1b1.TemplateRef{Kind: scorev1b1.TemplateManifests, Ref: "configmap://score-system/t/web.yaml", Digest: "sha256:" + strings.Repeat("a", 64)},
		},
	}
	testenv.Create(t, env.Client, p)
	p.Spec.WorkloadRef.Name = "other"
	wantRejected(t, env.Client.Update(ctx, p), "workloadRef is immutable")

	bad := p.DeepCopy()
	bad.ResourceVersion, bad.Name = "", "bad-digest"
	bad.Spec.WorkloadRef.Name = "web"
	bad.Spec.Template.Digest = "sha256:xyz"
	wantRejected(t, env.Client.Create(ctx, bad), "spec.template.digest")
}

func TestWorkloadExposure(t *testing.T) {
	ctx := context.Background()
	e := &scorev1b1.WorkloadExposure{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: scorev1b1.WorkloadExposureSpec{
			WorkloadRef:  scorev1b1.WorkloadRef{Name: "web", Namespace: "default", UID: "u1"},
			RuntimeClass: "kubernetes",
		},
	}
	testenv.Create(t, env.Client, e)
	for _, url := range []string{"not a url", "app.example.com", "https://", "http:///path", "https://exa mple.com"} {
		t.Run("rejects "+url, func(t *testing.T) {
			e.Status.Exposures = []scorev1b1.Exposure{{URL: url}}
			wantRejected(t, env.Client.Status().Update(ctx, e), "url must be an absolute URI with a scheme and a host")
		})
	}
	t.Run("rejects an empty url", func(t *testing.T) {
		e.Status.Exposures = []scorev1b1.Exposure{{URL: ""}}
		wantRejected(t, env.Client.Status().Update(ctx, e), "url")
	})
	t.Run("rejects an unknown scope", func(t *testing.T) {
		e.Status.Exposures = []scorev1b1.Exposure{{URL: "https://app.example.com", Scope: "Internet"}}
		wantRejected(t, env.Client.Status().Update(ctx, e), `supported values: "Public", "ClusterLocal", "VPC", "Other"`)
	})
	for _, url := range []string{"https://app.example.com", "http://web.default.svc.cluster.local:8080", "tcp://10.0.0.1:5432"} {
		t.Run("accepts "+url, func(t *testing.T) {
			e.Status.Exposures = []scorev1b1.Exposure{{URL: url, Priority: 100, Scope: scorev1b1.ScopePublic, SchemeHint: "HTTPS", Reachable: ptr.To(true)}}
			if err := env.Client.Status().Update(ctx, e); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("workloadRef is immutable", func(t *testing.T) {
		var cur scorev1b1.WorkloadExposure
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(e), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.WorkloadRef.UID = "u2"
		wantRejected(t, env.Client.Update(ctx, &cur), "workloadRef is immutable")
	})
}

// kubectl get score lists every kind: each CRD is in the score category, with a short name.
func TestKindsAreDiscoverableAsScore(t *testing.T) {
	ctx := context.Background()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := env.Client.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"workloads.score.dev": false, "resourceclaims.score.dev": false, "workloadplans.score.dev": false, "workloadexposures.score.dev": false}
	for _, crd := range crds.Items {
		if _, ok := want[crd.Name]; !ok {
			continue
		}
		want[crd.Name] = true
		names := crd.Spec.Names
		if len(names.ShortNames) == 0 || len(names.Categories) != 1 || names.Categories[0] != "score" {
			t.Errorf("%s: short names %v, categories %v", crd.Name, names.ShortNames, names.Categories)
		}
		v := crd.Spec.Versions[0]
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s has no status subresource", crd.Name)
		}
		if crd.Name == "workloads.score.dev" {
			var cols []string
			for _, c := range v.AdditionalPrinterColumns {
				cols = append(cols, strings.ToUpper(c.Name))
			}
			if strings.Join(cols, ",") != "READY,REASON,ENDPOINT,AGE" {
				t.Errorf("Workload printer columns %v", cols)
			}
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("%s is not installed", name)
		}
	}
}
