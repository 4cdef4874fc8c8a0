// Package hosts registers Docker hosts on the hub: each host's agent gets an identity of its
// own that reads the plans, exposures and outputs Secrets of the namespaces the platform gives
// the host, and nothing else, writes only the status of the docker plans placed on it (or on
// no host) and their exposures, and renews its host's Lease. Its token is bound to a Secret:
// deleting the Secret revokes it. The Docker socket never leaves the host.
package hosts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
)

const (
	// Namespace is where hosts are registered: the control plane's namespace.
	Namespace = "score-system"
	// LabelHost marks a host's ServiceAccount, Lease and token anchors with its name.
	LabelHost = "score.dev/docker-host"
	// AnnotationNamespaces and AnnotationAddress record, on the host's ServiceAccount, the
	// namespaces it serves (comma-separated) and the address it publishes on.
	AnnotationNamespaces = "score.dev/namespaces"
	AnnotationAddress    = "score.dev/address"
	// RoleName is the ClusterRole every host's agent is bound to, in its namespaces.
	RoleName = "score-docker-host"
	// TokenLifetime is how long an agent's token is valid: a year, rotated by adding the host
	// again.
	TokenLifetime = 365 * 24 * 3600
	prefix        = "score-host-"
	// RenewEvery is how often an agent renews its host's Lease while the Engine answers.
	RenewEvery = 20 * time.Second
)

// Registration is a host to register.
type Registration struct {
	Name       string
	Namespaces []string
	Address    string
}

// Host is a registered host, as List reads it.
type Host struct {
	Name       string
	Namespaces []string
	Address    string
	// Renewed is when its agent last said the Docker Engine answers; Engine what it runs.
	Renewed *time.Time
	Engine  string
}

// ServiceAccountName is the identity of a host's agent.
func ServiceAccountName(host string) string { return prefix + host }

// Rules are what an agent may do in the namespaces its host serves.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{scorev1b1.GroupVersion.Group}, Resources: []string{"workloadplans", "workloadexposures"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{scorev1b1.GroupVersion.Group}, Resources: []string{"workloadplans"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{scorev1b1.GroupVersion.Group}, Resources: []string{"workloadplans/status", "workloadexposures/status"}, Verbs: []string{"patch", "update"}},
		// The outputs Secrets its plans read, and the fragments of Compose definitions (its
		// cache holds those alone).
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// Policy is the admission policy that keeps an agent's status writes to the docker plans placed
// on its host (or on no host) and to docker exposures, and its other writes of plans to their
// finalizers (which it must remove from a plan that moved to another runtime): RBAC grants a
// verb on every plan of a namespace, the policy narrows it to the host's own.
func Policy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail, forbidden := admissionregistrationv1.Fail, metav1.StatusReasonForbidden
	user := fmt.Sprintf("system:serviceaccount:%s:%s", Namespace, prefix)
	host := fmt.Sprintf("request.userInfo.username.substring(%d)", len(user))
	// A request without a subresource has no key subResource.
	status := "(has(request.subResource) && request.subResource == 'status')"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{scorev1b1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"workloadplans", "workloadplans/status", "workloadexposures/status"}}}}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "a-docker-host", Expression: fmt.Sprintf("request.userInfo.username.startsWith('%s')", user)}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "!" + status + " || object.spec.runtimeClass == 'docker'",
					Message:    "a Docker host's agent writes the status of the plans and exposures of class docker only",
					Reason:     &forbidden,
				},
				{
					Expression: fmt.Sprintf("!%s || request.resource.resource != 'workloadplans' || !has(object.spec.cluster) || object.spec.cluster == '' || object.spec.cluster == %s", status, host),
					Message:    "a Docker host's agent writes the status of the plans placed on its host or on none only",
					Reason:     &forbidden,
				},
				{
					Expression: fmt.Sprintf("%[1]s || object.metadata.?finalizers.orValue([]).filter(f, f != 'docker.score.dev/' + %[2]s) == oldObject.metadata.?finalizers.orValue([]).filter(f, f != 'docker.score.dev/' + %[2]s)", status, host),
					Message:    "a Docker host's agent adds and removes its own finalizer only",
					Reason:     &forbidden,
				},
				{
					Expression: status + " || (object.spec == oldObject.spec && object.metadata.?labels == oldObject.metadata.?labels && object.metadata.?annotations == oldObject.metadata.?annotations && object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences)",
					Message:    "a Docker host's agent changes nothing of a plan but its finalizers",
					Reason:     &forbidden,
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: RoleName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	return policy, binding
}

