// Package compose turns a WorkloadPlan into what the Docker runtime runs on a Docker host:
// a Project, one container per Score container, sharing one network namespace as a pod's
// containers do, with the ports the host publishes. It projects the plan through
// render.ProjectPod, the Kubernetes runtime's own projection, so that both runtimes give a
// container the same variables, files, command and limits; what Kubernetes would resolve
// (secretKeyRef, $(VAR) in command and args, files from a ConfigMap) is resolved here. It is
// pure: secret values come from the SecretValue it is given.
package compose

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/render"
)

// Project is what one plan runs on a Docker host.
type Project struct {
	// Containers are the Workload's containers, sorted by name.
	Containers []Container `json:"containers"`
	// Ports are the ports the host publishes, sorted by name: the Workload's service ports,
	// each reaching its target port in the shared network namespace.
	Ports []Port `json:"ports,omitempty"`
	// Hash identifies everything above, secret values included (only as a digest): the
	// containers of one hash are the plan's version; another hash is a new version.
	Hash string `json:"hash"`
}

// Container is one container of the project.
type Container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	// Entrypoint and Cmd override the image's, as a pod's command and args do.
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	// Env is NAME=value, in the order the plan gives them.
	Env []string `json:"env,omitempty"`
	// Files are copied into the container before it starts, sorted by target.
	Files []File `json:"files,omitempty"`
	// Memory is the limit in bytes, NanoCPUs the CPU limit in billionths of a CPU; 0 none.
	Memory   int64 `json:"memory,omitempty"`
	NanoCPUs int64 `json:"nanoCPUs,omitempty"`
	// Ready is the readiness probe the runtime judges health by; nil: running is ready.
	Ready *HTTPProbe `json:"ready,omitempty"`
}

// File is a file's content in a container.
type File struct {
	Target string `json:"target"`
	Mode   int64  `json:"mode"`
	// Content is the file's bytes; Secret says they hold a secret output's value.
	Content []byte `json:"-"`
	Secret  bool   `json:"secret,omitempty"`
}

// HTTPProbe is an HTTP GET that answers 2xx or 3xx when the container is ready.
type HTTPProbe struct {
	Port   int    `json:"port" yaml:"port"`
	Path   string `json:"path" yaml:"path"`
	Scheme string `json:"scheme" yaml:"scheme"`
}

// Port is one published port.
type Port struct {
	Name       string `json:"name" yaml:"name"`
	TargetPort int    `json:"targetPort" yaml:"targetPort"`
	// Protocol is tcp or udp.
	Protocol string `json:"protocol" yaml:"protocol"`
}

// SecretValue reads a secret output's value: the runtime reads the claim's outputs Secret,
// offline a marker stands in.
type SecretValue = render.SecretValue

// FromPlan builds the project of a plan for a Workload named name.
func FromPlan(name string, spec *scorev1b1.WorkloadPlanSpec, secret SecretValue) (Project, error) {
	pod, err := render.ProjectPod(name, spec, secret)
	if err != nil {
		return Project{}, err
	}
	if len(pod.InitContainers) > 0 {
		return Project{}, fmt.Errorf("container %v runs before another (before:), which the docker runtime does not serve", pod.InitContainers[0]["name"])
	}
	c := converter{pod: pod, secret: secret, claims: spec.Claims, modes: fileModes(pod)}
	var p Project
	for _, pc := range pod.Containers {
		out, err := c.container(pc)
		if err != nil {
			return Project{}, fmt.Errorf("container %v: %w", pc["name"], err)
		}
		p.Containers = append(p.Containers, out)
	}
	sort.Slice(p.Containers, func(i, j int) bool { return p.Containers[i].Name < p.Containers[j].Name })
	if p.Ports, err = ports(spec); err != nil {
		return Project{}, err
	}
	p.Hash = p.digest()
	return p, nil
}

