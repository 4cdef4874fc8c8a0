package runtime

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// podTemplate is a template that renders a ConfigMap and a Deployment whose pod spec has the
// extra lines given (indented under spec.template.spec) and whose container has its own.
func podTemplate(podLines, containerLines string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Workload.Name }}-settings
data: {mode: quiet}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Workload.Name }}
spec:
  selector: {matchLabels: {app: {{ .Workload.Name }}}}
  template:
    metadata: {labels: {app: {{ .Workload.Name }}}}
    spec:
` + podLines + `      containers:
        - name: main
          image: nginx
` + containerLines
}

// Through a careless template a tenant asks for a privileged pod on the host's network and PID
// namespace with the node's root mounted, or a pod running as another ServiceAccount of the
// namespace, or a probe sent to the cloud's metadata address. The runtime refuses each render
// before anything of it is applied: the plan fails with PermissionDenied, naming the object,
// the field and the rule, and neither the Deployment nor the ConfigMap beside it exists.
func TestHostileTemplatePodIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, pod, container, want string
	}{
		{name: "host namespaces", pod: "      hostNetwork: true\n      hostPID: true\n",
			want: `Deployment escape: spec.template.spec: host namespaces (hostNetwork=true, hostPID=true), which the pod rule "hostNamespaces" refuses`},
		{name: "privileged", container: "          securityContext: {privileged: true}\n",
			want: `Deployment escape: spec.template.spec: privileged (container "main" must not set securityContext.privileged=true), which the pod rule "privileged" refuses`},
		{name: "the node's root", pod: "      volumes: [{name: root, hostPath: {path: /}}]\n",
			want: `Deployment escape: spec.template.spec: hostPath volumes (volume "root"), which the pod rule "hostPath" refuses`},
		{name: "another ServiceAccount", pod: "      serviceAccountName: namespace-editor\n",
			want: `Deployment escape: spec.template.spec.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "namespace-editor"`},
		{name: "a probe to the metadata address", container: "          livenessProbe: {httpGet: {host: 169.254.169.254, path: /latest/meta-data/, port: 80}}\n",
			want: `Deployment escape: spec.template.spec: probe or lifecycle host (container "main" uses probe or lifecycle host "169.254.169.254"), which the pod rule "probeHosts" refuses`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := podTemplate(tc.pod, tc.container)
			ns := setup(t, text)
			p := newPlan(ns, "escape", "u-pod", testenv.Digest(text), `{}`)
			testenv.Create(t, env.Client, p)
			waitPlanFailed(t, p, tc.want)
			if p.Status.Reason != scorev1b1.ReasonPermissionDenied {
				t.Fatalf("reason %s", p.Status.Reason)
			}
			for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ConfigMap{}} {
				name := "escape"
				if _, cm := o.(*corev1.ConfigMap); cm {
					name = "escape-settings"
				}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); !apierrors.IsNotFound(err) {
					t.Fatalf("nothing of a refused render is applied: %T %s: %v", o, name, err)
				}
			}
		})
	}
}

// What a backend allows its pods (the plan's pods, copied from the config) is applied: the
// ServiceAccount it names, with its token, and a rule it allows. Its kinds bound the render:
// with kinds naming the Deployment alone, the Service of the same template is refused.
// Without any of it, the pod carries no token.
func TestPlanPodsAllowWhatTheBackendNames(t *testing.T) {
	text := podTemplate("      hostNetwork: true\n      serviceAccountName: {{ .PodSpec.serviceAccountName }}\n      automountServiceAccountToken: {{ .PodSpec.automountServiceAccountToken }}\n", "")
	ns := setup(t, text)
	p := newPlan(ns, "agent", "u-agent", testenv.Digest(text), `{}`)
	p.Spec.Pods = &scorev1b1.PlanPods{ServiceAccountName: "node-agent", ServiceAccountToken: true, Allow: []string{"hostNamespaces"}}
	testenv.Create(t, env.Client, p)
	dep := &appsv1.Deployment{}
	testenv.Eventually(t, 20*time.Second, "applied", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agent"}, dep)
	})
	if s := dep.Spec.Template.Spec; !s.HostNetwork || s.ServiceAccountName != "node-agent" || s.AutomountServiceAccountToken == nil || !*s.AutomountServiceAccountToken {
		t.Fatalf("pod spec: hostNetwork %v, serviceAccountName %q, token %v", s.HostNetwork, s.ServiceAccountName, s.AutomountServiceAccountToken)
	}

	t.Run("the default template's pod carries no token", func(t *testing.T) {
		text := templateText(t)
		ns := setup(t, text)
		testenv.Create(t, env.Client, newPlan(ns, "web", "u-web", testenv.Digest(text), webValues))
		dep := &appsv1.Deployment{}
		testenv.Eventually(t, 20*time.Second, "applied", func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep)
		})
		if s := dep.Spec.Template.Spec; s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken || s.ServiceAccountName != "" {
			t.Fatalf("token %v, serviceAccountName %q", s.AutomountServiceAccountToken, s.ServiceAccountName)
		}
	})

	t.Run("kinds bound the render", func(t *testing.T) {
		text := templateText(t)
		ns := setup(t, text)
		p := newPlan(ns, "web", "u-kinds", testenv.Digest(text), webValues)
		p.Spec.Kinds = []string{"Deployment.apps"}
		testenv.Create(t, env.Client, p)
		waitPlanFailed(t, p, "Service web is of a kind its backend or definition does not list (kinds: Deployment.apps, ConfigMap, Secret)")
		if p.Status.Reason != scorev1b1.ReasonPermissionDenied {
			t.Fatalf("reason %s", p.Status.Reason)
		}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Fatal(fmt.Errorf("nothing of a refused render is applied: %v", err))
		}
	})
}

// openCRD serves kind (plural, of group, v1alpha1 or what version says) with any content, as
// an operator's CRD would serve its custom resources to the runtime.
func openCRD(group, version, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}}}},
		},
	}
}

// installWorkflowsAndCharts serves Argo's Workflow and Flux's HelmRelease, the kinds the
// tests below render (healthConfig allows them).
func installWorkflowsAndCharts(t *testing.T) {
	t.Helper()
	installCRD(t, openCRD("argoproj.io", "v1alpha1", "Workflow", "workflows"), schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "WorkflowList"})
	installCRD(t, openCRD("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"), schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmReleaseList"})
}

// An Argo Workflow whose spec.volumes mounts the node's root into a step, without a
// ServiceAccount in its spec (the pod-level volume is judged, not only the step), and a chart's
// values that make its pod privileged (the values are looked at). The runtime refuses both
// before anything of the render is applied: PermissionDenied, the ConfigMap beside them absent
// too.
func TestHostileWorkflowAndChartPodsAreRefused(t *testing.T) {
	installWorkflowsAndCharts(t)
	for _, tc := range []struct {
		name, object, want string
		kind               schema.GroupVersionKind
	}{
		{name: "a workflow's volume of the node's root", kind: schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Workflow"}, object: `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: {{ .Workload.Name }}
