// Package clusters is what the control plane knows of its member clusters, without
// connecting to them: a registration is a Secret in the control plane's namespace labelled
// score.dev/secret-type=cluster (Argo CD's and Istio's convention), whose name is the cluster's
// and whose other labels are the cluster's labels, which placement selects on; the status the
// runtime publishes of each (the ConfigMap score-clusters); and inventories by cluster. It is
// pure: reading a registration into a connection is registration's, connecting is members'.
package clusters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// The data keys of a registration.
const (
	KeyKubeconfig = "kubeconfig"
	KeyContext    = "context"
	KeyServer     = "server"
	KeyCA         = "ca.crt"
	KeyToken      = "token"
	// KeyInsecure "true" skips the verification of the member's TLS certificate: the one way
	// to connect without it, said in the registration rather than in a kubeconfig it carries.
	KeyInsecure = "insecure"
)

// LabelPlaced, "true", marks a namespace of a member the hub places into: one the
// controllers created, or one the platform labelled to let them in.
const LabelPlaced = "score.dev/placed"

// ErrNotPlaceable is a namespace of a member that exists without LabelPlaced: one the hub's
// controllers did not create and the platform did not open to them. It is left alone, and
// what would go there is refused (PermissionDenied).
var ErrNotPlaceable = fmt.Errorf("it exists there without the label %s=true, and the hub places only into namespaces it created or that the platform labelled", LabelPlaced)

// Selector selects registration Secrets.
var Selector = labels.SelectorFromSet(labels.Set{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster})

// Labels are a registration's cluster labels: the Secret's labels but the type label.
func Labels(o metav1.Object) map[string]string {
	out := map[string]string{}
	for k, v := range o.GetLabels() {
		if k != scorev1b1.LabelSecretType {
			out[k] = v
		}
	}
	return out
}

// Digest identifies a registration's connection data: a new digest is a new connection.
func Digest(s *corev1.Secret) string {
	h := sha256.New()
	for _, k := range []string{KeyKubeconfig, KeyContext, KeyServer, KeyCA, KeyToken, KeyInsecure} {
		fmt.Fprintf(h, "%s=%d:%s\n", k, len(s.Data[k]), s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
