package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// Path 1: inputs the API server cannot judge are SpecInvalid, with a message naming the field.
func TestSpecInvalid(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	cases := []struct {
		name    string
		w       *scorev1b1.Workload
		message string
	}{
		{"undeclared-resource", workload(ns, "undeclared", testenv.WithVar("DB", "${resources.db.host}")), `spec.containers.main.variables.DB: The placeholder ${resources.db.host} names resource "db", which is not declared.`},
		{"unknown-profile", workload(ns, "unknown-profile", testenv.WithAnnotation(scorev1b1.AnnotationProfile, "function")), `The requested profile "function" is not offered by the platform.`},
		{"malformed", workload(ns, "malformed", testenv.WithVar("X", "${resources}")), "spec.containers.main.variables.X: Placeholder ${resources} is malformed"},
		{"params-cycle", workload(ns, "params-cycle", testenv.WithResource("aa", "postgres", testenv.ResourceParams(`{"x":"${resources.bb.host}"}`)), testenv.WithResource("bb", "redis", testenv.ResourceParams(`{"x":"${resources.aa.host}"}`))), "spec.resources: The resources' params refer to each other in a cycle: aa → bb → aa."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Create(t, env.Client, tc.w)
			w := conditionIs(t, ns, tc.w.Name, scorev1b1.ConditionInputsValid, metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid)
			if msg := testenv.Condition(w, scorev1b1.ConditionInputsValid).Message; !strings.Contains(msg, tc.message) {
				t.Fatalf("message %q, want %q", msg, tc.message)
			}
			if r := testenv.Condition(w, scorev1b1.ConditionReady); r.Status != metav1.ConditionFalse || r.Reason != string(scorev1b1.ReasonSpecInvalid) {
				t.Fatalf("ready %+v", r)
			}
			var claims scorev1b1.ResourceClaimList
			if err := env.Client.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: tc.w.Name}); err != nil || len(claims.Items) > 0 {
				t.Fatalf("no claims for invalid input: %v %d", err, len(claims.Items))
			}
		})
	}
	t.Run("fixing the input recovers", func(t *testing.T) {
		w := get(t, ns, "undeclared")
		w.Spec.Resources = map[string]scorev1b1.Resource{"db": {Type: "redis"}}
		if err := env.Client.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		conditionIs(t, ns, "undeclared", scorev1b1.ConditionInputsValid, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		conditionIs(t, ns, "undeclared", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)
	})
}

// Path 2: no backend fits → RuntimeSelecting; a requirement a backend offers selects it.
func TestSelection(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "needs-s2z", testenv.WithAnnotation(scorev1b1.AnnotationRequirements, `["scale-to-zero"]`)))
	w := conditionIs(t, ns, "needs-s2z", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonRuntimeSelecting)
	if c := testenv.Condition(w, scorev1b1.ConditionInputsValid); c.Status != metav1.ConditionTrue {
		t.Fatalf("inputs are valid: %+v", c)
	}
	testenv.Create(t, env.Client, workload(ns, "needs-gpu", testenv.WithAnnotation(scorev1b1.AnnotationRequirements, "gpu")))
	if p := planOf(t, ns, "needs-gpu"); p.Spec.BackendID != "k8s-web-gpu" {
		t.Fatalf("backend %s", p.Spec.BackendID)
	}
	testenv.Create(t, env.Client, workload(ns, "hinted", testenv.WithAnnotation(scorev1b1.AnnotationProfile, "batch-job")))
	if p := planOf(t, ns, "hinted"); p.Spec.BackendID != "k8s-job" || p.Spec.Profile != "batch-job" {
		t.Fatalf("plan %s/%s", p.Spec.Profile, p.Spec.BackendID)
	}
}

