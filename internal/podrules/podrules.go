// Package podrules is what the pods a template or a provisioner definition makes may do: the
// rules every object is checked against before it is applied (internal/prepare, which the
// runtime, the provisioner and the offline render all prepare through). A pod may not break
// Pod Security's baseline level — host namespaces, privileged containers, capabilities beyond
// baseline's list, hostPath volumes, host ports, AppArmor, SELinux, /proc mount, seccomp,
// sysctls, Windows host processes, and (from Kubernetes 1.34) a host in probes and lifecycle
// handlers — unless its backend or definition allows the rule by name (Policy.Allow), and may
// run only as the ServiceAccount its backend or definition names (none named: the
// namespace's default).
//
// Baseline is judged by Pod Security admission's own checks (k8s.io/pod-security-admission,
// each check's latest version), so a pod these rules admit is one a namespace enforcing
// baseline admits too, whoever creates it. Unlike admission, the rules hold in every
// namespace, whatever its labels, and refuse the object that would make the pod (a
// Deployment, a Job, a custom resource that embeds a pod template), before it is applied:
// nothing of a refused render reaches the cluster.
//
// It is pure: no client.
package podrules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// The rules a backend or a definition may allow (Policy.Allow), each one of Pod Security
// baseline's checks. ServiceAccount is not among them: a backend or definition names the
// one its pods run as.
const (
	// HostNamespaces: hostNetwork, hostPID, hostIPC.
	HostNamespaces = "hostNamespaces"
	// Privileged: securityContext.privileged of any container (init and ephemeral too).
	Privileged = "privileged"
	// Capabilities: capabilities added beyond baseline's list (AUDIT_WRITE, CHOWN,
	// DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP,
	// SETUID, SYS_CHROOT).
	Capabilities = "capabilities"
	// HostPath: hostPath volumes.
	HostPath = "hostPath"
	// HostPorts: containers' hostPort.
	HostPorts = "hostPorts"
	// AppArmor: an AppArmor profile other than RuntimeDefault or Localhost (Unconfined).
	AppArmor = "appArmor"
	// SELinux: SELinux options beyond baseline's types, and any user or role.
	SELinux = "seLinux"
	// ProcMount: a /proc mount other than Default.
	ProcMount = "procMount"
	// Seccomp: the Unconfined seccomp profile.
	Seccomp = "seccomp"
	// Sysctls: sysctls beyond baseline's safe set.
	Sysctls = "sysctls"
	// WindowsHostProcess: Windows host-process containers.
	WindowsHostProcess = "windowsHostProcess"
	// ProbeHosts: a host in a probe or a lifecycle handler (httpGet.host, tcpSocket.host): the
	// kubelet sends the request to that host, from the node.
	ProbeHosts = "probeHosts"
)

// names are the rules by Pod Security's check IDs. A check a later Pod Security adds is
// known by its ID until it is named here (TestEveryBaselineCheckIsNamed).
var names = map[policy.CheckID]string{
	"hostNamespaces":             HostNamespaces,
	"privileged":                 Privileged,
	"capabilities_baseline":      Capabilities,
	"hostPathVolumes":            HostPath,
	"hostPorts":                  HostPorts,
	"appArmorProfile":            AppArmor,
	"seLinuxOptions":             SELinux,
	"procMount":                  ProcMount,
	"seccompProfile_baseline":    Seccomp,
	"sysctls":                    Sysctls,
	"windowsHostProcess":         WindowsHostProcess,
	"hostProbesAndHostLifecycle": ProbeHosts,
}

// rule is one baseline check, by the name a Policy allows it by.
type rule struct {
	name  string
	check policy.CheckPodFn
}

// rules are Pod Security's baseline checks, each at its latest version, in Pod Security's
// order.
var rules = baseline()

func baseline() []rule {
	var out []rule
	for _, c := range policy.DefaultChecks() {
		if c.Level != api.LevelBaseline || len(c.Versions) == 0 {
			continue
		}
		name := names[c.ID]
		if name == "" {
			name = string(c.ID)
		}
		out = append(out, rule{name: name, check: c.Versions[len(c.Versions)-1].CheckPod})
	}
	return out
}

// Names are the rules a Policy may allow, sorted: what the config validator accepts in
// pods.allow.
func Names() []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.name)
	}
	slices.Sort(out)
	return out
}

// Policy is what the pods of one backend's or one definition's objects may do beyond the
// rules.
type Policy struct {
	// ServiceAccountName is the ServiceAccount the pods may run as; empty: the namespace's
	// default only. A pod that names no ServiceAccount runs as the default, which is always
	// allowed.
	ServiceAccountName string
	// Allow names the rules the pods may break (HostNamespaces, Seccomp...).
	Allow []string
}

