package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Input is one rendering: a plan, the Workload it belongs to and the backend's template.
type Input struct {
	Workload, Namespace string
	Spec                *scorev1b1.WorkloadPlanSpec
	// Template is a manifests template: Go text/template producing YAML documents.
	Template string
	// SecretValue reads the secret outputs files are composed with.
	SecretValue SecretValue
}

// Funcs is the manifests templates' function set. It is fixed and pure: nothing in it reads
// the environment, files, the network, the clock or randomness, so rendering is a function
// of the template and the plan. Workload values reach templates as data: toJson writes them
// as escaped JSON, which no value can break out of.
func Funcs() template.FuncMap {
	return template.FuncMap{
		"toJson": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return yamlSafe(b), err
		},
		"quote": func(v any) string {
			b, _ := json.Marshal(fmt.Sprint(v))
			return yamlSafe(b)
		},
		"default": func(def, v any) any {
			if v == nil || v == "" || v == false {
				return def
			}
			return v
		},
		"lower": strings.ToLower,
		"upper": strings.ToUpper,
		"trunc": func(n int, s string) string {
			if len(s) > n {
				return s[:n]
			}
			return s
		},
		"hasKey": func(m map[string]any, k string) bool { _, ok := m[k]; return ok },
	}
}

// yamlSafe escapes, in JSON text, the characters JSON leaves as they are and YAML does not
// read back as themselves: NEL (U+0085), which YAML folds as a line break, and the
// characters YAML does not allow in a document (DEL, the C1 controls, U+FFFE and U+FFFF).
// JSON writes them only inside strings, where \uXXXX means the same to YAML.
func yamlSafe(b []byte) string {
	var out strings.Builder
	for _, r := range string(b) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

// inputHash is 8 hex characters of what a run consumes: the projected pod, the backend's
// template and the values without the Workload's metadata. A label or annotation change
// therefore runs nothing new, unless a placeholder carries it into the pod.
func inputHash(pod, values map[string]any, tmpl scorev1b1.TemplateRef) string {
	rest := make(map[string]any, len(values))
	for k, v := range values {
		if k != "workload" {
			rest[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"pod": pod, "values": rest, "template": tmpl})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:8]
}

// Render renders the template over the plan and returns the objects in apply order.
func Render(in Input) ([]*unstructured.Unstructured, error) {
	pod, err := ProjectPod(in.Workload, in.Spec, in.SecretValue)
	if err != nil {
		return nil, err
	}
	var values map[string]any
	if in.Spec.Values != nil {
		if err := json.Unmarshal(in.Spec.Values.Raw, &values); err != nil {
			return nil, fmt.Errorf("plan values: %w", err)
		}
	}
	labels := map[string]any{scorev1b1.LabelWorkload: in.Workload, "app.kubernetes.io/name": in.Workload, "app.kubernetes.io/managed-by": "score-orchestrator"}
	podSpec := map[string]any{"containers": pod.Containers}
	if len(pod.InitContainers) > 0 {
		podSpec["initContainers"] = pod.InitContainers
	}
	if len(pod.Volumes) > 0 {
		podSpec["volumes"] = pod.Volumes
	}
	data := map[string]any{
		"Workload":  map[string]any{"Name": in.Workload, "Namespace": in.Namespace},
		"Values":    values,
		"Labels":    labels,
		"Selector":  map[string]any{scorev1b1.LabelWorkload: in.Workload},
		"PodSpec":   podSpec,
		"Ports":     ports(values),
		"InputHash": inputHash(podSpec, values, in.Spec.Template),
	}
	t, err := template.New("manifests").Funcs(Funcs()).Option("missingkey=zero").Parse(in.Template)
	if err != nil {
		return nil, fmt.Errorf("the template does not parse: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("the template failed: %w", err)
	}
	objs, err := decodeObjects(b.Bytes())
	if err != nil {
		return nil, err
	}
	if len(pod.FilesSecret) > 0 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata": map[string]any{"name": pod.SecretFilesName, "labels": labels},
			"data":     pod.FilesSecret,
		}})
	}
	if len(pod.FilesConfigMap)+len(pod.FilesBinary) > 0 {
		cm := map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": pod.FilesName, "labels": labels},
		}
		if len(pod.FilesConfigMap) > 0 {
			cm["data"] = pod.FilesConfigMap
		}
		if len(pod.FilesBinary) > 0 {
			cm["binaryData"] = pod.FilesBinary
		}
		objs = append(objs, &unstructured.Unstructured{Object: cm})
	}
	sort.SliceStable(objs, func(i, j int) bool { return Stage(objs[i]) < Stage(objs[j]) })
	return objs, nil
}

// Stage orders objects for apply: Namespaces and CRDs, then configuration, then the rest.
func Stage(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "Namespace", "CustomResourceDefinition":
		return 0
	case "ConfigMap", "Secret", "ServiceAccount":
		return 1
	default:
		return 2
	}
}

// ports lists the service ports in name order.
func ports(values map[string]any) []map[string]any {
	svc, _ := values["service"].(map[string]any)
	ps, _ := svc["ports"].(map[string]any)
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		p, _ := ps[n].(map[string]any)
		out = append(out, map[string]any{"name": n, "port": p["port"], "targetPort": p["targetPort"], "protocol": p["protocol"]})
	}
	return out
}

func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var node any
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the template's document %d is not YAML: %w", i, err)
		}
		if node == nil {
			continue
		}
		doc, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the template's document %d is not an object: a manifest is a mapping with apiVersion, kind and metadata", i)
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("document %d is not a Kubernetes object: %w", i, err)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("document %d (%s) has no name", i, u.GetKind())
		}
		out = append(out, u)
	}
}
