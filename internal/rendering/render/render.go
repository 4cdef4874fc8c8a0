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
	"sync"
	"text/template"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// Input is one rendering: a plan, the Workload it belongs to and the backend's template.
type Input struct {
	Workload, Namespace string
	Spec                *scorev1b1.WorkloadPlanSpec
	// Template is the content of the template Spec.Template references; Spec.Template.Kind
	// says how it renders.
	Template Template
	// SecretValue reads the secret outputs files are composed with.
	SecretValue SecretValue
	// SecretsRevision identifies the versions of the outputs Secrets the pods consume; it
	// becomes the pods' score.dev/secrets-revision label. Empty offline, where it is unknown.
	SecretsRevision string
}

// Template is a backend template's content, verified against its digest.
type Template struct {
	// Data is a manifests template's text (Go text/template producing YAML documents) or a
	// Helm chart archive (.tgz).
	Data []byte
	// Files are a kustomization directory's files by slash-separated relative path.
	Files map[string][]byte
}

// Size is the template's size in bytes.
func (t Template) Size() int {
	n := len(t.Data)
	for name, b := range t.Files {
		n += len(name) + len(b)
	}
	return n
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

// Render renders the template over the plan with the template's kind (manifests, helm,
// kustomize) and returns the objects in the template's order (the applier orders them for
// apply). Every kind sees the same plan data:
// the values, the projected pod, the ports, the labels and the input hash.
func Render(in Input) ([]*unstructured.Unstructured, error) {
	d, err := dataOf(in)
	if err != nil {
		return nil, err
	}
	var stream []byte
	switch in.Spec.Template.Kind {
	case scorev1b1.TemplateManifests, "":
		stream, err = renderManifests(in.Template, d)
	case scorev1b1.TemplateHelm:
		stream, err = renderHelm(in, d)
	case scorev1b1.TemplateKustomize:
		stream, err = renderKustomize(in, d)
	default:
		err = fmt.Errorf("%q is not a template kind", in.Spec.Template.Kind)
	}
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(stream, in.Spec.Template.Kind != scorev1b1.TemplateKustomize)
	if err != nil {
		return nil, err
	}
	if len(d.pod.FilesSecret) > 0 {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata": map[string]any{"name": d.pod.SecretFilesName, "labels": d.labels},
			"data":     d.pod.FilesSecret,
		}})
	}
	if len(d.pod.FilesConfigMap)+len(d.pod.FilesBinary) > 0 {
		cm := map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": d.pod.FilesName, "labels": d.labels},
		}
		if len(d.pod.FilesConfigMap) > 0 {
			cm["data"] = d.pod.FilesConfigMap
		}
		if len(d.pod.FilesBinary) > 0 {
			cm["binaryData"] = d.pod.FilesBinary
		}
		objs = append(objs, &unstructured.Unstructured{Object: cm})
	}
	return objs, nil
}

// data is what every template kind sees of a plan.
type data struct {
	workload  string
	namespace string
	values    map[string]any
	pod       Pod
	podSpec   map[string]any
	labels    map[string]any
	selector  map[string]any
	ports     []map[string]any
	inputHash string
}

