// Package render turns a WorkloadPlan into the objects the Kubernetes runtime applies: it
// projects the plan onto a pod spec (nothing of the Score container is dropped) and renders
// the backend's manifests template over it with a fixed, pure function set. Same plan and
// template, same bytes. It is pure: claim outputs come from the plan's values.
package render

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pod is the projection of a plan's containers: the pod spec parts and the objects that
// carry its files.
type Pod struct {
	Containers     []map[string]any
	InitContainers []map[string]any
	Volumes        []map[string]any
	// FilesConfigMap and FilesBinary hold file contents (text and base64), keyed by file key.
	FilesConfigMap map[string]any
	FilesBinary    map[string]any
	// FilesSecret holds the contents (base64) of files composed with secret outputs.
	FilesSecret map[string]any
	// FilesName and SecretFilesName name the ConfigMap and the Secret that carry the files,
	// after their content: a content change is a new name, so the pods roll.
	FilesName, SecretFilesName string
	// ServiceAccountName is the ServiceAccount the pod runs as (the backend's pods), "" the
	// namespace's default; ServiceAccountToken mounts its token.
	ServiceAccountName  string
	ServiceAccountToken bool
}

// Spec is the pod spec every template kind gets (.PodSpec, the chart's score.podSpec, the
// kustomization's merged pod): the containers, init containers and volumes, the
// ServiceAccount the backend names, and no ServiceAccount token unless the backend asks for
// one — a pod that does not call the API server has no use for one, and a token a tenant's
// process can read is a credential it holds.
func (p Pod) Spec() map[string]any {
	spec := map[string]any{"containers": p.Containers, "automountServiceAccountToken": p.ServiceAccountToken}
	if len(p.InitContainers) > 0 {
		spec["initContainers"] = p.InitContainers
	}
	if len(p.Volumes) > 0 {
		spec["volumes"] = p.Volumes
	}
	if p.ServiceAccountName != "" {
		spec["serviceAccountName"] = p.ServiceAccountName
	}
	return spec
}

// SecretValue reads a secret output's value. The runtime reads the claim's outputs Secret;
// offline, values are unknown and a marker stands in.
type SecretValue func(scorev1b1.OutputRef) (string, error)

// Volume names of the files the runtime mounts.
const (
	FilesVolume       = "score-files"
	SecretFilesVolume = "score-secret-files"
)

type projector struct {
	secret SecretValue
	spec   *scorev1b1.WorkloadPlanSpec
	values map[string]any
	name   string
	claims map[string]scorev1b1.PlanClaim
	pod    Pod
	// budget bounds the text the pod's values and files are composed into, as the planner
	// bounds the plan: it is what the plan held, plus the secret values only this side reads.
	budget *placeholder.Budget
}

// ProjectPod builds the pod of a plan for a Workload named name. secret reads the secret
// outputs that files are composed with.
func ProjectPod(name string, spec *scorev1b1.WorkloadPlanSpec, secret SecretValue) (Pod, error) {
	p := &projector{spec: spec, name: name, secret: secret, claims: map[string]scorev1b1.PlanClaim{}, budget: placeholder.NewBudget(placeholder.MaxExpanded),
		pod: Pod{FilesConfigMap: map[string]any{}, FilesBinary: map[string]any{}, FilesSecret: map[string]any{}}}
	if spec.Values != nil {
		if err := json.Unmarshal(spec.Values.Raw, &p.values); err != nil {
			return Pod{}, fmt.Errorf("plan values: %w", err)
		}
	}
	for _, c := range spec.Claims {
		p.claims[c.Key] = c
	}
	containers, _ := p.values["containers"].(map[string]any)
	initOf := initContainers(containers)
	for _, cp := range spec.Projection.Containers {
		c, err := p.container(cp, asMap(containers[cp.Name]))
		if err != nil {
			return Pod{}, fmt.Errorf("container %s: %w", cp.Name, err)
		}
		switch initOf[cp.Name] {
		case "complete":
			p.pod.InitContainers = append(p.pod.InitContainers, c)
		case "started", "healthy":
			c["restartPolicy"] = "Always" // a native sidecar: started before the others
			p.pod.InitContainers = append(p.pod.InitContainers, c)
		default:
			p.pod.Containers = append(p.pod.Containers, c)
		}
	}
	if len(p.pod.Containers) == 0 {
		return Pod{}, fmt.Errorf("every container runs before another; nothing is left to run")
	}
	if pods := spec.Pods; pods != nil {
		p.pod.ServiceAccountName, p.pod.ServiceAccountToken = pods.ServiceAccountName, pods.ServiceAccountToken
	}
	p.nameFiles()
	return p.pod, nil
}

