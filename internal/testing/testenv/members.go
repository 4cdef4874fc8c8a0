package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
)

// Kubeconfig writes an administrator's kubeconfig of the API server cfg reaches, for a
// command the test runs (scorectl), and returns its path.
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	kc.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// PutConfigMap creates the ConfigMap namespace/name with data, or replaces the data of the one
// there (the Orchestrator Config, the templates).
func PutConfigMap(t testing.TB, c client.Client, namespace, name string, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	cm.Data = data
	switch {
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, cm)
	case err == nil:
		err = c.Update(ctx, cm)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// RegisterMember registers the member cluster member reaches on the hub, as `scorectl cluster
// add` does (the identity confined on the member, the registration Secret on the hub), with
// the hub's roles from the repository; reg names it, its namespace, labels and (when the
// controllers reach it otherwise, through a proxy) its server. It returns what Register did.
func RegisterMember(t testing.TB, hub client.Client, member *rest.Config, reg registration.Registration) string {
	t.Helper()
	roles, err := registration.HubRoles(os.DirFS(RepoRoot()))
	if err != nil {
		t.Fatal(err)
	}
	reg.Roles = roles
	op, err := registration.Register(context.Background(), member, hub, reg)
	if err != nil {
		t.Fatalf("registering %s: %v", reg.Name, err)
	}
	return op
}
