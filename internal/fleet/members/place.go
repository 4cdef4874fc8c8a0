package members

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
)

// Placing a namespace on a member (EnsureNamespace) creates there at most the namespace and
// the identity's RoleBinding, and sends no create that can be answered AlreadyExists (but for
// what remains, below). On the hub the work queue keeps one worker per object and each object
// has one writer; a member's namespace and its RoleBinding are shared by every plan and claim
// placed into it, by both controllers. So:
//
//   - in a process, one placing of a namespace on a cluster at a time: the workers of the
//     runtime's and the provisioner's pools (one process by default) that need it while it is
//     under way wait for it and take its outcome, and what it placed is known to both pools;
//   - the namespace is created only when it is not found, the RoleBinding only when this
//     placing created the namespace or the identity lacks its rights there (a
//     SelfSubjectAccessReview of registration.NamespaceRight: it persists nothing and is
//     never refused), so a namespace another process placed (the other controller, deployed
//     apart), or one placed before a restart or a failed request there (Pool.Failed forgets
//     it), costs a read and a review, and no write.
//
// A placing killed between its steps leaves a namespace without the RoleBinding: the next one
// finds the rights missing and creates it. What remains is two processes (the runtime and the
// provisioner deployed apart) placing the same new namespace within the same moment; the
// create they lose is answered AlreadyExists and taken as done.
var placings = &placed{known: map[string]bool{}, inFlight: map[string]*placing{}}

// placed is the process's placings: those known done (a few bytes a namespace placed into),
// and those under way.
type placed struct {
	mu       sync.Mutex
	known    map[string]bool
	inFlight map[string]*placing
}

// placing is one under way; err is its outcome once done is closed.
type placing struct {
	done chan struct{}
	err  error
}

// placeKey names a namespace on a cluster as both pools connect to it: by the registration's
// name and connection digest, so that a cluster registered again (another server, new
// credentials) is looked at again.
func (mem *Member) placeKey(namespace string) string {
	return mem.Name + "\x00" + mem.digest + "\x00" + namespace
}

// forget makes the next EnsureNamespace of the namespace look again.
func (mem *Member) forget(namespace string) {
	placings.mu.Lock()
	delete(placings.known, mem.placeKey(namespace))
	placings.mu.Unlock()
}

// EnsureNamespace makes the namespace ready to place into on the member: created when it does
// not exist (labelled clusters.LabelPlaced, with the hub namespace's Pod Security labels), and the
// identity's rights granted there (registration.NamespaceBinding) when it lacks them. An
// existing namespace without clusters.LabelPlaced is clusters.ErrNotPlaceable. The namespace is
// never deleted there (other objects may live in it), nor relabelled: a later change of the hub
// namespace's labels is not copied. See placings for how it never races itself.
func (mem *Member) EnsureNamespace(ctx context.Context, name string) error {
	key := mem.placeKey(name)
	placings.mu.Lock()
	if placings.known[key] {
		placings.mu.Unlock()
		return nil
	}
	if p := placings.inFlight[key]; p != nil {
		placings.mu.Unlock()
		select {
		case <-p.done:
			return p.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p := &placing{done: make(chan struct{})}
	placings.inFlight[key] = p
	placings.mu.Unlock()

	granted, err := mem.place(ctx, name)
	placings.mu.Lock()
	delete(placings.inFlight, key)
	if granted {
		placings.known[key] = true
	}
	p.err = err
	close(p.done)
	placings.mu.Unlock()
	return err
}

// place creates the namespace when it is not found and the RoleBinding when the identity lacks
// its rights there; granted says the namespace is known placed (a RoleBinding the identity may
// not create is not remembered, so that it is tried again).
func (mem *Member) place(ctx context.Context, name string) (granted bool, err error) {
	ns := &corev1.Namespace{}
	err = mem.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	created := false
	if apierrors.IsNotFound(err) {
		ns, created, err = mem.createNamespace(ctx, name)
	}
	if err != nil {
		return false, fmt.Errorf("the namespace %s on cluster %s: %w", name, mem.Name, err)
	}
	if ns.Labels[clusters.LabelPlaced] != "true" {
		return false, fmt.Errorf("the namespace %s on cluster %s: %w (kubectl label namespace %s %s=true, on the member)", name, mem.Name, clusters.ErrNotPlaceable, name, clusters.LabelPlaced)
	}
	if !created {
		switch has, err := mem.hasRights(ctx, name); {
		case err != nil:
			return false, fmt.Errorf("the rights in namespace %s on cluster %s: %w", name, mem.Name, err)
		case has:
			return true, nil
		}
	}
	switch err := mem.Client.Create(ctx, registration.NamespaceBinding(name)); {
	case err == nil, apierrors.IsAlreadyExists(err):
		return true, nil
	case apierrors.IsForbidden(err):
		// A registration written by hand with an identity of another kind may not create
		// RoleBindings: its rights are its own, and what it applies next is judged by them.
		// Not remembered, so that it is tried again. (The policy's refusals are Invalid, not
		// Forbidden, and are not passed over.)
		return false, nil
	default:
		return false, fmt.Errorf("the rights in namespace %s on cluster %s: %w", name, mem.Name, err)
	}
}

// hasRights reports whether the identity has registration.NamespaceRight in the namespace: it
// was granted its rights there. An identity that may not ask (a registration written by hand)
// is taken to lack them.
func (mem *Member) hasRights(ctx context.Context, namespace string) (bool, error) {
	attrs := registration.NamespaceRight
	attrs.Namespace = namespace
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	if err := mem.Client.Create(ctx, review); apierrors.IsForbidden(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// createNamespace creates a namespace on the member, labelled clusters.LabelPlaced and with the hub
// namespace's Pod Security labels: a Workload runs under the same pod security on a member as
// on the hub. created is false when another process created it meanwhile.
func (mem *Member) createNamespace(ctx context.Context, name string) (ns *corev1.Namespace, created bool, err error) {
	hub := &corev1.Namespace{}
	if err := mem.hub.Get(ctx, client.ObjectKey{Name: name}, hub); err != nil {
		return nil, false, fmt.Errorf("reading its labels on the hub: %w", err)
	}
	ns = &corev1.Namespace{}
	ns.Name, ns.Labels = name, PodSecurityLabels(hub.Labels)
	ns.Labels[clusters.LabelPlaced] = "true"
	err = mem.Client.Create(ctx, ns)
	if apierrors.IsAlreadyExists(err) {
		return ns, false, mem.Client.Get(ctx, client.ObjectKey{Name: name}, ns) // created meanwhile: judged as found
	}
	return ns, err == nil, err
}
