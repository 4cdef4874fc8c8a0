package members

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const podSecurity = "pod-security.kubernetes.io/enforce"

// asToken is a client of the member as whoever holds token.
func asToken(t *testing.T, member *testenv.Env, token string) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(member.Config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// registrationOf reads a registration Secret on the hub.
func registrationOf(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// refusedToken waits until the member refuses token: authentication fails (401), which a
// request any identity may make (reading a namespace it created) tells apart from a refusal
// of rights (403).
func refusedToken(t *testing.T, member *testenv.Env, token, what string) {
	t.Helper()
	c := asToken(t, member, token)
	testenv.Eventually(t, 30*time.Second, what, func() error {
		err := c.Get(ctx, client.ObjectKey{Name: "team"}, &corev1.Namespace{})
		if apierrors.IsUnauthorized(err) {
			return nil
		}
		return fmt.Errorf("the member still accepts the token: %v", err)
	})
}

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
}

// The identity `scorectl cluster add` creates on a member reaches only the namespaces the hub
// places into, on a real API server as the member, with the identity's own token: there it
// may apply; elsewhere it reads no Secret, creates no Deployment or Job, and cannot grant
// itself rights (the admission policy refuses a RoleBinding in a namespace the platform did
// not label, a binding of anything else or to anyone else, and an unlabelled namespace). A
// namespace it creates carries the hub namespace's Pod Security labels. Running `cluster add`
// again rotates the token (the old one refused by the member), a Secret that is not a
// registration is never overwritten, and `cluster remove` revokes the token with the token.
func TestMemberIdentityReachesOnlyPlacedNamespaces(t *testing.T) {
	member := testenv.StartForTest(t)
	roles, err := registration.HubRoles(os.DirFS(testenv.RepoRoot()))
	if err != nil {
		t.Fatal(err)
	}
	const name = "member"
	reg := registration.Registration{Name: name, Namespace: controlPlane, Labels: map[string]string{"env": "test"}, Roles: roles}
	if op, err := registration.Register(ctx, member.Config, env.Client, reg); err != nil || op != "registered" {
		t.Fatalf("registering: %q, %v", op, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, registrationOf(t, name)) })
	token := string(registrationOf(t, name).Data[clusters.KeyToken])
	identity := asToken(t, member, token)

	// On the hub, the Workloads' namespace with its Pod Security labels; on the member, a
	// namespace of someone else's with a Secret in it.
	testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team",
		Labels: map[string]string{podSecurity: "baseline", "pod-security.kubernetes.io/warn": "restricted", "team": "a"}}})
	testenv.Create(t, member.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "db-password"}, StringData: map[string]string{"password": "theirs"}})

	var mem *members.Member
	testenv.Eventually(t, time.Minute, "the runtime's pool reaches the member", func() error {
		mem, err = pool.Get(name)
		return err
	})

	t.Run("placed into: created with the hub's Pod Security labels, applied there", func(t *testing.T) {
		if err := mem.EnsureNamespace(ctx, "team"); err != nil {
			t.Fatal(err)
		}
		ns := &corev1.Namespace{}
		if err := member.Client.Get(ctx, client.ObjectKey{Name: "team"}, ns); err != nil {
			t.Fatal(err)
		}
		if ns.Labels[clusters.LabelPlaced] != "true" || ns.Labels[podSecurity] != "baseline" || ns.Labels["pod-security.kubernetes.io/warn"] != "restricted" || ns.Labels["team"] != "" {
			t.Fatalf("the member's namespace labels: %v", ns.Labels)
		}
		if err := identity.Create(ctx, deployment("team", "web")); err != nil {
			t.Fatalf("the identity cannot apply where the hub placed: %v", err)
		}
		testenv.Create(t, member.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "outputs"}})
		if err := identity.Get(ctx, client.ObjectKey{Namespace: "team", Name: "outputs"}, &corev1.Secret{}); err != nil {
			t.Fatalf("the identity cannot read a Secret where the hub placed: %v", err)
		}
		if err := mem.EnsureNamespace(ctx, "team"); err != nil {
			t.Fatalf("placing again: %v", err)
		}
	})

	t.Run("not placed into: no Secret read, nothing created, no rights granted", func(t *testing.T) {
		forbidden := func(what string, err error) {
			t.Helper()
			if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
				t.Errorf("%s: %v, want a refusal", what, err)
			}
		}
		forbidden("reading another namespace's Secret", identity.Get(ctx, client.ObjectKey{Namespace: "other", Name: "db-password"}, &corev1.Secret{}))
		forbidden("listing every Secret", identity.List(ctx, &corev1.SecretList{}))
		forbidden("watching every Secret through a list", identity.List(ctx, &corev1.SecretList{}, client.HasLabels{"score.dev/workload"}))
		forbidden("creating a Deployment in another namespace", identity.Create(ctx, deployment("other", "miner")))
		forbidden("creating a Job in kube-system", identity.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "miner"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}))
		forbidden("labelling another namespace", identity.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+clusters.LabelPlaced+`":"true"}}}`))))

		err := identity.Create(ctx, registration.NamespaceBinding("other"))
		forbidden("granting itself rights in another namespace", err)
		if err == nil || !strings.Contains(err.Error(), clusters.LabelPlaced) {
			t.Errorf("the admission policy's message does not say why: %v", err)
		}
		toAnyone := registration.NamespaceBinding("team")
		toAnyone.Name, toAnyone.Subjects = "anyone", []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}
		forbidden("granting its rights to everyone", identity.Create(ctx, toAnyone))
		admin := registration.NamespaceBinding("team")
		admin.Name, admin.RoleRef.Name = "admin", "cluster-admin"
		forbidden("binding cluster-admin", identity.Create(ctx, admin))
		forbidden("creating an unlabelled namespace", identity.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}}))

		if err := mem.EnsureNamespace(ctx, "other"); !errors.Is(err, clusters.ErrNotPlaceable) {
			t.Fatalf("placing into a namespace the platform did not label: %v", err)
		}
		forbidden("reading another namespace's Secret after the hub tried to place there", identity.Get(ctx, client.ObjectKey{Namespace: "other", Name: "db-password"}, &corev1.Secret{}))
		var bindings rbacv1.RoleBindingList
		if err := member.Client.List(ctx, &bindings, client.InNamespace("other")); err != nil || len(bindings.Items) != 0 {
			t.Fatalf("rights granted in another namespace: %d, %v", len(bindings.Items), err)
		}
	})

	t.Run("a Secret that is not a registration is never overwritten", func(t *testing.T) {
		plain := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "database"}, StringData: map[string]string{"password": "platform"}}
		testenv.Create(t, env.Client, plain)
		other := reg
		other.Name = "database"
		if _, err := registration.Register(ctx, member.Config, env.Client, other); !errors.Is(err, registration.ErrNotRegistration) {
			t.Fatalf("registering over a Secret that is not a registration: %v", err)
		}
		if got := registrationOf(t, "database"); string(got.Data["password"]) != "platform" || len(got.Labels) != 0 || got.ResourceVersion != plain.ResourceVersion {
			t.Fatalf("the Secret changed: %v %v", got.Labels, got.Data)
		}
	})

	t.Run("cluster add again rotates the token: the old one is refused by the member", func(t *testing.T) {
		before := registrationOf(t, name)
		if op, err := registration.Register(ctx, member.Config, env.Client, reg); err != nil || op != "updated" {
			t.Fatalf("registering again: %q, %v", op, err)
		}
		after := registrationOf(t, name)
		rotated := string(after.Data[clusters.KeyToken])
		if rotated == token || after.Annotations[registration.AnnotationTokenSecret] == before.Annotations[registration.AnnotationTokenSecret] {
			t.Fatal("the token was not rotated")
		}
		refusedToken(t, member, token, "the old token refused")
		if err := asToken(t, member, rotated).Get(ctx, client.ObjectKey{Namespace: "team", Name: "outputs"}, &corev1.Secret{}); err != nil {
			t.Fatalf("the new token: %v", err)
		}
		token = rotated
	})

	t.Run("cluster remove revokes the token, with the token", func(t *testing.T) {
		if err := registration.Revoke(ctx, registrationOf(t, name), nil); err != nil {
			t.Fatal(err)
		}
		refusedToken(t, member, token, "the removed registration's token refused")
	})
}