// nameFiles names the files' ConfigMap and Secret after their content and points the
// volumes at them.
func (p *projector) nameFiles() {
	p.pod.FilesName = FilesObjectName(p.name) + "-" + contentHash(p.pod.FilesConfigMap, p.pod.FilesBinary)
	p.pod.SecretFilesName = SecretFilesObjectName(p.name) + "-" + contentHash(p.pod.FilesSecret)
	for _, v := range p.pod.Volumes {
		switch v["name"] {
		case FilesVolume:
			asMap(v["configMap"])["name"] = p.pod.FilesName
		case SecretFilesVolume:
			asMap(v["secret"])["secretName"] = p.pod.SecretFilesName
		}
	}
}

func contentHash(maps ...map[string]any) string {
	b, _ := json.Marshal(maps)
	return shortHash(string(b))
}

// initContainers finds containers that others name in before, and how they must be ready:
// "complete" becomes an init container, "started" or "healthy" a native sidecar.
func initContainers(containers map[string]any) map[string]string {
	out := map[string]string{}
	for _, c := range containers {
		before, _ := asMap(c)["before"].(map[string]any)
		for name, b := range before {
			ready, _ := asMap(b)["ready"].(string)
			if prev, ok := out[name]; !ok || prev == "complete" {
				out[name] = ready
			}
		}
	}
	return out
}

func (p *projector) container(cp scorev1b1.ContainerProjection, values map[string]any) (map[string]any, error) {
	c := map[string]any{"name": cp.Name}
	image, _ := values["image"].(string)
	if cp.ImageFrom != nil {
		v, err := p.plainOutput(*cp.ImageFrom)
		if err != nil {
			return nil, err
		}
		image = v
	}
	c["image"] = image
	var env []map[string]any
	var helpers []map[string]any
	for _, e := range cp.Env {
		entry, extra, err := p.envVar(e.Name, e.ValueProjection)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", e.Name, err)
		}
		helpers = append(helpers, extra...)
		env = append(env, entry)
	}
	for i, v := range cp.Command {
		s, extra, err := p.argument(fmt.Sprintf("CMD_%d", i), v)
		if err != nil {
			return nil, fmt.Errorf("command[%d]: %w", i, err)
		}
		helpers = append(helpers, extra...)
		c["command"] = append(asList(c["command"]), s)
	}
	for i, v := range cp.Args {
		s, extra, err := p.argument(fmt.Sprintf("ARG_%d", i), v)
		if err != nil {
			return nil, fmt.Errorf("args[%d]: %w", i, err)
		}
		helpers = append(helpers, extra...)
		c["args"] = append(asList(c["args"]), s)
	}
	// Helper variables carry secret parts; they come first so that $(VAR) can refer to them.
	if all := append(helpers, env...); len(all) > 0 {
		c["env"] = all
	}
	var mounts []map[string]any
	for _, f := range cp.Files {
		m, err := p.file(cp.Name, f)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Target, err)
		}
		mounts = append(mounts, m)
	}
	for _, v := range cp.Volumes {
		m, err := p.volume(cp.Name, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Target, err)
		}
		mounts = append(mounts, m)
	}
	if len(mounts) > 0 {
		c["volumeMounts"] = mounts
	}
	if r, ok := values["resources"].(map[string]any); ok {
		c["resources"] = canonicalQuantities(r)
	}
	if pr := probe(values["livenessProbe"]); pr != nil {
		c["livenessProbe"] = pr
	}
	if pr := probe(values["readinessProbe"]); pr != nil {
		c["readinessProbe"] = pr
	}
	return c, nil
}

// canonicalQuantities writes a container's limits and requests as the API server stores them
// (cpu "1000m" is stored as "1"): a rendered object that differs from the stored one only in a
// quantity's spelling would be applied again on every pass, a write each time for nothing.
func canonicalQuantities(r map[string]any) map[string]any {
	out := make(map[string]any, len(r))
	for k, v := range r {
		set, ok := v.(map[string]any)
		if !ok || (k != "limits" && k != "requests") {
			out[k] = v
			continue
		}
		canon := make(map[string]any, len(set))
		for name, q := range set {
			canon[name] = q
			if s, ok := q.(string); ok {
				if parsed, err := resource.ParseQuantity(s); err == nil {
					canon[name] = parsed.String()
				}
			}
		}
		out[k] = canon
	}
	return out
}

