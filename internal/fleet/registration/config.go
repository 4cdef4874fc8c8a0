// Package registration reads a member cluster's registration into a connection and registers
// members. A registration's data is the connection, either a kubeconfig (key "kubeconfig", with
// an optional "context") or a server URL, a CA bundle and a bearer token ("server", "ca.crt",
// "token"), and an optional "insecure" flag. Replacing the data rotates the credentials: the
// controllers notice the new digest and reconnect, without a restart.
//
// A registration is data, never code or a path: whoever may write a Secret in the control
// plane's namespace must not be able to run a program inside the controllers, have them read a
// file of their disk (their own ServiceAccount token, say) or send a credential anywhere but
// over verified TLS. Config accepts inline credentials only, as Argo CD's cluster Secrets do.
// Register creates the controllers' identity on a member (member.go: confined to the
// namespaces the hub places into) and writes the registration on the hub.
package registration

import (
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// ErrRefused is a registration the controllers will not use as it is: it would run code or
// read a file inside them, or send its credentials without verified TLS.
var ErrRefused = errors.New("refused")

// Config is the connection a registration Secret holds. It is built here, field by field,
// from the kubeconfig's chosen context rather than by clientcmd's ClientConfig, which would
// honour exec and auth-provider plugins, token, certificate and key files, proxies and
// skipped verification: nothing in the result reads a file or runs a program. Errors name the
// field at fault and never carry a value of the registration; they are published in
// score-clusters.
func Config(s *corev1.Secret) (*rest.Config, error) {
	insecure, err := insecureFlag(s)
	if err != nil {
		return nil, err
	}
	var cfg *rest.Config
	if kc := s.Data[clusters.KeyKubeconfig]; len(kc) > 0 {
		cfg, err = fromKubeconfig(s.Name, kc, string(s.Data[clusters.KeyContext]), insecure)
	} else {
		cfg, err = fromKeys(s, insecure)
	}
	if err != nil {
		return nil, err
	}
	if err := checkServer(s.Name, cfg.Host); err != nil {
		return nil, err
	}
	if insecure {
		// client-go refuses a CA with skipped verification: the flag is the registration's
		// explicit choice.
		cfg.Insecure, cfg.CAData = true, nil
	}
	return cfg, nil
}

// insecureFlag reads the registration's "insecure" key: absent, "true" or "false".
func insecureFlag(s *corev1.Secret) (bool, error) {
	switch v, ok := s.Data[clusters.KeyInsecure]; {
	case !ok, string(v) == "false":
		return false, nil
	case string(v) == "true":
		return true, nil
	}
	return false, fmt.Errorf("cluster %s: the key %q must be \"true\" or \"false\"", s.Name, clusters.KeyInsecure)
}

// fromKeys is the connection of the keys server, ca.crt and token.
func fromKeys(s *corev1.Secret, insecure bool) (*rest.Config, error) {
	server, token := string(s.Data[clusters.KeyServer]), string(s.Data[clusters.KeyToken])
	if server == "" || token == "" {
		return nil, fmt.Errorf("cluster %s: the Secret holds neither %q nor %q and %q", s.Name, clusters.KeyKubeconfig, clusters.KeyServer, clusters.KeyToken)
	}
	return &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: s.Data[clusters.KeyCA]}}, nil
}

// fromKubeconfig is the connection of a kubeconfig's context (its current context when
// context is empty), from inline data only.
func fromKubeconfig(name string, data []byte, context string, insecure bool) (*rest.Config, error) {
	// Load only decodes: it resolves no path and reads no file.
	raw, err := clientcmd.Load(data)
	if err != nil {
		// The decoder's message may quote the document: it is not repeated.
		return nil, fmt.Errorf("cluster %s: the kubeconfig does not parse (check it with kubectl config view --kubeconfig FILE)", name)
	}
	if context == "" {
		context = raw.CurrentContext
	}
	kctx := raw.Contexts[context]
	if kctx == nil {
		return nil, fmt.Errorf("cluster %s: the kubeconfig has no context %q", name, context)
	}
	cluster, user := raw.Clusters[kctx.Cluster], raw.AuthInfos[kctx.AuthInfo]
	if cluster == nil {
		return nil, fmt.Errorf("cluster %s: the kubeconfig's context %q names no cluster it has", name, context)
	}
	if user == nil {
		return nil, fmt.Errorf("cluster %s: the kubeconfig's context %q names no user it has: %w (no credentials)", name, context, ErrRefused)
	}
	if field := unsafeCluster(cluster, insecure); field != "" {
		return nil, fmt.Errorf("cluster %s: the kubeconfig's %s is %w: %s", name, field, ErrRefused, inlineOnly)
	}
	if field := unsafeUser(user); field != "" {
		return nil, fmt.Errorf("cluster %s: the kubeconfig's %s is %w: %s", name, field, ErrRefused, inlineOnly)
	}
	switch hasCert, hasKey := len(user.ClientCertificateData) > 0, len(user.ClientKeyData) > 0; {
	case hasCert != hasKey:
		return nil, fmt.Errorf("cluster %s: the kubeconfig's client-certificate-data and client-key-data go together: %w", name, ErrRefused)
	case !hasCert && user.Token == "":
		return nil, fmt.Errorf("cluster %s: the kubeconfig's user has no credentials (token, or client-certificate-data and client-key-data): %w", name, ErrRefused)
	}
	return &rest.Config{
		Host:        cluster.Server,
		BearerToken: user.Token,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		DisableCompression: cluster.DisableCompression,
	}, nil
}

// inlineOnly says what a registration may hold, after a refusal.
const inlineOnly = "a registration holds inline credentials only (token, client-certificate-data and client-key-data, certificate-authority-data) and is reached over verified TLS, or with the registration's key \"insecure\" set to \"true\""

// unsafeCluster names the first field of a kubeconfig's cluster that would read a file or
// weaken TLS, or "".
func unsafeCluster(c *clientcmdapi.Cluster, insecure bool) string {
	switch {
	case c.CertificateAuthority != "":
		return "certificate-authority (a file of the controllers' disk)"
	case c.ProxyURL != "":
		return "proxy-url"
	case c.InsecureSkipTLSVerify && !insecure:
		return "insecure-skip-tls-verify"
	}
	return ""
}

// unsafeUser names the first field of a kubeconfig's user that would run code, read a file,
// or act as someone else, or "".
func unsafeUser(u *clientcmdapi.AuthInfo) string {
	switch {
	case u.Exec != nil:
		return "exec plugin (a program run inside the controllers)"
	case u.AuthProvider != nil:
		return "auth-provider plugin"
	case u.TokenFile != "":
		return "tokenFile (a file of the controllers' disk)"
	case u.ClientCertificate != "":
		return "client-certificate (a file of the controllers' disk)"
	case u.ClientKey != "":
		return "client-key (a file of the controllers' disk)"
	case u.Username != "" || u.Password != "":
		return "username and password (basic authentication, which Kubernetes API servers no longer serve)"
	case u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0:
		return "impersonation (as, as-groups)"
	}
	return ""
}

// checkServer refuses a server URL that is not https or that carries user information (a
// password in a URL reaches every message that quotes it).
func checkServer(name, server string) error {
	u, err := url.Parse(server)
	switch {
	case err != nil || u.Host == "":
		return fmt.Errorf("cluster %s: the server is not a URL", name)
	case u.User != nil:
		return fmt.Errorf("cluster %s: the server URL carries user information: %w", name, ErrRefused)
	case u.Scheme != "https":
		return fmt.Errorf("cluster %s: the server URL is %s, not https: %w", name, u.Scheme, ErrRefused)
	}
	return nil
}
