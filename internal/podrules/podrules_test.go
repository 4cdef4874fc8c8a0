package podrules

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// object decodes a manifest.
func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// deployment is a Deployment whose pod spec is spec (YAML, indented as under template.spec).
func deployment(spec string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
` + spec
}

const container = `      containers:
        - name: main
          image: nginx
`

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		object string
		policy Policy
		// refused is the whole message, or "" when the object keeps to the rules.
		refused string
	}{
		{name: "a plain web service", object: deployment(container + "      automountServiceAccountToken: false\n")},
		{name: "host network", object: deployment(container + "      hostNetwork: true\n"),
			refused: `Deployment web: spec.template.spec: host namespaces (hostNetwork=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "host network, allowed", object: deployment(container + "      hostNetwork: true\n"), policy: Policy{Allow: []string{HostNamespaces}}},
		{name: "host PID and IPC", object: deployment(container + "      hostPID: true\n      hostIPC: true\n"),
			refused: `Deployment web: spec.template.spec: host namespaces (hostPID=true, hostIPC=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "a privileged container", object: deployment(container + "          securityContext: {privileged: true}\n"),
			refused: `Deployment web: spec.template.spec: privileged (container "main" must not set securityContext.privileged=true), which the pod rule "privileged" refuses (pods.allow does not list it)`},
		{name: "a privileged init container", object: deployment(container + "      initContainers: [{name: setup, image: busybox, securityContext: {privileged: true}}]\n"),
			refused: `Deployment web: spec.template.spec: privileged (container "setup" must not set securityContext.privileged=true), which the pod rule "privileged" refuses (pods.allow does not list it)`},
		{name: "a privileged ephemeral container", object: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: main, image: nginx}]\n  ephemeralContainers: [{name: debug, image: busybox, securityContext: {privileged: true}}]\n",
			refused: `Pod p: spec: privileged (container "debug" must not set securityContext.privileged=true), which the pod rule "privileged" refuses (pods.allow does not list it)`},
		{name: "a capability beyond baseline", object: deployment(container + "          securityContext: {capabilities: {add: [NET_ADMIN]}}\n"),
			refused: `Deployment web: spec.template.spec: non-default capabilities (container "main" must not include "NET_ADMIN" in securityContext.capabilities.add), which the pod rule "capabilities" refuses (pods.allow does not list it)`},
		{name: "a capability baseline allows", object: deployment(container + "          securityContext: {capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}}\n")},
		{name: "a hostPath volume", object: deployment(container + "      volumes: [{name: root, hostPath: {path: /}}]\n"),
			refused: `Deployment web: spec.template.spec: hostPath volumes (volume "root"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a host port", object: deployment(container + "          ports: [{containerPort: 80, hostPort: 80}]\n"),
			refused: `Deployment web: spec.template.spec: hostPort (container "main" uses hostPort 80), which the pod rule "hostPorts" refuses (pods.allow does not list it)`},
		{name: "seccomp unconfined", object: deployment(container + "          securityContext: {seccompProfile: {type: Unconfined}}\n"),
			refused: `Deployment web: spec.template.spec: seccompProfile (container "main" must not set securityContext.seccompProfile.type to "Unconfined"), which the pod rule "seccomp" refuses (pods.allow does not list it)`},
		{name: "the image build, allowed what it needs", policy: Policy{Allow: []string{Seccomp, AppArmor}},
			object: deployment(container + "          securityContext: {seccompProfile: {type: Unconfined}, appArmorProfile: {type: Unconfined}}\n")},
		{name: "the image build, allowed seccomp only", policy: Policy{Allow: []string{Seccomp}},
			object:  deployment(container + "          securityContext: {seccompProfile: {type: Unconfined}, appArmorProfile: {type: Unconfined}}\n"),
			refused: `Deployment web: spec.template.spec: forbidden AppArmor profile (container "main" must not set AppArmor profile type to "Unconfined"), which the pod rule "appArmor" refuses (pods.allow does not list it)`},
		{name: "AppArmor unconfined by the template's annotation", object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/main: unconfined}}
    spec:
      containers: [{name: main, image: nginx}]
`, refused: `Deployment web: spec.template.spec: forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/main="unconfined""), which the pod rule "appArmor" refuses (pods.allow does not list it)`},
		{name: "an unsafe sysctl", object: deployment(container + "      securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}]}\n"),
			refused: `Deployment web: spec.template.spec: forbidden sysctls (kernel.msgmax), which the pod rule "sysctls" refuses (pods.allow does not list it)`},
		{name: "a probe host", object: deployment(container + "          livenessProbe: {httpGet: {host: 169.254.169.254, path: /latest/meta-data/, port: 80}}\n"),
			refused: `Deployment web: spec.template.spec: probe or lifecycle host (container "main" uses probe or lifecycle host "169.254.169.254"), which the pod rule "probeHosts" refuses (pods.allow does not list it)`},
		{name: "a TCP probe host", object: deployment(container + "          readinessProbe: {tcpSocket: {host: 10.0.0.1, port: 22}}\n"),
			refused: `Deployment web: spec.template.spec: probe or lifecycle host (container "main" uses probe or lifecycle host "10.0.0.1"), which the pod rule "probeHosts" refuses (pods.allow does not list it)`},
		{name: "a lifecycle handler's host", object: deployment(container + "          lifecycle: {preStop: {httpGet: {host: metadata.google.internal, path: /, port: 80}}}\n"),
			refused: `Deployment web: spec.template.spec: probe or lifecycle host (container "main" uses probe or lifecycle host "metadata.google.internal"), which the pod rule "probeHosts" refuses (pods.allow does not list it)`},
		{name: "a probe host, allowed", policy: Policy{Allow: []string{ProbeHosts}},
			object: deployment(container + "          livenessProbe: {httpGet: {host: db.internal, path: /, port: 80}}\n")},
		{name: "another ServiceAccount", object: deployment(container + "      serviceAccountName: deployer\n"),
			refused: `Deployment web: spec.template.spec.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "deployer"`},
		{name: "another ServiceAccount, by the deprecated field", object: deployment(container + "      serviceAccount: deployer\n"),
			refused: `Deployment web: spec.template.spec.serviceAccount: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "deployer"`},
		{name: "the default ServiceAccount by name", object: deployment(container + "      serviceAccountName: default\n")},
		{name: "the ServiceAccount the policy names", object: deployment(container + "      serviceAccountName: builder\n"), policy: Policy{ServiceAccountName: "builder"}},
		{name: "another ServiceAccount than the policy names", object: deployment(container + "      serviceAccountName: deployer\n"), policy: Policy{ServiceAccountName: "builder"},
			refused: `Deployment web: spec.template.spec.serviceAccountName: the pods may run as ServiceAccount "builder" only (pods.serviceAccountName), not "deployer"`},
		{name: "a CronJob's pod", object: `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          hostPID: true
          containers: [{name: main, image: busybox}]
`, refused: `CronJob nightly: spec.jobTemplate.spec.template.spec: host namespaces (hostPID=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "a custom resource that embeds a pod template", object: `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  strategy: {canary: {}}
  template:
    spec:
      containers: [{name: main, image: nginx}]
      volumes: [{name: docker, hostPath: {path: /var/run/docker.sock}}]
`, refused: `Rollout web: spec.template.spec: hostPath volumes (volume "docker"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a pod spec anywhere in a custom resource", object: `apiVersion: example.com/v1
kind: WorkerPool
metadata: {name: pool}
spec:
  pools:
    - name: a
      podSpec:
        serviceAccountName: edit-bot
        containers: [{name: main, image: busybox}]
`, refused: `WorkerPool pool: spec.pools[0].podSpec.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "edit-bot"`},
		{name: "a pipeline's pod template overrides", object: `apiVersion: tekton.dev/v1
kind: PipelineRun
metadata: {name: build}
spec:
  pipelineRef: {name: build}
  taskRunTemplate:
    podTemplate: {hostNetwork: true}
`, refused: `PipelineRun build: spec.taskRunTemplate.podTemplate: host namespaces (hostNetwork=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "a pipeline's ServiceAccount", object: `apiVersion: tekton.dev/v1
kind: PipelineRun
metadata: {name: build}
spec:
  taskRunTemplate: {serviceAccountName: deployer}
`, refused: `PipelineRun build: spec.taskRunTemplate.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "deployer"`},
		{name: "a workflow step's container", object: `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  entrypoint: main
  templates:
    - name: main
      container: {image: busybox, securityContext: {privileged: true}}
`, refused: `Workflow wf: spec.templates[0].container: privileged (container "spec.templates[0].container" must not set securityContext.privileged=true), which the pod rule "privileged" refuses (pods.allow does not list it)`},
		{name: "a chart's values that only look like a container", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cache}
spec:
  values: {image: redis, ports: {redis: 6379}}
`},
		{name: "a pod spec Kubernetes cannot read", object: deployment(container + "      hostNetwork: \"yes\"\n"),
			refused: `Deployment web: spec.template.spec: is not a pod spec Kubernetes can read, so the pod rules cannot judge it: unrecognized type: bool`},
		{name: "a ConfigMap holds data, not pods", object: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {spec: 'containers: [{hostNetwork: true}]'}\n"},
		{name: "a Service has no pod", object: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}], selector: {app: web}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(object(t, tc.object), tc.policy)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatal("admitted")
			case tc.refused != "" && err.Error() != tc.refused:
				t.Fatalf("message\n  got:  %s\n  want: %s", err, tc.refused)
			}
		})
	}
}

// A check a later Pod Security adds to baseline is allowed by its ID until it is named here
// and in docs/security.md: this fails on the upgrade that brings it.
func TestEveryBaselineCheckIsNamed(t *testing.T) {
	for _, c := range policy.DefaultChecks() {
		if c.Level == api.LevelBaseline && names[c.ID] == "" {
			t.Errorf("Pod Security's baseline check %s has no name in podrules", c.ID)
		}
	}
	if got := strings.Join(Names(), ","); got != "appArmor,capabilities,hostNamespaces,hostPath,hostPorts,privileged,probeHosts,procMount,seLinux,seccomp,sysctls,windowsHostProcess" {
		t.Errorf("the rules are %s", got)
	}
}

// BenchmarkCheck is the rules' cost for one Deployment of the default web-service template:
// what every apply of a plan adds.
func BenchmarkCheck(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(deployment(container+"          ports: [{containerPort: 8080}]\n          readinessProbe: {httpGet: {path: /ready, port: 8080}}\n      automountServiceAccountToken: false\n")), &u.Object); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := Check(u, Policy{}); err != nil {
			b.Fatal(err)
		}
	}
}