// probe maps a Score probe; exec is preferred when both are given, as the Score schema says.
func probe(v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if exec, ok := m["exec"].(map[string]any); ok {
		return map[string]any{"exec": map[string]any{"command": exec["command"]}}
	}
	h, ok := m["httpGet"].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{"path": h["path"], "port": h["port"]}
	if v, ok := h["host"]; ok {
		out["host"] = v
	}
	if v, ok := h["scheme"]; ok {
		out["scheme"] = v
	}
	if v, ok := h["httpHeaders"]; ok {
		out["httpHeaders"] = v
	}
	return map[string]any{"httpGet": out}
}

// envVar projects one variable: a literal value, a secretKeyRef, or a composition of
// literals and helper variables with $(VAR).
func (p *projector) envVar(name string, v scorev1b1.ValueProjection) (map[string]any, []map[string]any, error) {
	if v.From != nil && p.isSecret(*v.From) {
		return map[string]any{"name": name, "valueFrom": p.secretKeyRef(*v.From)}, nil, nil
	}
	s, helpers, err := p.compose(name, v)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"name": name, "value": s}, helpers, nil
}

// argument projects one command or argument; secret parts come through helper variables,
// which Kubernetes expands in command and args.
func (p *projector) argument(prefix string, v scorev1b1.ValueProjection) (string, []map[string]any, error) {
	return p.compose(prefix, v)
}

var nonEnvChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

// compose turns a value into a string; non-secret outputs are inlined, secret ones become
// $(SCORE_SECRET_<name>_<i>) references to helper variables. Literal "$(" is escaped as "$$(".
func (p *projector) compose(name string, v scorev1b1.ValueProjection) (string, []map[string]any, error) {
	parts := v.Parts
	switch {
	case v.Value != nil:
		s := escapeRefs(*v.Value)
		return s, nil, p.budget.Spend(len(s))
	case v.From != nil:
		parts = []scorev1b1.ValuePart{{From: v.From}}
	}
	var b strings.Builder
	var helpers []map[string]any
	for i, part := range parts {
		var s string
		switch {
		case part.Literal != nil:
			s = escapeRefs(*part.Literal)
		case part.From != nil && p.isSecret(*part.From):
			helper := "SCORE_SECRET_" + strings.ToUpper(nonEnvChars.ReplaceAllString(name, "_")) + "_" + strconv.Itoa(i)
			helpers = append(helpers, map[string]any{"name": helper, "valueFrom": p.secretKeyRef(*part.From)})
			s = "$(" + helper + ")"
		case part.From != nil:
			out, err := p.plainOutput(*part.From)
			if err != nil {
				return "", nil, err
			}
			s = escapeRefs(out)
		}
		if err := p.budget.Spend(len(s)); err != nil {
			return "", nil, err
		}
		b.WriteString(s)
	}
	return b.String(), helpers, nil
}

// escapeRefs keeps Kubernetes from expanding a literal "$(X)".
func escapeRefs(s string) string { return strings.ReplaceAll(s, "$(", "$$(") }

func (p *projector) isSecret(ref scorev1b1.OutputRef) bool {
	for _, k := range p.claims[ref.ClaimKey].SecretKeys {
		if k == ref.OutputKey {
			return true
		}
	}
	return false
}

func (p *projector) secretKeyRef(ref scorev1b1.OutputRef) map[string]any {
	return map[string]any{"secretKeyRef": map[string]any{"name": p.claims[ref.ClaimKey].SecretName, "key": ref.OutputKey}}
}

// plainOutput reads a non-secret output from the plan's values.
func (p *projector) plainOutput(ref scorev1b1.OutputRef) (string, error) {
	v, ok := p.outputValue(ref)
	if !ok {
		return "", fmt.Errorf("output %s.%s is not in the plan", ref.ClaimKey, ref.OutputKey)
	}
	return placeholder.Stringify(v)
}

func (p *projector) outputValue(ref scorev1b1.OutputRef) (any, bool) {
	resources, _ := p.values["resources"].(map[string]any)
	outputs, _ := asMap(resources[ref.ClaimKey])["outputs"].(map[string]any)
	if ref.OutputKey == "" {
		return outputs, outputs != nil
	}
	refs, err := placeholder.Refs("${resources.x." + ref.OutputKey + "}")
	if err != nil || len(refs) != 1 {
		return nil, false
	}
	return placeholder.LookupPath(outputs, refs[0].Path[1:])
}

