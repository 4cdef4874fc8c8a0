// Package podrules is what the pods a template or a provisioner definition makes may do: the
// rules every object is checked against before it is applied (internal/objects/prepare, which the
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
// nothing of a refused render reaches the cluster. Pods in shapes the rules do not read as a
// pod (a chart's values, a volume map keyed by name) meet a tripwire: a hostPath, privileged,
// hostNetwork, hostPID or hostIPC set anywhere in an object that is not data is refused too.
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
// fields or a list of a pod's volumes (a pod template's overrides, as pipelines carry them; a
// workflow's pod-level volumes), and every lone container (a mapping with an image and a
// security context, ports, probes or lifecycle handlers, as workflow steps are). Then, as a
// tripwire for pods in shapes it does not read (a chart's values, a volume map, a
// PersistentVolume), any hostPath, privileged, hostNetwork, hostPID or hostIPC set anywhere in
// the object (hostFields). ConfigMaps, Secrets and CustomResourceDefinitions carry no pod. The
// error names the object, the field and the rule; nil when every pod keeps to the rules.
func Check(u *unstructured.Unstructured, p Policy) error {
	if !carriesPods(u) {
		return nil
	}
	err := walk(u.Object, nil, "", p)
	if err == nil && anyHostField(u.Object, p) {
		err = hostFields(u.Object, "", p)
	}
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

// containerFields are the fields of a container the rules judge: a mapping with an image and
// any of them is judged as a container of a pod of its own.
var containerFields = []string{"securityContext", "ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"}

// walk judges every pod spec under m (see Check), with the mapping beside it under metadata
// when the pod spec is its parent's spec (a pod template's labels and annotations), at path.
// It does not look into metadata, which holds no pod, nor into the containers of a pod spec
// it judged.
func walk(m map[string]any, parent map[string]any, path string, p Policy) error {
	if _, ok := m["containers"].([]any); ok {
		var meta map[string]any
		if parent != nil && (path == "spec" || strings.HasSuffix(path, ".spec")) {
			meta, _ = parent["metadata"].(map[string]any)
		}
		return checkPod(m, meta, path, p)
	}
	if c, ok := loneContainer(m, path); ok {
		if err := checkPod(map[string]any{"containers": []any{c}}, nil, path, p); err != nil {
			return err
		}
	}
	if ps, ok := podPart(m); ok {
		if err := judge(ps, &metav1.ObjectMeta{}, path, p); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(m) {
		if k == "metadata" || k == "status" {
			continue
		}
		if err := walkValue(m[k], m, join(path, k), p); err != nil {
			return err
		}
	}
	return nil
}

// podPart is m as a part of a pod spec when it holds no containers but says it is one (a pod
// template's overrides, a workflow's pod-level volumes): it has a host or ServiceAccount field
// of a pod spec's type (hostNetwork, hostPID, hostIPC a bool; serviceAccountName,
// serviceAccount a string) or a list that reads as a pod's volumes. Of another type a field is
// not a pod's: a chart's values say serviceAccount: {create: true, name: ""} for the
// ServiceAccount the chart makes. The part is m as Kubernetes reads a pod spec or, when m does
// not read as one (that chart's values; a workflow template whose activeDeadlineSeconds is a
// parameter), those fields alone. Unlike a pod spec with containers (checkPod), such a mapping
// is not refused for the rest: it carries a pod's fields, it is not a pod spec.
func podPart(m map[string]any) (*corev1.PodSpec, bool) {
	var volumes []corev1.Volume
	podVolumes := false
	if v, ok := m["volumes"].([]any); ok {
		var read corev1.PodSpec
		if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"volumes": v}, &read) == nil {
			volumes, podVolumes = read.Volumes, true
		}
	}
	hostNetwork, network := m["hostNetwork"].(bool)
	hostPID, pid := m["hostPID"].(bool)
	hostIPC, ipc := m["hostIPC"].(bool)
	serviceAccountName, named := m["serviceAccountName"].(string)
	serviceAccount, deprecated := m["serviceAccount"].(string)
	if !podVolumes && !network && !pid && !ipc && !named && !deprecated {
		return nil, false
	}
	whole := &corev1.PodSpec{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(m, whole) == nil {
		return whole, true
	}
	return &corev1.PodSpec{Volumes: volumes, HostNetwork: hostNetwork, HostPID: hostPID, HostIPC: hostIPC,
		ServiceAccountName: serviceAccountName, DeprecatedServiceAccount: serviceAccount}, true
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

func walkValue(v any, parent map[string]any, path string, p Policy) error {
	switch x := v.(type) {
	case map[string]any:
		return walk(x, parent, path, p)
	case []any:
		for i, e := range x {
			if err := walkValue(e, nil, index(path, i), p); err != nil {
				return err
			}
		}
	}
	return nil
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
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

// checkPod judges one pod spec (at path, with its template's metadata) as Kubernetes reads
// it; one it cannot read is refused.
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
	return judge(&ps, &pm, path, p)
}

// judge judges a pod spec (at path, with its template's metadata) against every baseline rule
// the policy does not allow, then its ServiceAccount.
func judge(ps *corev1.PodSpec, pm *metav1.ObjectMeta, path string, p Policy) error {
	for _, r := range rules {
		if slices.Contains(p.Allow, r.name) {
			continue
		}
		if res := r.check(pm, ps); !res.Allowed {
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

// hostFields is the tripwire beside the pods walk reads: wherever it sits in v (at path), a
// hostPath with a value, or privileged, hostNetwork, hostPID or hostIPC true, is refused
// unless the policy allows its rule. It finds what a pod takes from a shape the rules do not
// read as one: a chart's values (printed into a pod by the chart's templates, where a word
// like yes becomes true), a volume map keyed by name, a PersistentVolume on the host's path.
// Data and schemas name these fields without making a pod: metadata (labels and annotations
// are text), status and every openAPIV3Schema (a schema's properties) are not looked into, as
// walk does not look into the first two; ConfigMaps, Secrets and CRDs are not checked at all
// (carriesPods). A chart's "none" is no value: hostPath "" or {}, privileged false.
func hostFields(v any, path string, p Policy) error {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if notLookedInto(k) {
				continue
			}
			at := join(path, k)
			if rule, what := hostField(k, x[k]); rule != "" && !slices.Contains(p.Allow, rule) {
				return fmt.Errorf("%s: %s, which the pod rule %q refuses wherever it is set (pods.allow does not list it)", at, what, rule)
			}
			if err := hostFields(x[k], at, p); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := hostFields(e, index(path, i), p); err != nil {
				return err
			}
		}
	}
	return nil
}

// anyHostField is whether hostFields refuses anything in v: the
// same look without the keys' order or their paths, so that an object with nothing to refuse
// (nearly every one) costs no allocation; hostFields then finds the first in order, for a
// message that is the same on every pass.
func anyHostField(v any, p Policy) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if notLookedInto(k) {
				continue
			}
			if rule, _ := hostField(k, e); rule != "" && !slices.Contains(p.Allow, rule) || anyHostField(e, p) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyHostField(e, p) {
				return true
			}
		}
	}
	return false
}