// Path 3: claims — pending, failed with an abstract reason or ClaimFailed, params resolved in
// dependency order, and keys removed per policy.
func TestClaims(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "app",
		testenv.WithResource("dns", "dns"),
		testenv.WithResource("route", "route", testenv.ResourceParams(`{"host":"${resources.dns.host}","path":"/"}`)),
		testenv.WithResource("db", "postgres"),
	))
	w := conditionIs(t, ns, "app", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimPending)

	t.Run("a claim whose params need another's outputs waits for them", func(t *testing.T) {
		summary := map[string]scorev1b1.ClaimSummary{}
		for _, c := range w.Status.Claims {
			summary[c.Key] = c
		}
		if s := summary["route"]; s.Phase != scorev1b1.ClaimPhasePending || s.Message != `Waiting for the outputs of "dns".` {
			t.Fatalf("route %+v", s)
		}
		route := &scorev1b1.ResourceClaim{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName(w, "route", "route")}, route)
		if err == nil {
			t.Fatal("the route claim must not exist before the dns outputs")
		}
		bind(t, claimOf(t, w, "dns", "dns"), map[string]any{"host": "app.example.com"}, nil)
		route = claimOf(t, w, "route", "route")
		if string(route.Spec.Params.Raw) != `{"host":"app.example.com","path":"/"}` {
			t.Fatalf("params %s", route.Spec.Params.Raw)
		}
	})

	t.Run("a failed claim with an abstract reason", func(t *testing.T) {
		setClaimStatus(t, claimOf(t, w, "db", "postgres"), scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Reason: scorev1b1.ReasonQuotaExceeded, Message: "StatefulSet refused: exceeded quota"})
		w = conditionIs(t, ns, "app", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonQuotaExceeded)
		if m := testenv.Condition(w, scorev1b1.ConditionClaimsReady).Message; m != `Dependency "db" exceeds a quota.` {
			t.Fatalf("message %q (the provisioner's detail stays on the claim)", m)
		}
	})

	t.Run("a failed claim with a provisioner-specific reason is ClaimFailed", func(t *testing.T) {
		setClaimStatus(t, claimOf(t, w, "db", "postgres"), scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Reason: "ImagePullBackOff"})
		conditionIs(t, ns, "app", scorev1b1.ConditionClaimsReady, metav1.ConditionFalse, scorev1b1.ReasonClaimFailed)
	})

	t.Run("recovery when the claim binds", func(t *testing.T) {
		bind(t, claimOf(t, w, "db", "postgres"), map[string]any{"host": "db"}, nil)
		bind(t, claimOf(t, w, "route", "route"), map[string]any{"url": "https://app.example.com/"}, nil)
		conditionIs(t, ns, "app", scorev1b1.ConditionClaimsReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	})

	t.Run("removed keys are deprovisioned per policy", func(t *testing.T) {
		dbName, dns := claimName(w, "db", "postgres"), claimOf(t, w, "dns", "dns")
		if !controllerutil.ContainsFinalizer(dns, scorev1b1.ClaimFinalizer) {
			t.Fatalf("the claim was created without the provisioner's finalizer: %v", dns.Finalizers)
		}
		w = get(t, ns, "app")
		delete(w.Spec.Resources, "db")  // Retain (the provisioner's default)
		delete(w.Spec.Resources, "dns") // Delete
		delete(w.Spec.Resources, "route")
		if err := env.Client.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		release(t, dns)
		eventually(t, "db claim retained without ownership", func() error {
			c := &scorev1b1.ResourceClaim{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: dbName}, c); err != nil {
				return err
			}
			if len(c.OwnerReferences) != 0 {
				return fmt.Errorf("owners %v", c.OwnerReferences)
			}
			return nil
		})
		conditionIs(t, ns, "app", scorev1b1.ConditionClaimsReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	})
}

// Path 4: while an output is not published no plan is emitted; it recovers by itself.
func TestProjectionError(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "proj", testenv.WithResource("db", "postgres"), testenv.WithVar("PORT", "${resources.db.port}")))
	w := get(t, ns, "proj")
	claim := claimOf(t, w, "db", "postgres")
	bind(t, claim, map[string]any{"host": "db"}, nil)
	w = conditionIs(t, ns, "proj", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonProjectionError)
	if m := testenv.Condition(w, scorev1b1.ConditionRuntimeReady).Message; m != "One or more required outputs are not resolved." {
		t.Fatalf("message %q", m)
	}
	// Every pass the published outputs brought is over once a later request is answered.
	requestReconcile(t, ns, "proj")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "proj"}, &scorev1b1.WorkloadPlan{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a plan was emitted while an output is unresolved: %v", err)
	}
	events := countReasonEvents(t, ns, "proj", string(scorev1b1.ReasonProjectionError))
	if events != 1 {
		t.Fatalf("%d ProjectionError events, want one per transition", events)
	}
	bind(t, claim, map[string]any{"host": "db", "port": 5432}, nil)
	planOf(t, ns, "proj")
	conditionIs(t, ns, "proj", scorev1b1.ConditionRuntimeReady, metav1.ConditionUnknown, scorev1b1.ReasonRuntimeProvisioning)
}