// file mounts one file by itself (subPath), so the image's directory stays visible.
//
// A file composed with secret outputs goes into a Secret of the runtime's own (its content
// can be composed only where the values are); the others into a ConfigMap.
func (p *projector) file(container string, f scorev1b1.FileProjection) (map[string]any, error) {
	key := FileKey(container, f.Target)
	volume := FilesVolume
	switch {
	case f.BinaryContent != nil:
		p.pod.FilesBinary[key] = *f.BinaryContent
	case f.Secret:
		if p.secret == nil {
			return nil, fmt.Errorf("file %s uses secret outputs, and no secret values are available here", f.Target)
		}
		content, err := p.fileText(f)
		if err != nil {
			return nil, err
		}
		p.pod.FilesSecret[key] = base64.StdEncoding.EncodeToString([]byte(content))
		volume = SecretFilesVolume
	default:
		content, err := p.fileText(f)
		if err != nil {
			return nil, err
		}
		p.pod.FilesConfigMap[key] = content
	}
	p.addFilesVolume(volume, key, f.Mode)
	return map[string]any{"name": volume, "mountPath": f.Target, "subPath": key, "readOnly": true}, nil
}

func (p *projector) fileText(f scorev1b1.FileProjection) (string, error) {
	var b strings.Builder
	for _, part := range f.Parts {
		var s string
		var err error
		switch {
		case part.Literal != nil:
			s = *part.Literal
		case part.From != nil && p.isSecret(*part.From):
			if s, err = p.secret(*part.From); err != nil {
				return "", fmt.Errorf("file %s: %w", f.Target, err)
			}
		case part.From != nil:
			if s, err = p.plainOutput(*part.From); err != nil {
				return "", err
			}
		}
		if err := p.budget.Spend(len(s)); err != nil {
			return "", fmt.Errorf("file %s: %w", f.Target, err)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func (p *projector) addFilesVolume(volume, key string, mode *string) {
	var vol map[string]any
	for _, v := range p.pod.Volumes {
		if v["name"] == volume {
			vol = v
		}
	}
	source := "configMap"
	if volume == SecretFilesVolume {
		source = "secret"
	}
	if vol == nil {
		vol = map[string]any{"name": volume, source: map[string]any{}} // named by nameFiles
		p.pod.Volumes = append(p.pod.Volumes, vol)
	}
	item := map[string]any{"key": key, "path": key}
	if mode != nil {
		if m, err := strconv.ParseInt(*mode, 8, 32); err == nil {
			item["mode"] = m
		}
	}
	src := vol[source].(map[string]any)
	src["items"] = append(asList(src["items"]), item)
}

// volume mounts a claim output's volume source (score-k8s's "source" output) or a named
// persistent volume claim.
func (p *projector) volume(container string, v scorev1b1.VolumeProjection) (map[string]any, error) {
	name := "vol-" + shortHash(container+":"+v.Target)
	vol := map[string]any{"name": name}
	switch {
	case v.From != nil:
		out, ok := p.outputValue(*v.From)
		if !ok {
			return nil, fmt.Errorf("output %s is not in the plan", v.From.ClaimKey)
		}
		src := asMap(out)
		if v.From.OutputKey == "" {
			src = asMap(src["source"])
		}
		if len(src) == 0 {
			return nil, fmt.Errorf("output %s does not describe a volume source", v.From.ClaimKey)
		}
		for k, e := range src {
			vol[k] = e
		}
	case v.Source != nil:
		vol["persistentVolumeClaim"] = map[string]any{"claimName": *v.Source}
	}
	p.pod.Volumes = append(p.pod.Volumes, vol)
	mount := map[string]any{"name": name, "mountPath": v.Target}
	if v.Path != nil {
		mount["subPath"] = strings.TrimPrefix(*v.Path, "/")
	}
	if v.ReadOnly != nil && *v.ReadOnly {
		mount["readOnly"] = true
	}
	return mount, nil
}

// FileKey is the ConfigMap key of a container's file: readable and collision-free.
func FileKey(container, target string) string {
	base := strings.Trim(nonKeyChars.ReplaceAllString(target, "-"), "-.")
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	return container + "-" + base + "-" + shortHash(container+":"+target)
}

var nonKeyChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// FilesObjectName is the prefix of the ConfigMap that carries a Workload's files.
func FilesObjectName(workload string) string { return workload + "-files" }

// SecretFilesObjectName is the prefix of the Secret that carries a Workload's files composed
// with secret outputs.
func SecretFilesObjectName(workload string) string { return workload + "-secret-files" }

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