// notLookedInto are the keys whose values hostFields does not look into.
func notLookedInto(k string) bool {
	return k == "metadata" || k == "status" || k == "openAPIV3Schema"
}

// hostField is the rule that refuses the field k with value v, and what it is, when it is one
// hostFields looks for and set; "" when it is not.
func hostField(k string, v any) (rule, what string) {
	switch k {
	case "hostPath":
		if !hasValue(v) {
			return "", ""
		}
		return HostPath, "a host path"
	case "privileged", "hostNetwork", "hostPID", "hostIPC":
		switch x := v.(type) {
		case bool:
			if !x {
				return "", ""
			}
			what = "true"
		case string:
			if !slices.Contains(yamlTrue, x) {
				return "", ""
			}
			what = strconv.Quote(x) + " (true to YAML)"
		default:
			return "", ""
		}
		if k == "privileged" {
			return Privileged, what
		}
		return HostNamespaces, what
	}
	return "", ""
}

// yamlTrue are the words YAML reads as true where a chart's template prints them unquoted
// (Helm parses its output with sigs.k8s.io/yaml, YAML 1.1's booleans): a chart's value
// "yes" for hostNetwork makes a pod on the host's network.
var yamlTrue = []string{"true", "True", "TRUE", "yes", "Yes", "YES", "y", "Y", "on", "On", "ON"}

// hasValue is false for what a chart's values say for none: null, false, "", {} and [].
func hasValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}
