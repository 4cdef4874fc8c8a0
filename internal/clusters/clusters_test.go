package clusters

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: t0k}
contexts:
- name: a
  context: {cluster: a, user: u}
- name: b
  context: {cluster: b, user: u}
current-context: a
`

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name, host, token, err string
		data                   map[string]string
	}{
		{name: "kubeconfig, current context", data: map[string]string{KeyKubeconfig: kubeconfig}, host: "https://a.example:6443", token: "t0k"},
		{name: "kubeconfig, named context", data: map[string]string{KeyKubeconfig: kubeconfig, KeyContext: "b"}, host: "https://b.example:6443", token: "t0k"},
		{name: "server and token", data: map[string]string{KeyServer: "https://m:6443", KeyToken: "abc", KeyCA: "x"}, host: "https://m:6443", token: "abc"},
		{name: "nothing", data: map[string]string{KeyServer: "https://m:6443"}, err: "holds neither"},
		{name: "a context that does not exist", data: map[string]string{KeyKubeconfig: kubeconfig, KeyContext: "c"}, err: "cluster m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Data: map[string][]byte{}}
			for k, v := range tc.data {
				s.Data[k] = []byte(v)
			}
			cfg, err := Config(s)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.Host != tc.host || cfg.BearerToken != tc.token {
				t.Fatalf("%v %+v", err, cfg)
			}
		})
	}
}

func TestDigestAndLabels(t *testing.T) {
	a := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster, "region": "eu"}},
		Data: map[string][]byte{KeyServer: []byte("s"), KeyToken: []byte("t1")}}
	b := a.DeepCopy()
	b.Data[KeyToken] = []byte("t2")
	if Digest(a) == Digest(b) {
		t.Fatal("a rotated token keeps the digest")
	}
	if l := Labels(a); len(l) != 1 || l["region"] != "eu" {
		t.Fatalf("labels %v", l)
	}
}

func TestMemberRole(t *testing.T) {
	role, err := MemberRole([]byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: score-runtime}
rules:
- {apiGroups: [score.dev], resources: [workloadplans], verbs: [get, list, watch]}
- {apiGroups: [events.k8s.io], resources: [events], verbs: [create]}
- {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, update, patch, delete]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != 2 || role.Rules[0].APIGroups[0] != "apps" || role.Rules[1].Resources[0] != "namespaces" {
		t.Fatalf("rules %+v", role.Rules)
	}
	if _, err := MemberRole([]byte(`rules: [{apiGroups: [score.dev], resources: [x], verbs: [get]}]`)); err == nil {
		t.Fatal("a role with nothing to apply was accepted")
	}
}

func TestOfPlan(t *testing.T) {
	p := &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{Cluster: "us"}, Status: scorev1b1.WorkloadPlanStatus{Objects: []scorev1b1.AppliedObject{
		{Cluster: "eu", Kind: "Deployment"}, {Cluster: "eu", Kind: "Service"}, {Kind: "Namespace"}, {Cluster: "us", Kind: "Deployment"}}}}
	if got := OfPlan(p); strings.Join(got, ",") != "us,eu," {
		t.Fatalf("%q, want us, eu and the hub", got)
	}
}

// A request to a member that got no answer marks it unreachable; the API server's refusal
// does not.
func TestUnanswered(t *testing.T) {
	gr := schema.GroupResource{Resource: "deployments"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, true},
		{fmt.Errorf("applying Deployment web: %w", &url.Error{Op: "Patch", URL: "https://m", Err: io.EOF}), true},
		{errors.New("Deployment web targets namespace other; only objects in team may be created"), false},
		{apierrors.NewServiceUnavailable("etcd"), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewForbidden(gr, "web", errors.New("no")), false},
		{apierrors.NewNotFound(gr, "web"), false},
		{apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "get", gr, "web", "", 0, true), true},
		{nil, false},
	} {
		if got := Unanswered(tc.err); got != tc.want {
			t.Errorf("Unanswered(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The identity on a member may do what the runtime and the provisioner apply there: the
// shipped roles of both, merged, and never a score.dev kind.
func TestMemberRoleShipped(t *testing.T) {
	roles, err := HubRoles(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	role, err := MemberRole(roles...)
	if err != nil {
		t.Fatal(err)
	}
	may := map[string]bool{}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, scorev1b1.GroupVersion.Group) {
			t.Fatalf("a score.dev rule on a member: %+v", r)
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
			t.Errorf("the member role may not apply %s: %+v", want, role.Rules)
		}
	}
}
