// Package runnable implements the runnable strategy's rules (prior art: Cartographer's
// Runnable): a provisioner renders one immutable object (a Job by default), which is stamped
// under a name derived from the hash of its content, so every change of its inputs creates a
// new run and an unchanged input never runs again; the run's success is a condition;
// outputs are read by JSONPath from the run that succeeded; older runs beyond a history limit
// are collected. It is pure: the controller reads and writes the objects.
package runnable

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// DefaultHistoryLimit is how many runs are kept, the current one included.
const DefaultHistoryLimit = 3

// Outcome is what a run came to.
type Outcome string

// The outcomes of a run.
const (
	Running   Outcome = "Running"
	Succeeded Outcome = "Succeeded"
	Failed    Outcome = "Failed"
)

// Stamp names the run after its content: <prefix>-<8 hex of the content's hash>, where the
// prefix is the rendered metadata.name or, without one, "run-<instance>". It labels the run
// with its instance and sets its namespace. The content hashed excludes the name, so the
// same inputs always give the same run.
func Stamp(obj map[string]any, namespace, instance string) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, yamltemplate.OutputErrorf("the run is not an object: %w", err)
	}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("the run needs an apiVersion and a kind")
	}
	prefix := u.GetName()
	if prefix == "" {
		prefix = "run-" + instance
	}
	u.SetName("")
	u.SetNamespace(namespace)
	raw, err = json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])[:8]
	if len(prefix) > 54 { // names used as label values (a Job's) stay within 63
		prefix = strings.TrimRight(prefix[:54], "-.")
	}
	u.SetName(prefix + "-" + hash)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[scorev1b1.LabelRunOf] = instance
	u.SetLabels(labels)
	return u, nil
}

// SuccessCondition is the condition type that means success: the configured one, else
// Complete for Jobs and Succeeded for anything else (Tekton's convention).
func SuccessCondition(configured, kind string) string {
	switch {
	case configured != "":
		return configured
	case kind == "Job":
		return "Complete"
	default:
		return "Succeeded"
	}
}

// Judge reads a run's outcome from its conditions: the success condition True is
// Succeeded; it False, or a Failed condition True (a Job's), is Failed; anything else is
// still Running. The message is the deciding condition's message.
func Judge(run *unstructured.Unstructured, success string) (Outcome, string) {
	conds, _, _ := unstructured.NestedSlice(run.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		switch {
		case typ == success && status == "True":
			return Succeeded, msg
		case typ == success && status == "False", typ == "Failed" && status == "True":
			if msg == "" {
				msg, _ = m["reason"].(string)
			}
			return Failed, msg
		}
	}
	return Running, ""
}

// Outputs reads each output by its JSONPath (kubectl's syntax, e.g.
// {.status.results[0].value}) from the run. A path that finds nothing is an error naming it.
func Outputs(run *unstructured.Unstructured, paths map[string]string) (map[string]any, error) {
	out := make(map[string]any, len(paths))
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		jp := jsonpath.New(key)
		if err := jp.Parse(paths[key]); err != nil {
			return nil, fmt.Errorf("output %s: the JSONPath %q does not parse: %w", key, paths[key], err)
		}
		results, err := jp.FindResults(run.Object)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			return nil, fmt.Errorf("output %s: nothing at %s in %s %s", key, paths[key], run.GetKind(), run.GetName())
		}
		if len(results[0]) == 1 {
			out[key] = results[0][0].Interface()
			continue
		}
		var b bytes.Buffer
		if err := jp.PrintResults(&b, results[0]); err != nil {
			return nil, err
		}
		out[key] = b.String()
	}
	return out, nil
}

// ParsePath checks a JSONPath as Outputs will use it.
func ParsePath(path string) error {
	return jsonpath.New("check").Parse(path)
}

// Collect returns the runs to delete: all but the limit most recent (the current one
// always kept, counted in the limit).
func Collect(runs []*unstructured.Unstructured, current string, limit int) []*unstructured.Unstructured {
	if limit < 1 {
		limit = DefaultHistoryLimit
	}
	sorted := append([]*unstructured.Unstructured(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		ti, tj := sorted[i].GetCreationTimestamp(), sorted[j].GetCreationTimestamp()
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return sorted[i].GetName() > sorted[j].GetName()
	})
	kept := 1 // the current run
	var out []*unstructured.Unstructured
	for _, r := range sorted {
		if r.GetName() == current {
			continue
		}
		if kept < limit {
			kept++
			continue
		}
		out = append(out, r)
	}
	return out
}