// Validate checks a registration before anything is written.
func (r Registration) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(r.Name); len(msgs) > 0 || len(prefix+r.Name) > 63 {
		errs = append(errs, fmt.Errorf("host name %q must be a DNS label of at most %d characters", r.Name, 63-len(prefix)))
	}
	if len(r.Namespaces) == 0 {
		errs = append(errs, errors.New("name the namespaces the host serves (--namespace)"))
	}
	for _, ns := range r.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("namespace %q is not a namespace name", ns))
		}
	}
	if r.Address == "" {
		errs = append(errs, errors.New("give the address the host publishes ports on (--address)"))
	}
	return errors.Join(errs...)
}

// Register registers a host, or rotates its token when it is registered: its ServiceAccount,
// the role and policy every host shares, a RoleBinding in each namespace it serves (those it
// no longer serves removed), its Lease, and a new token bound to a new Secret; the previous
// token is revoked once the new one exists. A namespace another host serves is refused: two
// agents would run the same plans. It returns the agent's kubeconfig.
func Register(ctx context.Context, cfg *rest.Config, c client.Client, r Registration) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	hosts, err := List(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		if h.Name == r.Name {
			continue
		}
		for _, ns := range r.Namespaces {
			if slices.Contains(h.Namespaces, ns) {
				return nil, fmt.Errorf("namespace %s is served by host %s: a namespace has one Docker host", ns, h.Name)
			}
		}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ServiceAccountName(r.Name),
		Labels:      map[string]string{LabelHost: r.Name},
		Annotations: map[string]string{AnnotationNamespaces: strings.Join(r.Namespaces, ","), AnnotationAddress: r.Address}}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: RoleName}, Rules: Rules()}
	policy, binding := Policy()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ServiceAccountName(r.Name), Labels: map[string]string{LabelHost: r.Name}}}
	leaseRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ServiceAccountName(r.Name)},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, ResourceNames: []string{lease.Name}, Verbs: []string{"get", "update", "patch"}}}}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: Namespace, Name: sa.Name}}
	objs := []client.Object{sa, role, policy, binding, leaseRole,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: sa.Name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leaseRole.Name}, Subjects: subject}}
	for _, ns := range r.Namespaces {
		objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa.Name, Labels: map[string]string{LabelHost: r.Name}},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RoleName}, Subjects: subject})
	}
	for _, o := range objs {
		if err := registration.CreateOrUpdate(ctx, c, o); err != nil {
			return nil, fmt.Errorf("%T %s: %w", o, o.GetName(), err)
		}
	}
	if err := c.Create(ctx, lease); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("the host's Lease: %w", err)
	}
	if err := unbindLeft(ctx, c, r); err != nil {
		return nil, err
	}
	previous, err := anchors(ctx, c, r.Name)
	if err != nil {
		return nil, err
	}
	token, err := newToken(ctx, cfg, c, r.Name)
	if err != nil {
		return nil, err
	}
	for _, a := range previous {
		if err := client.IgnoreNotFound(c.Delete(ctx, &a)); err != nil {
			return nil, fmt.Errorf("revoking the previous token: %w", err)
		}
	}
	return kubeconfig(cfg, r.Name, token)
}

// unbindLeft removes the RoleBindings of namespaces the host no longer serves, refused while
// plans there hold the host's finalizer.
func unbindLeft(ctx context.Context, c client.Client, r Registration) error {
	bindings := &rbacv1.RoleBindingList{}
	if err := c.List(ctx, bindings, client.MatchingLabels{LabelHost: r.Name}); err != nil {
		return err
	}
	for _, b := range bindings.Items {
		if b.Namespace != Namespace && !slices.Contains(r.Namespaces, b.Namespace) {
			plans, err := held(ctx, c, r.Name, []string{b.Namespace})
			if err != nil {
				return err
			}
			if len(plans) > 0 {
				return fmt.Errorf("the host runs %d plans in namespace %s (%s): delete their Workloads before the host stops serving it", len(plans), b.Namespace, strings.Join(plans, ", "))
			}
			if err := client.IgnoreNotFound(c.Delete(ctx, &b)); err != nil {
				return err
			}
		}
	}
	return nil
}

