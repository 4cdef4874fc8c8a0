package tenancy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const teamA, teamB = "team-a", "team-b"

// attempt is one hostile Workload in team-b and what must happen to it.
type attempt struct {
	name     string
	workload *scorev1b1.Workload
	// ready is the Workload's Ready condition the attempt must end in.
	ready  metav1.ConditionStatus
	reason scorev1b1.Reason
	// check asserts what crossed (nothing) once the Workload is there.
	check func(t *testing.T, w *scorev1b1.Workload)
}

// Two tenants, team-a and team-b, under one platform config with no sharing configured. team-a
// runs a Workload with a postgres database (id main); team-b tries to reach it, its credentials
// or its namespace in every way a Workload can say, and to escape its own namespace. The
// platform's web template and postgres provisioner are deliberately careless (they take a
// namespace from Workload data); the controllers must hold the boundary anyway. Template
// injection through Workload values is also covered, exhaustively, by
// internal/rendering/render's TestValuesCannotInjectTemplatesOrObjects; a ClusterRoleBinding on
// a plan alone by test/integration/runtime's TestDisallowedKindIsRefused.
func TestTenantCannotCrossIntoAnotherNamespace(t *testing.T) {
	for _, ns := range []string{teamA, teamB} {
		testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	// team-a's database and the credentials team-b must never see.
	web := testenv.Workload(teamA, "web", testenv.WithVar("DB_PASSWORD", "${resources.db.password}"), testenv.WithResource("db", "postgres", testenv.ResourceID("main")))
	testenv.Create(t, env.Client, web)
	readyIs(t, teamA, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
	aClaim := claimOf(t, teamA, "web", "db", "postgres")
	aPassword := secretValue(t, teamA, aClaim.Status.SecretRef.Name, "password")
	if len(aPassword) != 32 {
		t.Fatalf("team-a's password %q", aPassword)
	}
	aBefore := inventory(t, teamA)

	attempts := []attempt{
		{
			name:     "(a) same id as the other team's database, no sharing: its own instance, never the other's credentials",
			workload: testenv.Workload(teamB, "same-id", testenv.WithVar("DB_PASSWORD", "${resources.db.password}"), testenv.WithResource("db", "postgres", testenv.ResourceID("main"))),
			ready:    metav1.ConditionTrue, reason: scorev1b1.ReasonSucceeded,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				c := claimOf(t, teamB, w.Name, "db", "postgres")
				if c.Status.InstanceNamespace != "" || !strings.Contains(string(c.Status.Outputs.Raw), "."+teamB) {
					t.Fatalf("not its own instance: instanceNamespace %q outputs %s", c.Status.InstanceNamespace, c.Status.Outputs.Raw)
				}
				bPassword := secretValue(t, teamB, c.Status.SecretRef.Name, "password")
				if bPassword == "" || bPassword == aPassword {
					t.Fatalf("team-b's password %q equals team-a's", bPassword)
				}
				// The pod reads its password from a Secret of its own namespace, by reference.
				ref := podEnv(t, teamB, w.Name, "DB_PASSWORD")
				if ref.Value != "" || ref.ValueFrom == nil || ref.ValueFrom.SecretKeyRef == nil || ref.ValueFrom.SecretKeyRef.Name != c.Status.SecretRef.Name {
					t.Fatalf("DB_PASSWORD is not a reference to %s: %+v", c.Status.SecretRef.Name, ref)
				}
			},
		},
		{
			name: "(b) a provisioner param naming the other namespace: refused, nothing written there",
			workload: testenv.Workload(teamB, "param-ns", testenv.WithVar("DB_PASSWORD", "${resources.db.password}"),
				testenv.WithResource("db", "postgres", testenv.ResourceParams(`{"namespace": "team-a"}`))),
			ready: metav1.ConditionFalse, reason: scorev1b1.ReasonPermissionDenied,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				c := claimOf(t, teamB, w.Name, "db", "postgres")
				if c.Status.Phase != scorev1b1.ClaimPhaseFailed || c.Status.SecretRef != nil || c.Status.Outputs != nil {
					t.Fatalf("claim status %+v", c.Status)
				}
				noPlan(t, teamB, w.Name)
			},
		},
		{
			name:     "(b) a template placing the Workload's objects in the other namespace: refused",
			workload: testenv.Workload(teamB, "placed", testenv.WithAnnotation("example.com/namespace", teamA)),
			ready:    metav1.ConditionFalse, reason: scorev1b1.ReasonPermissionDenied,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: teamA, Name: w.Name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					t.Fatalf("team-b's object reached team-a: %v", err)
				}
			},
		},
		{
			name:     "(c) a placeholder reaching for the other Workload's claim (undeclared resource): SpecInvalid, no plan",
			workload: testenv.Workload(teamB, "reach", testenv.WithVar("STOLEN", "${resources.db.password}"), testenv.WithVar("HOST", "${resources.web-db.host}")),
			ready:    metav1.ConditionFalse, reason: scorev1b1.ReasonSpecInvalid,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				if c := testenv.Condition(w, scorev1b1.ConditionInputsValid); c.Status != metav1.ConditionFalse || c.Reason != string(scorev1b1.ReasonSpecInvalid) {
					t.Fatalf("InputsValid %+v", c)
				}
				noPlan(t, teamB, w.Name)
				var claims scorev1b1.ResourceClaimList
				if err := env.Client.List(ctx, &claims, client.InNamespace(teamB), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil || len(claims.Items) != 0 {
					t.Fatalf("claims %d %v", len(claims.Items), err)
				}
			},
		},
		{
			name: "(d) values carrying template syntax, placeholders-escapes and YAML: rendered literally",
			workload: testenv.Workload(teamB, "inject",
				testenv.WithVar("A", `{{ .Workload.Namespace }}{{ index .Values.workload.annotations "x" }}`),
				testenv.WithVar("B", "x\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: pwn, namespace: team-a}"),
				testenv.WithVar("C", "$${resources.db.password}")),
			ready: metav1.ConditionTrue, reason: scorev1b1.ReasonSucceeded,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				for k, want := range map[string]string{
					"A": `{{ .Workload.Namespace }}{{ index .Values.workload.annotations "x" }}`,
					"B": "x\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: pwn, namespace: team-a}",
					"C": "${resources.db.password}",
				} {
					if got := podEnv(t, teamB, w.Name, k); got.Value != want || got.ValueFrom != nil {
						t.Errorf("%s: %+v, want %q", k, got, want)
					}
				}
				for _, ns := range []string{teamA, teamB} {
					if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pwn"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
						t.Fatalf("an injected object exists in %s: %v", ns, err)
					}
				}
			},
		},
		{
			name:     "(e) a backend whose template creates a ClusterRoleBinding: PermissionDenied, nothing applied",
			workload: testenv.Workload(teamB, "escalate", testenv.WithAnnotation("score.dev/profile", "escalate")),
			ready:    metav1.ConditionFalse, reason: scorev1b1.ReasonPermissionDenied,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				if err := env.Client.Get(ctx, client.ObjectKey{Name: "escalate-team-b-admin"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
					t.Fatalf("the binding exists: %v", err)
				}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: teamB, Name: w.Name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					t.Fatalf("part of a refused render was applied: %v", err)
				}
			},
		},
		{
			name:     "(e) a dependency whose provisioner creates a ClusterRoleBinding: PermissionDenied, nothing applied",
			workload: testenv.Workload(teamB, "escalate-dep", testenv.WithResource("admin", "escalating")),
			ready:    metav1.ConditionFalse, reason: scorev1b1.ReasonPermissionDenied,
			check: func(t *testing.T, w *scorev1b1.Workload) {
				if err := env.Client.Get(ctx, client.ObjectKey{Name: "escalate-dep-team-b-admin"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
					t.Fatalf("the binding exists: %v", err)
				}
				noPlan(t, teamB, w.Name)
			},
		},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			testenv.Create(t, env.Client, a.workload)
			w := readyIs(t, teamB, a.workload.Name, a.ready, a.reason)
			a.check(t, w)
			// Whatever the attempt, team-a is as it was and none of team-b's Secrets holds
			// team-a's password.
			if after := inventory(t, teamA); after != aBefore {
				t.Fatalf("team-a changed:\nbefore %s\nafter  %s", aBefore, after)
			}
			if got := secretValue(t, teamA, aClaim.Status.SecretRef.Name, "password"); got != aPassword {
				t.Fatal("team-a's password changed")
			}
			var secrets corev1.SecretList
			if err := env.Client.List(ctx, &secrets, client.InNamespace(teamB)); err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets.Items {
				for k, v := range s.Data {
					if string(v) == aPassword {
						t.Fatalf("team-a's password reached team-b in %s/%s", s.Name, k)
					}
				}
			}
			readyIs(t, teamA, "web", metav1.ConditionTrue, scorev1b1.ReasonSucceeded)
		})
	}
}