// Alias replaces the images named in aliases (the platform's: a host's local copy of an image
// it cannot pull) and hashes the project again.
func (p *Project) Alias(aliases map[string]string) {
	for i, c := range p.Containers {
		if to, ok := aliases[c.Image]; ok {
			p.Containers[i].Image = to
		}
	}
	p.Hash = p.digest()
}

type converter struct {
	pod    render.Pod
	secret SecretValue
	claims []scorev1b1.PlanClaim
	modes  map[string]int64
}

func (c converter) container(pc map[string]any) (Container, error) {
	out := Container{Name: fmt.Sprint(pc["name"]), Image: fmt.Sprint(pc["image"])}
	if out.Image == "" {
		return out, fmt.Errorf("no image")
	}
	// Variables first: Kubernetes expands $(VAR) in a variable with those before it, and in
	// command and args with all of them.
	vars := map[string]string{}
	for _, e := range maps(pc["env"]) {
		name := fmt.Sprint(e["name"])
		value, err := c.envValue(e, vars)
		if err != nil {
			return out, fmt.Errorf("variable %s: %w", name, err)
		}
		vars[name] = value
		if !strings.HasPrefix(name, "SCORE_SECRET_") {
			out.Env = append(out.Env, name+"="+value)
		}
	}
	for _, s := range stringList(pc["command"]) {
		out.Entrypoint = append(out.Entrypoint, expand(s, vars))
	}
	for _, s := range stringList(pc["args"]) {
		out.Cmd = append(out.Cmd, expand(s, vars))
	}
	for _, m := range maps(pc["volumeMounts"]) {
		f, err := c.file(m)
		if err != nil {
			return out, err
		}
		out.Files = append(out.Files, f)
	}
	sort.Slice(out.Files, func(i, j int) bool { return out.Files[i].Target < out.Files[j].Target })
	if err := out.limits(pc["resources"]); err != nil {
		return out, err
	}
	out.Ready = readiness(pc["readinessProbe"])
	return out, nil
}

// envValue is a variable's value: a literal (with $(VAR) of the variables before it
// expanded) or a secret output's value.
func (c converter) envValue(e map[string]any, vars map[string]string) (string, error) {
	from, ok := e["valueFrom"].(map[string]any)
	if !ok {
		s, _ := e["value"].(string)
		return expand(s, vars), nil
	}
	ref, _ := from["secretKeyRef"].(map[string]any)
	if ref == nil || c.secret == nil {
		return "", fmt.Errorf("a secret output, and no secret values are available here")
	}
	key, _ := ref["key"].(string)
	claim := c.claimOf(fmt.Sprint(ref["name"]))
	return c.secret(scorev1b1.OutputRef{ClaimKey: claim, OutputKey: key})
}

// claimOf is the claim key whose outputs Secret is named secretName.
func (c converter) claimOf(secretName string) string {
	for _, cl := range c.claims {
		if cl.SecretName == secretName {
			return cl.Key
		}
	}
	return ""
}

// file is one mounted file: every mount the projection makes is a file by its key (the
// volumes a claim's output describes are Kubernetes volume sources, not served here).
func (c converter) file(m map[string]any) (File, error) {
	target := fmt.Sprint(m["mountPath"])
	key, _ := m["subPath"].(string)
	f := File{Target: target, Mode: 0o644}
	if mode, ok := c.modes[key]; ok {
		f.Mode = mode
	}
	switch fmt.Sprint(m["name"]) {
	case render.FilesVolume:
		if text, ok := c.pod.FilesConfigMap[key].(string); ok {
			f.Content = []byte(text)
			return f, nil
		}
		b64, _ := c.pod.FilesBinary[key].(string)
		content, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return f, fmt.Errorf("file %s: binary content: %w", target, err)
		}
		f.Content = content
	case render.SecretFilesVolume:
		b64, _ := c.pod.FilesSecret[key].(string)
		content, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return f, fmt.Errorf("file %s: %w", target, err)
		}
		f.Content, f.Secret = content, true
	default:
		return f, fmt.Errorf("volume %s: the docker runtime mounts files, not volumes", target)
	}
	return f, nil
}