// anchors are the Secrets a host's tokens are bound to.
func anchors(ctx context.Context, c client.Client, host string) ([]corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(Namespace), client.MatchingLabels{LabelHost: host}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// newToken creates a Secret and a token of the host's identity bound to it.
func newToken(ctx context.Context, cfg *rest.Config, c client.Client, host string) (string, error) {
	anchor := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, GenerateName: ServiceAccountName(host) + "-token-",
		Labels:      map[string]string{LabelHost: host},
		Annotations: map[string]string{"score.dev/purpose": "The Docker host's agent's token is bound to this Secret: deleting it revokes the token."}},
		Type: corev1.SecretTypeOpaque}
	if err := c.Create(ctx, anchor); err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccountName(host), &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(TokenLifetime)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: anchor.Name, UID: anchor.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", errors.Join(err, c.Delete(ctx, anchor))
	}
	return tr.Status.Token, nil
}

// kubeconfig is the agent's: the hub's server and CA, the host's token.
func kubeconfig(cfg *rest.Config, host, token string) ([]byte, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		return nil, fmt.Errorf("the hub's CA is in a file (%s); use a kubeconfig that carries it", cfg.CAFile)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[ServiceAccountName(host)] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: ServiceAccountName(host)}
	kc.CurrentContext = "hub"
	return clientcmd.Write(*kc)
}

// List reads the registered hosts, with their Leases.
func List(ctx context.Context, c client.Client) ([]Host, error) {
	sas := &corev1.ServiceAccountList{}
	if err := c.List(ctx, sas, client.InNamespace(Namespace), client.HasLabels{LabelHost}); err != nil {
		return nil, err
	}
	var out []Host
	for _, sa := range sas.Items {
		h := Host{Name: sa.Labels[LabelHost], Address: sa.Annotations[AnnotationAddress]}
		if ns := sa.Annotations[AnnotationNamespaces]; ns != "" {
			h.Namespaces = strings.Split(ns, ",")
		}
		lease := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: sa.Name}, lease); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if lease.Spec.RenewTime != nil {
			h.Renewed = &lease.Spec.RenewTime.Time
		}
		h.Engine = ptr.Deref(lease.Spec.HolderIdentity, "")
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Finalizer is the finalizer a host's agent holds on the plans it runs containers for.
func Finalizer(host string) string { return "docker.score.dev/" + host }

// held lists the plans of the namespaces that a host's agent holds: their deletion waits for
// it to remove their containers.
func held(ctx context.Context, c client.Client, host string, namespaces []string) ([]string, error) {
	var out []string
	for _, ns := range namespaces {
		plans := &scorev1b1.WorkloadPlanList{}
		if err := c.List(ctx, plans, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, p := range plans.Items {
			if slices.Contains(p.Finalizers, Finalizer(host)) {
				out = append(out, ns+"/"+p.Name)
			}
		}
	}
	return out, nil
}

// Remove unregisters a host: its token revoked, its bindings, Lease and identity deleted. It
// is refused while plans hold the host's finalizer (their deletion would wait for an agent
// that can no longer answer), unless abandon, which lets go of them: their containers are left
// on the host, no longer managed.
func Remove(ctx context.Context, c client.Client, host string, abandon bool) error {
	list, err := List(ctx, c)
	if err != nil {
		return err
	}
	var namespaces []string
	for _, h := range list {
		if h.Name == host {
			namespaces = h.Namespaces
		}
	}
	plans, err := held(ctx, c, host, namespaces)
	if err != nil {
		return err
	}
	if len(plans) > 0 && !abandon {
		return fmt.Errorf("the host runs %d plans (%s): delete their Workloads first, or --abandon to leave their containers unmanaged", len(plans), strings.Join(plans, ", "))
	}
	for _, key := range plans {
		ns, name, _ := strings.Cut(key, "/")
		p := &scorev1b1.WorkloadPlan{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); client.IgnoreNotFound(err) != nil {
			return err
		}
		before := p.DeepCopy()
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == Finalizer(host) })
		if err := c.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("letting go of plan %s: %w", key, err)
		}
	}
	previous, err := anchors(ctx, c, host)
	if err != nil {
		return err
	}
	bindings := &rbacv1.RoleBindingList{}
	if err := c.List(ctx, bindings, client.MatchingLabels{LabelHost: host}); err != nil {
		return err
	}
	var objs []client.Object
	for i := range previous {
		objs = append(objs, &previous[i])
	}
	for i := range bindings.Items {
		objs = append(objs, &bindings.Items[i])
	}
	name := ServiceAccountName(host)
	objs = append(objs,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}})
	for _, o := range objs {
		if err := client.IgnoreNotFound(c.Delete(ctx, o)); err != nil {
			return fmt.Errorf("deleting %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
