// Package kustomize builds a kustomization directory the way the runtime needs it: with
// kustomize's own library (krusty) on an in-memory file system, builtin plugins only, no
// exec or function plugins, no Helm inflation and no remote bases or files. The runtime's
// edits (namespace, name prefix and suffix, labels, images, the workload's pod) come from an
// overlay generated around the template, and the plan's values are offered to the template
// as two files it may use: ValuesFile for replacements and EnvFile for configMapGenerator.
package kustomize

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The files the runtime adds to the template's directory, and the annotation that marks the
// objects whose pod the runtime fills in.
const (
	// ValuesFile is a local-config object (kind ScoreValues, name score-values) holding the
	// plan's values under .values and Input.Workload under .workload; list it in resources
	// to use it as a replacements source. Kustomize drops it from the output.
	ValuesFile = "score-values.yaml"
	// EnvFile holds the plan's scalar values as key=value lines, keys being the dotted path
	// (replicas, service.ports.http.port); use it in a configMapGenerator's envs.
	EnvFile = "score-values.env"
	// AnnotationPod marks (with the value "workload") the Deployment, StatefulSet, DaemonSet
	// or Job whose pod template receives the workload's pod.
	AnnotationPod = "score.dev/pod"
)

// templateDir is where the template's files live in the in-memory file system; the
// generated overlay is at the root.
const templateDir = "template"

// Image replaces the image named Name (kustomize's images transformer).
type Image struct {
	Name, NewName, NewTag, Digest string
}

// Input is one build.
type Input struct {
	// Files are the kustomization directory's files by slash-separated relative path, with
	// kustomization.yaml (or .yml, or Kustomization) at the root.
	Files map[string][]byte
	// Namespace is set on every namespaced object.
	Namespace string
	// NamePrefix and NameSuffix go on every object's name (and the references to it).
	NamePrefix, NameSuffix string
	// SelectorLabels go on every object, its selectors and its pod templates; Labels on every
	// object and its pod templates only.
	SelectorLabels, Labels map[string]string
	// Images replace images by name.
	Images []Image
	// Pod is strategic-merged into the pod template of the objects annotated AnnotationPod:
	// containers and init containers merge by name, volumes by name.
	Pod map[string]any
	// Values and Workload are written to ValuesFile and EnvFile.
	Values   map[string]any
	Workload map[string]any
}

// mu serialises builds: kustomize keeps process-wide state (its OpenAPI schema) that
// concurrent builds would race on.
var mu sync.Mutex

// Render builds the template with the overlay and returns the objects as a YAML stream.
func Render(in Input) (out []byte, err error) {
	fs := filesys.MakeFsInMemory()
	if err := checkFiles(in.Files); err != nil {
		return nil, err
	}
	for name, data := range in.Files {
		if err := fs.WriteFile(path.Join("/", templateDir, name), data); err != nil {
			return nil, err
		}
	}
	valuesDoc, err := yaml.Marshal(map[string]any{
		"apiVersion": "score.dev/v1b1", "kind": "ScoreValues",
		"metadata": map[string]any{"name": "score-values", "annotations": map[string]any{"config.kubernetes.io/local-config": "true"}},
		"values":   orEmpty(in.Values),
		"workload": orEmpty(in.Workload),
	})
	if err != nil {
		return nil, err
	}
	overlay, err := overlay(in)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{
		path.Join("/", templateDir, ValuesFile): valuesDoc,
		path.Join("/", templateDir, EnvFile):    envFile(in.Values),
		"/kustomization.yaml":                   overlay,
	} {
		if err := fs.WriteFile(name, data); err != nil {
			return nil, err
		}
	}

	mu.Lock()
	defer mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize failed: %v", r)
		}
	}()
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	m, err := krusty.MakeKustomizer(opts).Run(fs, "/")
	if err != nil {
		return nil, fmt.Errorf("the kustomization does not build: %w", err)
	}
	return m.AsYaml()
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// overlay is the generated kustomization around the template.
func overlay(in Input) ([]byte, error) {
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{templateDir},
	}
	setIfGiven(k, "namespace", in.Namespace)
	setIfGiven(k, "namePrefix", in.NamePrefix)
	setIfGiven(k, "nameSuffix", in.NameSuffix)
	var labels []any
	if len(in.SelectorLabels) > 0 {
		labels = append(labels, map[string]any{"pairs": in.SelectorLabels, "includeSelectors": true, "includeTemplates": true})
	}
	if len(in.Labels) > 0 {
		labels = append(labels, map[string]any{"pairs": in.Labels, "includeTemplates": true})
	}
	if len(labels) > 0 {
		k["labels"] = labels
	}
	if len(in.Images) > 0 {
		var images []any
		for _, im := range in.Images {
			e := map[string]any{"name": im.Name}
			setIfGiven(e, "newName", im.NewName)
			setIfGiven(e, "newTag", im.NewTag)
			setIfGiven(e, "digest", im.Digest)
			images = append(images, e)
		}
		k["images"] = images
	}
	if len(in.Pod) > 0 {
		var patches []any
		// One patch per kind: kustomize keeps a targeted patch's kind, so a patch must not
		// meet an object of another kind.
		for _, kind := range []struct{ apiVersion, kind string }{{"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"apps/v1", "DaemonSet"}, {"batch/v1", "Job"}} {
			patch, err := yaml.Marshal(map[string]any{
				"apiVersion": kind.apiVersion, "kind": kind.kind,
				"metadata": map[string]any{"name": "score-pod"},
				"spec":     map[string]any{"template": map[string]any{"spec": in.Pod}},
			})
			if err != nil {
				return nil, err
			}
			patches = append(patches, map[string]any{
				"target": map[string]any{"kind": kind.kind, "annotationSelector": AnnotationPod + "=workload"},
				"patch":  string(patch),
			})
		}
		k["patches"] = patches
	}
	return yaml.Marshal(k)
}

