package provisioner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// podDefinitions are the definitions of the pod rules' tests, added to the config (run): a
// careless one that takes pod fields from params, as careless templates do; one that names
// the ServiceAccount its pods run as and a rule they may break; one whose kinds leave out
// what it makes.
const podDefinitions = `  - uri: template://test/careless-worker
    type: careless-worker
    init: |
      name: cw-{{ substr 0 8 .Guid }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Init.name }}}
        data: {mode: quiet}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: {{ .Init.name }}}
        spec:
          selector: {matchLabels: {app: {{ .Init.name }}}}
          template:
            metadata: {labels: {app: {{ .Init.name }}}}
            spec:
              hostNetwork: {{ .Params.hostNetwork | default false }}
              serviceAccountName: {{ .Params.serviceAccount | default "default" }}
              containers:
                - name: worker
                  image: busybox
                  securityContext: {privileged: {{ .Params.privileged | default false }}}
              volumes:
                - name: data
                  {{ .Params.volumeKind | default "emptyDir" }}: {{ if .Params.path }}{path: {{ .Params.path }}}{{ else }}{}{{ end }}
  - uri: template://test/node-agent
    type: node-agent
    kinds: [Deployment.apps]
    pods: {serviceAccountName: node-agent, allow: [hostNamespaces]}
    init: |
      name: na-{{ substr 0 8 .Guid }}
    manifests: |
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: {{ .Init.name }}}
        spec:
          selector: {matchLabels: {app: {{ .Init.name }}}}
          template:
            metadata: {labels: {app: {{ .Init.name }}}}
            spec:
              hostNetwork: true
              serviceAccountName: node-agent
              containers: [{name: agent, image: busybox}]
  - uri: template://test/kinds-bound
    type: kinds-bound
    kinds: [ConfigMap]
    init: |
      name: kb-{{ substr 0 8 .Guid }}
    manifests: |
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Init.name }}}
      - apiVersion: v1
        kind: Secret
        metadata: {name: {{ .Init.name }}}
`

// ofInstance lists the objects of a kind the provisioner made in a namespace.
func ofInstance(t *testing.T, ns string, list client.ObjectList) int {
	t.Helper()
	if err := env.Client.List(ctx, list, client.InNamespace(ns), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
		t.Fatal(err)
	}
	switch l := list.(type) {
	case *corev1.ConfigMapList:
		return len(l.Items)
	case *corev1.SecretList:
		return len(l.Items)
	case *appsv1.DeploymentList:
		return len(l.Items)
	}
	t.Fatalf("%T", list)
	return 0
}

// Through a definition that takes a pod field from a param, a tenant asks for a privileged pod
// on the host's network with the node's root mounted, or a pod running as another
// ServiceAccount of the namespace (one bound to edit). The provisioner refuses the claim before
// anything of the run is applied: PermissionDenied, naming the object, the field and the rule,
// no outputs, and neither the Deployment nor the ConfigMap beside it exists.
func TestHostileDefinitionPodIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, params, want string
	}{
		{name: "the host's network", params: `{"hostNetwork": true}`,
			want: `: spec.template.spec: host namespaces (hostNetwork=true), which the pod rule "hostNamespaces" refuses`},
		{name: "privileged", params: `{"privileged": true}`,
			want: `: spec.template.spec: privileged (container "worker" must not set securityContext.privileged=true), which the pod rule "privileged" refuses`},
		{name: "the node's root", params: `{"volumeKind": "hostPath", "path": "/"}`,
			want: `: spec.template.spec: hostPath volumes (volume "data"), which the pod rule "hostPath" refuses`},
		{name: "another ServiceAccount", params: `{"serviceAccount": "namespace-editor"}`,
			want: `: spec.template.spec.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "namespace-editor"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			c := newClaim(ns, "w-worker", "w", "worker", "careless-worker", "", scorev1b1.DeprovisionDelete)
			c.Spec.Params = jsonRaw(tc.params)
			testenv.Create(t, env.Client, c)
			c = waitPhase(t, c, scorev1b1.ClaimPhaseFailed)
			if c.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(c.Status.Message, tc.want) || c.Status.Outputs != nil {
				t.Fatalf("status %s %s, outputs %v; want PermissionDenied with %q", c.Status.Reason, c.Status.Message, c.Status.Outputs, tc.want)
			}
			if n := ofInstance(t, ns, &corev1.ConfigMapList{}) + ofInstance(t, ns, &appsv1.DeploymentList{}); n != 0 {
				t.Fatalf("%d objects of a refused run applied", n)
			}
		})
	}
}

// What a definition declares is what its objects may be: its pods as the ServiceAccount it
// names, on the host's network it allows, applied; an object of a kind its kinds leave out
// refuses the whole run.
func TestDefinitionPodsAndKinds(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	agent := newClaim(ns, "a-agent", "a", "agent", "node-agent", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, agent)
	testenv.Eventually(t, 20*time.Second, "the agent's Deployment applied", func() error {
		var list appsv1.DeploymentList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Deployments", len(list.Items))
		}
		if s := list.Items[0].Spec.Template.Spec; !s.HostNetwork || s.ServiceAccountName != "node-agent" {
			return fmt.Errorf("pod spec %+v", s)
		}
		return nil
	})

	bound := newClaim(ns, "k-kv", "k", "kv", "kinds-bound", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, bound)
	bound = waitPhase(t, bound, scorev1b1.ClaimPhaseFailed)
	if bound.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(bound.Status.Message, "is of a kind its backend or definition does not list (kinds: ConfigMap)") {
		t.Fatalf("status %s %s", bound.Status.Reason, bound.Status.Message)
	}
	if n := ofInstance(t, ns, &corev1.ConfigMapList{}) + ofInstance(t, ns, &corev1.SecretList{}); n != 0 {
		t.Fatalf("%d objects of a refused run applied", n)
	}
}
