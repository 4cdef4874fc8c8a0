package clusters

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

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
	// (config/rbac/runtime/role.yaml, config/rbac/provisioner/role.yaml), MemberRole's input.
	Roles [][]byte
}

// Register creates the runtime's least-privilege identity on the member (member: an identity
// there that may create RBAC) and writes, or rewrites, the registration Secret on the hub
// with the member's server, CA and the identity's token. It says whether it "registered" or
// "updated" the cluster.
func Register(ctx context.Context, member *rest.Config, hub client.Client, r Registration) (string, error) {
	mc, err := kubernetes.NewForConfig(member)
	if err != nil {
		return "", err
	}
	token, err := memberIdentity(ctx, mc, r.Roles)
	if err != nil {
		return "", fmt.Errorf("creating the runtime's identity on the member: %w", err)
	}
	ca := member.CAData
	if len(ca) == 0 && member.CAFile != "" {
		if ca, err = os.ReadFile(member.CAFile); err != nil {
			return "", err
		}
	}
	server := r.Server
	if server == "" {
		server = member.Host
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}}
	op := "updated"
	err = hub.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	if apierrors.IsNotFound(err) {
		op = "registered"
	} else if err != nil {
		return "", err
	}
	secret.Labels = map[string]string{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster}
	for k, v := range r.Labels {
		secret.Labels[k] = v
	}
	secret.Type = corev1.SecretTypeOpaque
	secret.Data = map[string][]byte{KeyServer: []byte(server), KeyCA: ca, KeyToken: []byte(token)}
	if op == "registered" {
		err = hub.Create(ctx, secret)
	} else {
		err = hub.Update(ctx, secret)
	}
	if err != nil {
		return "", fmt.Errorf("registering on the hub: %w", err)
	}
	return op, nil
}

// memberIdentity creates the runtime's namespace, ServiceAccount, ClusterRole and binding on
// the member, and returns a long-lived token for it.
func memberIdentity(ctx context.Context, mc kubernetes.Interface, hubRoles [][]byte) (string, error) {
	role, err := MemberRole(hubRoles...)
	if err != nil {
		return "", err
	}
	ns := MemberNamespace
	if _, err := mc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: MemberServiceAccount}}
	if _, err := mc.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if _, err := mc.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = mc.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: MemberRoleName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MemberRoleName},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: MemberServiceAccount}}}
	if _, err := mc.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	// A token Secret, filled by the member's token controller: what Argo CD registers.
	tokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: MemberTokenSecret,
		Annotations: map[string]string{corev1.ServiceAccountNameKey: MemberServiceAccount}}, Type: corev1.SecretTypeServiceAccountToken}
	if _, err := mc.CoreV1().Secrets(ns).Create(ctx, tokenSecret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	var token string
	poll, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err = wait.PollUntilContextCancel(poll, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		s, err := mc.CoreV1().Secrets(ns).Get(ctx, MemberTokenSecret, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		return token != "", nil
	})
	if err == nil {
		return token, nil
	}
	// No token controller filled it (a cluster without one): a bound token of a year.
	tr, err := mc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, MemberServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(365 * 24 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("no token for the ServiceAccount: %w", err)
	}
	return tr.Status.Token, nil
}
