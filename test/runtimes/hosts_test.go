package runtimes

import (
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// plan creates a plan as the orchestrator would, of a class, placed on a host ("" none).
func newPlan(t *testing.T, ns, name, class, placed string) *scorev1b1.WorkloadPlan {
	t.Helper()
	kind := scorev1b1.TemplateCompose
	ref := ""
	if class == scorev1b1.RuntimeClassKubernetes {
		kind, ref = scorev1b1.TemplateManifests, "configmap://score-system/t/web.yaml"
	}
	p := &scorev1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: scorev1b1.WorkloadPlanSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: name, UID: "uid-" + name}, ObservedWorkloadGeneration: 1,
			RuntimeClass: class, BackendID: "web", Template: scorev1b1.TemplateRef{Kind: kind, Ref: ref}, Cluster: placed}}
	testenv.Create(t, hub, p)
	return p
}

// The agent's identity is the platform's grant to one host: it reads and writes nothing
// outside the namespaces the host serves, writes only docker plans placed on it or on none,
// and its token dies with its registration.
func TestHostileDockerHost(t *testing.T) {
	needDocker(t)
	agent, err := client.New(agentConfig, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	theirs := newPlan(t, elsewhere, "theirs", scorev1b1.RuntimeClassDocker, "")
	kube := newPlan(t, shop, "kube", scorev1b1.RuntimeClassKubernetes, "")
	another := newPlan(t, shop, "another-host", scorev1b1.RuntimeClassDocker, "edge-2")
	mine := newPlan(t, shop, "mine", scorev1b1.RuntimeClassDocker, "")
	testenv.Create(t, hub, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere, Name: "db-outputs"}, StringData: map[string]string{"password": "theirs"}})

	t.Run("nothing of a namespace the host does not serve is read", func(t *testing.T) {
		for _, obj := range []client.Object{&scorev1b1.WorkloadPlan{}, &corev1.Secret{}} {
			name := map[bool]string{true: "theirs", false: "db-outputs"}[fmt.Sprintf("%T", obj) == "*v1b1.WorkloadPlan"]
			if err := agent.Get(ctx, client.ObjectKey{Namespace: elsewhere, Name: name}, obj); !apierrors.IsForbidden(err) {
				t.Errorf("%T %s/%s read by the agent: %v", obj, elsewhere, name, err)
			}
		}
		// It lists the Secrets of the namespaces it serves (its cache holds their Compose
		// fragments), and of no other.
		if err := agent.List(ctx, &corev1.SecretList{}, client.InNamespace(elsewhere)); !apierrors.IsForbidden(err) {
			t.Errorf("the agent lists the Secrets of a namespace it does not serve: %v", err)
		}
		_ = theirs
	})

	t.Run("only docker plans placed on its host or on none are written", func(t *testing.T) {
		for _, tc := range []struct {
			plan *scorev1b1.WorkloadPlan
			want string
		}{
			{kube, "writes the status of the plans and exposures of class docker only"},
			{another, "writes the status of the plans placed on its host or on none only"},
			{mine, ""},
		} {
			p := tc.plan.DeepCopy()
			before := p.DeepCopy()
			p.Status.Phase, p.Status.Message = scorev1b1.PlanPhaseFailed, "written by a Docker host's agent"
			err := agent.Status().Patch(ctx, p, client.MergeFrom(before))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("plan %s: %v", p.Name, err)
			case tc.want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("plan %s written: %v, want Forbidden: %s", p.Name, err, tc.want)
			}
		}
	})

	t.Run("of a plan, nothing but its finalizers is changed", func(t *testing.T) {
		p := &scorev1b1.WorkloadPlan{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(mine), p); err != nil {
			t.Fatal(err)
		}
		before := p.DeepCopy()
		p.Labels = map[string]string{"score.dev/shard": "s9"}
		err := agent.Patch(ctx, p, client.MergeFrom(before))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "changes nothing of a plan but its finalizers") {
			t.Errorf("the agent relabelled a plan: %v", err)
		}
	})

	t.Run("no other finalizer is removed or added", func(t *testing.T) {
		p := &scorev1b1.WorkloadPlan{}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(mine), p); err != nil {
			t.Fatal(err)
		}
		before := p.DeepCopy()
		p.Finalizers = append(p.Finalizers, "example.com/keep-forever")
		err := agent.Patch(ctx, p, client.MergeFrom(before))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "adds and removes its own finalizer only") {
			t.Errorf("the agent added another's finalizer: %v", err)
		}
	})

	t.Run("a namespace of another host is refused", func(t *testing.T) {
		_, err := hosts.Register(ctx, hubConfig, hub, hosts.Registration{Name: "edge-2", Namespaces: []string{shop}, Address: "10.0.0.2"})
		if err == nil || !strings.Contains(err.Error(), "namespace shop is served by host "+host) {
			t.Fatalf("registered: %v", err)
		}
	})

	t.Run("the agent renews its host's Lease", func(t *testing.T) {
		testenv.Eventually(t, 30*time.Second, "the Lease renewed", func() error {
			list, err := hosts.List(ctx, hub)
			if err != nil {
				return err
			}
			for _, h := range list {
				if h.Name == host && h.Renewed != nil && strings.HasPrefix(h.Engine, "Docker ") {
					return nil
				}
			}
			return fmt.Errorf("hosts %+v", list)
		})
	})

	t.Run("rotation revokes the previous token, removal the last", func(t *testing.T) {
		kubeconfig, err := hosts.Register(ctx, hubConfig, hub, hosts.Registration{Name: "edge-3", Namespaces: []string{elsewhere}, Address: "10.0.0.3"})
		if err != nil {
			t.Fatal(err)
		}
		first := clientOf(t, kubeconfig)
		if err := first.Get(ctx, client.ObjectKeyFromObject(theirs), &scorev1b1.WorkloadPlan{}); err != nil {
			t.Fatalf("the first token: %v", err)
		}
		kubeconfig, err = hosts.Register(ctx, hubConfig, hub, hosts.Registration{Name: "edge-3", Namespaces: []string{elsewhere}, Address: "10.0.0.3"})
		if err != nil {
			t.Fatal(err)
		}
		second := clientOf(t, kubeconfig)
		unauthorized(t, first, "the rotated token")
		if err := second.Get(ctx, client.ObjectKeyFromObject(theirs), &scorev1b1.WorkloadPlan{}); err != nil {
			t.Fatalf("the new token: %v", err)
		}
		held := newPlan(t, elsewhere, "held", scorev1b1.RuntimeClassDocker, "")
		before := held.DeepCopy()
		held.Finalizers = []string{hosts.Finalizer("edge-3")}
		if err := hub.Patch(ctx, held, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		if err := hosts.Remove(ctx, hub, "edge-3", false); err == nil || !strings.Contains(err.Error(), "the host runs 1 plans ("+elsewhere+"/held)") {
			t.Fatalf("removed a host that runs a plan: %v", err)
		}
		if err := hosts.Remove(ctx, hub, "edge-3", true); err != nil {
			t.Fatal(err)
		}
		if err := hub.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil || len(held.Finalizers) > 0 {
			t.Errorf("the abandoned plan: %v, finalizers %v", err, held.Finalizers)
		}
		unauthorized(t, second, "the token of a removed host")
		if err := hub.Get(ctx, client.ObjectKey{Namespace: hosts.Namespace, Name: hosts.ServiceAccountName("edge-3")}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
			t.Errorf("the removed host's Lease: %v", err)
		}
	})
}

func clientOf(t *testing.T, kubeconfig []byte) client.Client {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// unauthorized waits until a client's token is refused (the API server caches a token's
// validity for a few seconds).
func unauthorized(t *testing.T, c client.Client, what string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, what+" refused", func() error {
		err := c.List(ctx, &scorev1b1.WorkloadPlanList{}, client.InNamespace(elsewhere))
		if apierrors.IsUnauthorized(err) {
			return nil
		}
		return fmt.Errorf("answered %v", err)
	})
}