// Check judges every pod an object carries: a Pod's spec, a workload's pod template
// (spec.template.spec, spec.jobTemplate.spec.template.spec) and, in any other kind, wherever
// it sits, every mapping with a list of containers (a custom resource that embeds a pod
// template is judged like a Deployment), every mapping with a pod's host or ServiceAccount
// fields (a pod template's overrides, as pipelines carry them), and every lone container (a
// mapping with an image and a security context, ports, probes or lifecycle handlers, as
// workflow steps are). ConfigMaps, Secrets and CustomResourceDefinitions carry no pod. The
// error names the object, the field and the rule; nil when every pod keeps to the rules.
func Check(u *unstructured.Unstructured, p Policy) error {
	if !carriesPods(u) {
		return nil
	}
	var err error
	walk(u.Object, nil, "", func(spec, meta map[string]any, path string) bool {
		err = checkPod(spec, meta, path, p)
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// carriesPods is false for the kinds whose content is data or schemas, never a pod.
func carriesPods(u *unstructured.Unstructured) bool {
	switch u.GroupVersionKind().GroupKind().String() {
	case "ConfigMap", "Secret", "CustomResourceDefinition.apiextensions.k8s.io":
		return false
	}
	return true
}

// podFields are the fields of a pod spec that say what the pod is on its node or whose it is:
// a mapping with any of them is judged as (a part of) a pod spec.
var podFields = []string{"hostNetwork", "hostPID", "hostIPC", "serviceAccountName", "serviceAccount"}

// containerFields are the fields of a container the rules judge: a mapping with an image and
// any of them is judged as a container of a pod of its own.
var containerFields = []string{"securityContext", "ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"}

// walk calls pod for every pod spec under m (see Check), with the mapping beside it under
// metadata when the pod spec is its parent's spec (a pod template's labels and annotations),
// and its path; it stops when pod returns false. It does not look into metadata, which holds
// no pod, nor into the containers of a pod spec it judged.
func walk(m map[string]any, parent map[string]any, path string, pod func(spec, meta map[string]any, path string) bool) bool {
	if _, ok := m["containers"].([]any); ok {
		var meta map[string]any
		if parent != nil && (path == "spec" || strings.HasSuffix(path, ".spec")) {
			meta, _ = parent["metadata"].(map[string]any)
		}
		return pod(m, meta, path)
	}
	if c, ok := loneContainer(m, path); ok && !pod(map[string]any{"containers": []any{c}}, nil, path) {
		return false
	}
	for _, f := range podFields {
		if _, ok := m[f]; ok {
			if !pod(m, nil, path) {
				return false
			}
			break
		}
	}
	for _, k := range sortedKeys(m) {
		if k == "metadata" || k == "status" {
			continue
		}
		if !walkValue(m[k], m, join(path, k), pod) {
			return false
		}
	}
	return true
}

// loneContainer is the part of m the rules judge when m is a container outside a pod spec's
// list (a workflow's step, at path): its name (the path when it has none), image and
// containerFields, when it has an image and any of them, and they read as a container's. A
// mapping that only looks like one (a chart's values with an image and a map of ports) is not
// judged as a container: it is no pod.
func loneContainer(m map[string]any, path string) (map[string]any, bool) {
	image, ok := m["image"].(string)
	if !ok {
		return nil, false
	}
	name, ok := m["name"].(string)
	if !ok {
		name = path
	}
	c := map[string]any{"name": name, "image": image}
	for _, f := range containerFields {
		if v, ok := m[f]; ok {
			c[f] = v
		}
	}
	if len(c) == 2 {
		return nil, false
	}
	var reads corev1.Container
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c, &reads); err != nil {
		return nil, false
	}
	return c, true
}

func walkValue(v any, parent map[string]any, path string, pod func(spec, meta map[string]any, path string) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		return walk(x, parent, path, pod)
	case []any:
		for i, e := range x {
			if !walkValue(e, nil, path+"["+strconv.Itoa(i)+"]", pod) {
				return false
			}
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkPod judges one pod spec (at path, with its template's metadata): as Kubernetes reads
// it, against every baseline rule the policy does not allow, then its ServiceAccount.
func checkPod(spec, meta map[string]any, path string, p Policy) error {
	var ps corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &ps); err != nil {
		return fmt.Errorf("%s: is not a pod spec Kubernetes can read, so the pod rules cannot judge it: %w", path, err)
	}
	var pm metav1.ObjectMeta
	if meta != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(meta, &pm); err != nil {
			return fmt.Errorf("%s: the pod template's metadata is not one Kubernetes can read: %w", path, err)
		}
	}
	for _, r := range rules {
		if slices.Contains(p.Allow, r.name) {
			continue
		}
		if res := r.check(&pm, &ps); !res.Allowed {
			what := res.ForbiddenReason
			if res.ForbiddenDetail != "" {
				what += " (" + res.ForbiddenDetail + ")"
			}
			return fmt.Errorf("%s: %s, which the pod rule %q refuses (pods.allow does not list it)", path, what, r.name)
		}
	}
	for _, f := range [...]struct{ field, name string }{{"serviceAccountName", ps.ServiceAccountName}, {"serviceAccount", ps.DeprecatedServiceAccount}} {
		field, name := f.field, f.name
		if name == "" || name == "default" || name == p.ServiceAccountName {
			continue
		}
		may := "the namespace's default ServiceAccount only (pods.serviceAccountName names none)"
		if p.ServiceAccountName != "" {
			may = fmt.Sprintf("ServiceAccount %q only (pods.serviceAccountName)", p.ServiceAccountName)
		}
		return fmt.Errorf("%s.%s: the pods may run as %s, not %q", path, field, may, name)
	}
	return nil
}
