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

// checkCase is one object Check judges under a policy.
type checkCase struct {
	name   string
	object string
	policy Policy
	// refused is the whole message, or "" when the object keeps to the rules.
	refused string
}

// checkAll runs Check on every case.
func checkAll(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
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

func TestCheck(t *testing.T) {
	checkAll(t, []checkCase{
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
	})
}

// workflow is an Argo Workflow whose spec has the lines given (indented under spec) and one
// step, which mounts the volume root.
func workflow(spec string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  entrypoint: main
  templates:
    - name: main
      container: {image: busybox, command: [ls, /host], volumeMounts: [{name: root, mountPath: /host}]}
` + spec
}

// TestCheckJudgesPodVolumesOutsideAPodSpec: a workflow's pod-level volumes (spec.volumes, a
// template's volumes) are judged even when the mapping holds no containers and no
// ServiceAccount; otherwise a step could mount the node's root.
func TestCheckJudgesPodVolumesOutsideAPodSpec(t *testing.T) {
	checkAll(t, []checkCase{
		{name: "a workflow's volumes, mounted by a step", object: workflow("  volumes: [{name: root, hostPath: {path: /}}]\n"),
			refused: `Workflow wf: spec: hostPath volumes (volume "root"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a workflow's volumes, allowed", object: workflow("  volumes: [{name: root, hostPath: {path: /}}]\n"), policy: Policy{Allow: []string{HostPath}}},
		{name: "a workflow's own volumes", object: workflow("  volumes: [{name: root, emptyDir: {}}]\n")},
		{name: "a template's volumes beside a field a pod spec reads otherwise", object: workflow(`      volumes: [{name: root, hostPath: {path: /}}]
      activeDeadlineSeconds: "{{workflow.parameters.deadline}}"
`), refused: `Workflow wf: spec.templates[0]: hostPath volumes (volume "root"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a pipeline task's volumes", object: `apiVersion: tekton.dev/v1
kind: Task
metadata: {name: build}
spec:
  steps: [{name: build, image: busybox, volumeMounts: [{name: sock, mountPath: /var/run/docker.sock}]}]
  volumes: [{name: sock, hostPath: {path: /var/run/docker.sock}}]
`, refused: `Task build: spec: hostPath volumes (volume "sock"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a list of volumes that are not a pod's", object: `apiVersion: example.com/v1
kind: Stack
metadata: {name: s}
spec:
  services: [{name: web, volumes: ["data:/data", {type: bind, source: /srv}]}]
`},
	})
}

// TestCheckRefusesHostFieldsAnywhere: beside the pods the rules read, a hostPath, privileged,
// hostNetwork, hostPID or hostIPC set anywhere in an object that is not plain data refuses
// it (a tripwire for pods in shapes the rules do not read: a chart's values, a volume map, a
// PersistentVolume), unless the policy allows the rule. Data and schemas name these fields
// without making a pod.
func TestCheckRefusesHostFieldsAnywhere(t *testing.T) {
	checkAll(t, []checkCase{
		{name: "a volume map keyed by name", object: `apiVersion: example.com/v1
kind: Sandbox
metadata: {name: s}
spec:
  volumes: {root: {hostPath: {path: /}}}
`, refused: `Sandbox s: spec.volumes.root.hostPath: a host path, which the pod rule "hostPath" refuses wherever it is set (pods.allow does not list it)`},
		{name: "a volume map keyed by name, allowed", policy: Policy{Allow: []string{HostPath}}, object: `apiVersion: example.com/v1
kind: Sandbox
metadata: {name: s}
spec:
  volumes: {root: {hostPath: {path: /}}}
`},
		{name: "a chart's host path as text", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: agent}
spec:
  values: {persistence: {hostPath: /var/lib}}
`, refused: `HelmRelease agent: spec.values.persistence.hostPath: a host path, which the pod rule "hostPath" refuses wherever it is set (pods.allow does not list it)`},
		{name: "a PersistentVolume on the host", object: `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /etc}
`, refused: `PersistentVolume pv: spec.hostPath: a host path, which the pod rule "hostPath" refuses wherever it is set (pods.allow does not list it)`},
		{name: "a chart's privileged security context", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: agent}
spec:
  values: {securityContext: {privileged: true}}
`, refused: `HelmRelease agent: spec.values.securityContext.privileged: true, which the pod rule "privileged" refuses wherever it is set (pods.allow does not list it)`},
		{name: "a chart's privileged security context, allowed", policy: Policy{Allow: []string{Privileged}}, object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: agent}
spec:
  values: {securityContext: {privileged: true}}
`},
		{name: "a chart's host network as a word its template prints", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: agent}
spec:
  values: {daemon: {hostNetwork: "yes"}}
`, refused: `HelmRelease agent: spec.values.daemon.hostNetwork: "yes" (true to YAML), which the pod rule "hostNamespaces" refuses wherever it is set (pods.allow does not list it)`},
		{name: "an Application's host PID", object: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: agent}
spec:
  source: {repoURL: https://charts.example.com, chart: agent, helm: {valuesObject: {node: {hostPID: true}}}}
`, refused: `Application agent: spec.source.helm.valuesObject.node: host namespaces (hostPID=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "a chart's defaults: no host path, nothing privileged", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  values:
    persistence: {hostPath: "", enabled: false}
    cache: {hostPath: {}}
    securityContext: {privileged: false, allowPrivilegeEscalation: false}
    daemon: {hostNetwork: "no"}
`},
		{name: "a ConfigMap's keys are data", object: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {hostPath: /, privileged: 'true'}\n"},
		{name: "a CRD's schema names the fields", object: `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sandboxes.example.com}
spec:
  group: example.com
  names: {kind: Sandbox, plural: sandboxes}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, properties: {hostPath: {type: object, properties: {path: {type: string}}}, privileged: {type: boolean}}}}
`},
		{name: "another kind's schema names the fields", object: `apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata: {name: xsandboxes.example.com}
spec:
  group: example.com
  names: {kind: XSandbox, plural: xsandboxes}
  versions:
    - name: v1
      served: true
      referenceable: true
      schema: {openAPIV3Schema: {type: object, properties: {hostPath: {type: string, default: /srv}}}}
`},
		{name: "labels and annotations are text", object: `apiVersion: example.com/v1
kind: Sandbox
metadata: {name: s, annotations: {hostPath: /srv, privileged: "true"}}
spec: {size: 1, template: {metadata: {labels: {hostNetwork: "true"}}}}
`},
	})
	// The words the tripwire reads as true are those YAML (as a chart's rendering parses it)
	// reads as true.
	for _, w := range yamlTrue {
		var v map[string]any
		if err := yaml.Unmarshal([]byte("v: "+w), &v); err != nil || v["v"] != true {
			t.Errorf("YAML reads %q as %#v, not true", w, v["v"])
		}
	}
}