// inventory lists what team-a holds: ConfigMaps, Secrets and claims, by name and version.
func inventory(t *testing.T, ns string) string {
	t.Helper()
	var out []string
	for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}, &scorev1b1.ResourceClaimList{}, &scorev1b1.WorkloadPlanList{}} {
		if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if err := meta.EachListItem(l, func(o runtime.Object) error {
			m, _ := meta.Accessor(o)
			out = append(out, fmt.Sprintf("%T/%s@%s", o, m.GetName(), m.GetResourceVersion()))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Join(out, " ")
}

// readyIs waits until the Workload's Ready condition, for its current generation, has the
// status and reason.
func readyIs(t *testing.T, ns, name string, status metav1.ConditionStatus, reason scorev1b1.Reason) *scorev1b1.Workload {
	t.Helper()
	return testenv.WaitForCondition(t, env.Client, client.ObjectKey{Namespace: ns, Name: name}, scorev1b1.ConditionReady, status, reason)
}

func claimOf(t *testing.T, ns, workload, key, typ string) *scorev1b1.ResourceClaim {
	t.Helper()
	c := &scorev1b1.ResourceClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: planner.ClaimName(workload, key, typ)}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// secretValue reads one key of a Secret.
func secretValue(t *testing.T, ns, name, key string) string {
	t.Helper()
	return testenv.SecretValue(t, env.Client, ns, name, key)
}

func noPlan(t *testing.T, ns, name string) {
	t.Helper()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &scorev1b1.WorkloadPlan{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a plan was emitted: %v", err)
	}
}

// podEnv reads one variable of the main container from the pod the web template rendered.
func podEnv(t *testing.T, ns, name, variable string) corev1.EnvVar {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	var pod corev1.PodSpec
	if err := json.Unmarshal([]byte(cm.Data["pod"]), &pod); err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Containers {
		for _, e := range c.Env {
			if e.Name == variable {
				return e
			}
		}
	}
	t.Fatalf("no %s in %s", variable, cm.Data["pod"])
	return corev1.EnvVar{}
}