func dataOf(in Input) (data, error) {
	pod, err := ProjectPod(in.Workload, in.Spec, in.SecretValue)
	if err != nil {
		return data{}, err
	}
	var values map[string]any
	if in.Spec.Values != nil {
		if err := json.Unmarshal(in.Spec.Values.Raw, &values); err != nil {
			return data{}, fmt.Errorf("plan values: %w", err)
		}
	}
	podSpec := pod.Spec()
	return data{
		workload:  in.Workload,
		namespace: in.Namespace,
		values:    values,
		pod:       pod,
		podSpec:   podSpec,
		labels:    labelsOf(in),
		selector:  map[string]any{scorev1b1.LabelWorkload: in.Workload},
		ports:     ports(values),
		inputHash: inputHash(podSpec, values, in.Spec.Template),
	}, nil
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

// labelsOf are the labels of every object and pod: the Workload's, and one per claimed
// instance (consumer.score.dev/<instance>), which the instance's NetworkPolicy admits.
func labelsOf(in Input) map[string]any {
	labels := map[string]any{scorev1b1.LabelWorkload: in.Workload, "app.kubernetes.io/name": in.Workload, "app.kubernetes.io/managed-by": "score-orchestrator"}
	for _, c := range in.Spec.Claims {
		if c.Instance != "" {
			labels[scorev1b1.LabelConsumerPrefix+c.Instance] = "true"
		}
	}
	if in.SecretsRevision != "" {
		labels[scorev1b1.LabelSecretsRevision] = in.SecretsRevision
	}
	return labels
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

// parsedManifests caches manifests templates by their text: every plan of a backend renders
// the same template, and parsing it anew was a third of rendering a plan.
var parsedManifests = struct {
	sync.Mutex
	m map[string]*template.Template
}{m: map[string]*template.Template{}}

// parseManifests parses a manifests template once per text. The cache is bounded: a config
// names few templates, and a new one's replace the old ones over time.
func parseManifests(text string) (*template.Template, error) {
	parsedManifests.Lock()
	defer parsedManifests.Unlock()
	if t, ok := parsedManifests.m[text]; ok {
		return t, nil
	}
	t, err := template.New("manifests").Funcs(Funcs()).Option("missingkey=zero").Parse(text)
	if err != nil {
		return nil, err
	}
	// The guard's functions are added after parsing, so that a template cannot call them.
	if err := yamltemplate.Guard(t.Funcs(yamltemplate.Funcs()), yamltemplate.Manifests); err != nil {
		return nil, err
	}
	if len(parsedManifests.m) >= 256 {
		parsedManifests.m = map[string]*template.Template{}
	}
	parsedManifests.m[text] = t
	return t, nil
}

func renderManifests(tpl Template, d data) ([]byte, error) {
	t, err := parseManifests(string(tpl.Data))
	if err != nil {
		return nil, fmt.Errorf("the template does not parse: %w", err)
	}
	var b bytes.Buffer
	err = t.Execute(&b, map[string]any{
		"Workload":  map[string]any{"Name": d.workload, "Namespace": d.namespace},
		"Values":    d.values,
		"Labels":    d.labels,
		"Selector":  d.selector,
		"PodSpec":   d.podSpec,
		"Ports":     d.ports,
		"InputHash": d.inputHash,
	})
	if err != nil {
		return nil, fmt.Errorf("the template failed: %w", err)
	}
	return b.Bytes(), nil
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

// decodeObjects reads the objects of a rendered stream; a manifests template's or a chart's
// is guarded (yamltemplate), and what its actions printed is put back as values.
func decodeObjects(data []byte, guarded bool) ([]*unstructured.Unstructured, error) {
	var docs []any
	var err error
	if guarded {
		docs, err = yamltemplate.Decode(data)
	} else {
		docs, err = plainDocuments(data)
	}
	if err != nil {
		return nil, yamltemplate.OutputErrorf("the template's output is not YAML: %w", err)
	}
	var out []*unstructured.Unstructured
	for i, node := range docs {
		if node == nil {
			continue
		}
		doc, ok := node.(map[string]any)
		if !ok {
			return nil, yamltemplate.OutputErrorf("the template's document %d is not an object: a manifest is a mapping with apiVersion, kind and metadata", i+1)
		}
		u, err := prepare.FromMap(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d is not a Kubernetes object: %w", i+1, err)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("document %d (%s) has no name", i+1, u.GetKind())
		}
		out = append(out, u)
	}
	return out, nil
}

// plainDocuments reads a YAML stream that no template printed (kustomize's).
func plainDocuments(data []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var node any
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, node)
	}
}

// Digest is the sha256 digest a configmap ref pins for this content ("sha256:<hex>"): of Data;
// or, for a kustomization's Files, of their sha256sum listing in path order — one line
// "<hex>  <path>\n" per file, which is what `LC_ALL=C sha256sum * | sha256sum` prints in
// the directory.
func (t Template) Digest() string {
	if t.Files == nil {
		sum := sha256.Sum256(t.Data)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	names := make([]string, 0, len(t.Files))
	for name := range t.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	var listing strings.Builder
	for _, name := range names {
		sum := sha256.Sum256(t.Files[name])
		fmt.Fprintf(&listing, "%x  %s\n", sum, name)
	}
	sum := sha256.Sum256([]byte(listing.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}