// TestCheckChartValuesAreNotPodSpecs: a chart's values with serviceAccount: {create: true,
// name: ""} (nearly every chart's) are not refused as "not a pod spec Kubernetes can read".
// A pod field is a pod's only with a pod spec's type, and a
// mapping that is not a pod spec is judged by its pod fields alone; a pod spec with containers
// is still refused when Kubernetes cannot read it.
func TestCheckChartValuesAreNotPodSpecs(t *testing.T) {
	checkAll(t, []checkCase{
		{name: "a chart's values that create a ServiceAccount", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}
  values:
    image: {repository: nginx, tag: "1.27"}
    serviceAccount: {create: true, name: "", annotations: {}}
    hostNetwork: false
    podSecurityContext: {runAsNonRoot: true}
`},
		{name: "an Application's values that create a ServiceAccount", object: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: team-a}
  source:
    repoURL: https://charts.example.com
    chart: web
    targetRevision: 1.2.3
    helm:
      valuesObject:
        serviceAccount: {create: true, name: ""}
        serviceAccountName: ""
`},
		{name: "a chart's values that name another ServiceAccount beside one they create", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  values:
    serviceAccount: {create: true}
    serviceAccountName: deployer
`, refused: `HelmRelease web: spec.values.serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "deployer"`},
		{name: "a chart's values on the host's network beside a ServiceAccount they create", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  values:
    serviceAccount: {create: true}
    hostNetwork: true
`, refused: `HelmRelease web: spec.values: host namespaces (hostNetwork=true), which the pod rule "hostNamespaces" refuses (pods.allow does not list it)`},
		{name: "a chart's volumes beside a ServiceAccount they create", object: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  values:
    serviceAccount: {create: true}
    volumes: [{name: docker, hostPath: {path: /var/run/docker.sock}}]
`, refused: `HelmRelease web: spec.values: hostPath volumes (volume "docker"), which the pod rule "hostPath" refuses (pods.allow does not list it)`},
		{name: "a pod spec with a ServiceAccount Kubernetes cannot read", object: deployment(container + "      serviceAccount: {name: deployer}\n"),
			refused: `Deployment web: spec.template.spec: is not a pod spec Kubernetes can read, so the pod rules cannot judge it: unrecognized type: string`},
	})
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