spec:
  entrypoint: main
  volumes: [{name: root, hostPath: {path: /}}]
  templates:
    - name: main
      container: {image: busybox, command: [cat, /host/etc/shadow], volumeMounts: [{name: root, mountPath: /host}]}
`, want: `Workflow escape: spec: hostPath volumes (volume "root"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a chart's privileged pod", kind: schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}, object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {{ .Workload.Name }}
spec:
  chart: {spec: {chart: agent, sourceRef: {kind: HelmRepository, name: charts}}}
  values: {securityContext: {privileged: true}}
`, want: `HelmRelease escape: spec.values.securityContext.privileged: true, which the pod rule "privileged" refuses wherever it is set (pods.allow does not list it)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Workload.Name }}-settings\ndata: {mode: quiet}\n---\n" + tc.object
			ns := setup(t, text)
			p := newPlan(ns, "escape", "u-escape", testenv.Digest(text), `{}`)
			testenv.Create(t, env.Client, p)
			waitPlanFailed(t, p, tc.want)
			if p.Status.Reason != scorev1b1.ReasonPermissionDenied {
				t.Fatalf("reason %s", p.Status.Reason)
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(tc.kind)
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "escape"}, u); !apierrors.IsNotFound(err) {
				t.Fatalf("nothing of a refused render is applied: %s: %v", tc.kind.Kind, err)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "escape-settings"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Fatalf("nothing of a refused render is applied: ConfigMap: %v", err)
			}
		})
	}
}

// TestChartValuesThatCreateAServiceAccountAreApplied: a HelmRelease whose values hold
// serviceAccount: {create: true, name: ""}, as nearly every chart's do, is applied, not refused
// with PermissionDenied ("spec.values: is not a pod spec Kubernetes can read").
func TestChartValuesThatCreateAServiceAccountAreApplied(t *testing.T) {
	installWorkflowsAndCharts(t)
	text := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {{ .Workload.Name }}
spec:
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}
  values:
    image: {repository: nginx, tag: "1.27"}
    serviceAccount: {create: true, name: ""}
`
	ns := setup(t, text)
	testenv.Create(t, env.Client, newPlan(ns, "chart", "u-chart", testenv.Digest(text), `{}`))
	appliedAt(t, ns, "chart", "helm.toolkit.fluxcd.io/v2 HelmRelease chart")
}
