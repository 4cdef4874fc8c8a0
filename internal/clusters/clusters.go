// Package clusters reads member cluster registrations: a Secret in the control plane's
// namespace labelled score.dev/secret-type=cluster (Argo CD's and Istio's convention). The
// Secret's name is the cluster's name and its other labels are the cluster's labels, which
// placement selects on; its data is the connection, either a kubeconfig (key "kubeconfig",
// with an optional "context") or a server URL, a CA bundle and a bearer token ("server",
// "ca.crt", "token"). Replacing the data rotates the credentials: the runtime notices the
// new digest and reconnects, without a restart.
package clusters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/apply"
)

// The data keys of a registration.
const (
	KeyKubeconfig = "kubeconfig"
	KeyContext    = "context"
	KeyServer     = "server"
	KeyCA         = "ca.crt"
	KeyToken      = "token"
)

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

// NewCache is a cache of the registration Secrets of namespace, added to mgr (synced before
// its controllers start): the runtime's, which connects to the clusters.
func NewCache(mgr manager.Manager, namespace string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultLabelSelector: Selector,
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("the cache of cluster registrations: %w", err)
	}
	return c, apply.AddCache(mgr, c)
}

// Config is the connection a registration Secret holds.
func Config(s *corev1.Secret) (*rest.Config, error) {
	if kc := s.Data[KeyKubeconfig]; len(kc) > 0 {
		raw, err := clientcmd.Load(kc)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: the kubeconfig does not parse: %w", s.Name, err)
		}
		cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{CurrentContext: string(s.Data[KeyContext])}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", s.Name, err)
		}
		return cfg, nil
	}
	server, token := string(s.Data[KeyServer]), string(s.Data[KeyToken])
	if server == "" || token == "" {
		return nil, fmt.Errorf("cluster %s: the Secret holds neither %q nor %q and %q", s.Name, KeyKubeconfig, KeyServer, KeyToken)
	}
	return &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: s.Data[KeyCA]}}, nil
}

// Digest identifies a registration's connection data: a new digest is a new connection.
func Digest(s *corev1.Secret) string {
	h := sha256.New()
	for _, k := range []string{KeyKubeconfig, KeyContext, KeyServer, KeyCA, KeyToken} {
		fmt.Fprintf(h, "%s=%d:%s\n", k, len(s.Data[k]), s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
