package provisioning

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// DefaultClass is the class of a resource that names none, as in score-k8s.
const DefaultClass = "default"

// Identity is what makes two claims the same provisioned instance: within a namespace (of a
// cluster), the type, class and id; a resource without an id is its workload's own
// ("<workload>.<key>").
type Identity struct {
	Namespace, Type, Class, ID string
	// Shared is true when the resource named an id.
	Shared bool
	// Cluster is the member cluster the instance is provisioned on; empty is the hub. Claims
	// of the same id on two clusters are two instances, each with its own state (its own
	// credentials): none crosses from one cluster to another.
	Cluster string
}

// NewIdentity builds the identity of a claim.
func NewIdentity(namespace, workload, key, typ, class, id string) Identity {
	if class == "" {
		class = DefaultClass
	}
	shared := id != ""
	if !shared {
		id = workload + "." + key
	}
	return Identity{Namespace: namespace, Type: typ, Class: class, ID: id, Shared: shared}
}

// Uid is score-k8s's resource uid: "<type>.<class>#<id>".
func (i Identity) Uid() string { return fmt.Sprintf("%s.%s#%s", i.Type, i.Class, i.ID) }

// Hash is a short, stable digest of the identity, usable in names and labels.
func (i Identity) Hash() string {
	sum := sha256.Sum256([]byte(i.digestInput()))
	return hex.EncodeToString(sum[:])[:16]
}

// digestInput is what the identity's digests are taken of. A Workload's own resource has the
// derived id "<workload>.<key>", which a typed id may spell too (Score's id pattern admits
// dots, and score-k8s's uid does not tell them apart): a typed id with a dot is digested under
// the prefix "id:", which no derived input can start with (they start with a namespace or
// "cluster/"), so no id a tenant writes reaches another Workload's private instance. A typed
// id without a dot can never equal a derived one, which always has one; its digest, like a
// derived id's, stays that of earlier versions, so their instances keep their identity.
func (i Identity) digestInput() string {
	in := i.scope() + i.Namespace + "/" + i.Uid()
	if i.Shared && strings.Contains(i.ID, ".") {
		in = "id:" + in
	}
	return in
}

// Guid is a stable UUID-shaped id of the instance. score-k8s draws it at random once and keeps
// it; here it is derived from the identity, so a re-created or shared claim gets the same one
// and the objects named after it are the same objects.
func (i Identity) Guid() string {
	sum := sha256.Sum256([]byte("guid/" + i.digestInput()))
	h := hex.EncodeToString(sum[:16])
	// version 4 and variant bits, so it reads as a UUID
	return fmt.Sprintf("%s-%s-4%s-%x%s-%s", h[0:8], h[8:12], h[13:16], 8|(hexNibble(h[16])&3), h[17:20], h[20:32])
}

// scope distinguishes an instance on a member cluster from the same identity on the hub (whose
// digests are those of a single-cluster install).
func (i Identity) scope() string {
	if i.Cluster == "" {
		return ""
	}
	return "cluster/" + i.Cluster + "/"
}

func hexNibble(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	default:
		return c - 'a' + 10
	}
}

// StateSecretName names the Secret that keeps an instance's state across restarts.
func (i Identity) StateSecretName() string { return StateSecretNameOf(i.Hash()) }

// StateSecretNameOf names the state Secret of the instance of hash instance (Identity.Hash).
func StateSecretNameOf(instance string) string { return "score-state-" + instance }
