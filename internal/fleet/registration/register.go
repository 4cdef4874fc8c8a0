package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// TokenLifetime is how long a registration's token is valid (unless the member's API server
// caps it lower): `scorectl cluster add` again, within it, rotates it.
const TokenLifetime = 365 * 24 * 3600

// legacyTokenSecret is the token Secret registrations written before tokens were bound to
// their own Secret hold the token of: a rotation revokes it.
const legacyTokenSecret = "score-runtime-token"

// ErrNotRegistration is a Secret of the registration's name that is not a registration:
// never overwritten.
var ErrNotRegistration = errors.New("not a cluster registration")

// ErrNotRevocable is a registration whose token is not bound to a Secret the registration
// names (written by hand, or by an older `scorectl cluster add`): it is revoked on the member.
var ErrNotRevocable = errors.New("the registration does not name the Secret its token is bound to")

// Registration is a member cluster to register.
type Registration struct {
	// Name is the cluster's; Namespace the hub's control-plane namespace.
	Name, Namespace string
	// Server is the member's API server URL as the hub's controllers reach it; empty: the
	// member config's.
	Server string
	// Labels are the cluster's labels.
	Labels map[string]string
	// Roles are the hub roles of the controllers that apply on members
	// (config/rbac/runtime/role.yaml, config/rbac/provisioner/role.yaml), MemberRoles' input.
	Roles [][]byte
}

// Register creates or updates the controllers' identity on the member (member: an identity
// there that may create RBAC and admission policies) and writes, or rewrites, the
// registration Secret on the hub with the member's server, CA and a new token for the
// identity; the token the registration held before is then revoked, so that running it again
// rotates the credentials. A Secret of that name that is not a registration is refused
// (ErrNotRegistration) before anything changes. It says whether it "registered" or "updated"
// the cluster.
func Register(ctx context.Context, member *rest.Config, hub client.Client, r Registration) (string, error) {
	secret, op, err := registrationSecret(ctx, hub, r)
	if err != nil {
		return "", err
	}
	mc, err := kubernetes.NewForConfig(member)
	if err != nil {
		return "", err
	}
	c, err := client.New(member, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return "", err
	}
	if err := memberIdentity(ctx, c, r.Roles); err != nil {
		return "", fmt.Errorf("creating the controllers' identity on the member: %w", err)
	}
	anchor, token, err := newToken(ctx, mc)
	if err != nil {
		return "", fmt.Errorf("a token for the controllers' identity on the member: %w", err)
	}
	if err := waitConfined(ctx, member, token); err != nil {
		return "", errors.Join(err, revoke(ctx, mc, anchor))
	}
	ca, err := memberCA(member)
	if err != nil {
		return "", errors.Join(err, revoke(ctx, mc, anchor))
	}
	previous := previousTokenSecret(secret) // read before the registration is rewritten
	fillRegistration(secret, r, member, ca, anchor, token)
	if op == "registered" {
		err = hub.Create(ctx, secret)
	} else {
		err = hub.Update(ctx, secret) // at the version read: a concurrent change is a conflict
	}
	if err != nil {
		return "", errors.Join(fmt.Errorf("registering on the hub: %w", err), revoke(ctx, mc, anchor))
	}
	if err := allowSelfRevoke(ctx, c, anchor); err != nil {
		return op, fmt.Errorf("the cluster is %s; letting its identity revoke its own token: %w", op, err)
	}
	// The previous token stops working: its Secret is deleted.
	if previous != anchor && (previous == legacyTokenSecret || strings.HasPrefix(previous, MemberTokenPrefix)) {
		// (Only a token Secret: the annotation is the hub's data, not a licence to delete
		// anything else there.)
		if err := revoke(ctx, mc, previous); err != nil {
			return op, fmt.Errorf("the cluster is %s with a new token; the previous one (Secret %s/%s on the member) could not be revoked: %w", op, MemberNamespace, previous, err)
		}
	}
	return op, nil
}

// registrationSecret is the hub's registration Secret of r as read, and "updated"; or a new
// one, and "registered", when there is none. A Secret of that name that is not a registration
// is ErrNotRegistration.
func registrationSecret(ctx context.Context, hub client.Client, r Registration) (*corev1.Secret, string, error) {
	secret := &corev1.Secret{}
	switch err := hub.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, secret); {
	case apierrors.IsNotFound(err):
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}}, "registered", nil
	case err != nil:
		return nil, "", err
	case secret.Labels[scorev1b1.LabelSecretType] != scorev1b1.SecretTypeCluster:
		return nil, "", fmt.Errorf("secret %s/%s is %w (it lacks the label %s=%s): it is not overwritten; choose another cluster name",
			r.Namespace, r.Name, ErrNotRegistration, scorev1b1.LabelSecretType, scorev1b1.SecretTypeCluster)
	}
	return secret, "updated", nil
}

// memberCA is the CA of the member's API server, from its config's data or file.
func memberCA(member *rest.Config) ([]byte, error) {
	if len(member.CAData) == 0 && member.CAFile != "" {
		return os.ReadFile(member.CAFile)
	}
	return member.CAData, nil
}

// previousTokenSecret is the Secret on the member the registration's token is bound to: the
// one it names, else, for a registration written before tokens were bound to one of their
// own, the identity's legacy token Secret.
func previousTokenSecret(registration *corev1.Secret) string {
	if name := registration.Annotations[AnnotationTokenSecret]; name != "" {
		return name
	}
	return legacyTokenSecret
}