// envFile writes the scalar values as dotted-path key=value lines in key order. Keys that
// are not valid ConfigMap keys and values spanning lines are left out.
func envFile(values map[string]any) []byte {
	lines := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				walk(key, child)
			}
		case []any, nil:
		default:
			s := fmt.Sprint(t)
			if f, ok := t.(float64); ok && f == float64(int64(f)) {
				s = fmt.Sprint(int64(f))
			}
			if configMapKey(prefix) && !strings.ContainsAny(s, "\r\n") {
				lines[prefix] = s
			}
		}
	}
	walk("", values)
	keys := slices.Sorted(maps.Keys(lines))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, lines[k])
	}
	return []byte(b.String())
}

// setIfGiven sets m[key] to v unless v is empty, so that the kustomization names only the
// fields the input gives.
func setIfGiven(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func configMapKey(k string) bool {
	if k == "" || len(k) > 253 {
		return false
	}
	for _, r := range k {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// kustomizationNames are the file names kustomize reads as a kustomization.
var kustomizationNames = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

// pathFields are the kustomization fields (at any depth, including inline generator and
// transformer configs) whose strings name files or directories to load.
var pathFields = map[string]bool{
	"resources": true, "components": true, "bases": true, "crds": true, "configurations": true,
	"generators": true, "transformers": true, "validators": true, "patchesStrategicMerge": true,
	"path": true, "files": true, "envs": true, "env": true,
}

// checkFiles refuses a template without a root kustomization, one that uses the files the
// runtime adds, and any reference kustomize would fetch from a remote (git or HTTP): a
// template is everything it renders from.
func checkFiles(files map[string][]byte) error {
	root := false
	for name := range files {
		root = root || kustomizationNames[name]
	}
	if !root {
		return fmt.Errorf("the template has no kustomization.yaml at its root")
	}
	for _, reserved := range []string{ValuesFile, EnvFile} {
		if _, ok := files[reserved]; ok {
			return fmt.Errorf("the template's %s is reserved: the runtime writes it", reserved)
		}
	}
	names := slices.Sorted(maps.Keys(files))
	for _, name := range names {
		if !kustomizationNames[path.Base(name)] {
			continue
		}
		var doc any
		if err := yaml.Unmarshal(files[name], &doc); err != nil {
			return fmt.Errorf("%s is not YAML: %w", name, err)
		}
		if err := checkLocal(doc, false); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// checkLocal walks a kustomization document; inPath says the node is the value of a path
// field.
func checkLocal(node any, inPath bool) error {
	switch t := node.(type) {
	case map[string]any:
		if _, ok := t["helmCharts"]; ok {
			return fmt.Errorf("helmCharts would run helm: use a helm template instead")
		}
		for k, v := range t {
			if err := checkLocal(v, pathFields[k]); err != nil {
				return err
			}
		}
	case []any:
		for _, v := range t {
			if err := checkLocal(v, inPath); err != nil {
				return err
			}
		}
	case string:
		if !inPath {
			return nil
		}
		if strings.Contains(t, "\n") { // an inline generator, transformer or patch
			var doc any
			if err := yaml.Unmarshal([]byte(t), &doc); err != nil {
				return nil // kustomize will say what is wrong with it
			}
			return checkLocal(doc, false)
		}
		_, file, _ := strings.Cut(t, "=") // files: key=path
		if remote(t) || remote(file) {
			return fmt.Errorf("%q is remote: a template holds every file it uses", t)
		}
	}
	return nil
}

// remote reports a reference kustomize would clone or download: a URL, an scp-style git
// address or a GitHub path.
func remote(ref string) bool {
	l := strings.ToLower(strings.TrimSpace(ref))
	return strings.Contains(l, "://") || strings.Contains(l, "@") || strings.Contains(l, "?") ||
		strings.HasPrefix(l, "git::") || strings.HasPrefix(l, "github.com") || strings.HasPrefix(l, "/")
}