// Paths 7 and 8: the runtime's signals and the endpoint mirror.
func TestRuntimeAndMirror(t *testing.T) {
	applyConfig(t, baseConfig)
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "web"))
	planOf(t, ns, "web")
	w := get(t, ns, "web")
	gen := w.Generation

	t.Run("the runtime's failure reason", func(t *testing.T) {
		project(t, ns, "web", scorev1b1.PlanPhaseFailed, scorev1b1.ReasonPolicyViolation)
		conditionIs(t, ns, "web", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation)
	})
	t.Run("projected is ready", func(t *testing.T) {
		project(t, ns, "web", scorev1b1.PlanPhaseProjected, "")
		conditionIs(t, ns, "web", scorev1b1.ConditionReady, metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	})
	t.Run("a stale exposure is ignored", func(t *testing.T) {
		expose(t, ns, "web", gen-1, []scorev1b1.Exposure{{URL: "https://stale.example.com"}})
		exposureSeen(t, ns, "web", "https://stale.example.com")
		w := requestReconcile(t, ns, "web")
		project(t, ns, "web", scorev1b1.PlanPhaseProjected, "") // the runtime's answer to the request handed on
		if e := w.Status.Endpoint; e != nil {
			t.Fatalf("endpoint %s", *e)
		}
	})
	t.Run("a valid exposure is mirrored as is", func(t *testing.T) {
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "https://web.example.com/app", Scope: scorev1b1.ScopePublic}, {URL: "http://web.ns.svc.cluster.local"}}, "Healthy")
		endpointIs(t, ns, "web", "https://web.example.com/app")
	})
	t.Run("an invalid URL keeps the previous value", func(t *testing.T) {
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "http://localhost:8080"}}, "Healthy")
		exposureSeen(t, ns, "web", "http://localhost:8080")
		w := requestReconcile(t, ns, "web")
		project(t, ns, "web", scorev1b1.PlanPhaseProjected, "") // the runtime's answer to the request handed on
		if e := w.Status.Endpoint; e == nil || *e != "https://web.example.com/app" {
			t.Fatalf("endpoint %v, want the previous one kept", ptr.Deref(e, "none"))
		}
	})
	t.Run("a pending load balancer is NetworkUnavailable", func(t *testing.T) {
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "https://web.example.com/app"}}, "LBPending")
		conditionIs(t, ns, "web", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonNetworkUnavailable)
	})
	t.Run("degraded is ready with RuntimeDegraded", func(t *testing.T) {
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "https://web.example.com/app"}}, "Degraded", "Healthy")
		conditionIs(t, ns, "web", scorev1b1.ConditionReady, metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded)
	})
	t.Run("the policy hides non-public endpoints", func(t *testing.T) {
		applyConfig(t, strings.Replace(baseConfig, "publicOnly: false", "publicOnly: true", 1))
		expose(t, ns, "web", gen, []scorev1b1.Exposure{{URL: "http://web.ns.svc.cluster.local", Scope: scorev1b1.ScopeClusterLocal}}, "Healthy")
		eventually(t, "endpoint hidden", func() error {
			if e := get(t, ns, "web").Status.Endpoint; e != nil {
				return fmt.Errorf("endpoint %s", *e)
			}
			return nil
		})
		applyConfig(t, baseConfig)
	})
	t.Run("the endpoint template overrides", func(t *testing.T) {
		applyConfig(t, strings.Replace(baseConfig, "publicOnly: false", "publicOnly: false\n  template: \"https://{{.workload.name}}.{{.workload.namespace}}.apps.example.com\"", 1))
		endpointIs(t, ns, "web", "https://web."+ns+".apps.example.com")
		applyConfig(t, baseConfig)
	})
}

// exposureSeen waits until the orchestrator's cache shows the exposure with url first.
func exposureSeen(t *testing.T, ns, name, url string) {
	t.Helper()
	seenByOrchestrator(t, &scorev1b1.WorkloadExposure{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(e *scorev1b1.WorkloadExposure) error {
		if len(e.Status.Exposures) == 0 || e.Status.Exposures[0].URL != url {
			return fmt.Errorf("exposures %+v", e.Status.Exposures)
		}
		return nil
	})
}

func endpointIs(t *testing.T, ns, name, want string) {
	t.Helper()
	eventually(t, "endpoint "+want, func() error {
		if e := get(t, ns, name).Status.Endpoint; e == nil || *e != want {
			return fmt.Errorf("endpoint %v", e)
		}
		return nil
	})
}

func claimName(w *scorev1b1.Workload, key, typ string) string {
	return planner.ClaimName(w.Name, key, typ)
}
