package provisioner

// State the provisioner wrote, told from state someone else did. An instance's state Secret
// (score-state-<hash>) and a namespace's shared state are named by what anyone can compute, in
// a namespace where a tenant with Secret rights (the built-in edit role) may create and change
// Secrets, labels, annotations and managed fields included. The provisioner trusts the state
// it keeps (its credentials become the instance's, its http+api ids the targets of requests
// sent with the platform's credentials), so it signs what it writes: an HMAC of the Secret's
// namespace, name and state under a key kept in the control plane's namespace, where tenants
// have no rights. A state Secret whose signature does not verify is neither read nor written
// over nor deleted: the claim is refused for it (apply.OwnedElsewhere), as for any object no
// instance made under an instance's name.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/statesign"
)

// stateKey is the key, read (or made) once.
type stateKey struct {
	mu  sync.Mutex
	key []byte
	// since is when the key was made: a state Secret created before it was written by a
	// version that did not sign, and is read as ours (a tenant cannot date an object back).
	since time.Time
}

// signingKey returns the signing key, creating its Secret on first use.
func (r *Reconciler) signingKey(ctx context.Context) (*stateKey, error) {
	k := &r.key
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k, nil
	}
	if r.APINamespace == "" {
		return nil, errors.New("no control-plane namespace to keep the state's signing key in")
	}
	key := client.ObjectKey{Namespace: r.APINamespace, Name: statesign.KeySecret}
	s := &corev1.Secret{}
	err := r.secrets.APIServer.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		raw := make([]byte, statesign.KeyBytes)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{statesign.KeyData: raw}}
		if err = r.Client.Create(ctx, s); apierrors.IsAlreadyExists(err) {
			s = &corev1.Secret{}
			err = r.secrets.APIServer.Get(ctx, key, s) // another provisioner (a shard) made it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state's signing key: %w", err)
	}
	if k.key, err = statesign.KeyOf(s.Data); err != nil {
		return nil, err
	}
	k.since = s.CreationTimestamp.Time
	return k, nil
}

// mac signs a state Secret's state, bound to its namespace and name.
func (k *stateKey) mac(namespace, name string, state []byte) string {
	return statesign.Sign(k.key, namespace, name, state)
}

// written reports whether the provisioner wrote s as it is: its signature verifies, or it has
// none and is older than the key (an earlier version's, which did not sign).
func (k *stateKey) written(s *corev1.Secret) bool {
	got, signed := s.Annotations[statesign.Annotation]
	if !signed {
		return s.CreationTimestamp.Time.Before(k.since)
	}
	return statesign.Verify(k.key, s.Namespace, s.Name, s.Data[statesign.StateKey], got)
}

// notOurState is the refusal of a state Secret the provisioner did not write.
func notOurState(s *corev1.Secret) error {
	return &apply.OwnedElsewhere{GroupKind: schema.GroupKind{Kind: "Secret"}, Namespace: s.Namespace, Name: s.Name, Maker: "the provisioner"}
}
