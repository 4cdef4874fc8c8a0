// Package scorefile converts between Score files (score.yaml) and Workload objects. It is
// built on score-go: the Score schema (compiled once), its upgrade transforms for the
// deprecated array forms of files and volumes, and its semantic checks.
package scorefile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/score-spec/score-go/schema"
	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// ScoreAPIVersion is the apiVersion of Score files.
const ScoreAPIVersion = "score.dev/v1b1"

// lastApplied is kubectl's annotation; it is not part of the Score file.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return jsonschema.CompileString("score-v1b1.json", schema.ScoreSchemaV1b1)
})

// SchemaError is a Score file the Score schema rejects; its message is score-go's.
type SchemaError struct {
	Err error
}

func (e *SchemaError) Error() string { return "the Score schema rejects the file: " + e.Err.Error() }
func (e *SchemaError) Unwrap() error { return e.Err }

// Options tune ToWorkload.
type Options struct {
	// BaseDir resolves files[].source relative to the Score file. When empty, sources are
	// kept as they are (and the orchestrator reports them, since it cannot read them).
	BaseDir string
	// Namespace is set on the Workload when not empty.
	Namespace string
	// Image, when set, is the image of every container whose image is "." (score-k8s's
	// --image): the image built for this deployment. Without it, "." stays, and the platform
	// builds the image from the Workload's image resource.
	Image string
}

// Result is one converted Score file.
type Result struct {
	Workload *scorev1b1.Workload
	// Changes lists what the upgrade transforms rewrote (deprecated forms).
	Changes []string
}

// DecodeDocuments splits YAML into its documents, each decoded as a map.
func DecodeDocuments(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for i := 1; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d is not valid YAML: %w", i, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// ToWorkload converts one decoded Score file to a Workload: it applies score-go's upgrade
// transforms, validates against the Score schema, inlines files[].source relative to
// opts.BaseDir, and records what has no Kubernetes counterpart in annotations so FromWorkload
// restores the file.
func ToWorkload(raw map[string]any, opts Options) (*Result, error) {
	changes, err := schema.ApplyCommonUpgradeTransforms(raw)
	if err != nil {
		return nil, &SchemaError{Err: err}
	}
	s, err := compiledSchema()
	if err != nil {
		return nil, fmt.Errorf("compiling the Score schema: %w", err)
	}
	if err := s.Validate(raw); err != nil {
		return nil, &SchemaError{Err: err}
	}

	meta, _ := raw["metadata"].(map[string]any)
	w := &scorev1b1.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: scorev1b1.GroupVersion.String(), Kind: "Workload"},
	}
	w.Name, _ = meta["name"].(string)
	w.Namespace = opts.Namespace
	if err := convertMetadata(meta, w); err != nil {
		return nil, err
	}

	spec := map[string]any{}
	for _, k := range []string{"containers", "service", "resources"} {
		if v, ok := raw[k]; ok {
			spec[k] = v
		}
	}
	if err := decodeStrict(spec, &w.Spec); err != nil {
		return nil, fmt.Errorf("converting the Score spec: %w", err)
	}
	dropEmpty(&w.Spec)
	if opts.Image != "" {
		for name, c := range w.Spec.Containers {
			if c.Image == "." {
				c.Image = opts.Image
				w.Spec.Containers[name] = c
			}
		}
	}
	if opts.BaseDir != "" {
		if err := inlineFileSources(w, opts.BaseDir); err != nil {
			return nil, err
		}
	}
	return &Result{Workload: w, Changes: changes}, nil
}

// dropEmpty makes every empty collection of the spec absent. Score and the API server treat
// an empty collection as absent, and the way back (FromWorkload) leaves it out, so keeping
// it would make converting back and forth change the Workload (FuzzScoreRoundTrip found a
// legacy files list of one null entry, which upgrades to files: {}).
func dropEmpty(spec *scorev1b1.WorkloadSpec) {
	for name, c := range spec.Containers {
		if len(c.Command) == 0 {
			c.Command = nil
		}
		if len(c.Args) == 0 {
			c.Args = nil
		}
		if len(c.Variables) == 0 {
			c.Variables = nil
		}
		if len(c.Files) == 0 {
			c.Files = nil
		}
		if len(c.Volumes) == 0 {
			c.Volumes = nil
		}
		if len(c.Before) == 0 {
			c.Before = nil
		}
		spec.Containers[name] = c
	}
	if len(spec.Resources) == 0 {
		spec.Resources = nil
	}
	if spec.Service != nil && len(spec.Service.Ports) == 0 {
		spec.Service.Ports = nil
	}
}

// reservedAnnotations are the annotations the converter and kubectl write on a Workload and
// FromWorkload leaves out of the Score file; a Score file that sets one would not come back.
var reservedAnnotations = map[string]bool{
	scorev1b1.AnnotationScoreMetadata: true,
	scorev1b1.AnnotationFileSources:   true,
	lastApplied:                       true,
}

// ReservedAnnotationError is a Score file annotation the converter keeps for itself.
type ReservedAnnotationError struct {
	Key string
}

func (e *ReservedAnnotationError) Error() string {
	return fmt.Sprintf("metadata.annotations.%s: the annotation is reserved for the Score ⇄ Workload conversion; use another key", e.Key)
}