// limits reads the container's limits (requests have no meaning on one host).
func (out *Container) limits(v any) error {
	r, _ := v.(map[string]any)
	limits, _ := r["limits"].(map[string]any)
	for name, q := range limits {
		parsed, err := resource.ParseQuantity(fmt.Sprint(q))
		if err != nil {
			return fmt.Errorf("limit %s: %w", name, err)
		}
		switch name {
		case "memory":
			out.Memory = parsed.Value()
		case "cpu":
			out.NanoCPUs = parsed.MilliValue() * 1_000_000
		}
	}
	return nil
}

// readiness is the readiness probe the runtime can judge from the host: an HTTP GET. An exec
// probe needs a shell in the image; it is not judged, and running is ready.
func readiness(v any) *HTTPProbe {
	pr, _ := v.(map[string]any)
	h, ok := pr["httpGet"].(map[string]any)
	if !ok {
		return nil
	}
	port, err := strconv.Atoi(fmt.Sprint(h["port"]))
	if err != nil {
		return nil
	}
	p := &HTTPProbe{Port: port, Path: "/", Scheme: "http"}
	if s, _ := h["path"].(string); s != "" {
		p.Path = s
	}
	if s, _ := h["scheme"].(string); strings.EqualFold(s, "https") {
		p.Scheme = "https"
	}
	return p
}

// ports are the Workload's service ports, from the plan's values.
func ports(spec *scorev1b1.WorkloadPlanSpec) ([]Port, error) {
	var values struct {
		Service struct {
			Ports map[string]struct {
				Port       int    `json:"port"`
				TargetPort int    `json:"targetPort"`
				Protocol   string `json:"protocol"`
			} `json:"ports"`
		} `json:"service"`
	}
	if spec.Values != nil {
		if err := json.Unmarshal(spec.Values.Raw, &values); err != nil {
			return nil, fmt.Errorf("plan values: %w", err)
		}
	}
	var out []Port
	for name, p := range values.Service.Ports {
		target := p.TargetPort
		if target == 0 {
			target = p.Port
		}
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		if proto != "tcp" && proto != "udp" {
			return nil, fmt.Errorf("port %s: protocol %s is not published by a Docker host", name, p.Protocol)
		}
		out = append(out, Port{Name: name, TargetPort: target, Protocol: proto})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// digest hashes the project: the files' contents by digest, so a secret never leaves in it.
func (p Project) digest() string {
	h := sha256.New()
	p.Hash = ""
	b, _ := json.Marshal(p)
	h.Write(b)
	for _, c := range p.Containers {
		for _, f := range c.Files {
			sum := sha256.Sum256(f.Content)
			fmt.Fprintf(h, "\x00%s\x00%s\x00%x", c.Name, f.Target, sum)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// expand replaces $(VAR) with the variable's value, as Kubernetes does for a container's
// variables, command and args; $$( stands for a literal $(, and a reference to a variable not
// defined stays as it is.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$(") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func maps(v any) []map[string]any {
	switch l := v.(type) {
	case []map[string]any:
		return l
	case []any:
		var out []map[string]any
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func stringList(v any) []string {
	var out []string
	for _, e := range asAnyList(v) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func asAnyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// fileModes reads the modes the projection gave the files, by key.
func fileModes(pod render.Pod) map[string]int64 {
	out := map[string]int64{}
	for _, vol := range pod.Volumes {
		for _, source := range []string{"configMap", "secret"} {
			src, _ := vol[source].(map[string]any)
			for _, item := range maps(src["items"]) {
				if mode, ok := item["mode"].(int64); ok {
					out[fmt.Sprint(item["key"])] = mode
				}
			}
		}
	}
	return out
}
