package registration

import (
	"encoding/base64"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
)

// kubeconfig is a registration's kubeconfig with two contexts and the user's credentials
// inline; user replaces its user entry.
func kubeconfig(user string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443", certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte("the-ca")) + `}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: ` + user + `
contexts:
- name: a
  context: {cluster: a, user: u}
- name: b
  context: {cluster: b, user: u}
current-context: a
`
}

// withCluster is kubeconfig with cluster a's entry replaced.
func withCluster(cluster string) string {
	return strings.Replace(kubeconfig("{token: t0k}"), `{server: "https://a.example:6443", certificate-authority-data: `+base64.StdEncoding.EncodeToString([]byte("the-ca"))+`}`, cluster, 1)
}

// The connection a registration holds: inline credentials over verified TLS only. Anything
// that would run code (exec, auth-provider), read a file on the controllers' disk (tokenFile,
// certificate and key paths) or weaken TLS (insecure-skip-tls-verify without the
// registration's insecure flag, proxy-url, plain http) is refused with a message that names the
// field and carries no value of the registration.
func TestConfig(t *testing.T) {
	pem := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name     string
		data     map[string]string
		host     string
		token    string
		ca, cert string
		insecure bool
		refused  string // a part of the message; the error is ErrRefused
		invalid  string // a part of the message of a registration that is not refused but unusable
	}{
		{name: "kubeconfig, current context", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{token: t0k}")}, host: "https://a.example:6443", token: "t0k", ca: "the-ca"},
		{name: "kubeconfig, named context", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{token: t0k}"), clusters.KeyContext: "b"}, host: "https://b.example:6443", token: "t0k"},
		{name: "kubeconfig, client certificate inline", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{client-certificate-data: " + pem([]byte("the-cert")) + ", client-key-data: " + pem([]byte("the-key")) + "}")},
			host: "https://a.example:6443", ca: "the-ca", cert: "the-cert"},
		{name: "server and token", data: map[string]string{clusters.KeyServer: "https://m:6443", clusters.KeyToken: "abc", clusters.KeyCA: "x"}, host: "https://m:6443", token: "abc", ca: "x"},
		{name: "server and token, the system's roots", data: map[string]string{clusters.KeyServer: "https://m:6443", clusters.KeyToken: "abc"}, host: "https://m:6443", token: "abc"},
		{name: "insecure by the registration's flag", data: map[string]string{clusters.KeyServer: "https://m:6443", clusters.KeyToken: "abc", clusters.KeyCA: "x", clusters.KeyInsecure: "true"}, host: "https://m:6443", token: "abc", insecure: true},
		{name: "insecure-skip-tls-verify with the flag", data: map[string]string{clusters.KeyKubeconfig: withCluster(`{server: "https://a.example:6443", insecure-skip-tls-verify: true}`), clusters.KeyInsecure: "true"},
			host: "https://a.example:6443", token: "t0k", insecure: true},

		{name: "an exec plugin", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{exec: {apiVersion: client.authentication.k8s.io/v1, command: /tmp/steal, interactiveMode: Never}}")}, refused: "exec"},
		{name: "an auth provider", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{auth-provider: {name: oidc, config: {idp-issuer-url: https://x}}}")}, refused: "auth-provider"},
		{name: "a token file", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}")}, refused: "tokenFile"},
		{name: "a client certificate path", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{client-certificate: /etc/cert.pem, client-key-data: " + pem([]byte("k")) + "}")}, refused: "client-certificate"},
		{name: "a client key path", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{client-certificate-data: " + pem([]byte("c")) + ", client-key: /etc/key.pem}")}, refused: "client-key"},
		{name: "a CA path", data: map[string]string{clusters.KeyKubeconfig: withCluster(`{server: "https://a.example:6443", certificate-authority: /etc/ca.pem}`)}, refused: "certificate-authority"},
		{name: "insecure-skip-tls-verify without the flag", data: map[string]string{clusters.KeyKubeconfig: withCluster(`{server: "https://a.example:6443", insecure-skip-tls-verify: true}`)}, refused: "insecure-skip-tls-verify"},
		{name: "a proxy", data: map[string]string{clusters.KeyKubeconfig: withCluster(`{server: "https://a.example:6443", proxy-url: "http://proxy:3128"}`)}, refused: "proxy-url"},
		{name: "a user name and password", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{username: admin, password: hunter2}")}, refused: "password"},
		{name: "impersonation", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{token: t0k, as: system:admin}")}, refused: "impersonat"},
		{name: "plain http", data: map[string]string{clusters.KeyServer: "http://m:6443", clusters.KeyToken: "abc"}, refused: "https"},
		{name: "a password in the server URL", data: map[string]string{clusters.KeyServer: "https://admin:hunter2@m:6443", clusters.KeyToken: "abc"}, refused: "user information"},
		{name: "no credentials", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{}")}, refused: "no credentials"},
		{name: "a certificate without its key", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{client-certificate-data: " + pem([]byte("c")) + "}")}, refused: "client-key-data"},

		{name: "nothing", data: map[string]string{clusters.KeyServer: "https://m:6443"}, invalid: "holds neither"},
		{name: "a context that does not exist", data: map[string]string{clusters.KeyKubeconfig: kubeconfig("{token: t0k}"), clusters.KeyContext: "c"}, invalid: `context "c"`},
		{name: "a kubeconfig that does not parse", data: map[string]string{clusters.KeyKubeconfig: "users: [{token: hunter2"}, invalid: "does not parse"},
		{name: "an insecure flag that is not a boolean", data: map[string]string{clusters.KeyServer: "https://m:6443", clusters.KeyToken: "abc", clusters.KeyInsecure: "yes"}, invalid: clusters.KeyInsecure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Data: map[string][]byte{}}
			for k, v := range tc.data {
				s.Data[k] = []byte(v)
			}
			cfg, err := Config(s)
			if want := tc.refused + tc.invalid; want != "" {
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "cluster m") {
					t.Fatalf("err %v, want one naming cluster m and %q", err, want)
				}
				if refused := errors.Is(err, ErrRefused); refused != (tc.refused != "") {
					t.Fatalf("refused %t: %v", refused, err)
				}
				for _, secret := range []string{"hunter2", "t0k", "abc", "/tmp/steal", "/var/run/secrets"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("the message carries %q: %v", secret, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.host || cfg.BearerToken != tc.token || string(cfg.CAData) != tc.ca || string(cfg.CertData) != tc.cert || cfg.Insecure != tc.insecure {
				t.Fatalf("host %q token %q ca %q cert %q insecure %t", cfg.Host, cfg.BearerToken, cfg.CAData, cfg.CertData, cfg.Insecure)
			}
			// Nothing of what the controllers would read from disk or run is left to client-go.
			if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.Proxy != nil || cfg.Username != "" || cfg.Password != "" {
				t.Fatalf("a config that reads files or runs code: %+v", cfg)
			}
		})
	}
}

func TestMemberRoles(t *testing.T) {
	cluster, namespaced, err := MemberRoles([]byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: score-runtime}
rules:
- {apiGroups: [score.dev], resources: [workloadplans], verbs: [get, list, watch]}
- {apiGroups: [events.k8s.io], resources: [events], verbs: [create]}
- {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, update, patch, delete]}
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [secrets, namespaces], verbs: [get]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(namespaced.Rules) != 2 || namespaced.Rules[0].APIGroups[0] != "apps" || !slices.Equal(namespaced.Rules[1].Resources, []string{"secrets"}) {
		t.Fatalf("the namespace role's rules %+v", namespaced.Rules)
	}
	if namespaced.Name != MemberNamespaceRoleName || cluster.Name != MemberRoleName {
		t.Fatalf("names %s, %s", namespaced.Name, cluster.Name)
	}
	if _, _, err := MemberRoles([]byte(`rules: [{apiGroups: [score.dev], resources: [x], verbs: [get]}]`)); err == nil {
		t.Fatal("a role with nothing to apply was accepted")
	}
}

// The identity on a member may do, in a namespace placed into, what the runtime and the
// provisioner apply there: the shipped roles of both, merged, and never a score.dev kind nor
// anything cluster-scoped. Across the cluster it may only place into a namespace: get and
// create namespaces, create RoleBindings and bind the namespace role — no Secret, no
// Deployment, no Job outside the namespaces placed into (the admission policy confines the
// rest; the member test proves both on an API server).
func TestMemberRolesShipped(t *testing.T) {
	roles, err := HubRoles(os.DirFS("../../.."))
	if err != nil {
		t.Fatal(err)
	}
	cluster, namespaced, err := MemberRoles(roles...)
	if err != nil {
		t.Fatal(err)
	}
	may := map[string]bool{}
	for _, r := range namespaced.Rules {
		if slices.Contains(r.APIGroups, scorev1b1.GroupVersion.Group) || slices.Contains(r.Resources, "namespaces") {
			t.Fatalf("a score.dev or cluster-scoped rule in the namespace role: %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if slices.Contains(r.Verbs, "patch") {
					may[g+"/"+res] = true
				}
			}
		}
	}
	for _, want := range []string{"apps/deployments", "/services", "/secrets", "apps/statefulsets", "/persistentvolumeclaims", "networking.k8s.io/networkpolicies"} {
		if !may[want] {
			t.Errorf("the namespace role may not apply %s: %+v", want, namespaced.Rules)
		}
	}
	// NamespaceRight, which says whether the identity was granted its rights in a namespace,
	// is the namespace role's and not the cluster role's.
	grants := func(role *rbacv1.ClusterRole) bool {
		return slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, NamespaceRight.Group) && slices.Contains(r.Resources, NamespaceRight.Resource) && slices.Contains(r.Verbs, NamespaceRight.Verb)
		})
	}
	if !grants(namespaced) || grants(cluster) {
		t.Errorf("NamespaceRight %+v: granted by the namespace role %v, by the cluster role %v", NamespaceRight, grants(namespaced), grants(cluster))
	}
	for _, r := range cluster.Rules {
		for _, res := range r.Resources {
			switch res {
			case "namespaces", "rolebindings":
				if slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "create" }) {
					t.Errorf("the cluster role may %v %s", r.Verbs, res)
				}
			case "clusterroles":
				if !slices.Equal(r.Verbs, []string{"bind"}) || !slices.Equal(r.ResourceNames, []string{MemberNamespaceRoleName}) {
					t.Errorf("the cluster role may %v clusterroles %v", r.Verbs, r.ResourceNames)
				}
			default:
				t.Errorf("the cluster role grants %v on %s across the cluster", r.Verbs, res)
			}
		}
	}
}
