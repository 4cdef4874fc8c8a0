// Package placed tests Workloads placed on a member cluster with the controllers running, on
// real API servers: a hub (the controllers in this process) and a member (an API server and
// etcd of its own), registered as `scorectl cluster add` registers one. The routes a
// dependency provisions on the member are read into the Workload's endpoint there, and a
// Workload moves between the hub and the member both ways, healthy on the new side before the
// old side is deleted, with a Placed event for the move.
package placed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/inprocess"
)

const controlPlane = "score-system"

var (
	env    *testenv.Env
	member *testenv.Env
	// memberAudit is the member API server's audit log of writes.
	memberAudit string
	ctx         = context.Background()
)

func TestMain(m *testing.M) {
	// A member's answer is known within a second of the registration.
	members.ProbeInterval = time.Second
	code := testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		dir, err := os.MkdirTemp("", "placed-audit-")
		if err != nil {
			return err
		}
		memberAudit = filepath.Join(dir, "audit.log")
		m, err := testenv.StartAudited(memberAudit)
		if err != nil {
			return err
		}
		member = m
		return setup(ctx)
	})
	if member != nil {
		if err := member.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if memberAudit != "" {
		_ = os.RemoveAll(filepath.Dir(memberAudit))
	}
	os.Exit(code)
}

// setup registers the member, loads the config and starts the controllers until ctx ends.
func setup(ctx context.Context) error {
	if err := testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}}); err != nil {
		return err
	}
	roles, err := registration.HubRoles(os.DirFS(testenv.RepoRoot()))
	if err != nil {
		return err
	}
	reg := registration.Registration{Name: "eu", Namespace: controlPlane, Labels: map[string]string{"env": "test"}, Roles: roles}
	if _, err := registration.Register(ctx, member.Config, env.Client, reg); err != nil {
		return fmt.Errorf("registering the member: %w", err)
	}
	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		return err
	}
	if err := testenv.CreateAll(ctx, env.Client,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "templates"}, Data: map[string]string{"web.yaml": string(text)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": config(testenv.Digest(text))}}); err != nil {
		return err
	}
	stop, err := inprocess.Start(env.Config)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); stop() }()
	return nil
}

// config is a web-service profile: k8s-members places the Workloads labelled
// placement=members on the clusters labelled env=test, k8s-hub runs the others on the hub.
// The route type provisions an Ingress for the host its params name, to the Workload's
// Service port (an Ingress: a built-in kind, served by every API server).
func config(templateDigest string) string {
	return fmt.Sprintf(`apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-members
        runtimeClass: kubernetes
        priority: 10
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q}
        constraints: {selectors: [{matchLabels: {placement: members}}]}
        placement:
          clusterSelector: {matchLabels: {env: test}}
      - backendId: k8s-hub
        runtimeClass: kubernetes
        priority: 1
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: %[1]q}
provisioners:
  - uri: template://test/ingress-route
    type: route
    supported_params: [host, port]
    init: |
      {{- $svc := index .WorkloadServices .SourceWorkload }}
      service: {{ $svc.ServiceName }}
      port: {{ (index $svc.Ports (print .Params.port)).Port }}
    state: |
      name: route-{{ substr 0 12 .Guid }}
    manifests: |
      - apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata: {name: {{ .State.name }}}
        spec:
          rules:
            - host: {{ .Params.host | quote }}
              http:
                paths:
                  - path: /
                    pathType: Prefix
                    backend: {service: {name: {{ .Init.service }}, port: {number: {{ .Init.port }}}}}
    outputs: |
      host: {{ .Params.host }}
defaults:
  profile: web-service
`, templateDigest)
}

// serve gives the Deployment ns/name on c the status its controller would once its pods are
// available (neither API server runs one), and waits until the status is for its current
// generation.
func serve(t *testing.T, c client.Client, where, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("Deployment %s/%s available on %s", ns, name, where), func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas > 0 {
			return nil
		}
		d.Status = testenv.DeploymentStatus(d, ptr.Deref(d.Spec.Replicas, 1))
		if err := c.Status().Update(ctx, d); err != nil {
			return err
		}
		return fmt.Errorf("status written for generation %d", d.Generation)
	})
	return d
}

// planOf reads a plan.
func planOf(t *testing.T, ns, name string) *scorev1b1.WorkloadPlan {
	t.Helper()
	p := &scorev1b1.WorkloadPlan{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// events are the reasons and notes of the events regarding the plan ns/name, in order.
func events(t *testing.T, ns, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "WorkloadPlan" && e.Regarding.Name == name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// eventWith waits for an event on the plan ns/name whose reason is reason and whose note holds
// note, and returns the note.
func eventWith(t *testing.T, ns, name, reason, note string) string {
	t.Helper()
	var found string
	testenv.Eventually(t, time.Minute, fmt.Sprintf("a %s event on plan %s/%s saying %q", reason, ns, name, note), func() error {
		for _, e := range events(t, ns, name) {
			if strings.HasPrefix(e, reason+": ") && strings.Contains(e, note) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("events: %v", events(t, ns, name))
	})
	return found
}
