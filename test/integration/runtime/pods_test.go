package runtime

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Issue 47, items 2 and 8: through a careless template a tenant got a privileged pod on the
// host's network and PID namespace with the node's root mounted, or a pod running as another
// ServiceAccount of the namespace, or a probe sent to the cloud's metadata address. The
// runtime refuses each render before anything of it is applied: the plan fails with
// PermissionDenied, naming the object, the field and the rule, and neither the Deployment
// nor the ConfigMap beside it exists. (Before the pod rules, every one of these was applied.)
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
