// Package overrides tests placement overrides end to end on real API servers: a hub running
// the controllers (in this process) and one member cluster (an API server of its own),
// registered as `scorectl cluster add` registers it. A backend places on the member with an
// override for its label; the Deployment the runtime applies on the member carries the
// override, a change of the override re-plans the Workload placed there and no other, and an
// invalid override is refused with the last valid config kept.
package overrides

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

const controlPlane = "score-system"

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		return testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}})
	}))
}

// config is a web-service profile with two backends: k8s-members for the Workloads labelled
// placement=members, placed on env=test clusters, two replicas by default and euReplicas on
// region=eu; k8s-hub for the others, on the hub.
func config(templateDigest string, euReplicas int) string {
	return fmt.Sprintf(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-members
        runtimeClass: kubernetes
        priority: 10
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q, values: {replicas: 2}}
        constraints: {selectors: [{matchLabels: {placement: members}}]}
        placement:
          clusterSelector: {matchLabels: {env: test}}
          overrides:
            - clusterSelector: {matchLabels: {region: eu}}
              values: {replicas: %[2]d}
      - backendId: k8s-hub
        runtimeClass: kubernetes
        priority: 1
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q, values: {replicas: 2}}
defaults:
  profile: web-service
`, templateDigest, euReplicas)
}

// replicasOn waits until the Deployment name of ns on c has want replicas, and returns it.
func replicasOn(t *testing.T, c client.Client, where, ns, name string, want int32) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("Deployment %s/%s on %s with %d replicas", ns, name, where, want), func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
			return fmt.Errorf("replicas %d", ptr.Deref(d.Spec.Replicas, 1))
		}
		return nil
	})
	return d
}

func planOf(t *testing.T, ns, name string) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClusterOverridesOnAMember(t *testing.T) {
	member := testenv.StartForTest(t)
	roles, err := registration.HubRoles(os.DirFS(testenv.RepoRoot()))
	if err != nil {
		t.Fatal(err)
	}
	reg := registration.Registration{Name: "eu", Namespace: controlPlane, Labels: map[string]string{"env": "test", "region": "eu"}, Roles: roles}
	if op, err := registration.Register(ctx, member.Config, env.Client, reg); err != nil || op != "registered" {
		t.Fatalf("registering the member: %q, %v", op, err)
	}

	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	digest := testenv.Digest(text)
	testenv.PutConfigMap(t, env.Client, controlPlane, "templates", map[string]string{"web.yaml": string(text)})
	testenv.PutConfigMap(t, env.Client, controlPlane, "orchestrator-config", map[string]string{"config.yaml": config(digest, 3)})

	stop, err := inprocess.Start(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	ns := testenv.Namespace(t, env.Client)
	placed := testenv.Workload(ns, "placed", testenv.WithPort("http", 80))
	placed.Labels = map[string]string{"placement": "members"}
	home := testenv.Workload(ns, "home", testenv.WithPort("http", 80))
	testenv.Create(t, env.Client, placed, home)

	t.Run("the object applied on the member carries the override; the hub's does not", func(t *testing.T) {
		replicasOn(t, member.Client, "the member", ns, "placed", 3)
		replicasOn(t, env.Client, "the hub", ns, "home", 2)
		if p := planOf(t, ns, "placed"); p.Spec.Cluster != "eu" || !strings.Contains(string(p.Spec.Values.Raw), `"replicas":3`) {
			t.Fatalf("the placed plan: cluster %q, values %s", p.Spec.Cluster, p.Spec.Values.Raw)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "placed"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a Deployment placed on the hub: %v", err)
		}
	})

	t.Run("a change of the override re-plans only the Workload on the matching cluster", func(t *testing.T) {
		homePlan := planOf(t, ns, "home")
		homeDeployment := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "home"}, homeDeployment); err != nil {
			t.Fatal(err)
		}
		placedPlan := planOf(t, ns, "placed")

		testenv.PutConfigMap(t, env.Client, controlPlane, "orchestrator-config", map[string]string{"config.yaml": config(digest, 4)})
		// The positive control: the new config reached the Workload on the member.
		replicasOn(t, member.Client, "the member", ns, "placed", 4)
		if p := planOf(t, ns, "placed"); p.Generation == placedPlan.Generation {
			t.Fatalf("the placed plan was not written again (generation %d)", p.Generation)
		}
		// The Workload on the hub passes under the new config too, and nothing of it changes.
		testenv.RequestReconcile(t, env.Client, ns, "home")
		if p := planOf(t, ns, "home"); p.Generation != homePlan.Generation || string(p.Spec.Values.Raw) != string(homePlan.Spec.Values.Raw) {
			t.Fatalf("the hub's plan was re-planned: generation %d → %d, values %s", homePlan.Generation, p.Generation, p.Spec.Values.Raw)
		}
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "home"}, d); err != nil {
			t.Fatal(err)
		}
		if d.Generation != homeDeployment.Generation || *d.Spec.Replicas != 2 {
			t.Fatalf("the hub's Deployment changed: generation %d → %d, replicas %d", homeDeployment.Generation, d.Generation, *d.Spec.Replicas)
		}
	})

	t.Run("an invalid override: the config is refused, saying where, and the last valid one stays", func(t *testing.T) {
		placedPlan := planOf(t, ns, "placed")
		// Nine replicas and an override without values: neither the document nor part of it
		// is used.
		invalid := strings.Replace(config(digest, 9), "values: {replicas: 9}\n", "values: {replicas: 9}\n"+
			"            - clusterSelector: {matchLabels: {region: eu}}\n              values: {}\n", 1)
		testenv.PutConfigMap(t, env.Client, controlPlane, "orchestrator-config", map[string]string{"config.yaml": invalid})
		testenv.Eventually(t, time.Minute, "a ConfigInvalid event naming the override", func() error {
			var events eventsv1.EventList
			if err := env.Client.List(ctx, &events, client.InNamespace(controlPlane)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == "ConfigInvalid" && strings.Contains(e.Note, "profiles[0].backends[0].placement.overrides[1].values: an override needs values") {
					return nil
				}
			}
			return fmt.Errorf("none among %d events", len(events.Items))
		})
		testenv.RequestReconcile(t, env.Client, ns, "placed")
		if p := planOf(t, ns, "placed"); p.Generation != placedPlan.Generation {
			t.Fatalf("the plan was written under an invalid config: generation %d → %d", placedPlan.Generation, p.Generation)
		}
		replicasOn(t, member.Client, "the member", ns, "placed", 4)
	})

	t.Run("config diff --cluster names the Workloads an override change touches, and where", func(t *testing.T) {
		dir := t.TempDir()
		scorectl, err := testenv.BuildCommand(dir, "scorectl")
		if err != nil {
			t.Fatal(err)
		}
		templatesDir := filepath.Join(dir, "templates")
		if err := os.MkdirAll(templatesDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(templatesDir, "web.yaml"), text, 0o600); err != nil {
			t.Fatal(err)
		}
		oldCfg, newCfg := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
		if err := os.WriteFile(oldCfg, []byte(config(digest, 4)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(newCfg, []byte(config(digest, 5)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(scorectl, "config", "diff", oldCfg, newCfg, "--cluster", "-n", ns, "--templates", templatesDir, "--kubeconfig", testenv.Kubeconfig(t, env.Config)).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := ns + "/placed on cluster eu:\n    values: replicas: 4 → 5\n    changed  Deployment " + ns + "/placed\n"
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), ns+"/home: no change\n") || !strings.Contains(string(out), "2 workloads, 1 would change, 0 risky") {
			t.Fatalf("want %q and home unchanged in:\n%s", want, out)
		}
	})
}