// convertMetadata maps Score metadata onto the object: annotations and labels directly,
// everything else as JSON in AnnotationScoreMetadata.
func convertMetadata(meta map[string]any, w *scorev1b1.Workload) error {
	extra := map[string]any{}
	for k, v := range meta {
		switch k {
		case "name":
		case "annotations":
			anns, _ := v.(map[string]any)
			for ak, av := range anns {
				if reservedAnnotations[ak] {
					return &ReservedAnnotationError{Key: ak}
				}
				if w.Annotations == nil {
					w.Annotations = map[string]string{}
				}
				w.Annotations[ak], _ = av.(string)
			}
		case "labels":
			labels, ok := asLabels(v)
			if !ok {
				extra[k] = v
				continue
			}
			w.Labels = labels
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		b, err := json.Marshal(extra)
		if err != nil {
			return fmt.Errorf("encoding metadata: %w", err)
		}
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[scorev1b1.AnnotationScoreMetadata] = string(b)
	}
	return nil
}

// asLabels accepts a map only when every key and value is a valid Kubernetes label.
func asLabels(v any) (map[string]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		s, ok := val.(string)
		if !ok || len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(s)) > 0 {
			return nil, false
		}
		out[k] = s
	}
	return out, true
}

func decodeStrict(in any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// inlineFileSources reads each files[].source relative to baseDir into content (UTF-8) or
// binaryContent, as score-go's loader.Normalize does, and records the source for the way back.
func inlineFileSources(w *scorev1b1.Workload, baseDir string) error {
	sources := map[string]string{}
	for cname, c := range w.Spec.Containers {
		for target, f := range c.Files {
			if f.Source == nil {
				continue
			}
			path := *f.Source
			if !filepath.IsAbs(path) {
				path = filepath.Join(baseDir, path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("containers.%s.files[%s].source: %w", cname, target, err)
			}
			sources[cname+":"+target] = *f.Source
			f.Source = nil
			s := string(data)
			if utf8.Valid(data) {
				f.Content = &s
			} else {
				b := base64.StdEncoding.EncodeToString(data)
				f.BinaryContent = &b
			}
			c.Files[target] = f
		}
	}
	if len(sources) == 0 {
		return nil
	}
	b, err := json.Marshal(sources)
	if err != nil {
		return err
	}
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[scorev1b1.AnnotationFileSources] = string(b)
	return nil
}

// FromWorkload converts a Workload back to a Score file, restoring the metadata keys and file
// sources that ToWorkload recorded.
func FromWorkload(w *scorev1b1.Workload) (map[string]any, error) {
	var spec map[string]any
	if err := roundTripJSON(w.Spec, &spec); err != nil {
		return nil, fmt.Errorf("encoding the spec: %w", err)
	}
	meta := map[string]any{"name": w.Name}
	if raw := w.Annotations[scorev1b1.AnnotationScoreMetadata]; raw != "" {
		var extra map[string]any
		if err := json.Unmarshal([]byte(raw), &extra); err != nil {
			return nil, fmt.Errorf("annotation %s is not a JSON object: %w", scorev1b1.AnnotationScoreMetadata, err)
		}
		for k, v := range extra {
			meta[k] = v
		}
	}
	anns := map[string]any{}
	for k, v := range w.Annotations {
		switch k {
		case scorev1b1.AnnotationScoreMetadata, scorev1b1.AnnotationFileSources, lastApplied:
		default:
			anns[k] = v
		}
	}
	if len(anns) > 0 {
		meta["annotations"] = anns
	}
	if len(w.Labels) > 0 {
		labels := map[string]any{}
		for k, v := range w.Labels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	if raw := w.Annotations[scorev1b1.AnnotationFileSources]; raw != "" {
		if err := restoreFileSources(spec, raw); err != nil {
			return nil, err
		}
	}
	out := map[string]any{"apiVersion": ScoreAPIVersion, "metadata": meta}
	for k, v := range spec {
		out[k] = v
	}
	return out, nil
}

func restoreFileSources(spec map[string]any, raw string) error {
	var sources map[string]string
	if err := json.Unmarshal([]byte(raw), &sources); err != nil {
		return fmt.Errorf("annotation %s is not a JSON object: %w", scorev1b1.AnnotationFileSources, err)
	}
	containers, _ := spec["containers"].(map[string]any)
	keys := make([]string, 0, len(sources))
	for k := range sources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cname, target, _ := strings.Cut(k, ":")
		c, _ := containers[cname].(map[string]any)
		files, _ := c["files"].(map[string]any)
		f, ok := files[target].(map[string]any)
		if !ok {
			continue
		}
		delete(f, "content")
		delete(f, "binaryContent")
		f["source"] = sources[k]
	}
	return nil
}

func roundTripJSON(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// SameScore reports whether two decoded Score documents say the same: equal as JSON, with
// empty collections counting as absent (an empty "variables: {}" means no variables).
func SameScore(a, b map[string]any) bool {
	var x, y any
	if roundTripJSON(a, &x) != nil || roundTripJSON(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(pruneEmpty(x), pruneEmpty(y))
}

func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = pruneEmpty(e)
			switch c := e.(type) {
			case nil:
				delete(x, k)
				continue
			case map[string]any:
				if len(c) == 0 {
					delete(x, k)
					continue
				}
			case []any:
				if len(c) == 0 {
					delete(x, k)
					continue
				}
			}
			x[k] = e
		}
	case []any:
		for i := range x {
			x[i] = pruneEmpty(x[i])
		}
	}
	return v
}

// ReadFile converts every document of a Score file on disk; files[].source are read
// relative to the file (opts.BaseDir is set to its directory).
func ReadFile(path string, opts Options) ([]*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := DecodeDocuments(data)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s holds no Score document", path)
	}
	out := make([]*Result, 0, len(docs))
	for _, doc := range docs {
		opts.BaseDir = filepath.Dir(path)
		res, err := ToWorkload(doc, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}