// fillRegistration writes into secret the registration of r: its labels, the Secret on the
// member its token is bound to (anchor), and the member's server, CA and token, and whether
// its server's certificate goes unverified.
func fillRegistration(secret *corev1.Secret, r Registration, member *rest.Config, ca []byte, anchor, token string) {
	server := r.Server
	if server == "" {
		server = member.Host
	}
	secret.Labels = map[string]string{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster}
	for k, v := range r.Labels {
		secret.Labels[k] = v
	}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[AnnotationTokenSecret] = anchor
	secret.Type = corev1.SecretTypeOpaque
	secret.Data = map[string][]byte{clusters.KeyServer: []byte(server), clusters.KeyCA: ca, clusters.KeyToken: []byte(token)}
	if member.Insecure {
		// The member's own kubeconfig skips verification: so does the registration, said
		// where the controllers read it.
		secret.Data[clusters.KeyInsecure] = []byte(strconv.FormatBool(true))
	}
}

// Revoke revokes a registration's token on its member by deleting the Secret the token is
// bound to (AnnotationTokenSecret): as the registration's own identity, which may delete that
// Secret (MemberSelfRoleName), or as member when it is not nil (an identity of the member's
// administrator). A registration that names no such Secret is ErrNotRevocable.
func Revoke(ctx context.Context, registration *corev1.Secret, member *rest.Config) error {
	name := registration.Annotations[AnnotationTokenSecret]
	if name == "" {
		return ErrNotRevocable
	}
	if member == nil {
		var err error
		if member, err = Config(registration); err != nil {
			return err
		}
	}
	mc, err := kubernetes.NewForConfig(member)
	if err != nil {
		return err
	}
	return revoke(ctx, mc, name)
}

// revoke deletes the Secret a token is bound to, in MemberNamespace; one already gone is
// revoked.
func revoke(ctx context.Context, mc kubernetes.Interface, name string) error {
	if err := mc.CoreV1().Secrets(MemberNamespace).Delete(ctx, name, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return nil
}

// memberIdentity creates or updates the identity's namespace, ServiceAccount, roles,
// bindings and admission policy on the member.
func memberIdentity(ctx context.Context, c client.Client, hubRoles [][]byte) error {
	cluster, namespaced, err := MemberRoles(hubRoles...)
	if err != nil {
		return err
	}
	policy, policyBinding := MemberPolicy()
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: MemberNamespace, Name: MemberServiceAccount}
	for _, o := range []client.Object{
		// Not labelled clusters.LabelPlaced: the identity's own namespace is never placed into.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MemberNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: MemberNamespace, Name: MemberServiceAccount}},
	} {
		if err := c.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	objs := []client.Object{
		namespaced, cluster,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: MemberRoleName},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MemberRoleName}, Subjects: []rbacv1.Subject{subject}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: MemberNamespace, Name: MemberSelfRoleName},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: MemberSelfRoleName}, Subjects: []rbacv1.Subject{subject}},
	}
	for _, o := range objs {
		if err := CreateOrUpdate(ctx, c, o); err != nil {
			return err
		}
	}
	for _, o := range []client.Object{policy, policyBinding} {
		if err := CreateOrUpdate(ctx, c, o); meta.IsNoMatchError(err) {
			return fmt.Errorf("the member does not serve ValidatingAdmissionPolicy (Kubernetes 1.30 or later), which confines the identity to the namespaces the hub places into: %w", err)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// waitConfined waits until the member's admission policy confines the new token: a
// policy takes a moment to be enforced after it is created, and the token must not reach the
// hub before. It asks, as the token and without writing anything (a dry run), for a
// RoleBinding in the identity's own namespace, which is not labelled clusters.LabelPlaced: the answer
// must be the policy's refusal.
func waitConfined(ctx context.Context, member *rest.Config, token string) error {
	cfg := rest.AnonymousClientConfig(member)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	var last error
	poll, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(poll, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, NamespaceBinding(MemberNamespace), client.DryRunAll)
		// The policy answers Invalid, which RBAC never does: a Forbidden is RBAC (the
		// identity's bindings not in effect yet either), a success no policy at all.
		return apierrors.IsInvalid(last), nil
	}); err != nil {
		return fmt.Errorf("the member's admission policy %s does not confine the identity (a RoleBinding outside the namespaces placed into was answered %v): is its ValidatingAdmissionPolicy admission plugin off?", MemberRoleName, last)
	}
	return nil
}

// allowSelfRevoke lets the identity delete the Secret its current token is bound to, and
// nothing else in its namespace.
func allowSelfRevoke(ctx context.Context, c client.Client, anchor string) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: MemberNamespace, Name: MemberSelfRoleName},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"delete"}, ResourceNames: []string{anchor}}}}
	return CreateOrUpdate(ctx, c, role)
}

// CreateOrUpdate creates o, or replaces what an object of its name holds with it (at the
// version read).
func CreateOrUpdate(ctx context.Context, c client.Client, o client.Object) error {
	err := c.Create(ctx, o)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	current := o.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), current); err != nil {
		return err
	}
	o.SetResourceVersion(current.GetResourceVersion())
	return c.Update(ctx, o)
}

// newToken creates a Secret in MemberNamespace and a token of the identity bound to it:
// deleting the Secret revokes the token (the API server checks the bound object on every
// request). It returns the Secret's name and the token.
func newToken(ctx context.Context, mc kubernetes.Interface) (string, string, error) {
	anchor, err := mc.CoreV1().Secrets(MemberNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: MemberTokenPrefix,
		Annotations: map[string]string{"score.dev/purpose": "The hub's controllers' token is bound to this Secret: deleting it revokes the token."}},
		Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{})
	if err != nil {
		return "", "", err
	}
	tr, err := mc.CoreV1().ServiceAccounts(MemberNamespace).CreateToken(ctx, MemberServiceAccount, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(TokenLifetime)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: anchor.Name, UID: anchor.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", "", errors.Join(err, revoke(ctx, mc, anchor.Name))
	}
	return anchor.Name, tr.Status.Token, nil
}
