// Package tenancy runs the whole control plane (orchestrator, provisioner and runtime, as
// score-controllers wires them) on a real kube-apiserver and etcd, and attacks the tenancy
// boundary from a tenant's Workloads: each attempt names what it tries and what must happen
// instead, asserted on the Workload's abstract status and on the other tenant's namespace.
package tenancy

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env *testenv.Env
	ctx = context.Background()
)

// Templates of the platform. web renders the projected pod into a ConfigMap (healthy as soon
// as it exists, so a Workload can be Ready without nodes) and lets its namespace come from a
// Workload annotation: a careless template that the runtime must still keep in the Workload's
// namespace. escalate also renders a ClusterRoleBinding to cluster-admin.
const (
	webTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Workload.Name }}
  namespace: {{ default .Workload.Namespace (index .Values.workload.annotations "example.com/namespace") }}
  labels: {{ toJson .Labels }}
data:
  pod: {{ toJson (toJson .PodSpec) }}
`
	escalateTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Workload.Name }}
data: {}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Workload.Name }}-{{ .Workload.Namespace }}-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Workload.Namespace }}}]
`
)

// config is the platform's Orchestrator Config. The postgres provisioner, like the web
// template, carelessly takes its namespace from a param; the escalating one creates a
// ClusterRoleBinding, which the default allowedKinds does not list.
const config = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - {backendId: web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: "%s"}}
  - name: escalate
    backends:
      - {backendId: escalate, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "configmap://score-system/templates/escalate.yaml", digest: "%s"}}
defaults:
  profile: web-service
endpoint:
  publicOnly: false
provisioners:
  - uri: template://tenancy/postgres
    type: postgres
    init: |
      name: pg-{{ substr 0 8 .Guid }}
    state: |
      password: {{ dig "password" (randAlphaNum 32) .State | quote }}
    outputs: |
      host: {{ .Init.name }}.{{ .Namespace }}
      password: {{ encodeSecretRef .Init.name "password" }}
    expected_outputs: [host, password]
    manifests: |
      - apiVersion: v1
        kind: Secret
        metadata:
          name: {{ .Init.name }}
          namespace: {{ .Params.namespace | default .Namespace }}
        stringData: {password: {{ .State.password | quote }}}
  - uri: template://tenancy/escalating
    type: escalating
    manifests: |
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRoleBinding
        metadata: {name: {{ .SourceWorkload }}-{{ .Namespace }}-admin}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
        subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Namespace }}}]
`

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		if err := testenv.CreateAll(ctx, env.Client,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "templates"},
				Data: map[string]string{"web.yaml": webTemplate, "escalate.yaml": escalateTemplate}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"},
				Data: map[string]string{"config.yaml": fmt.Sprintf(config, testenv.Digest(webTemplate), testenv.Digest(escalateTemplate))}},
		); err != nil {
			return err
		}
		mgr, err := ctrl.NewManager(env.Config, testenv.ManagerOptions())
		if err != nil {
			return err
		}
		// The whole control plane, cmd:// provisioners off, as by default.
		if err := controlplane.Setup(mgr, controlplane.DefaultOptions()); err != nil {
			return err
		}
		go func() { _ = mgr.Start(ctx) }()
		return nil
	}))
}
